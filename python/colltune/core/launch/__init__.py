"""One launcher module per MPI flavour (mpich, openmpi, intelmpi): the mpiexec command line and
the environment a job of that MPI needs, on this machine or over the hosts of a Placement
(core.hosts). core.mpi's MPIBuild picks the module by its flavour; the modules know nothing of
MPIBuild, only an mpiexec path and plain values, so that nothing here imports core.mpi.

Each module has FLAVOR, LABEL, identifies(version_text), local_command(...),
hosts_command(...) and launch_env(...); `generic` stands for a launcher colltune does not know
(plain `mpiexec -n N`, Hydra options across hosts, as before the split)."""

from __future__ import annotations

from types import ModuleType

from . import generic, intelmpi, mpich, openmpi

# Intel MPI's Hydra must be told apart from MPICH's before MPICH's looser pattern is tried.
LAUNCHERS: dict[str, ModuleType] = {m.FLAVOR: m for m in (openmpi, intelmpi, mpich)}


def launcher(flavor: str) -> ModuleType:
    """The launcher module of a flavour; `generic` for an unknown one."""
    return LAUNCHERS.get(flavor, generic)


def identify(version_text: str) -> str:
    """The flavour whose mpiexec prints this to --version; 'unknown' when none does."""
    for flavor, module in LAUNCHERS.items():
        if module.identifies(version_text):
            return flavor
    return "unknown"


def hostlist(per_rank: list[str]) -> str:
    """`host:count` runs in rank order, comma-separated: both Hydra's -hosts and Open MPI's
    --host read it so."""
    groups: list[list] = []
    for h in per_rank:
        if groups and groups[-1][0] == h:
            groups[-1][1] += 1
        else:
            groups.append([h, 1])
    return ",".join(f"{h}:{n}" for h, n in groups)
