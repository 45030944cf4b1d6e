"""bench/table_bench.py's bookkeeping, without MPI: a choice shared by several labels is
measured once per round and the labels get the same cell; the summary compares each table
with its own MPI's native and only same-MPI tables with exhaustive."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def tb():
    spec = importlib.util.spec_from_file_location("table_bench", ROOT / "bench" / "table_bench.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


class FakeServer:
    """Times by (algorithm, segsize, size), each call a little slower: shared cells must be
    the same calls, not equal by luck."""

    calls: list[tuple] = []

    def __init__(self, build, op, ranks, max_size):
        self.last: dict = {}

    def evaluate(self, alg, seg, size, iters):
        FakeServer.calls.append((alg, seg, size))
        t = {"native": 10.0, "ring": 8.0, "bruck": 12.0}[alg] + 0.01 * len(FakeServer.calls)
        self.last = {"median_us": t, "min_us": t - 1, "max_us": t + 1}
        return t

    def close(self):
        pass


class Bar:
    def update(self, done, total):
        assert done <= total


def test_shared_choices_are_measured_once(tb, monkeypatch):
    monkeypatch.setattr(tb, "Server", FakeServer)
    FakeServer.calls = []
    sizes = {8: {"native-mpich": ("native", 0), "model": ("native", 0), "smgd": ("ring", 0),
                 "exhaustive": ("ring", 0)},
             64: {"native-mpich": ("native", 0), "model": ("bruck", 0), "smgd": ("ring", 0),
                  "exhaustive": ("ring", 0)}}
    cells = tb.measure(None, "allgather", 2, sizes, rounds=2, iters=5, bar=Bar(),
                       done_before=0, total=2 * (2 + 3))
    assert len(FakeServer.calls) == 2 * (2 + 3)  # distinct choices per size, per round
    assert sorted(set(FakeServer.calls)) == sorted(
        {("native", 0, 8), ("ring", 0, 8), ("native", 0, 64), ("bruck", 0, 64),
         ("ring", 0, 64)})
    assert cells["8"]["model"] == {**cells["8"]["native-mpich"], "algorithm": "native"}
    assert cells["8"]["smgd"]["median_us"] == cells["8"]["exhaustive"]["median_us"]
    assert cells["64"]["model"]["algorithm"] == "bruck"
    assert cells["64"]["model"]["median_us"] != cells["64"]["native-mpich"]["median_us"]


def table(build, strategy):
    return {"mpi": {"build": build}, "strategy": strategy, "elapsed_s": 10.0,
            "measurements": 100}


def test_summary_against_own_native_and_same_mpi_exhaustive(tb):
    def cell(alg, t):
        return {"algorithm": alg, "segsize": 0, "median_us": t, "min_us": t, "max_us": t}

    doc = {"groups": {
        "bcast@mpich": {"op": "bcast", "mpi": "mpich", "cells": {
            "8": {"native-mpich": cell("native", 2.0), "model": cell("chain", 1.5),
                  "exhaustive": cell("chain", 1.5)},
            "64": {"native-mpich": cell("native", 4.0), "model": cell("chain", 4.4),
                   "exhaustive": cell("binary", 4.0)}}},
        "bcast@openmpi": {"op": "bcast", "mpi": "openmpi", "cells": {
            "8": {"native-openmpi": cell("native", 1.0), "model-ompi": cell("native", 1.0)},
            "64": {"native-openmpi": cell("native", 1.0), "model-ompi": cell("knomial", 0.8)}}},
    }}
    tables = {"model": table("mpich", "model"), "model-ompi": table("openmpi", "model"),
              "exhaustive": table("mpich", "exhaustive")}
    text = tb.summarise(doc, tables)
    # model over MPICH: 1.5/2.0 (faster by 1.33x) and 4.4/4.0 (10 % slower) against MPICH
    assert "against native mpich alone: within 5% at 1 of 2 points, at least 1.2x faster at 1;" \
           " worst 1.10, best 0.75" in text
    # against the best native (Open MPI's 1.0 us) it is slower at both points
    assert "- model (model, over mpich" in text and "within 5% of the best native at 0 of 2" in text
    assert "against native openmpi alone: within 5% at 2 of 2 points, at least 1.2x faster at 1" \
        in text
    assert "- model vs exhaustive: within 5% at 1 of 2 points (50%)" in text
    assert "model-ompi vs exhaustive" not in text  # another MPI: not comparable
