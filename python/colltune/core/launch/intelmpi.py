"""Intel MPI's Hydra launcher (the impi-rt wheel in .mpi/intelmpi, MPICH ABI: it runs the
programs and the drop-in of build/mpich; core.mpi's MPIBuild.select builds the environment).

Intel MPI pins every rank by default (to its own idea of a domain), where MPICH's Hydra pins
nothing unless told: a run that must not be bound says so with I_MPI_PIN=0. Across hosts it is
not supported (never tried: the test bed's namespaces and a hostfile cluster are MPICH's and
Open MPI's), so hosts_command refuses rather than guess."""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

from ..hosts import MPIError

if TYPE_CHECKING:
    from ..hosts import Placement

FLAVOR = "intelmpi"
LABEL = "Intel MPI"


def identifies(version_text: str) -> bool:
    return bool(re.search(r"Intel\(R\) MPI Library", version_text))


def local_command(mpiexec: str, nranks: int, program: list[str], *, bind: bool, fits: bool,
                  export: tuple[str, ...] = ()) -> list[str]:
    # Hydra passes the whole environment, as MPICH's does: `export` needs nothing.
    cmd = [mpiexec, "-n", str(nranks)]
    if bind and fits:
        # One rank per core, said outright (the default domain depends on the machine).
        cmd += ["-genv", "I_MPI_PIN", "1", "-genv", "I_MPI_PIN_DOMAIN", "core"]
    else:
        # Oversubscribed (or asked unbound): Intel MPI would still pin, stacking ranks on
        # the first cores while others idle.
        cmd += ["-genv", "I_MPI_PIN", "0"]
    return cmd + program


def hosts_command(mpiexec: str, placement: Placement, hostlist: str, nranks: int,
                  program: list[str], *, bind: bool, export: tuple[str, ...] = ()) -> list[str]:
    raise MPIError(f"Intel MPI runs on this machine only in colltune (not across the hosts of "
                   f"{placement.source or 'a placement'}); use mpich or openmpi there")


def launch_env(*, crowded: bool, placement: Placement | None) -> dict[str, str]:
    # No yield setting needed oversubscribed: Intel MPI's shared-memory waits give the core
    # up (3 ranks on 2 cores ran the vs-native tests about as fast as 2 ranks).
    return {}
