"""`colltune splittree` against the paper's numbers (Denis et al., Euro-Par 2018, figure 3,
with equation (2) the right way up: docs/MODEL.md), and its errors."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest


def colltune(*args, env):
    return subprocess.run([sys.executable, "-m", "colltune.cli", "splittree", *args], env=env,
                          capture_output=True, text=True, timeout=120)


def table(env, nproc: int, *extra: str) -> list[dict]:
    p = colltune("--nproc", str(nproc), "--json", *extra, env=env)
    assert p.returncode == 0, p.stderr
    rows = json.loads(p.stdout)
    assert isinstance(rows, list)
    return rows


def expected_s(n: int, switches: tuple[int, int, int]) -> int:
    return sum(n >= s for s in switches)


@pytest.mark.parametrize("nproc, switches, best_n",
                         [(64, (52, 58, 62), 51), (48, (39, 44, 47), 38)])
def test_paper_numbers(child_env, nproc, switches, best_n):
    rows = table(child_env(), nproc)
    assert [r["n"] for r in rows] == list(range(2, nproc))
    for r in rows:
        assert r["best_s"] == expected_s(r["n"], switches), r
        assert r["p"] == nproc - r["n"]
        assert r["c"] == pytest.approx(nproc / r["n"] * 6)
        assert set(r["t_overlapped"]) == {str(s) for s in range(r["h"] + 1)}
        assert set(r["t_nonblocking"]) == set(r["t_overlapped"])
        assert r["t_best"] == min(r["t_overlapped"].values())
        assert r["t_best"] == r["t_overlapped"][str(r["best_s"])]
        assert r["t_nonblocking"][str(r["h"])] == r["h"] == r["t_blocking"]
        assert r["t_blocking_total"] == pytest.approx(r["t_blocking"] + r["c"])
    best = min(rows, key=lambda r: r["t_best"])
    assert (best["n"], best["best_s"]) == (best_n, 0)
    assert best["t_best"] == pytest.approx(nproc / best_n * 6)


def test_text_and_single_n(child_env):
    env = child_env()
    p = colltune("--nproc", "64", env=env)
    assert p.returncode == 0, p.stderr
    assert p.stdout.strip().splitlines()[-1] == "best overall: N=51, S=0, T=7.53"
    assert sum(line.split()[0].isdigit() for line in p.stdout.splitlines()) == 62
    rows = table(env, 64, "--n", "57")
    assert [(r["n"], r["best_s"]) for r in rows] == [(57, 1)]
    p = colltune("--nproc", "64", "--n", "60", env=env)
    assert p.returncode == 0 and "best: N=60, S=2" in p.stdout


@pytest.mark.parametrize("args, message", [
    (["--nproc", "2"], "-n/--ranks must be at least 3"),
    (["--nproc", "-5"], "-n/--ranks must be at least 3"),
    (["--nproc", "64", "--n", "1"], "--app-ranks must be between 2 and 63"),
    (["--nproc", "64", "--n", "64"], "--app-ranks must be between 2 and 63"),
    (["--nproc", "64", "--mpi", "nosuchmpi"], "no colltune build for MPI 'nosuchmpi'"),
])
def test_bad_arguments_exit_2(child_env, args, message):
    p = colltune(*args, env=child_env())
    assert p.returncode == 2 and message in p.stderr, p.stderr
    assert p.stdout == ""
