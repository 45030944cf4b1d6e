"""The one place for sizes and times as text (sizes as input: core.args.parse_size).

Formatting of sizes and times for tables and messages, without the plotting stack: the
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


def human_size(n: int) -> str:
    """Exact sizes in the largest binary unit that divides them: 8 B, 64 KiB, 4 MiB."""
    for unit, div in (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if n >= div and n % div == 0:
            return f"{n // div} {unit}"
    return f"{n} B"


def fmt_us(value: float | None) -> str:
    if value is None:
        return "—"
    return f"{value:.0f}" if value >= 100 else f"{value:.3g}"
