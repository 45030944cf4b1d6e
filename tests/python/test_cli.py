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
from colltune.core.colls import CLASSIC, COLLS
from colltune.core.mpi import MPIBuild, project_root
from colltune.store.store import Store

ROOT = project_root()
ROOTED = ("bcast", "reduce", "scatter", "gather", "gatherv", "scatterv")
DATATYPE = {"reduce": "MPI_DOUBLE", "allreduce": "MPI_DOUBLE", "barrier": None,
            "reduce_scatter_block": "MPI_DOUBLE", "reduce_scatter": "MPI_DOUBLE",
            "scan": "MPI_DOUBLE", "exscan": "MPI_DOUBLE"}


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
    from colltune.bench.bench import registry_markdown

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
    assert {a["coll"] for a in reg} == set(COLLS)


@pytest.mark.parametrize("op", COLLS)
def test_bench_records_every_algorithm(tmp_path, env, build, op):
    out = tmp_path / "bench.json"
    root = ["--root", "2"] if op in ROOTED else []
    p = colltune("bench", "--op", op, "-n", "3", "--max", "4K", "--iters", "3", *root,
                 "--json", str(out), env=env)
    assert p.returncode == 0, p.stderr
    doc = json.loads(out.read_text())
    algs = {a["name"] for a in build.registry() if a["coll"] == op}
    assert "native" in algs and len(algs) > 1
    # Sizes are the vector's or one rank's block; the barrier has one row, size 0.
    sizes = [0] if op == "barrier" else [8 << i for i in range(10)]  # 8 B .. 4 KiB
    got = {(r["algorithm"], r["size"]) for r in doc["results"]}
    assert got == {(a, s) for a in algs for s in sizes}
    esize = 8 if DATATYPE.get(op, "MPI_BYTE") == "MPI_DOUBLE" else 1
    for r in doc["results"]:
        assert len(r["samples_us"]) == 3 and r["min_us"] <= r["avg_us"] <= r["max_us"]
        assert r["count"] == r["size"] // esize
        # Every colltune algorithm's result equals native's (a barrier: nobody left early).
        assert r["check"] == ("not checked" if r["algorithm"] == "native" else "ok"), r
    assert doc["op"] == op and doc["ranks"] == 3 and doc["root"] == (2 if root else 0)
    assert doc["datatype"] == DATATYPE.get(op, "MPI_BYTE")
    assert doc["mpi"]["implementation"] in ("MPICH", "Open MPI")
    # The comparison table names every algorithm and ends each row with the ratio.
    assert all(a in p.stdout for a in algs) and "speed-up" in p.stdout
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


def test_bench_accepts_every_operation_and_no_other(env):
    p = colltune("bench", "--help", env=env)
    assert p.returncode == 0 and "{" + ",".join(COLLS) + "}" in p.stdout
    p = colltune("bench", "--op", "alltoallw", "-n", "2", "--no-record", env=env)
    assert p.returncode == 2 and "invalid choice: 'alltoallw'" in p.stderr


@pytest.fixture(scope="module")
def main_job(tmp_path_factory) -> dict:
    """`colltune run` once, with its smallest settings, stdout and stderr into one file as in
    `make run > log 2>&1`: its log, report, store and working directory."""
    tmp = tmp_path_factory.mktemp("run")
    e = dict(os.environ)
    e.pop("COLLTUNE_PROGRESS_INTERVAL", None)  # the default progress, as `make run` has it
    e["COLLTUNE_DB"] = str(tmp / "ct.db")
    e["MPIR_CVAR_CH4_PROGRESS_THROTTLE"] = "1"
    e["MPIR_CVAR_CH4_PROGRESS_THROTTLE_NO_PROGRESS_COUNT"] = "4"
    report, log = tmp / "report.html", tmp / "run.log"
    with open(log, "w") as out:
        # cwd: where the quick probe writes machine.json
        p = subprocess.run([sys.executable, "-m", "colltune.cli", "run", "-n", "2", "--max",
                            "256", "--iters", "3", "-o", str(report)], env=e, cwd=tmp,
                           stdout=out, stderr=subprocess.STDOUT, timeout=600)
    text = log.read_text()
    assert p.returncode == 0, text[-3000:]
    return {"dir": tmp, "log": text, "report": report, "db": e["COLLTUNE_DB"]}


def test_run_benchmarks_every_operation_then_reports(main_job, build):
    tmp_path, report, log = main_job["dir"], main_job["report"], main_job["log"]
    last = log.strip().splitlines()[-1]
    assert last == f"report: {report.resolve()}"
    # One comparison table per operation, in order, each naming all of its algorithms.
    heads = [ln.split(":")[0] for ln in log.splitlines() if " ranks, " in ln
             and "median latency" in ln]
    assert heads == list(COLLS)
    reg = build.registry()
    tables = log.split("median latency")[1:]
    for op, text in zip(COLLS, tables, strict=True):
        assert all(a["name"] in text for a in reg if a["coll"] == op), op
    html = report.read_text()
    for op in COLLS:
        assert f"{op} · 2 ranks" in html
    assert "barrier · 2 ranks: latency per algorithm" in html  # bars: no size axis
    with Store.open(main_job["db"]) as st:
        (run,) = st.runs()
        assert run["status"] == "complete"
        benches = st.run(run["id"])["benches"]
    # The quick probe and the point-to-point costs first (their own sections in the report),
    # then every operation.
    # Last, the short overlap study and the short suite (their own sections too).
    assert [b["op"] for b in benches] == ["probe", "p2p", *COLLS, "tune", "verify", "overlap",
                                          "suite"]
    assert "<section id='overlap'>" in html and "<section id='tuning'>" in html
    assert "<section id='suite'>" in html and "<section id='verify'>" in html
    # the run's table is the verified one, the tuner's kept beside it
    assert "verified" in json.loads((tmp_path / "colltune-table.json").read_text())
    assert "verified" not in json.loads((tmp_path / "colltune-table.tuned.json").read_text())
    table = json.loads((tmp_path / "colltune-table.json").read_text())
    # every operation a table holds (issue 22's are benchmarked, not tuned yet)
    assert {e["op"] for e in table["entries"]} == set(CLASSIC)  # what `run` tunes
    assert json.loads((tmp_path / "machine.json").read_text())["caches"]
    assert json.loads((tmp_path / "p2p.json").read_text())["layers"][0]["points"]
    assert "<section id='machine'>" in html and "<section id='p2p'>" in html
    for b in benches[2:-4]:
        # Every algorithm and native measured at every size (the barrier: once, size 0).
        sizes = [0] if b["op"] == "barrier" else [8 << i for i in range(6)]  # 8 .. 256 B
        want = {(a["name"], s) for a in reg if a["coll"] == b["op"] for s in sizes}
        assert {(r["algorithm"], r["size"]) for r in b["results"]} == want, b["op"]
        assert all(r["check"] in ("ok", "not checked") for r in b["results"]), b["op"]


STAGES = ["probe", "p2p", *(f"bench {op}" for op in COLLS), "tune", "verify", "overlap",
          "suite"]


def test_run_log_on_a_non_terminal(main_job):
    """`make run > log 2>&1`: no escape codes or carriage returns, sparse progress, one style of
    stage label, every stage announced then concluded in one line, and the time printed at the
    end is the time the store records."""
    log = main_job["log"]
    assert "\x1b" not in log and "\r" not in log
    lines = log.splitlines()
    progress = [ln for ln in lines if re.search(r" \[\s*\d+%\] \d+/\d+, ", ln)]
    assert len(progress) <= 10 * len(STAGES), progress
    labelled = [ln for ln in lines if ln.startswith("[") and ln not in progress]
    label = re.compile(r"\[(\d+)/(\d+)\] ([a-z0-9_ ]+): (.+)$")
    seen: dict[int, list[str]] = {}
    for ln in labelled:
        m = label.match(ln)
        assert m and int(m[2]) == len(STAGES), f"a stage label of another style: {ln!r}"
        k = int(m[1])
        assert m[3] == STAGES[k - 1], ln
        seen.setdefault(k, []).append(m[4])
    assert sorted(seen) == list(range(1, len(STAGES) + 1))
    for k, said in seen.items():
        # announced, then its result in one line with the time it took
        assert len(said) == 2, (STAGES[k - 1], said)
        assert re.search(r" \(\d+\.\d s\)$", said[1]) and "FAILED" not in said[1], said[1]
    assert "results; colltune faster than native at" in "\n".join(seen[3])
    m = re.search(r"^done in (\d+\.\d) s: run (\d+) recorded in ", log, re.M)
    assert m, log[-2000:]
    with Store.open(main_job["db"]) as st:
        (run,) = st.runs()
    assert run["id"] == int(m[2])
    assert abs(float(m[1]) - run["duration_s"]) < 1.0, (m[0], run["duration_s"])


def test_interrupted_bench_keeps_what_it_measured(tmp_path, env):
    env["COLLTUNE_PROGRESS_INTERVAL"] = "0"  # a progress line at every step, to follow
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
