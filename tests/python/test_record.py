"""bench/record.py, the benchmark of record, in its quick mode at 2 ranks under MPICH for one
operation: every requested column and row of its three tables is there, and each ratio is
the quotient of the means the raw lines printed (no timing is asserted)."""

from __future__ import annotations

import importlib.util
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def rec():
    spec = importlib.util.spec_from_file_location("record", ROOT / "bench" / "record.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def rows(text: str, title: str) -> list[list[str]]:
    """The cells of the Markdown table under the heading that starts with `title`."""
    block = text.split(title, 1)[1].split("\n###", 1)[0]
    return [[c.strip() for c in line.strip().strip("|").split("|")]
            for line in block.splitlines() if line.startswith("|")]


def test_quick_record_tables(rec, tmp_path):
    if not rec.available("mpich"):
        pytest.skip("no MPICH build with ct_osu")
    # A tuned table of its own (bcast -> shm at 2 ranks), so that the test does not depend
    # on a `make run` having left one.
    table = rec.other_table("mpich", "bcast", 2, str(tmp_path))
    p = subprocess.run([sys.executable, str(ROOT / "bench" / "record.py"), "--quick",
                        "--np", "2", "--ops", "bcast", "--sizes", "8,4K", "--mpis", "mpich",
                        "--natives", "mpich", "--table", table, "--iters", "200",
                        "--warmup", "10", "--budget-ms", "2"],
                       capture_output=True, text=True, timeout=120)
    assert p.returncode == 0, p.stderr
    out = p.stdout
    # the estimate comes first, before any measurement
    assert 0 < out.index("takes at most about") < out.index("\n1 barrier:native-mpich")
    mean = {}
    for line in out.splitlines():
        m = re.match(r"1 (\S+) (\w+) (\d+) (\w+) iters \d+ mean ([\d.]+) median", line)
        if m:
            mean[(m.group(1), m.group(2), int(m.group(3)))] = float(m.group(5))
    cols = {c for c, _, _ in mean}
    assert cols == {"barrier:native-mpich", "barrier:tuned-mpich", "pair:native-mpich",
                    "pair:tuned-mpich", "left:native-mpich", "left:dropin-mpich",
                    "left:table-mpich", "left:forced-mpich", "nonblocking:native-mpich",
                    "nonblocking:tuned-mpich", "persistent:native-mpich",
                    "persistent:tuned-mpich"}

    def close(cell: str, num: float, den: float) -> None:
        assert cell.rstrip(" *") == f"{num / den:.2f}", (cell, num, den)

    for mix in ("barrier", "pair"):
        t = rows(out, f"### (a) tuned colltune / best native, {mix} mix")
        assert t[0] == ["op", "size", "MPICH", "tuned (MPICH)", "best native",
                        "tuned (MPICH) / best"]
        assert [r[:2] for r in t[2:]] == [["bcast", "8 B"], ["bcast", "4 KiB"]]
        for r, size in zip(t[2:], (8, 4096), strict=True):
            assert r[4] == "mpich"
            close(r[5], mean[(f"{mix}:tuned-mpich", "bcast", size)],
                  mean[(f"{mix}:native-mpich", "bcast", size)])
        # the same table on the whole iteration's time (barrier between, call, partner)
        w = rows(out, f"### (a) tuned colltune / best native, {mix} mix, 2 ranks (iter mean")
        assert w[0] == t[0] and [r[:2] for r in w[2:]] == [r[:2] for r in t[2:]]
        assert all(float(r[5].split(",")[0]) > 0 for r in w[2:])
    t = rows(out, "### (b)")
    assert len(t[0]) == 9 and [r[:2] for r in t[2:]] == [["MPICH", "bcast (other: allreduce)"]]
    for cell, c in zip(t[2][6:], ("dropin", "table", "forced"), strict=True):
        close(cell, mean[(f"left:{c}-mpich", "bcast", 8)], mean[("left:native-mpich", "bcast", 8)])
    t = rows(out, "### (c)")
    assert len(t[0]) == 9 and [r[:3] for r in t[2:]] == [["MPICH", "bcast", "8 B"],
                                                         ["MPICH", "bcast", "4 KiB"]]
    for r, size in zip(t[2:], (8, 4096), strict=True):
        m = {c: mean[(c, "bcast", size)] for c, op, s in mean if op == "bcast" and s == size}
        close(r[6], m["persistent:tuned-mpich"], m["barrier:tuned-mpich"])
        close(r[7], m["nonblocking:tuned-mpich"], m["nonblocking:native-mpich"])
        close(r[8], m["persistent:tuned-mpich"], m["persistent:native-mpich"])
