"""What the drop-in reads, checked before anything runs: the tuning table (COLLTUNE_TABLE)
gives one line naming the entry, its line, the field and what it allows, and every call goes
native; COLLTUNE_SEGSIZE takes the units `colltune bench` takes and refuses what it cannot
use instead of clamping it; an unknown forced algorithm is said once per process with the
valid names; a forced algorithm that needs a commutative operation, given one that is not,
says so once and says what ran instead. The programs are run as tests/python/test_dropin.py
runs them (tests/c/plain_collectives, 3 ranks, LD_PRELOAD)."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys

import pytest
from colltune.core.mpi import MPIBuild, MPIError

sys.path.insert(0, os.path.dirname(__file__))
from test_dropin import NRANKS, algorithms, launch, ok, routed  # noqa: E402

SEGMENTED = re.compile(r"MPI_Bcast \d+ bytes -> pipeline segsize (\d+)")


@pytest.fixture(scope="module")
def build() -> MPIBuild:
    try:
        return MPIBuild.select()
    except MPIError as e:
        pytest.skip(str(e))


def table(build: MPIBuild, entries) -> dict:
    from colltune.tune.tune import machine_id

    lib = "MPICH" if build.flavor == "mpich" else "Open MPI"
    version = "5.0.2" if build.flavor == "mpich" else "5.0.11"
    return {"schema": "colltune-table", "schema_version": 1, "machine": machine_id(),
            "mpi": {"build": build.name, "implementation": lib, "version": version},
            "strategy": "exhaustive", "entries": entries}


GOOD = {"op": "bcast", "ranks": 3, "size_bytes": 8, "algorithm": "chain", "segsize": 0}
# (what the fourth entry is made of, what the one line says about it)
BAD_ENTRIES = [
    ({"ranks": 3.7}, "ranks: 3.7 is not an integer (entry 4, line 5)"),
    ({"ranks": 0}, "ranks: 0 is out of range: allowed 1 to 2147483647 (entry 4, line 5)"),
    ({"ranks": "3"}, "ranks: not a number (entry 4, line 5)"),
    ({"size_bytes": -8}, "size_bytes: -8 is out of range: allowed 0 to "),
    ({"segsize": 1e12}, "segsize: 1000000000000 is out of range: allowed 0 to 1073741824"),
    ({"op": "bcastt"}, "op: 'bcastt' is not an operation; valid: bcast, reduce, allreduce, "
                       "scatter, gather, allgather, alltoall, barrier"),
    ({"op": "ibcastt"}, "with an 'i' before it for the non-blocking form or '_init' after it "
                        "for the persistent one (entry 4, line 5)"),
    ({"op": "ibcast", "split": "deep"}, 'split: not a number (or "model") (entry 4, line 5)'),
    ({"op": "ibcast", "split": 64}, "split: 64 is out of range: allowed 0 to 63"),
    ({"op": "ibcast", "progress": "sometimes"},
     'progress: must be "thread" or "none" (entry 4, line 5)'),
    ({"op": "ibcast", "no_thread": {"algorithm": "chain", "segsize": 0}},
     "no_thread: given for an entry measured without the thread"),
    ({"op": "ibcast", "progress": "thread", "no_thread": {"algorithm": "warp", "segsize": 0}},
     "no_thread.algorithm: 'warp' is not a bcast algorithm; valid: native, "),
    ({"op": "ibcast", "progress": "thread", "no_thread": {"algorithm": "chain"}},
     "no_thread.segsize: missing (entry 4, line 5)"),
    ({"algorithm": "warp_drive"}, "algorithm: 'warp_drive' is not a bcast algorithm; valid: "
                                  "native, linear, chain, "),
    ({"op": "allgather", "algorithm": "warp"}, "'warp' is not an allgather algorithm; valid: "),
    ({"algorithm": "scatter_allgather", "segsize": 4096},
     "segsize: 4096 given for bcast 'scatter_allgather', which takes no segment size; use 0 "
     "(entry 4, line 5)"),
    ({"algorithm": None}, "algorithm: not a string (entry 4, line 5)"),
]


def write_table(tmp_path, doc, text: str | None = None):
    path = tmp_path / "t.json"
    if text is None:
        # one entry per line: entry i (from 1) on line i + 1
        entries = ",\n".join(json.dumps(e) for e in doc["entries"])
        head = json.dumps({k: v for k, v in doc.items() if k != "entries"})[:-1]
        text = f'{head}, "entries": [\n{entries}\n]}}\n'
    path.write_text(text)
    return path


def run_with_table(build, path) -> subprocess.CompletedProcess:
    return launch(build, COLLTUNE_TABLE=str(path), COLLTUNE_LOG="debug")


def refused(p: subprocess.CompletedProcess) -> str:
    ok(p, "a refused table")
    lines = [ln for ln in p.stderr.splitlines() if "COLLTUNE_TABLE not used" in ln]
    assert len(lines) == 1, p.stderr[-2000:]  # said once, not once per rank
    assert set(re.findall(r"-> (\w+)", p.stderr)) == {"native"}, p.stderr[-2000:]
    return lines[0]


@pytest.mark.parametrize(("change", "said"), BAD_ENTRIES,
                         ids=[json.dumps(c) for c, _ in BAD_ENTRIES])
def test_a_bad_table_entry_is_named_exactly(build, tmp_path, change, said):
    entries = [dict(GOOD, size_bytes=8 << i) for i in range(3)] + [{**GOOD, **change}]
    line = refused(run_with_table(build, write_table(tmp_path, table(build, entries))))
    assert said in line, line


def test_a_good_table_is_followed(build, tmp_path):
    entries = [GOOD, dict(GOOD, size_bytes=1 << 20, algorithm="pipeline", segsize=4096)]
    p = run_with_table(build, write_table(tmp_path, table(build, entries)))
    ok(p, "good table")
    assert "COLLTUNE_TABLE not used" not in p.stderr
    assert "-> chain" in p.stderr and "-> pipeline segsize 4096" in p.stderr


@pytest.mark.parametrize(("text", "said"), [
    ("[" * 40 + "]" * 40, "is not valid JSON: line 1: nested deeper than 32 levels"),
    ('{"schema": "colltune-table",\n "entries": [1, 2,]\n}', "line 2: a value was expected"),
    ('{"schema": "colltune-table"} trailing', "line 1: text follows the end of the document"),
    ('{"schema": "colltune-table",\n"x": NaN}', "line 2: a value was expected"),
    ('{"schema": "colltune-table",\n"x": 0x10}', "line 2: a value was expected"),
    ('{"schema": "colltune-table",\n\n"x": "no end', "line 3: a string has no end"),
])
def test_malformed_json_is_refused_with_where(build, tmp_path, text, said):
    line = refused(run_with_table(build, write_table(tmp_path, None, text)))
    assert said in line, line


def test_segment_sizes_take_the_units_bench_takes(build):
    for text, value in (("4K", 4096), ("4kib", 4096), ("1M", 1 << 20), ("1G", 1 << 30),
                        ("512B", 512), ("100", 100)):
        p = launch(build, COLLTUNE_BCAST_ALGORITHM="pipeline", COLLTUNE_SEGSIZE=text,
                   COLLTUNE_LOG="debug")
        ok(p, text)
        assert set(SEGMENTED.findall(p.stderr)) == {str(value)}, (text, p.stderr[-1000:])


@pytest.mark.parametrize(("text", "said"), [
    ("12q", "COLLTUNE_SEGSIZE='12q' is not a size: a whole number of bytes with an optional "
            "unit B, K/KiB, M/MiB, G/GiB (e.g. 64K)"),
    ("-5", "COLLTUNE_SEGSIZE='-5' is not a size"),
    ("0", "COLLTUNE_SEGSIZE='0' is out of range: allowed 1 B to 1 GiB"),
    ("2G", "COLLTUNE_SEGSIZE='2G' is out of range: allowed 1 B to 1 GiB"),
    ("99999999999999999999999", "is out of range: allowed 1 B to 1 GiB"),
])
def test_a_bad_segment_size_is_refused_not_clamped(build, text, said):
    p = launch(build, COLLTUNE_BCAST_ALGORITHM="pipeline", COLLTUNE_SEGSIZE=text)
    assert p.returncode != 0
    assert said in p.stderr, p.stderr[-2000:]
    said_once(p.stderr, said)


@pytest.mark.parametrize(("op", "article"), [("allreduce", "an"), ("bcast", "a")])
def test_an_unknown_algorithm_is_said_once_per_rank_in_good_english(build, op, article):
    p = launch(build, **{f"COLLTUNE_{op.upper()}_ALGORITHM": "nope"})
    assert p.returncode != 0
    valid = ", ".join(["native", *algorithms(op)])
    msg = (f"COLLTUNE_{op.upper()}_ALGORITHM='nope' is not {article} {op} algorithm; "
           f"valid: {valid}")
    said_once(p.stderr, msg)


def said_once(stderr: str, msg: str) -> None:
    """Under the default fatal error handler MPI itself prints the message as it aborts
    (MPICH: `Abort(...): Fatal error in ...: colltune: ...`, Open MPI: `*** colltune: ...`),
    so the drop-in does not print it too: at most once per rank (Open MPI may stop the other
    ranks before they get there), never as a line of its own beside MPI's."""
    assert 1 <= stderr.count(msg) <= NRANKS, stderr[-3000:]
    assert not [ln for ln in stderr.splitlines() if ln.startswith("colltune: ") and msg in ln]


NONCOMMUTATIVE = r"""
#include <mpi.h>
#include <stdio.h>
/* a o b = b - a: not commutative; both reductions are then checked against the order */
static void sub(void *in, void *inout, int *len, MPI_Datatype *t)
{
    for (int i = 0; i < *len; i++)
        ((double *)inout)[i] = ((double *)inout)[i] - ((double *)in)[i];
    (void)t;
}
int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int rank, size, bad = 0;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    MPI_Op op;
    MPI_Op_create(sub, 0, &op);
    for (int k = 0; k < 3; k++) {
        double x[4] = {rank + 1, rank + 1, rank + 1, rank + 1}, y[4];
        MPI_Allreduce(x, y, 4, MPI_DOUBLE, op, MPI_COMM_WORLD);
        double want = 1;  /* ((1 o 2) o 3) ... with a o b = b - a */
        for (int r = 1; r < size; r++)
            want = (r + 1) - want;
        bad |= y[0] != want;
        MPI_Allreduce(x, y, 4, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
    }
    MPI_Op_free(&op);
    printf("rank %d %s\n", rank, bad ? "WRONG" : "right");
    MPI_Finalize();
    return 0;
}
"""


@pytest.mark.parametrize("alg", ["ring", "rabenseifner"])
def test_a_commutative_only_algorithm_says_what_ran_instead(build, tmp_path, alg):
    mpicc = os.path.join(os.path.dirname(build.mpiexec), "mpicc")
    src, exe = tmp_path / "noncomm.c", tmp_path / "noncomm"
    src.write_text(NONCOMMUTATIVE)
    subprocess.run([mpicc, "-o", str(exe), str(src)], check=True)
    e = {k: v for k, v in os.environ.items() if not k.startswith("COLLTUNE_")}
    e.update(build.launch_env(NRANKS), COLLTUNE_ALLREDUCE_ALGORITHM=alg, COLLTUNE_LOG="debug",
             LD_PRELOAD=str(build.tool("libcolltune_pmpi.so")))
    cmd = build.launch_command(NRANKS, [str(exe)], bind=False,
                               export=("COLLTUNE_ALLREDUCE_ALGORITHM", "COLLTUNE_LOG",
                                       "LD_PRELOAD"))
    p = subprocess.run(cmd, env=e, capture_output=True, text=True, timeout=300)
    assert p.returncode == 0 and p.stdout.count("right") == NRANKS, (p.stdout, p.stderr[-2000:])
    said = (f"colltune: COLLTUNE_ALLREDUCE_ALGORITHM={alg} needs a commutative operation and "
            "this MPI_Allreduce has one that is not: native MPI_Allreduce ran instead")
    assert p.stderr.count(said) == NRANKS, p.stderr[-3000:]  # once per process, not per call
    # the non-commutative calls ran native, the MPI_SUM ones the forced algorithm
    assert routed(p.stderr, "allreduce") == {"native": 3 * NRANKS, alg: 3 * NRANKS}
