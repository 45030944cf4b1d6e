"""Two patterns that run on the MPI libraries and aborted under the drop-in (issue 37), with
tests/c/plain_release.c, a plain MPI program, preloaded as a user runs it:

- a collective's request freed with MPI_Request_free once MPI_Request_get_status says it is
  complete, and while it is in flight (erroneous in MPI, accepted by MPICH and Open MPI 5):
  every non-blocking operation (and the persistent forms), every colltune algorithm forced
  in turn, results checked by hand (the in-flight ones after MPI_Finalize);
- every shared-memory algorithm forced with a segment smaller than one element of the
  call's derived type (user-defined op, in place too): those calls go to the library,
  the others run through the segment, every value right.

The linked variant of the same program runs under every MPI in ctest (label "system")."""

from __future__ import annotations

import re

import pytest
from colltune.core.mpi import MPIBuild
from conftest import forced_env, nonblocking_algorithms, run_plain

OPS = ("bcast", "reduce", "allreduce", "scatter", "gather", "allgather", "alltoall", "barrier",
       "allgatherv", "alltoallv", "gatherv", "scatterv", "reduce_scatter_block",
       "reduce_scatter", "scan", "exscan")
SHM_OPS = ("bcast", "reduce", "allreduce", "scatter", "gather", "allgather", "alltoall",
           "barrier")
EXPORT = ("LD_PRELOAD", "COLLTUNE_LOG", "COLLTUNE_SHM_BYTES", "COLLTUNE_PROGRESS",
          *(f"COLLTUNE_{op.upper()}_ALGORITHM" for op in OPS))
RELEASED = re.compile(r"rank (\d+) release ok (\d+) cases \((\d+) freed in flight\)")
SHM_OK = re.compile(r"rank (\d+) shm ok (\d+) cases")
LOG = re.compile(r"MPI_([A-Z][a-z_]*) (\d+) bytes -> ([a-z0-9_]+)")
REFUSED = re.compile(r"refuses MPI_Request_free (?:in flight|after completion) \((\w+)\)")


ALGS = nonblocking_algorithms(OPS)
ROUNDS = max((len(v) for v in ALGS.values()), default=0)


def forced(k: int) -> dict[str, str]:
    return forced_env(ALGS, k)


@pytest.fixture(scope="module")
def build() -> MPIBuild:
    return MPIBuild.select()


def run(build: MPIBuild, nranks: int, *args: str, preload: bool = True, **env: str):
    return run_plain(build, "plain_release", nranks, *args, preload=preload, timeout=300,
                     export=EXPORT, **env)


def released(p, nranks: int, what) -> list[tuple[int, int]]:
    """Per rank: (cases, freed in flight); every rank ok, exit status 0."""
    assert p.returncode == 0, (what, p.stdout[-2000:], p.stderr[-3000:])
    found = {int(r): (int(c), int(f)) for r, c, f in RELEASED.findall(p.stdout)}
    assert sorted(found) == list(range(nranks)), (what, p.stdout[-2000:], p.stderr[-2000:])
    return [found[r] for r in range(nranks)]


def refused_by_colltune(p) -> set[str]:
    """Operations whose free was refused although colltune served them (the library's own
    refusals, Open MPI 5.0 at 1 rank for some, are the library's business)."""
    native = {op.lower().removeprefix("i") for op, _, alg in LOG.findall(p.stderr)
              if alg == "native"}
    return {op for op in REFUSED.findall(p.stdout) if op not in native}


@pytest.mark.parametrize("nranks", (1, 2, 3, 5))
def test_requests_freed_after_completion_and_in_flight(build, nranks):
    native = released(run(build, nranks, "--free", preload=False), nranks, "native")
    assert all(c > 0 for c, _ in native)
    # every operation's in-flight case, roots 0 and N-1 (one root at 1 rank)
    in_flight = len(OPS) * (2 if nranks > 1 else 1)
    rounds = range(ROUNDS) if nranks in (3, 5) else (0,)
    for k in rounds:
        env = forced(k)
        p = run(build, nranks, "--free", COLLTUNE_LOG="debug", **env)
        got = released(p, nranks, ("forced", k))
        assert not refused_by_colltune(p), (k, p.stdout[-2000:])
        if "refuses" not in p.stdout:
            assert all(f == in_flight for _, f in got), (k, got)
        ran = {(op.lower(), alg) for op, _, alg in LOG.findall(p.stderr)}
        # colltune served them: each operation's forced algorithm ran (the non-blocking
        # form, or its persistent one where the non-blocking form is refused)
        for op in OPS:
            names = {f"i{op}", f"{op}_init"}
            assert any((n, env[f"COLLTUNE_{op.upper()}_ALGORITHM"]) in ran for n in names) \
                or nranks == 1 or op in ("gatherv", "scatterv"), (k, op, sorted(ran))
    p = run(build, nranks, "--free", COLLTUNE_LOG="warn", COLLTUNE_PROGRESS="on", **forced(1))
    released(p, nranks, "warn, thread")
    if nranks > 1:  # alone, a rank's collectives may all be over by the free
        assert "MPI_Request_free on a collective's request in flight" in p.stderr
    p = run(build, nranks, "--free", **forced(1))  # no COLLTUNE_LOG: nothing said
    released(p, nranks, "quiet")
    assert "warning" not in p.stderr


@pytest.mark.parametrize("nranks", (1, 2, 3))
def test_shm_with_a_segment_smaller_than_an_element(build, nranks):
    want = {int(r): int(c) for r, c in SHM_OK.findall(run(build, nranks, "--shm",
                                                          preload=False).stdout)}
    assert sorted(want) == list(range(nranks))
    env = {f"COLLTUNE_{op.upper()}_ALGORITHM": "shm" for op in SHM_OPS}
    for size in ("4K", "8K"):
        p = run(build, nranks, "--shm", COLLTUNE_SHM_BYTES=size, COLLTUNE_LOG="debug", **env)
        assert p.returncode == 0, (size, p.stdout[-2000:], p.stderr[-3000:])
        got = {int(r): int(c) for r, c in SHM_OK.findall(p.stdout)}
        assert got == want, (size, p.stdout[-2000:])
        ran = {(op, alg) for op, _, alg in LOG.findall(p.stderr)}
        if nranks > 1:
            # both ways: calls through the segment, and those whose element is too large
            # for it sent to the library
            for op in ("Reduce", "Allreduce", "Bcast"):
                assert (op, "shm") in ran and (op, "native") in ran, (size, op, sorted(ran))
