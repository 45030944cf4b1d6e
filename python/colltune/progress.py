"""A progress bar with an estimate of the time left, for every long step."""

from __future__ import annotations

import sys
import time


class ProgressBar:
    def __init__(self, label: str, stream=None, width: int = 30):
        self.label = label
        self.stream = stream or sys.stderr
        self.width = width
        self.start = time.monotonic()
        self.active = False

    def update(self, done: int, total: int) -> None:
        if total <= 0:
            return
        elapsed = time.monotonic() - self.start
        frac = min(1.0, done / total)
        left = elapsed / done * (total - done) if done else 0.0
        filled = int(frac * self.width)
        bar = "#" * filled + "." * (self.width - filled)
        text = (f"\r{self.label} [{bar}] {done}/{total} "
                f"{_clock(elapsed)} elapsed, ~{_clock(left)} left ")
        if self.stream.isatty():
            self.stream.write(text)
        elif done == total or done % max(1, total // 10) == 0:
            self.stream.write(text.lstrip("\r") + "\n")  # logs: a line every 10%
        self.stream.flush()
        self.active = True

    def done(self) -> None:
        if self.active and self.stream.isatty():
            self.stream.write("\n")
            self.stream.flush()
        self.active = False


def _clock(seconds: float) -> str:
    s = int(seconds)
    return f"{s // 60}:{s % 60:02d}"
