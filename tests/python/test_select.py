"""One choice for every door (issue 35, must-show 4): the drop-in's MPI_Ibcast and the public
ct_ibcast, under the same table and environment, start the same algorithm with the same
segment size, split and progress thread (the engine's COLLTUNE_LOG=debug line, written where
both arrive); and a bad COLLTUNE_<OP>_ALGORITHM gives the same message for the blocking,
non-blocking and persistent forms and the public API.

The table has a non-blocking entry (ibcast: knomial, split 1) and a blocking one (bcast:
chain): before the select layer the public ct_ibcast took the blocking entry and no split."""

from __future__ import annotations

import json
import os
import re
from pathlib import Path

import pytest
from colltune.core.mpi import MPIBuild, describe_library
from colltune.tune.tune import build_library
from conftest import run_plain

STARTED = re.compile(r"rank (\d+)/\d+ bcast started: (.*)$", re.M)
FORM = re.compile(r"rank (\d+) form (\S+): (.*)$", re.M)
EXPORT = ("LD_PRELOAD", "COLLTUNE_LOG", "COLLTUNE_TABLE", "COLLTUNE_BCAST_ALGORITHM",
          "COLLTUNE_BARRIER_ALGORITHM", "COLLTUNE_SEGSIZE", "COLLTUNE_SPLIT",
          "COLLTUNE_PROGRESS")
NRANKS = (2, 3)


@pytest.fixture(scope="module")
def build() -> MPIBuild:
    return MPIBuild.select()


def table(build: MPIBuild, nranks: int, path: Path) -> str:
    model = next((line.split(":", 1)[1].strip()
                  for line in Path("/proc/cpuinfo").read_text().splitlines()
                  if line.startswith("model name")), "")
    entry = {"ranks": nranks, "size_bytes": 1024, "segsize": 0, "time_us": 1.0,
             "native_us": 2.0, "evaluations": 1}
    doc = {"schema": "colltune-table", "schema_version": 1, "colltune_version": "0.1.0",
           "created_at": "2026-11-27T00:00:00+0000",
           "machine": {"hostname": "test", "cpu_model": model, "logical_cores": os.cpu_count()},
           "mpi": {"build": build.name,
                   **describe_library(build_library(build))},
           "strategy": "test",
           "entries": [{**entry, "op": "bcast", "algorithm": "chain"},
                       {**entry, "op": "ibcast", "algorithm": "knomial", "segsize": 256,
                        "split": 1, "progress": "none"}]}
    path.write_text(json.dumps(doc))
    return str(path)


def started(build: MPIBuild, nranks: int, **env: str) -> dict[int, list[str]]:
    p = run_plain(build, "plain_select", nranks, "ibcast", "1000", export=EXPORT,
                  timeout=120, COLLTUNE_LOG="debug", COLLTUNE_PROGRESS="off", **env)
    assert p.returncode == 0, p.stderr[-3000:]
    assert p.stdout.count(" ok") == nranks and "WRONG" not in p.stdout, p.stdout
    lines: dict[int, list[str]] = {r: [] for r in range(nranks)}
    for rank, what in STARTED.findall(p.stderr):
        lines[int(rank)].append(what.strip())
    return lines


@pytest.mark.parametrize("nranks", NRANKS)
def test_table_gives_both_doors_the_non_blocking_entry(build, nranks, tmp_path):
    lines = started(build, nranks, COLLTUNE_TABLE=table(build, nranks, tmp_path / "t.json"))
    for rank, got in lines.items():
        assert got == ["knomial segsize 256 split 1 thread no"] * 2, (rank, got)


@pytest.mark.parametrize("nranks", NRANKS)
def test_environment_gives_both_doors_the_forced_algorithm(build, nranks):
    lines = started(build, nranks, COLLTUNE_BCAST_ALGORITHM="binary", COLLTUNE_SEGSIZE="128",
                    COLLTUNE_SPLIT="2")
    for rank, got in lines.items():
        assert got == ["binary segsize 128 split 2 thread no"] * 2, (rank, got)


def test_nothing_set_both_doors_native(build):
    lines = started(build, 2)
    assert lines == {0: [], 1: []}


def test_bad_algorithm_same_message_for_every_form(build):
    p = run_plain(build, "plain_select", 2, "bad", export=EXPORT, timeout=120,
                  COLLTUNE_BCAST_ALGORITHM="nope", COLLTUNE_BARRIER_ALGORITHM="nada")
    assert p.returncode == 0, p.stderr[-3000:]
    forms: dict[str, set[str]] = {}
    for _, form, text in FORM.findall(p.stdout):
        forms.setdefault(form, set()).add(text)
    bcast = {"MPI_Bcast", "MPI_Ibcast", "MPI_Bcast_init", "ct_bcast", "ct_ibcast"}
    barrier = {"MPI_Barrier", "MPI_Ibarrier", "MPI_Barrier_init", "ct_barrier", "ct_ibarrier"}
    assert bcast | barrier <= set(forms), p.stdout
    texts = {t for f in bcast for t in forms[f]}
    assert len(texts) == 1, texts
    assert texts.pop().startswith("colltune: COLLTUNE_BCAST_ALGORITHM='nope' is not a bcast "
                                  "algorithm; valid: native,")
    texts = {t for f in barrier for t in forms[f]}
    assert len(texts) == 1, texts
    assert texts.pop().startswith("colltune: COLLTUNE_BARRIER_ALGORITHM='nada' is not a "
                                  "barrier algorithm; valid: native,")
