"""The progress bar: a live line on a terminal, sparse plain lines anywhere else."""

from __future__ import annotations

import io

import pytest
from colltune.core import progress


class Clock:
    def __init__(self):
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


class Tty(io.StringIO):
    def isatty(self) -> bool:
        return True


@pytest.fixture()
def clock(monkeypatch) -> Clock:
    c = Clock()
    monkeypatch.setattr(progress.time, "monotonic", c)
    monkeypatch.setattr(progress, "_last_plain", [float("-inf")])
    monkeypatch.delenv("COLLTUNE_PROGRESS_INTERVAL", raising=False)
    return c


def drive(bar: progress.ProgressBar, clock: Clock, total: int, seconds: float) -> None:
    for done in range(1, total + 1):
        clock.now += seconds / total
        bar.update(done, total)
    bar.done()


def test_a_file_gets_at_most_one_plain_line_per_tenth(clock):
    out = io.StringIO()
    drive(progress.ProgressBar("[3/13] bench bcast", out), clock, 1000, 600.0)
    lines = out.getvalue().splitlines()
    assert 5 <= len(lines) <= 9, lines  # no final line: the stage's result says it is done
    assert "\r" not in out.getvalue() and "\x1b" not in out.getvalue()
    assert all(ln.startswith("[3/13] bench bcast [") and " elapsed, ~" in ln for ln in lines)


def test_a_quick_step_writes_no_progress_into_a_file(clock):
    out = io.StringIO()
    for i in range(20):  # many short bars in a row, as the probe has
        drive(progress.ProgressBar(f"part {i}", out), clock, 30, 0.5)
    assert out.getvalue() == ""


def test_bars_share_the_interval_between_plain_lines(clock):
    out = io.StringIO()
    for i in range(30):  # 30 bars of 4 s each: at most one line per 10 s over all of them
        drive(progress.ProgressBar(f"part {i}", out), clock, 10, 4.0)
    assert len(out.getvalue().splitlines()) <= 120 / progress.PLAIN_INTERVAL + 1


def test_interval_zero_writes_every_step(clock, monkeypatch):
    monkeypatch.setenv("COLLTUNE_PROGRESS_INTERVAL", "0")
    out = io.StringIO()
    drive(progress.ProgressBar("bench bcast", out), clock, 19, 1.0)
    lines = out.getvalue().splitlines()
    assert len(lines) == 19 and lines[-1].startswith("bench bcast [100%] 19/19, ")


def test_a_terminal_gets_one_live_line(clock):
    out = Tty()
    drive(progress.ProgressBar("bench bcast", out), clock, 50, 5.0)
    text = out.getvalue()
    assert text.count("\r") == 50 and text.count("\n") == 1 and text.endswith("\n")
    assert "[" + "#" * 30 + "] 50/50" in text
