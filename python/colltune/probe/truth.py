"""What the OS and hwloc say about the caches, beside what the probe measured.

The OS view comes from Linux's /sys/devices/system/cpu/cpu*/cache (every CPU, so the
sharing of each cache is known); the hwloc view from `ct_probe topo`. `compare` lines them
up with the measured levels and lists the disagreements. Measured values are what the rest
of colltune uses; these are there to be looked at.
"""

from __future__ import annotations

from pathlib import Path

from ..core import units
from ..core.units import fmt_size
from .caches import grid_steps
from .cluster import parse_cpu_list

CPU_ROOT = Path("/sys/devices/system/cpu")


def parse_size(text: str | None) -> int | None:
    """'32K' -> 32768 (sysfs cache sizes); None when absent or not a size."""
    try:
        return units.parse_size(text) if text else None
    except ValueError:
        return None


def os_caches(cores: list[int], root: Path = CPU_ROOT) -> list[dict]:
    """Data and unified caches as Linux reports them: level, type, size_bytes,
    associativity, shared_by (the groups of `cores` sharing one instance)."""
    found: dict[tuple[int, str], dict] = {}
    for cpu in cores:
        for index in sorted((root / f"cpu{cpu}" / "cache").glob("index*")):
            def read(name, index=index):
                try:
                    return (index / name).read_text().strip()
                except OSError:
                    return None
            ctype, level = read("type"), read("level")
            if ctype not in ("Data", "Unified") or not level:
                continue
            key = (int(level), ctype)
            entry = found.setdefault(key, {"level": int(level), "type": ctype,
                                           "size_bytes": parse_size(read("size")),
                                           "associativity": _int(read("ways_of_associativity")),
                                           "line_bytes": _int(read("coherency_line_size")),
                                           "shared_by": []})
            group = [c for c in parse_cpu_list(read("shared_cpu_list")) if c in cores]
            if group and group not in entry["shared_by"]:
                entry["shared_by"].append(group)
    for entry in found.values():
        entry["shared_by"].sort()
    return [found[k] for k in sorted(found)]


def hwloc_caches(topo: dict, cores: list[int]) -> list[dict]:
    """The same from hwloc's topology (`ct_probe topo`)."""
    found: dict[tuple[int, str], dict] = {}
    for c in topo.get("caches", []):
        if c.get("type") not in ("Data", "Unified"):
            continue
        key = (c["level"], c["type"])
        entry = found.setdefault(key, {"level": c["level"], "type": c["type"],
                                       "size_bytes": c.get("size_bytes"),
                                       "associativity": c.get("associativity"),
                                       "shared_by": []})
        group = [x for x in c.get("cores", []) if x in cores]
        if group and group not in entry["shared_by"]:
            entry["shared_by"].append(group)
    for entry in found.values():
        entry["shared_by"].sort()
    return [found[k] for k in sorted(found)]


def _int(text: str | None) -> int | None:
    try:
        return int(text) if text is not None else None
    except ValueError:
        return None


def level_of(caches: list[dict], level: int) -> dict | None:
    """The data (or unified) cache of `level` in an OS or hwloc list."""
    for c in caches:
        if c["level"] == level:
            return c
    return None


def compare(caches: list[dict], grid: list[int]) -> list[str]:
    """Disagreements between each measured cache and the OS (and hwloc), as sentences; each
    cache gets `agree` flags: size (equal), size_within_one_step (of the size grid), sharing."""
    notes = []
    for c in caches:
        flags = {}
        name = f"L{c['level']}"
        measured, os_size = c.get("size_bytes"), c.get("os_size_bytes")
        if measured and os_size:
            steps = grid_steps(measured, grid, os_size)
            flags["size"] = measured == os_size
            flags["size_within_one_step"] = steps is not None and steps <= 1
            if measured != os_size:
                apart = steps if steps is not None else "?"
                notes.append(f"{name} size: measured {fmt_size(measured)}, the OS says "
                             f"{fmt_size(os_size)} ({apart} step(s) of the size grid apart)")
        elif measured and not os_size:
            notes.append(f"{name}: measured {fmt_size(measured)}, the OS reports no such cache")
        hw = c.get("hwloc_size_bytes")
        if hw and os_size and hw != os_size:
            notes.append(f"{name} size: hwloc says {fmt_size(hw)}, the OS {fmt_size(os_size)}")
        if c.get("shared_by") is not None and c.get("os_shared_by") is not None:
            flags["sharing"] = c["shared_by"] == c["os_shared_by"]
            if not flags["sharing"]:
                notes.append(f"{name} sharing: measured {_groups(c['shared_by'])}, the OS says "
                             f"{_groups(c['os_shared_by'])}")
        c["agree"] = flags
    return notes


def _groups(groups: list[list[int]]) -> str:
    return " ".join("{" + ",".join(map(str, g)) + "}" for g in groups)
