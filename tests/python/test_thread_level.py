"""The thread level the drop-in asks MPI for (issue 36): MPI_THREAD_MULTIPLE, which makes
every MPICH call 1-2 us slower, only where the progress thread may start. With an algorithm
forced (a non-blocking choice that wants the thread) and as many ranks on the node as it has
cores, no core is free, no thread starts, and the program's own level stays; with fewer
ranks, COLLTUNE_PROGRESS=on or COLLTUNE_PROGRESS_CORES the thread stays possible."""

from __future__ import annotations

import os
import re

import pytest
from colltune.core.mpi import MPIBuild
from conftest import run_plain

LINE = re.compile(r"rank (\d+) thread level (\S+) ibcast (\S+)")
EXPORT = ("LD_PRELOAD", "COLLTUNE_BCAST_ALGORITHM", "COLLTUNE_PROGRESS",
          "COLLTUNE_PROGRESS_CORES")


@pytest.fixture(scope="module")
def build() -> MPIBuild:
    return MPIBuild.select()


def levels(build: MPIBuild, nranks: int, **env: str) -> set[str]:
    p = run_plain(build, "plain_thread_level", nranks, export=EXPORT, timeout=120,
                  COLLTUNE_BCAST_ALGORITHM="binomial", **env)
    found = LINE.findall(p.stdout)
    assert p.returncode == 0 and len(found) == nranks, (p.stdout, p.stderr[-2000:])
    assert all(ok == "ok" for _, _, ok in found), p.stdout
    return {level for _, level, _ in found}


def test_no_thread_multiple_when_every_core_runs_a_rank(build):
    cores = os.cpu_count() or 1
    assert levels(build, cores) == {"below-multiple"}


def test_thread_multiple_where_a_thread_may_start(build):
    cores = os.cpu_count() or 1
    assert levels(build, cores, COLLTUNE_PROGRESS="on") == {"multiple"}
    assert levels(build, cores, COLLTUNE_PROGRESS_CORES="0") == {"multiple"}
    if cores > 1:
        assert levels(build, cores - 1) == {"multiple"}
