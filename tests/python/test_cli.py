"""The measuring verbs end to end, under the MPI that `make test` built (COLLTUNE_MPI, default
mpich): registry and docs in step, `bench` and `run` recorded in a real store, and an
interrupted bench that keeps what it measured."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from colltune.mpi import MPIBuild, project_root
from colltune.store import Store

ROOT = project_root()


@pytest.fixture(scope="module")
def build() -> MPIBuild:
    return MPIBuild.select()


@pytest.fixture()
def env(tmp_path) -> dict:
    e = dict(os.environ)
    e["COLLTUNE_DB"] = str(tmp_path / "ct.db")
    # Oversubscribed MPICH crawls unless its progress loop yields (no effect on results).
    e["MPIR_CVAR_CH4_PROGRESS_THROTTLE"] = "1"
    e["MPIR_CVAR_CH4_PROGRESS_THROTTLE_NO_PROGRESS_COUNT"] = "4"
    return e


def colltune(*args: str, env: dict, timeout: int = 600) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "colltune.cli", *args], env=env,
                          capture_output=True, text=True, timeout=timeout, cwd=env.get("PWD"))


def test_algorithms_doc_matches_registry(build):
    from colltune.commands import registry_markdown

    table = registry_markdown(build.registry())
    assert table in (ROOT / "docs" / "ALGORITHMS.md").read_text(), (
        "docs/ALGORITHMS.md is out of date: regenerate with `colltune algorithms --markdown`")


def test_one_file_per_algorithm(build):
    reg = build.registry()
    for a in reg:
        if a["native"]:
            continue
        path = ROOT / "src" / "coll" / f"{a['coll']}_{a['name']}.c"
        assert path.is_file(), f"{a['coll']}/{a['name']} has no {path.name}"
    assert {a["coll"] for a in reg} == {"bcast", "reduce", "allreduce"}


def test_bench_records_every_algorithm(tmp_path, env, build):
    out = tmp_path / "bench.json"
    p = colltune("bench", "--op", "allreduce", "-n", "3", "--max", "4K", "--iters", "3",
                 "--json", str(out), env=env)
    assert p.returncode == 0, p.stderr
    doc = json.loads(out.read_text())
    algs = {a["name"] for a in build.registry() if a["coll"] == "allreduce"}
    sizes = [8 << i for i in range(10)]  # 8 B .. 4 KiB
    got = {(r["algorithm"], r["size"]) for r in doc["results"]}
    assert got == {(a, s) for a in algs for s in sizes}
    for r in doc["results"]:
        assert len(r["samples_us"]) == 3 and r["min_us"] <= r["avg_us"] <= r["max_us"]
        assert r["check"] == ("not checked" if r["algorithm"] == "native" else "ok")
    assert doc["ranks"] == 3 and doc["mpi"]["implementation"] in ("MPICH", "Open MPI")
    # The comparison table names every algorithm and ends each row with the ratio.
    assert all(a in p.stdout for a in algs) and "ct/native" in p.stdout
    with Store.open(env["COLLTUNE_DB"]) as st:
        (run,) = st.runs()
        assert run["status"] == "complete" and run["verb"] == "bench"
        full = st.run(run["id"])
        assert len(full["benches"][0]["results"]) == len(doc["results"])


def test_bench_rejects_unknown_algorithm(env):
    p = colltune("bench", "--op", "bcast", "-n", "2", "--algs", "binomial,nope", "--max", "8",
                 "--no-record", env=env)
    assert p.returncode != 0
    assert "unknown bcast algorithm 'nope'" in p.stdout + p.stderr


def test_run_ends_with_report_of_its_own_benchmark(tmp_path, env):
    report = tmp_path / "report.html"
    p = colltune("run", "-n", "2", "--max", "1K", "--iters", "3", "-o", str(report), env=env)
    assert p.returncode == 0, p.stderr
    last = p.stdout.strip().splitlines()[-1]
    assert last == f"report: {report.resolve()}"
    html = report.read_text()
    assert html.count("<svg") >= 2 and "bcast" in html and "allreduce" in html
    with Store.open(env["COLLTUNE_DB"]) as st:
        (run,) = st.runs()
        assert run["status"] == "complete"
        assert [b["op"] for b in st.run(run["id"])["benches"]] == ["bcast", "allreduce"]


def test_interrupted_bench_keeps_what_it_measured(tmp_path, env):
    proc = subprocess.Popen(
        [sys.executable, "-m", "colltune.cli", "bench", "--op", "bcast", "-n", "2",
         "--max", "4M", "--iters", "300"],
        env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    # Wait until some results are in, then interrupt as a user would.
    deadline = time.monotonic() + 120
    for line in proc.stderr:
        m = re.search(r"\] (\d+)/(\d+)", line)
        if m and int(m.group(1)) >= 10 or time.monotonic() > deadline:
            break
    proc.send_signal(signal.SIGINT)
    proc.communicate(timeout=120)
    assert proc.returncode == 130
    with Store.open(env["COLLTUNE_DB"]) as st:
        (run,) = st.runs()
        assert run["status"] == "interrupted"
        results = st.run(run["id"])["benches"][0]["results"]
        assert 10 <= len(results) < 9 * 20  # some, not all, of algorithms x sizes
        assert Path(env["COLLTUNE_DB"]).is_file()
