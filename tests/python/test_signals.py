"""Signals and dead ranks (issue 25): SIGINT and SIGTERM sent to `bench` before its first
result, midway and during its last size leave an 'interrupted' run holding every size
measured before the signal (exit 130 / 143); a rank killed midway leaves a 'failed' run that
names the rank and the signal and keeps the sizes before it; `tune` killed midway leaves a
record saying where it stopped, and the same command resumes and finishes that run."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import time

import pytest
from colltune.store.store import Store

# native only, 16 B .. 4 MiB: 19 sizes (a progress line each with COLLTUNE_PROGRESS_INTERVAL=0),
# 40000 iterations so that the sweep outlasts the signal on an idle machine (4000: 1.4 s in all),
# the last one the longest by far.
BENCH = ["bench", "--op", "bcast", "-n", "2", "--algs", "native", "--min", "16", "--max", "4M",
         "--iters", "40000", "--no-check"]
SIZES = [16 << i for i in range(19)]


@pytest.fixture()
def env(tmp_path) -> dict:
    e = dict(os.environ)
    e["COLLTUNE_DB"] = str(tmp_path / "ct.db")
    e["COLLTUNE_PROGRESS_INTERVAL"] = "0"  # a progress line at every step, to follow
    e["MPIR_CVAR_CH4_PROGRESS_THROTTLE"] = "1"
    e["MPIR_CVAR_CH4_PROGRESS_THROTTLE_NO_PROGRESS_COUNT"] = "4"
    return e


def start(args: list[str], env: dict, **kw) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-m", "colltune.cli", *args], env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, **kw)


def wait_for_run(db: str, deadline: float) -> None:
    while time.monotonic() < deadline:
        try:
            with Store.open(db, create=False) as st:
                if st.runs():
                    return
        except Exception:  # noqa: BLE001 - not created yet
            pass
        time.sleep(0.05)
    raise AssertionError("no run recorded")


def progress_until(proc: subprocess.Popen, done: int) -> int:
    """Reads the progress bar's lines until `done` sizes are reported; returns the count."""
    for line in proc.stderr:
        m = re.search(r"\] (\d+)/(\d+)", line)
        if m and int(m.group(1)) >= done:
            return int(m.group(1))
    raise AssertionError("the bench ended before the point to signal it")


def stored(db: str) -> tuple[dict, list[int]]:
    with Store.open(db) as st:
        (run,) = st.runs()
        benches = st.run(run["id"])["benches"]
    sizes = [r["size"] for b in benches for r in b["results"]]
    return run, sizes


@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM], ids=["SIGINT", "SIGTERM"])
@pytest.mark.parametrize("moment", ["before the first result", "midway", "during the last size"])
def test_a_signal_keeps_every_size_measured(env, signum, moment):
    proc = start(BENCH, env)
    seen = 0
    if moment == "before the first result":
        wait_for_run(env["COLLTUNE_DB"], time.monotonic() + 60)
    else:
        seen = progress_until(proc, 10 if moment == "midway" else len(SIZES) - 1)
    proc.send_signal(signum)
    _, err = proc.communicate(timeout=120)
    assert proc.returncode == (130 if signum == signal.SIGINT else 143), err[-1000:]
    run, sizes = stored(env["COLLTUNE_DB"])
    assert run["status"] == "interrupted", run
    assert ("SIGTERM" if signum == signal.SIGTERM else "SIGINT") in run["reason"]
    # Every size finished before the signal, in order, and not the whole sweep.
    assert seen <= len(sizes) < len(SIZES), (seen, sizes)
    assert sizes == SIZES[:len(sizes)]
    assert "Traceback" not in err


def descendants(pid: int) -> list[int]:
    out = []
    kids = subprocess.run(["pgrep", "-P", str(pid)], capture_output=True, text=True).stdout
    for k in map(int, kids.split()):
        out += [k, *descendants(k)]
    return out


def test_a_rank_killed_midway_keeps_the_sizes_before_it(env):
    proc = start(BENCH, env)
    seen = progress_until(proc, 8)
    ranks = [p for p in descendants(proc.pid)
             if open(f"/proc/{p}/comm").read().strip() == "ct_bench"]
    assert len(ranks) == 2
    os.kill(ranks[-1], signal.SIGKILL)
    _, err = proc.communicate(timeout=120)
    assert proc.returncode == 1, err[-1000:]
    run, sizes = stored(env["COLLTUNE_DB"])
    assert run["status"] == "failed"
    assert re.search(r"rank \d \(pid \d+ on \S+\) killed by signal 9", run["reason"]), run
    assert seen <= len(sizes) < len(SIZES) and sizes == SIZES[:len(sizes)]


def test_killed_tune_says_where_it_stopped_and_resumes_the_same_run(tmp_path, env):
    table = tmp_path / "t.json"
    args = ["tune", "--strategy", "exhaustive", "--ops", "bcast", "--ranks", "2", "--sizes",
            "8-64K", "--iters", "10", "--confirm", "0", "-o", str(table)]
    proc = start(args, env, cwd=tmp_path, start_new_session=True)
    deadline = time.monotonic() + 300
    while time.monotonic() < deadline:
        try:
            if len(json.loads(table.read_text())["entries"]) >= 3:
                break
        except (OSError, ValueError):
            pass
        time.sleep(0.1)
    os.killpg(proc.pid, signal.SIGKILL)
    proc.communicate(timeout=60)
    done = len(json.loads(table.read_text())["entries"])
    with Store.open(env["COLLTUNE_DB"]) as st:
        (run,) = st.runs()
    assert run["status"] == "incomplete" and run["mpi"]["implementation"] != "unknown"
    m = re.search(r"stopped at: tuned (\d+) of 14 points", run["reason"])
    assert m and 3 <= int(m.group(1)) <= done, run["reason"]
    again = subprocess.run([sys.executable, "-m", "colltune.cli", *args], env=env, cwd=tmp_path,
                           capture_output=True, text=True, timeout=300)
    assert again.returncode == 0, again.stderr[-1000:]
    with Store.open(env["COLLTUNE_DB"]) as st:
        (final,) = st.runs()
        benches = st.run(final["id"])["benches"]
    assert final["id"] == run["id"] and final["status"] == "complete"
    assert len(json.loads(table.read_text())["entries"]) == 14
    assert len(benches[-1]["results"]) == 14
    assert final["duration_s"] > 0
