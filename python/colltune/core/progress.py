"""A progress bar with an estimate of the time left, for every long step.

On a terminal it is one live line, redrawn in place. Anywhere else (a log file, a pipe, `make
run > log`) it writes sparse plain lines, no carriage returns or escape codes: at most one per
tenth of the work, none before PLAIN_INTERVAL seconds have passed since the last progress line
of any bar (a quick step writes none), and no final line (the step's result line says it is
done). COLLTUNE_PROGRESS_INTERVAL=0 writes a plain line at every step instead, for scripts and
tests that follow the progress.
"""

from __future__ import annotations

import os
import sys
import time

# Seconds between two plain progress lines, over all bars (COLLTUNE_PROGRESS_INTERVAL).
PLAIN_INTERVAL = 10.0
_last_plain = [float("-inf")]


def _plain_interval() -> float:
    try:
        return max(0.0, float(os.environ.get("COLLTUNE_PROGRESS_INTERVAL", PLAIN_INTERVAL)))
    except ValueError:
        return PLAIN_INTERVAL


class ProgressBar:
    def __init__(self, label: str, stream=None, width: int = 30):
        self.label = label
        self.stream = stream or sys.stderr
        self.width = width
        self.start = time.monotonic()
        self.active = False
        self.tenth = 0  # the last tenth of the work a plain line reported
        try:
            self.live = self.stream.isatty()
        except (AttributeError, ValueError):
            self.live = False

    def update(self, done: int, total: int) -> None:
        if total <= 0:
            return
        now = time.monotonic()
        elapsed = now - self.start
        frac = min(1.0, done / total)
        left = elapsed / done * (total - done) if done else 0.0
        if self.live:
            filled = int(frac * self.width)
            bar = "#" * filled + "." * (self.width - filled)
            self.stream.write(f"\r{self.label} [{bar}] {done}/{total} "
                              f"{_clock(elapsed)} elapsed, ~{_clock(left)} left ")
            self.stream.flush()
            self.active = True
            return
        interval = _plain_interval()
        tenth = int(frac * 10)
        if interval > 0 and (done >= total or tenth <= self.tenth or elapsed < interval
                             or now - _last_plain[0] < interval):
            return
        self.tenth = tenth
        _last_plain[0] = now
        self.stream.write(f"{self.label} [{frac:4.0%}] {done}/{total}, {_clock(elapsed)} "
                          f"elapsed, ~{_clock(left)} left\n")
        self.stream.flush()

    def done(self) -> None:
        if self.active and self.live:
            self.stream.write("\n")
            self.stream.flush()
        self.active = False


def _clock(seconds: float) -> str:
    s = int(seconds)
    return f"{s // 60}:{s % 60:02d}"
