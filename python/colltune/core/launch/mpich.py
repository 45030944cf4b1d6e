"""MPICH's Hydra launcher (the mpich wheel, a system MPICH)."""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from ..hosts import Placement

FLAVOR = "mpich"
LABEL = "MPICH"


def identifies(version_text: str) -> bool:
    return bool(re.search(r"HYDRA|mpich", version_text, re.I))


def local_command(mpiexec: str, nranks: int, program: list[str], *, bind: bool, fits: bool,
                  export: tuple[str, ...] = ()) -> list[str]:
    # Hydra passes the whole environment: `export` needs nothing. Without -bind-to it binds
    # nothing, which is what an oversubscribed job needs.
    cmd = [mpiexec, "-n", str(nranks)]
    if bind and fits:
        cmd += ["-bind-to", "core"]
    return cmd + program


def hosts_command(mpiexec: str, placement: Placement, hostlist: str, nranks: int,
                  program: list[str], *, bind: bool, export: tuple[str, ...] = ()) -> list[str]:
    cmd = [*placement.prefix, mpiexec, "-hosts", hostlist, "-n", str(nranks)]
    if placement.rsh:
        cmd += ["-launcher", "rsh", "-launcher-exec", placement.rsh]
    if placement.iface:
        cmd += ["-iface", placement.iface]
    if bind:
        cmd += ["-bind-to", "core"]
    return cmd + program


def launch_env(*, crowded: bool, placement: Placement | None) -> dict[str, str]:
    env = {}
    if placement and placement.iface:
        # libfabric's TCP provider, on the hosts' interface only
        env.update(FI_PROVIDER="tcp", FI_TCP_IFACE=placement.iface, MPIR_CVAR_CH4_NETMOD="ofi")
    if crowded:
        # With more ranks than cores MPICH's busy polling starves the ranks that hold the
        # data: its progress loop is told to yield (results are the same).
        env.update(MPIR_CVAR_CH4_PROGRESS_THROTTLE="1",
                   MPIR_CVAR_CH4_PROGRESS_THROTTLE_NO_PROGRESS_COUNT="4")
    return env
