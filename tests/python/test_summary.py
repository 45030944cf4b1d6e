"""The drop-in's finalize summary (issue 38, must-show 2): with a table, with a forced
algorithm and with calls refused to native, rank 0's summary at MPI_Finalize says per
operation as many calls per algorithm and per native reason as COLLTUNE_LOG=debug's
per-call lines of rank 0 (tests/c/plain_summary.c, a known mix of blocking, non-blocking
and persistent calls; a persistent collective is a call each time it is started, as the
profile counts it: its MPI_Start lines are counted, not its init's); COLLTUNE_LOG=quiet
says nothing; an unknown COLLTUNE_LOG stops the program with one line naming the allowed
values."""

from __future__ import annotations

import json
import os
import re
import subprocess
from collections import Counter
from pathlib import Path

import pytest
from colltune.core.mpi import MPIBuild, MPIError, describe_library
from colltune.tune.tune import build_library
from conftest import run_plain

NRANKS = 2
# rank 0's per-call debug lines (pmpi.c, pmpi_v.c, pmpi_persistent.c): the call, what ran,
# its segment size, and why a native call went native. Each is one write, yet the launcher
# may forward two ranks' output run together: records are found, not lines split.
END = r"(?=\n|colltune:|$)"
DEBUG = re.compile(r"colltune: rank 0/\d+ MPI_(\w+?) -?\d+ bytes -> ([a-z0-9_]+)"
                   r"(?: segsize (\d+))?(?: \(([^)]*)\))?" + END)
# A start of a persistent collective: one call (the init's own line says the plan).
START = re.compile(r"colltune: rank 0/\d+ MPI_Start \((\w+?)\) -?\d+ bytes -> ([a-z0-9_]+)"
                   r"(?: segsize (\d+))?(?: \(([^)]*)\))?" + END)
# An init's line: MPI_Bcast_init ... -> what its starts will run.
INIT = re.compile(r"colltune: rank 0/\d+ MPI_\w+_init -?\d+ bytes -> ")
OPERATION = re.compile(r"colltune: ([a-z_]+) (\d+) calls?: (.*?)" + END)
PART = re.compile(r"(\d+) ([a-z0-9_]+)(?: \(([^)]*)\))?")


@pytest.fixture(scope="module")
def build() -> MPIBuild:
    b = MPIBuild.select()
    try:
        b.tool("tests/c/plain_summary")
    except MPIError:
        pytest.skip("plain_summary was not built")
    return b


def launch(build: MPIBuild, **env: str) -> subprocess.CompletedProcess:
    return run_plain(build, "plain_summary", NRANKS, export=("LD_PRELOAD", *env), **env)


def operation(call: str) -> str:
    """MPI_Ibcast, MPI_Bcast, MPI_Bcast_init -> bcast (the debug line's call name)."""
    if call.endswith("_init"):
        call = call[:-5]
    elif call[0] == "I" and call[1].islower():
        call = call[1:]
    return call.lower()


def from_debug(stderr: str) -> dict[str, Counter]:
    """Rank 0's calls from its debug lines: a persistent collective's starts, not its init."""
    out: dict[str, Counter] = {}
    calls = [m for m in DEBUG.findall(stderr) if not m[0].endswith("_init")]
    for call, ran, seg, why in calls + START.findall(stderr):
        key = f"native ({why})" if ran == "native" else ran + (f" (segsize {seg})" if seg else "")
        out.setdefault(operation(call), Counter())[key] += 1
    return out


def from_summary(stderr: str) -> dict[str, Counter]:
    out: dict[str, Counter] = {}
    for op, total, parts in OPERATION.findall(stderr):
        got = Counter()
        for n, what, detail in PART.findall(parts):
            got[what + (f" ({detail})" if detail else "")] += int(n)
        assert sum(got.values()) == int(total), (op, total, parts)
        out[op] = got
    return out


def same_counts(p: subprocess.CompletedProcess) -> dict[str, Counter]:
    assert p.returncode == 0 and "rank 0 ok" in p.stdout, (p.stdout, p.stderr[-3000:])
    summary, debug = from_summary(p.stderr), from_debug(p.stderr)
    assert summary == debug, (summary, debug, p.stderr[-4000:])
    return summary


def persistent(p: subprocess.CompletedProcess) -> int:
    """1 where the program made its MPI_Bcast_init (an MPI with persistent collectives)."""
    return int("persistent forms: yes" in p.stdout)


STARTS = 3  # plain_summary starts its MPI_Bcast_init 3 times


def table(build: MPIBuild, path: Path, entries: list[dict]) -> Path:
    model = next((line.split(":", 1)[1].strip()
                  for line in Path("/proc/cpuinfo").read_text().splitlines()
                  if line.startswith("model name")), "")
    doc = {"schema": "colltune-table", "schema_version": 1, "colltune_version": "0.1.0",
           "created_at": "2026-11-28T00:00:00+0000",
           "machine": {"hostname": "test", "cpu_model": model, "logical_cores": os.cpu_count()},
           "mpi": {"build": build.name, **describe_library(build_library(build))},
           "strategy": "test", "entries": entries}
    path.write_text(json.dumps(doc))
    return path


def entry(op: str, size: int, alg: str, segsize: int = 0) -> dict:
    return {"op": op, "ranks": NRANKS, "size_bytes": size, "algorithm": alg,
            "segsize": segsize}


def test_table_summary_matches_the_debug_lines(build, tmp_path):
    """Served by the table per algorithm and segment size, the persistent entry looked up
    for MPI_Bcast_init, native where the table says so, where it has no entry, where sizes
    differ between ranks (gatherv) and where the engine refuses a non-commutative op."""
    t = table(build, tmp_path / "t.json", [
        entry("allreduce", 8, "ring"),            # the non-commutative op: refused
        entry("bcast", 1024, "binomial", 512),
        entry("bcast", 65536, "native"),
        entry("ibcast", 1024, "binary"),
        entry("bcast_init", 1024, "chain", 256),
        entry("scan", 8, "recursive_doubling"),
    ])
    p = launch(build, COLLTUNE_TABLE=str(t), COLLTUNE_LOG="debug")
    got = same_counts(p)
    assert f"colltune: table {t} (" in p.stderr and f", {NRANKS} ranks)" in p.stderr
    assert got["allreduce"] == Counter({"ring": 20, "native (non-commutative op)": 4})
    assert got["bcast"] == Counter({"binomial (segsize 512)": 10, "binary": 5,
                                    "native (the table says native)": 6,
                                    **({"chain (segsize 256)": STARTS} if persistent(p) else {})})
    assert got["scan"] == Counter({"recursive_doubling": 3})
    assert got["allgatherv"] == Counter({"native (not in the table)": 3})
    assert got["gatherv"] == Counter({"native (sizes differ between ranks)": 2})


def test_forced_summary_matches_the_debug_lines(build):
    """A forced algorithm with its segment size serves every form (shm: blocking,
    non-blocking and persistent calls); the calls it cannot take (a non-commutative op for
    ring) and the operations not forced go native, each with its reason."""
    p = launch(build, COLLTUNE_BCAST_ALGORITHM="shm", COLLTUNE_SEGSIZE="4096",
               COLLTUNE_ALLREDUCE_ALGORITHM="ring", COLLTUNE_LOG="debug")
    got = same_counts(p)
    assert "colltune: forced COLLTUNE_BCAST_ALGORITHM=shm" in p.stderr
    assert got["bcast"] == Counter({"shm (segsize 4096)": 16 + 5 + STARTS * persistent(p)})
    assert got["allreduce"] == Counter({"ring": 20, "native (non-commutative op)": 4})
    assert got["scan"] == Counter({"native (not forced, no table)": 3})


def test_persistent_starts_are_calls(build, tmp_path):
    """One persistent plan started 3 times is 3 calls in the summary and 3 MPI_Start debug
    lines, whether colltune runs it (forced) or the library does (the table has no bcast
    entry: the persistent lookup falls back to the blocking one); the init has one line of
    its own, which the summary does not count."""
    p = launch(build, COLLTUNE_BCAST_ALGORITHM="binomial", COLLTUNE_LOG="debug")
    if not persistent(p):
        pytest.skip("this MPI has no persistent collectives")
    same_counts(p)
    assert len(INIT.findall(p.stderr)) == 1, p.stderr[-3000:]
    assert [m[:2] for m in START.findall(p.stderr)] == [("Bcast_init", "binomial")] * STARTS
    t = table(build, tmp_path / "t.json", [entry("allreduce", 8, "ring")])
    q = launch(build, COLLTUNE_TABLE=str(t), COLLTUNE_LOG="debug")
    got = same_counts(q)
    assert len(INIT.findall(q.stderr)) == 1, q.stderr[-3000:]
    assert [m[1:4] for m in START.findall(q.stderr)] == [
        ("native", "", "not in the table")] * STARTS, q.stderr[-3000:]
    assert got["bcast"] == Counter({"native (not in the table)": 16 + 5 + STARTS})


def test_summary_without_debug_and_quiet(build):
    """The summary does not need the debug log (the same counts without it), and
    COLLTUNE_LOG=quiet silences it."""
    p = launch(build, COLLTUNE_BCAST_ALGORITHM="binomial")
    assert p.returncode == 0, p.stderr[-2000:]
    got = from_summary(p.stderr)
    assert got["bcast"] == Counter({"binomial": 16 + 5 + STARTS * persistent(p)})
    assert got["scan"] == Counter({"native (not forced, no table)": 3})
    q = launch(build, COLLTUNE_BCAST_ALGORITHM="binomial", COLLTUNE_LOG="quiet")
    assert q.returncode == 0 and "rank 0 ok" in q.stdout, q.stderr[-2000:]
    assert "colltune:" not in q.stderr, q.stderr


def test_an_unknown_log_level_stops_the_program(build):
    p = launch(build, COLLTUNE_LOG="bogus")
    assert p.returncode != 0 and "ok" not in p.stdout, (p.stdout, p.stderr)
    line = ("colltune: COLLTUNE_LOG='bogus' is not a log level; allowed: quiet, warn, debug "
            "(or unset for the default)")
    assert p.stderr.count(line) == 1, p.stderr
