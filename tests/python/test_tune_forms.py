"""The tuner covers every operation and call form the drop-in serves (issue 38): `colltune
tune --forms blocking,nonblocking,persistent` over scan, allgatherv and bcast at 2 ranks (one
size, a few iterations: a run to check the plumbing, not a tuning) writes entries "scan",
"iscan", "scan_init", ... that the drop-in then looks up: tests/c/plain_summary.c's calls
under COLLTUNE_LOG=debug run what the table says for each form (MPI_Scan, MPI_Allgatherv,
MPI_Ibcast, MPI_Bcast_init), and its finalize summary counts them. `tune_points` (what
`colltune app` calls) tunes exactly a given list of points, in order, within a budget."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest
from colltune.core.mpi import MPIBuild, MPIError
from colltune.tune.table import load, validate
from colltune.tune.tune import tune_points
from conftest import run_plain
from test_summary import DEBUG  # rank 0's debug lines, read one way for both tests

NRANKS = 2


@pytest.fixture(scope="module")
def build() -> MPIBuild:
    b = MPIBuild.select()
    try:
        b.tool("tests/c/plain_summary")
    except MPIError:
        pytest.skip("plain_summary was not built")
    return b


def ran(stderr: str, call: str) -> set[tuple[str, str]]:
    return {(alg, why) for name, alg, _, why in DEBUG.findall(stderr) if name == call}


def test_tune_every_form_and_the_drop_in_looks_them_up(build, tmp_path, child_env):
    table = tmp_path / "t.json"
    env = child_env(COLLTUNE_DB=str(tmp_path / "ct.db"))
    p = subprocess.run([sys.executable, "-m", "colltune.cli", "tune", "--strategy", "exhaustive",
                        "--ops", "scan,allgatherv,bcast", "--forms",
                        "blocking,nonblocking,persistent", "--ranks", str(NRANKS), "--sizes",
                        "1K", "--iters", "2", "--confirm", "0", "--no-record", "-o", str(table)],
                       env=env, cwd=tmp_path, capture_output=True, text=True, timeout=600)
    assert p.returncode == 0, p.stderr[-3000:]
    doc = load(str(table))
    assert validate(doc) == []
    entries = {e["op"]: e for e in doc["entries"]}
    assert set(entries) == {f"{pre}{op}{post}" for op in ("scan", "allgatherv", "bcast")
                            for pre, post in (("", ""), ("i", ""), ("", "_init"))}
    registry = build.registry()
    for name, e in entries.items():
        op = name.removeprefix("i") if name.startswith("i") else name.removesuffix("_init")
        algs = {a["name"]: a for a in registry if a["coll"] == op}
        assert e["algorithm"] in algs, e
        if name != op:  # a started form never gets an algorithm that serves blocking calls only
            assert not algs[e["algorithm"]].get("blocking_only"), e

    q = run_plain(build, "plain_summary", NRANKS, export=("LD_PRELOAD", "COLLTUNE_TABLE",
                                                          "COLLTUNE_LOG"),
                  COLLTUNE_TABLE=str(table), COLLTUNE_LOG="debug")
    assert q.returncode == 0 and "rank 0 ok" in q.stdout, q.stderr[-3000:]
    want = {"Scan": entries["scan"], "Allgatherv": entries["allgatherv"],
            "Ibcast": entries["ibcast"]}
    if "persistent forms: yes" in q.stdout:
        want["Bcast_init"] = entries["bcast_init"]
    for call, e in want.items():
        expect = (("native", "the table says native") if e["algorithm"] == "native"
                  else (e["algorithm"], ""))
        assert ran(q.stderr, call) == {expect}, (call, e, q.stderr[-3000:])
    # the finalize summary counts the scans as the table chose
    scan = entries["scan"]["algorithm"]
    line = "3 native (the table says native)" if scan == "native" else f"3 {scan}"
    assert f"colltune: scan 3 calls: {line}" in q.stderr, q.stderr[-2000:]


def test_tune_points_in_order_within_a_budget(build, tmp_path):
    out = tmp_path / "points.json"
    points = [{"op": "exscan", "form": "persistent", "comm_size": NRANKS, "bytes": 64},
              {"op": "barrier", "form": "nonblocking", "comm_size": NRANKS, "bytes": 0},
              {"op": "reduce_scatter", "form": "blocking", "comm_size": NRANKS, "bytes": 64}]
    doc, status = tune_points(build, points, output=str(out), strategy="exhaustive", iters=2,
                              confirm=0)
    assert status == "complete"
    assert [(e["op"], e["ranks"], e["size_bytes"]) for e in doc["entries"]] == [
        ("exscan_init", NRANKS, 64), ("ibarrier", NRANKS, 0), ("reduce_scatter", NRANKS, 64)]
    assert json.loads(out.read_text())["entries"] == doc["entries"]
    # a spent budget starts no point, and says so
    doc, status = tune_points(build, points[:1], output=str(tmp_path / "none.json"),
                              strategy="exhaustive", budget_s=0)
    assert status == "budget" and doc["entries"] == []
    with pytest.raises(ValueError, match="form one of blocking, nonblocking, persistent"):
        tune_points(build, [{"op": "bcast", "form": "eager", "comm_size": 2, "bytes": 8}],
                    output=str(tmp_path / "bad.json"))
