"""A launcher colltune does not recognise: a plain `mpiexec -n N`, Hydra's options across
hosts (MPICH's, the most common), no binding."""

from __future__ import annotations

from typing import TYPE_CHECKING

from . import mpich

if TYPE_CHECKING:
    from ..hosts import Placement

FLAVOR = "unknown"
LABEL = "unknown MPI"


def identifies(version_text: str) -> bool:
    return False


def local_command(mpiexec: str, nranks: int, program: list[str], *, bind: bool, fits: bool,
                  export: tuple[str, ...] = ()) -> list[str]:
    return [mpiexec, "-n", str(nranks), *program]


def hosts_command(mpiexec: str, placement: Placement, hostlist: str, nranks: int,
                  program: list[str], *, bind: bool, export: tuple[str, ...] = ()) -> list[str]:
    return mpich.hosts_command(mpiexec, placement, hostlist, nranks, program, bind=bind,
                               export=export)


def launch_env(*, crowded: bool, placement: Placement | None) -> dict[str, str]:
    return {}
