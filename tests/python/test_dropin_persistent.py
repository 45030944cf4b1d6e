"""The drop-in's persistent collectives (issue 22) on an unmodified MPI 4 program
(tests/c/plain_persistent.c, plain mpicc): MPI_<op>_init for all sixteen operations and,
with an MPI 4 (not Open MPI 5, which has the inits but says MPI 3.1), their _c forms, each
started three times (MPI_Start + MPI_Wait, MPI_Startall + MPI_Waitall, MPI_Start + an
MPI_Test loop) with fresh input, on the world and a split communicator, results checked by
the program. Forcing the k-th algorithm of every operation at once, every init of every
operation (the _c ones too: the COLLTUNE_LOG=debug lines against the program's own count)
is prepared by colltune with that algorithm (the shm family's too: each start takes a lane
of the node's segment, issue 36), except those that broadcast counts first (a blocking
step): native;
without forcing every init is the library's; the monitor counts the library's inits."""

from __future__ import annotations

import re
import subprocess

import pytest
from colltune.core.mpi import MPIBuild, MPIError
from colltune.monitor.monitor import run_monitored
from conftest import run_plain

NRANKS = 3
OPS = ("bcast", "reduce", "allreduce", "scatter", "gather", "allgather", "alltoall", "barrier",
       "allgatherv", "alltoallv", "gatherv", "scatterv", "reduce_scatter_block",
       "reduce_scatter", "scan", "exscan")
MPI_NAME = {op: op.capitalize() for op in OPS}
COUNTS_FIRST = {("gatherv", "binomial"), ("scatterv", "binomial")}
VARS = {op: f"COLLTUNE_{op.upper()}_ALGORITHM" for op in OPS}
EXPORT = ("LD_PRELOAD", "COLLTUNE_LOG", *VARS.values())


def _algorithms() -> tuple[dict[str, list[str]], set[tuple[str, str]]]:
    """Every operation's colltune algorithms, and those a persistent init leaves to the
    library: counts exchanged first (a blocking step, docs/DROPIN.md)."""
    try:
        reg = MPIBuild.select().registry()
    except MPIError:
        return {}, set()
    out: dict[str, list[str]] = {op: [] for op in OPS}
    native = set(COUNTS_FIRST)
    for a in reg:
        if not a["native"] and a["coll"] in out:
            out[a["coll"]].append(a["name"])
    return out, native


ALGS, NATIVE_WHEN_PERSISTENT = _algorithms()
NSETS = max((len(v) for v in ALGS.values()), default=0)


def forced_set(k: int) -> dict[str, str]:
    """The k-th algorithm of every operation (an operation with fewer wraps around)."""
    return {op: algs[k % len(algs)] for op, algs in ALGS.items() if algs}


@pytest.fixture(scope="module")
def build() -> MPIBuild:
    b = MPIBuild.select()
    try:
        b.tool("tests/c/plain_persistent")
    except MPIError:
        pytest.skip("plain_persistent was not built")
    return b


def launch(build: MPIBuild, **env: str) -> subprocess.CompletedProcess:
    return run_plain(build, "plain_persistent", NRANKS, export=EXPORT, **env)


INITS = re.compile(r"rank (\d+) inits" + "".join(rf" {op}=(\d+)" for op in OPS))
LOG = re.compile(r"colltune: rank \d+/\d+ MPI_([A-Za-z_]+?)_init (-?\d+) bytes -> ([a-z0-9_]+)")


def inits(stdout: str) -> dict[str, int]:
    found = INITS.findall(stdout)
    assert sorted(int(m[0]) for m in found) == list(range(NRANKS)), stdout
    return {op: sum(int(m[i + 1]) for m in found) for i, op in enumerate(OPS)}


def routed(stderr: str) -> dict[str, dict[str, int]]:
    out: dict[str, dict[str, int]] = {}
    for name, _, alg in LOG.findall(stderr):
        per = out.setdefault(name.lower(), {})
        per[alg] = per.get(alg, 0) + 1
    return out


def ok(p: subprocess.CompletedProcess, what) -> None:
    assert p.returncode == 0 and "all ok" in p.stdout, (what, p.stdout[-2000:],
                                                         p.stderr[-3000:])


def test_every_operation_has_colltune_algorithms():
    assert ALGS and all(ALGS[op] for op in OPS), ALGS


@pytest.mark.parametrize("k", range(NSETS))
def test_forced_algorithms_prepare_every_init_the_large_count_ones_too(build, k):
    chosen = forced_set(k)
    p = launch(build, COLLTUNE_LOG="debug", **{VARS[op]: alg for op, alg in chosen.items()})
    ok(p, chosen)
    if "persistent forms: yes" not in p.stdout:
        pytest.skip("this MPI has no persistent collectives")
    n = inits(p.stdout)
    got = routed(p.stderr)
    passes = 2 if "large-count forms: yes" in p.stdout else 1
    for op, alg in chosen.items():
        # world and half, plain and (MPI 4) _c; the barrier has no _c: a plain one again
        assert n[op] == 2 * passes * NRANKS, n
        want = "native" if (op, alg) in NATIVE_WHEN_PERSISTENT else alg
        assert got.get(op) == {want: n[op]}, (op, got.get(op))


@pytest.fixture(scope="module")
def unforced(build) -> subprocess.CompletedProcess:
    """The program under the drop-in with nothing forced, once: what the MPI has."""
    p = launch(build, COLLTUNE_LOG="debug")
    ok(p, "native")
    if "persistent forms: yes" not in p.stdout:
        pytest.skip("this MPI has no persistent collectives")
    return p


def test_without_forcing_every_init_is_the_librarys(unforced):
    p = unforced
    n = inits(p.stdout)
    got = routed(p.stderr)
    for op in OPS:
        assert got.get(op) == {"native": n[op]}, op


def test_monitor_counts_the_librarys_inits_and_not_colltunes(build, unforced, tmp_path):
    cmd = build.launch_command(NRANKS, [str(build.tool("tests/c/plain_persistent"))],
                               bind=False, export=("COLLTUNE_SCAN_ALGORITHM",))
    env = {**build.launch_env(NRANKS), "COLLTUNE_SCAN_ALGORITHM": "linear"}
    doc = run_monitored(build, cmd, "count", tmp_path / "count.json", env=env, timeout=300)
    assert doc["exit_code"] == 0
    # plain and (MPI 4) _c inits, on the world and half
    passes = 2 if "large-count forms: yes" in unforced.stdout else 1
    for r in doc["per_rank"]:
        native = r["native"]
        assert "scan" not in native or native["scan"]["calls"] == 0, native
        for op in set(OPS) - {"scan"}:
            own = op == "allreduce"  # the program's own MPI_Allreduce of its verdict
            assert native[op]["calls"] == 2 * passes + own, (op, native)
