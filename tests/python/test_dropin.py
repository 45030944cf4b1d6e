"""The PMPI drop-in on an unmodified program (tests/c/plain_collectives.c, built with plain
mpicc) that calls all eight collectives: forcing an algorithm by environment routes every call
of that operation through it (counted in the COLLTUNE_LOG=debug log against the program's own
count) with right results, on split and dup communicators too; without forcing everything is
native; bad settings are refused by name; bad input gives the error classes native MPI gives."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys

import pytest
from colltune.core.mpi import MPIBuild, MPIError
from conftest import run_plain

NRANKS = 3  # not a power of two; the split makes communicators of 2 and 1
WIDE = 5  # the all-at-once runs: communicators of 5, 3 and 2
SEGSIZE = 4099  # bytes; prime, so segments of bytes end mid-element and mid-block
OPS = {"bcast": "Bcast", "reduce": "Reduce", "allreduce": "Allreduce", "scatter": "Scatter",
       "gather": "Gather", "allgather": "Allgather", "alltoall": "Alltoall",
       "barrier": "Barrier"}
EXPORT = ("LD_PRELOAD", "COLLTUNE_LOG", "COLLTUNE_SEGSIZE", "COLLTUNE_SPLIT", "COLLTUNE_TABLE",
          "COLLTUNE_PROGRESS", *(f"COLLTUNE_{op.upper()}_ALGORITHM" for op in OPS))
# The bad calls of `plain_collectives --errors`, one line each.
ERROR_CALLS = 36


def _registry() -> list[dict]:
    """The registry at collection time (empty without a build: test_registry fails then)."""
    try:
        return MPIBuild.select().registry()
    except MPIError:
        return []


REGISTRY = _registry()
# The eight operations plain_collectives calls (the others: test_dropin_v.py).
FORCED = [(a["coll"], a["name"]) for a in REGISTRY if not a["native"] and a["coll"] in OPS]
SEGMENTABLE = {(a["coll"], a["name"]) for a in REGISTRY if a["segmentable"]}


def algorithms(op: str) -> list[str]:
    return [name for coll, name in FORCED if coll == op]


# Runs forcing one algorithm of every operation at once, cycling through each list.
ALL_AT_ONCE = max((len(algorithms(op)) for op in OPS), default=0)


@pytest.fixture(scope="module")
def build() -> MPIBuild:
    return MPIBuild.select()


def launch(build: MPIBuild, *args: str, preload: bool = True, nranks: int = NRANKS,
           timeout: int = 300, program: str = "plain_collectives",
           **env: str) -> subprocess.CompletedProcess:
    return run_plain(build, program, nranks, *args, preload=preload, timeout=timeout,
                     export=EXPORT, **env)


# Each rank writes each line at once, but mpiexec may forward a line's end apart from its
# start, so lines of several ranks can run together: records are found, not lines split.
CALLS = re.compile(r"rank (\d+) calls" + "".join(rf" {op}=(\d+)" for op in OPS))
LOG = re.compile(r"colltune: rank \d+/\d+ MPI_([A-Za-z]+) (\d+) bytes -> ([a-z0-9_]+?)"
                 r"(?: segsize (\d+))?(?=\s|colltune:|$)")


def calls(stdout: str, nranks: int = NRANKS) -> dict[str, int]:
    """The program's own count of its calls per operation, all ranks together."""
    found = CALLS.findall(stdout)
    assert sorted(int(m[0]) for m in found) == list(range(nranks)), stdout
    return {op: sum(int(m[i + 1]) for m in found) for i, op in enumerate(OPS)}


def log(stderr: str, op: str) -> list[tuple[int, str, int | None]]:
    """(bytes, algorithm, segment size) of every MPI_<op> call the log shows."""
    return [(int(b), alg, int(seg) if seg else None)
            for name, b, alg, seg in LOG.findall(stderr) if name == OPS[op]]


def routed(stderr: str, op: str) -> dict[str, int]:
    """How many MPI_<op> calls the log shows, per chosen algorithm."""
    out: dict[str, int] = {}
    for _, alg, _ in log(stderr, op):
        out[alg] = out.get(alg, 0) + 1
    return out


def ok(p: subprocess.CompletedProcess, what) -> None:
    assert p.returncode == 0 and "all ok" in p.stdout, (what, p.stdout[-2000:],
                                                         p.stderr[-3000:])


def test_registry_has_every_operation(build):
    assert set(OPS) <= {a["coll"] for a in build.registry()}
    assert {op for op, _ in FORCED} == set(OPS), "every operation has colltune algorithms"


@pytest.mark.parametrize(("op", "alg"), FORCED, ids=[f"{op}-{alg}" for op, alg in FORCED])
def test_forced_algorithm_runs_every_call(build, op, alg):
    p = launch(build, **{f"COLLTUNE_{op.upper()}_ALGORITHM": alg, "COLLTUNE_LOG": "debug"})
    ok(p, (op, alg))
    n = calls(p.stdout)
    assert all(n.values()), n  # the program calls every operation
    assert routed(p.stderr, op) == {alg: n[op]}
    for other in OPS:
        if other != op:
            assert routed(p.stderr, other) == {"native": n[other]}, other


@pytest.mark.parametrize("index", range(ALL_AT_ONCE))
def test_every_operation_forced_at_once_with_a_segment_size(build, index):
    """On 5 ranks, one algorithm of every operation forced together, and COLLTUNE_SEGSIZE
    for the segmentable ones; run `index` takes each operation's algorithm number `index`
    (cycling), so these runs cover every algorithm."""
    chosen = {op: algorithms(op)[index % len(algorithms(op))] for op in OPS}
    env = {f"COLLTUNE_{op.upper()}_ALGORITHM": alg for op, alg in chosen.items()}
    p = launch(build, nranks=WIDE, COLLTUNE_LOG="debug", COLLTUNE_SEGSIZE=str(SEGSIZE), **env)
    ok(p, chosen)
    n = calls(p.stdout, WIDE)
    for op, alg in chosen.items():
        assert routed(p.stderr, op) == {alg: n[op]}, (op, alg)
        if (op, alg) in SEGMENTABLE:
            assert {seg for _, _, seg in log(p.stderr, op)} == {SEGSIZE}, (op, alg)


def test_segment_size_is_logged(build):
    p = launch(build, COLLTUNE_BCAST_ALGORITHM="pipeline", COLLTUNE_SEGSIZE="100",
               COLLTUNE_LOG="debug")
    ok(p, "pipeline")
    assert (4000, "pipeline", 100) in log(p.stderr, "bcast")


def test_without_forcing_everything_is_native(build):
    p = launch(build, COLLTUNE_LOG="debug")
    ok(p, "native")
    n = calls(p.stdout)
    for op in OPS:
        assert routed(p.stderr, op) == {"native": n[op]}, op
    # The log shows the per-rank block of the data-movement operations.
    assert (280004, "native", None) in log(p.stderr, "alltoall")
    assert set(log(p.stderr, "barrier")) == {(0, "native", None)}


def test_without_forcing_the_drop_in_is_silent(build):
    p = launch(build)
    ok(p, "silent")
    assert "colltune:" not in p.stderr


@pytest.mark.parametrize(("op", "name"), [("reduce", "fastest"), ("allgather", "nope")])
def test_unknown_algorithm_names_the_valid_ones(build, op, name):
    p = launch(build, **{f"COLLTUNE_{op.upper()}_ALGORITHM": name})
    assert p.returncode != 0
    valid = ", ".join(["native", *algorithms(op)])
    article = "an" if op[0] in "aeiou" else "a"
    assert (f"COLLTUNE_{op.upper()}_ALGORITHM='{name}' is not {article} {op} algorithm; "
            f"valid: {valid}" in p.stderr)


def test_bad_segment_size_is_refused(build):
    p = launch(build, COLLTUNE_ALLREDUCE_ALGORITHM="ring", COLLTUNE_SEGSIZE="12q")
    assert p.returncode != 0
    assert "COLLTUNE_SEGSIZE='12q' is not a size" in p.stderr  # more: test_dropin_input.py


def test_bad_input_gives_the_native_error_classes(build):
    native = launch(build, "--errors", preload=False, timeout=120)
    assert native.returncode == 0, native.stderr
    lines = native.stdout.splitlines()
    assert len(lines) == ERROR_CALLS and all(not ln.endswith(" 0") for ln in lines), lines
    assert {ln.split("_")[0] for ln in lines} == set(OPS)
    plain = launch(build, "--errors", timeout=120)
    assert plain.returncode == 0, plain.stderr
    assert plain.stdout.splitlines() == lines
    # Every operation forced to a colltune algorithm: still native MPI's own errors.
    env = {f"COLLTUNE_{op.upper()}_ALGORITHM": algorithms(op)[-1] for op in OPS}
    forced = launch(build, "--errors", timeout=120, **env)
    assert forced.returncode == 0, forced.stderr
    assert forced.stdout.splitlines() == lines


def test_preload_prints_the_library(build):
    p = subprocess.run([sys.executable, "-m", "colltune.cli", "preload"], capture_output=True,
                       text=True, check=True)
    assert p.stdout.strip() == str(build.tool("libcolltune_pmpi.so"))


# ---- The non-blocking collectives (tests/c/plain_nbc.c) ----------------------------------

NBC = {"bcast": "Ibcast", "reduce": "Ireduce", "allreduce": "Iallreduce",
       "scatter": "Iscatter", "gather": "Igather", "allgather": "Iallgather",
       "alltoall": "Ialltoall"}
NBC_CALLS = re.compile(r"rank (\d+) nbc" + "".join(rf" {n}=(\d+)" for n in NBC.values()))
NBC_FORCED = {"bcast": "binomial", "reduce": "binomial", "allreduce": "recursive_doubling",
              "scatter": "binomial", "gather": "binary", "allgather": "ring",
              "alltoall": "pairwise"}


def nbc_routed(stderr: str) -> dict[str, dict[str, int]]:
    """Per MPI_I* function, how many calls the log shows per algorithm."""
    out: dict[str, dict[str, int]] = {}
    for name, _, alg, _ in LOG.findall(stderr):
        if name not in NBC.values():
            continue
        out.setdefault(name, {}).setdefault(alg, 0)
        out[name][alg] += 1
    return out


@pytest.mark.parametrize(("nranks", "split"),
                         [(2, "0"), (3, "1"), (5, "0"), (5, "1"), (5, "2"), (5, "64"),
                          (8, "auto")])
def test_nonblocking_through_the_drop_in(build, nranks, split):
    """Every MPI_I* call goes through the forced algorithm at every split (with the progress
    thread however the cores are taken: COLLTUNE_PROGRESS=on), completed by the program's own
    MPI_Wait, MPI_Test loops, MPI_Waitall with its point-to-point requests and
    MPI_Waitany; the program checks every result itself."""
    env = {f"COLLTUNE_{op.upper()}_ALGORITHM": alg for op, alg in NBC_FORCED.items()}
    p = launch(build, program="plain_nbc", nranks=nranks, COLLTUNE_LOG="debug",
               COLLTUNE_SPLIT=split, COLLTUNE_PROGRESS="on", **env)
    ok(p, (nranks, split))
    found = NBC_CALLS.findall(p.stdout)
    assert sorted(int(m[0]) for m in found) == list(range(nranks)), p.stdout
    routed = nbc_routed(p.stderr)
    for i, (op, name) in enumerate(NBC.items()):
        made = sum(int(m[i + 1]) for m in found)
        assert made > 0 and routed.get(name) == {NBC_FORCED[op]: made}, (op, routed.get(name))


def test_nonblocking_native_without_forcing_and_without_progress(build):
    p = launch(build, program="plain_nbc", nranks=3, COLLTUNE_LOG="debug")
    ok(p, "native")
    assert set(nbc_routed(p.stderr)) == set(NBC.values())
    assert all(set(v) == {"native"} for v in nbc_routed(p.stderr).values())
    # No progress thread (no MPI_THREAD_MULTIPLE asked): colltune runs inside the waits.
    env = {f"COLLTUNE_{op.upper()}_ALGORITHM": alg for op, alg in NBC_FORCED.items()}
    p = launch(build, program="plain_nbc", nranks=3, COLLTUNE_PROGRESS="off",
               COLLTUNE_LOG="debug", **env)
    ok(p, "no progress thread")
    assert nbc_routed(p.stderr)["Ibcast"] == {"binomial": 3 * 8}


# ---- A table's non-blocking entry and the progress thread (tests/c/plain_ibcast_progress.c) ----

def progress_records(stdout: str, nranks: int) -> dict[int, tuple[int, int, str]]:
    """rank -> (thread running, thread parts finished before the wait, data ok/wrong)."""
    found = re.findall(r"rank (\d+) thread=(\d) parts_before_wait=(\d+) data=(\w+)", stdout)
    assert sorted(int(m[0]) for m in found) == list(range(nranks)), stdout
    return {int(r): (int(t), int(p), d) for r, t, p, d in found}


def ibcast_table(build: MPIBuild, tmp_path) -> str:
    """A table whose MPI_Ibcast entry is a split tree measured with the thread (binomial,
    S = 1: at 4 ranks the root's edge to rank 2 is the thread's, the leaves' the
    application's), and chain as what was best without a thread."""
    from colltune.tune.tune import machine_id

    lib, version = ("MPICH", "5.0.2") if build.flavor == "mpich" else ("Open MPI", "5.0.11")
    doc = {"schema": "colltune-table", "schema_version": 1, "machine": machine_id(),
           "mpi": {"build": build.name, "implementation": lib, "version": version},
           "strategy": "exhaustive",
           "entries": [{"op": "ibcast", "ranks": 4, "size_bytes": 65536, "algorithm": "binomial",
                        "segsize": 0, "split": 1, "progress": "thread",
                        "no_thread": {"algorithm": "chain", "segsize": 0}}]}
    path = tmp_path / "ibcast-table.json"
    path.write_text(json.dumps(doc))
    return str(path)


def test_a_split_tree_entry_starts_the_progress_thread_on_a_free_core(build, tmp_path):
    """Only MPI_Ibcast, then computation without MPI calls: with COLLTUNE_TABLE and nothing
    else, the drop-in starts its thread on the core the ranks leave free (all four are bound
    to core 0), and the thread finishes its part of the broadcast (root to rank 2) while
    ranks 0 and 2 compute, before they wait: progress no application call made."""
    if (os.cpu_count() or 1) < 2:
        pytest.skip("needs a core beside the ranks' own")
    e = {k: v for k, v in os.environ.items() if not k.startswith("COLLTUNE_")}
    e.update(build.launch_env(4))
    e.update(LD_PRELOAD=str(build.tool("libcolltune_pmpi.so")),
             COLLTUNE_TABLE=ibcast_table(build, tmp_path))
    cmd = build.launch_command(4, [str(build.tool("tests/c/plain_ibcast_progress")), "65536",
                                   "0,2", "120"], bind=False,
                               export=("LD_PRELOAD", "COLLTUNE_TABLE"))
    if build.flavor == "openmpi":
        cmd[1:1] = ["--bind-to", "none"]  # keep the ranks where taskset puts them
    p = subprocess.run(["taskset", "-c", "0", *cmd], env=e, capture_output=True, text=True,
                       timeout=300)
    ok(p, "split-tree entry with the thread")
    rec = progress_records(p.stdout, 4)
    assert all(r[0] == 1 and r[2] == "ok" for r in rec.values()), rec
    assert rec[0][1] >= 1 and rec[2][1] >= 1, rec  # the thread's part, done while computing


def test_with_every_core_taken_the_entry_runs_without_a_thread(build, tmp_path):
    """The same table with the ranks unbound (every rank may run on every core: none is
    free): no thread starts, and the call runs what the table measured best without one."""
    p = launch(build, "65536", "", "60", program="plain_ibcast_progress", nranks=4,
               COLLTUNE_TABLE=ibcast_table(build, tmp_path), COLLTUNE_LOG="debug")
    ok(p, "split-tree entry, no free core")
    rec = progress_records(p.stdout, 4)
    assert all(r == (0, 0, "ok") for r in rec.values()), rec
    assert nbc_routed(p.stderr) == {"Ibcast": {"chain": 4}}, p.stderr[-2000:]


def test_shared_segments_say_nothing_on_stderr(build):
    """Issue 36: making the node's shared segments prints nothing, from colltune or from the
    library (Open MPI 5.0.11 printed an osc/ucx "Error" line on every rank for each segment
    made as an MPI window); every operation through `shm` on communicators of 5, 3 and 2
    ranks, each with its own segment."""
    env = {f"COLLTUNE_{op.upper()}_ALGORITHM": "shm" for op in OPS if "shm" in algorithms(op)}
    assert len(env) == len(OPS), env
    # Only variables that are set: Open MPI's mpiexec warns on stderr of an exported one
    # that is not.
    p = run_plain(build, "plain_collectives", WIDE, export=("LD_PRELOAD", "COLLTUNE_LOG", *env),
                  COLLTUNE_LOG="debug", **env)
    ok(p, "shm")
    # The debug log shows the segments were made and used; nothing else may be said but
    # rank 0's finalize summary (the forced algorithms, then one line per operation).
    lines = p.stderr.splitlines()
    debug = re.compile(r"colltune: rank \d+/\d+ MPI_\w+ \d+ bytes -> |"
                       r"^colltune: (forced COLLTUNE_|[a-z_]+ \d+ calls?: )")
    served = [line for line in lines if debug.search(line)]
    assert any(line.endswith("-> shm") for line in served), p.stderr[-3000:]
    assert [line for line in lines if line.strip() and line not in served] == [], p.stderr[-3000:]


def test_one_copy_algorithms_and_their_copy_through_fallback(build, tmp_path):
    """Issue 36: the `cma` algorithms read their peers' buffers in place (cross-memory
    attach): every call moves bytes out of the peers' memory (read) and writes nothing
    into the node's segment. With the probe made to fail (COLLTUNE_CMA=off, as a node's
    ptrace policy or a seccomp filter would) they take the segment's copy-through path,
    which writes into it, and say so once under COLLTUNE_LOG=warn; results are right
    either way (the program checks every call)."""
    env = {f"COLLTUNE_{op.upper()}_ALGORITHM": "cma" for op in OPS if "cma" in algorithms(op)}
    assert len(env) == 6, env  # bcast, allreduce, scatter, gather, allgather, alltoall
    seen = {}
    for cma in ("on", "off"):
        out = tmp_path / f"monitor-{cma}.json"
        extra = {"COLLTUNE_MONITOR": "count", "COLLTUNE_MONITOR_OUT": str(out),
                 "COLLTUNE_LOG": "warn", **env}
        if cma == "off":
            extra["COLLTUNE_CMA"] = "off"
        p = run_plain(build, "plain_collectives", 3, export=("LD_PRELOAD", *extra), **extra)
        ok(p, cma)
        ranks = json.loads(out.read_text())["per_rank"]
        seen[cma] = (sum(r["shm_written_bytes"] for r in ranks),
                     sum(r["shm_read_bytes"] for r in ranks), p.stderr)
    written, read, stderr = seen["on"]
    if "copy-through path" in stderr:
        pytest.skip("this node refuses cross-memory attach: " + stderr.strip()[-200:])
    assert written == 0 and read > 0, seen["on"][:2]
    written, read, stderr = seen["off"]
    assert written > 0 and read > 0, seen["off"][:2]
    assert stderr.count("take the copy-through path on this node: COLLTUNE_CMA=off") >= 1
