"""`colltune overlap`: its rank-count grammar, its errors, and a run on 2 ranks that records
every variant (structure only: timings on a 2-core machine say nothing)."""

from __future__ import annotations

import json
import subprocess
import sys

from colltune.nbc.overlap import ns_of


def colltune(*args, env, cwd, timeout=600):
    return subprocess.run([sys.executable, "-m", "colltune.cli", *args], env=env, cwd=cwd,
                          capture_output=True, text=True, timeout=timeout)


def test_rank_counts():
    assert ns_of(None, 16) == list(range(8, 16))
    assert ns_of("8-10,12", 16) == [8, 9, 10, 12]
    assert ns_of(None, 3) == [2]


def test_overlap_runs_every_variant(tmp_path, child_env):
    env = child_env(COLLTUNE_DB=str(tmp_path / "ct.db"))
    p = colltune("overlap", "--nproc", "2", "--ns", "2", "--bytes", "16K", "--iters", "2",
                 "--ops", "bcast,reduce", "--splits", "0,1", "--peers", "",
                 "-o", str(tmp_path / "o.json"), "--plots", str(tmp_path / "plots"),
                 env=env, cwd=tmp_path)
    assert p.returncode == 0, p.stderr
    doc = json.loads((tmp_path / "o.json").read_text())
    assert doc["complete"] and [s["op"] for s in doc["studies"]] == ["bcast", "reduce"]
    for st in doc["studies"]:
        (row,) = st["rows"]
        want = {"blocking", "S0", "S1", "Sauto", f"native {doc['mpi']}"}
        if doc["mpi"] == "mpich":
            want.add("native mpich async")
        assert set(row["results"]) == want
        assert all(0 <= r["overlap_pct"] <= 100 and r["total_us"] > 0
                   for r in row["results"].values())
        assert row["model_s"] >= 0 and len(st["plots"]) == 2
    assert "recorded as run" in p.stdout


def test_overlap_refuses_bad_arguments(tmp_path, child_env):
    env = child_env(COLLTUNE_DB=str(tmp_path / "ct.db"))
    p = colltune("overlap", "--nproc", "1", env=env, cwd=tmp_path)
    assert p.returncode == 2 and "N <= Nproc" in p.stderr
    p = colltune("overlap", "--nproc", "2", "--ns", "2", "--ops", "alltoall", "--peers", "",
                 "--iters", "1", "--no-record", env=env, cwd=tmp_path)
    assert p.returncode == 1 and "unknown operation alltoall" in p.stderr
