"""Formatting of sizes and times for tables and messages, without the plotting stack: the
command-line tools that print them (p2p, the probe) must run on a Python without
matplotlib, such as an offline machine's own interpreter."""

from __future__ import annotations


def fmt_size(n: float | None) -> str:
    if n is None:
        return "—"
    for unit, scale in (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if n >= scale:
            return f"{n / scale:.4g} {unit}"
    return f"{n:.4g} B"


def fmt_us(value: float | None) -> str:
    if value is None:
        return "—"
    return f"{value:.0f}" if value >= 100 else f"{value:.3g}"
