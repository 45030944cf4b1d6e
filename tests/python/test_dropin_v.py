"""The drop-in's v-variants, reduce-scatters and scans (issue 22) on an unmodified program
(tests/c/plain_v.c, plain mpicc) that calls MPI_Allgatherv, MPI_Alltoallv, MPI_Gatherv,
MPI_Scatterv, MPI_Reduce_scatter_block, MPI_Reduce_scatter, MPI_Scan and MPI_Exscan, their _c
forms where the MPI has them, and the non-blocking form of each (and MPI_Ibarrier), on the
world and on a split communicator, checking results: a forced algorithm runs every call of its
operation, the _c ones included (the COLLTUNE_LOG=debug log against the program's own count),
except that a non-blocking call runs native where the algorithm would broadcast counts first;
the others stay native; without forcing every call is native; the monitor counts the native
calls; a bad name is refused with the valid ones."""

from __future__ import annotations

import re
import subprocess

import pytest
from colltune.core.mpi import MPIBuild, MPIError
from colltune.monitor.monitor import run_monitored
from conftest import run_plain

NRANKS = 3
OPS = {"allgatherv": "Allgatherv", "alltoallv": "Alltoallv", "gatherv": "Gatherv",
       "scatterv": "Scatterv", "reduce_scatter_block": "Reduce_scatter_block",
       "reduce_scatter": "Reduce_scatter", "scan": "Scan", "exscan": "Exscan",
       "ibarrier": "Ibarrier", "ireduce_scatter_block": "Ireduce_scatter_block",
       "iscan": "Iscan", "iexscan": "Iexscan", "iallgatherv": "Iallgatherv",
       "ialltoallv": "Ialltoallv", "igatherv": "Igatherv", "iscatterv": "Iscatterv",
       "ireduce_scatter": "Ireduce_scatter"}
# A non-blocking call follows its blocking operation's COLLTUNE_<OP>_ALGORITHM.
BLOCKING = {op: op[1:] if op.startswith("i") else op for op in OPS}
# Algorithms that broadcast the root's counts before they start (a blocking exchange): their
# operation's non-blocking form runs native instead.
COUNTS_FIRST = {("gatherv", "binomial"), ("scatterv", "binomial")}
EXPORT = ("LD_PRELOAD", "COLLTUNE_LOG", "COLLTUNE_MONITOR", "COLLTUNE_BARRIER_ALGORITHM",
          *(f"COLLTUNE_{op.upper()}_ALGORITHM" for op in OPS))


def _registry() -> list[dict]:
    try:
        return MPIBuild.select().registry()
    except MPIError:
        return []


# The eight new operations' algorithms, and the barrier's (for MPI_Ibarrier).
FORCED = [(a["coll"], a["name"]) for a in _registry()
          if not a["native"] and a["coll"] in set(BLOCKING.values())]


@pytest.fixture(scope="module")
def build() -> MPIBuild:
    return MPIBuild.select()


def launch(build: MPIBuild, nranks: int = NRANKS, **env: str) -> subprocess.CompletedProcess:
    return run_plain(build, "plain_v", nranks, export=EXPORT, **env)


CALLS = re.compile(r"rank (\d+) calls" + "".join(rf" {op}=(\d+)" for op in OPS))
LOG = re.compile(r"colltune: rank \d+/\d+ MPI_([A-Za-z_]+?) (-?\d+) bytes -> ([a-z0-9_]+)")


def calls(stdout: str) -> dict[str, int]:
    found = CALLS.findall(stdout)
    assert sorted(int(m[0]) for m in found) == list(range(NRANKS)), stdout
    return {op: sum(int(m[i + 1]) for m in found) for i, op in enumerate(OPS)}


def routed(stderr: str, op: str) -> dict[str, int]:
    out: dict[str, int] = {}
    for name, _, alg in LOG.findall(stderr):
        if name == OPS[op]:
            out[alg] = out.get(alg, 0) + 1
    return out


def ok(p: subprocess.CompletedProcess, what) -> None:
    assert p.returncode == 0 and "all ok" in p.stdout, (what, p.stdout[-2000:],
                                                         p.stderr[-3000:])


def test_every_new_operation_has_colltune_algorithms():
    assert {op for op, _ in FORCED} == set(BLOCKING.values())


@pytest.mark.parametrize(("op", "alg"), FORCED, ids=[f"{op}-{alg}" for op, alg in FORCED])
def test_forced_algorithm_runs_every_call_the_large_count_ones_too(build, op, alg):
    p = launch(build, **{f"COLLTUNE_{op.upper()}_ALGORITHM": alg, "COLLTUNE_LOG": "debug"})
    ok(p, (op, alg))
    n = calls(p.stdout)
    # Each rank calls every operation on the world and on its half, plain and (MPI 4) _c:
    # every one of those calls is in the log, so the _c forms were intercepted too.
    per_rank = 4 if "large-count forms: yes" in p.stdout else 2
    if build.flavor == "mpich":  # MPICH 4 and later have them all
        assert per_rank == 4, p.stdout
    for each in OPS:
        assert n[each] == per_rank * NRANKS, n
        ours = BLOCKING[each] == op and not (each != op and (op, alg) in COUNTS_FIRST)
        want = {alg: n[each]} if ours else {"native": n[each]}
        assert routed(p.stderr, each) == want, each


def test_without_forcing_every_call_is_native(build):
    p = launch(build, COLLTUNE_LOG="debug")
    ok(p, "native")
    n = calls(p.stdout)
    for op in OPS:
        assert routed(p.stderr, op) == {"native": n[op]}, op


def test_monitor_counts_the_native_calls_and_not_the_forced_ones(build, tmp_path):
    """The monitor's native counts: every call of the unforced operations, on each rank
    (world and half, plain and _c, blocking and not), and none of the forced one (scan,
    which MPI_Iscan follows)."""
    cmd = build.launch_command(NRANKS, [str(build.tool("tests/c/plain_v"))], bind=False,
                               export=("COLLTUNE_SCAN_ALGORITHM",))
    env = {**build.launch_env(NRANKS), "COLLTUNE_SCAN_ALGORITHM": "linear"}
    doc = run_monitored(build, cmd, "count", tmp_path / "count.json", env=env, timeout=300)
    assert doc["exit_code"] == 0
    per_rank = 4 if build.flavor == "mpich" else 2
    for r in doc["per_rank"]:
        native = r["native"]
        assert "scan" not in native or native["scan"]["calls"] == 0, native
        for op in set(BLOCKING.values()) - {"scan"}:
            # a non-blocking call counts as its operation's
            want = per_rank * sum(1 for each in OPS if BLOCKING[each] == op)
            assert native[op]["calls"] == want, (op, native)


def test_unknown_algorithm_names_the_valid_ones(build):
    p = launch(build, COLLTUNE_SCAN_ALGORITHM="nope")
    assert p.returncode != 0
    assert "COLLTUNE_SCAN_ALGORITHM='nope' is not a scan algorithm" in p.stderr
    assert "recursive_doubling" in p.stderr and "linear" in p.stderr
