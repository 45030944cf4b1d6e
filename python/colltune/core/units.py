"""The one place for sizes and times as text: sizes read (parse_size, binary units) and
written (fmt_size, human_size), times written (fmt_us).

Formatting of sizes and times for tables and messages, without the plotting stack: the
command-line tools that print them (p2p, the probe) must run on a Python without
matplotlib, such as an offline machine's own interpreter."""

from __future__ import annotations

import re

# Binary units, case-insensitive: 8, 8B, 64K, 64KiB, 4M, 4MiB, 1G, 1GiB (KB, MB, GB too).
_UNITS = {"": 1, "b": 1, "k": 1 << 10, "kb": 1 << 10, "kib": 1 << 10, "m": 1 << 20,
          "mb": 1 << 20, "mib": 1 << 20, "g": 1 << 30, "gb": 1 << 30, "gib": 1 << 30}
_SIZE_RE = re.compile(r"\s*(\d+)\s*([a-zA-Z]*)\s*")
SIZE_FORMS = "a whole number of bytes with an optional unit B, K/KiB, M/MiB, G/GiB (e.g. 64K)"


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


def parse_size(text: str | int) -> int:
    """Bytes from 8, 8B, 64K, 64KiB, 4M, 4MiB, 1G, 1GiB (binary units, any case).
    ValueError, with the accepted forms, for anything else."""
    if isinstance(text, int) and not isinstance(text, bool):
        return text
    m = _SIZE_RE.fullmatch(str(text))
    if not m or m.group(2).lower() not in _UNITS:
        raise ValueError(f"'{text}' is not a size: {SIZE_FORMS}")
    return int(m.group(1)) * _UNITS[m.group(2).lower()]
