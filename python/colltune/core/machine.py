"""What machine this is, as the operating system reports it.

`fingerprint()` describes the host a run measured (stored with every run, shown
in reports). The process and boot helpers let the store tell whether a run that
says 'running' still has a live process behind it.
"""

from __future__ import annotations

import os
import platform
import socket
from pathlib import Path

_CACHE_DIR = Path("/sys/devices/system/cpu/cpu0/cache")
_CACHE_FIELDS = ("level", "type", "size", "shared_cpu_list")


def fingerprint() -> dict:
    """Hostname, CPU, caches, memory and OS of this host (missing facts are None)."""
    return {
        "hostname": socket.gethostname(),
        "cpu_model": _cpu_model(),
        "logical_cores": os.cpu_count(),
        "caches": _caches(),
        "memory_total_bytes": _memory_total(),
        "os": platform.system(),
        "os_release": _os_release(),
        "kernel": platform.release(),
        "arch": platform.machine(),
    }


def _read(path: Path | str) -> str | None:
    try:
        return Path(path).read_text().strip()
    except OSError:
        return None


def _cpu_model() -> str | None:
    text = _read("/proc/cpuinfo") or ""
    # x86 says "model name"; some ARM kernels only give "Hardware" or "Processor".
    for key in ("model name", "Hardware", "Processor", "cpu model"):
        for line in text.splitlines():
            name, sep, value = line.partition(":")
            if sep and name.strip() == key and value.strip():
                return value.strip()
    return platform.processor() or None


def _caches() -> list[dict]:
    caches = []
    for index in sorted(_CACHE_DIR.glob("index*"), key=lambda p: int(p.name[5:] or 0)):
        entry = {field: _read(index / field) for field in _CACHE_FIELDS}
        if entry["level"] is not None:
            entry["level"] = int(entry["level"])
        caches.append(entry)
    return caches


def _memory_total() -> int | None:
    for line in (_read("/proc/meminfo") or "").splitlines():
        if line.startswith("MemTotal:"):
            return int(line.split()[1]) * 1024
    try:
        return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (ValueError, OSError):
        return None


def _os_release() -> str | None:
    for line in (_read("/etc/os-release") or "").splitlines():
        if line.startswith("PRETTY_NAME="):
            return line.split("=", 1)[1].strip().strip('"')
    return None


def boot_id() -> str | None:
    """An id that changes at every boot of this host (Linux), else None."""
    return _read("/proc/sys/kernel/random/boot_id")


def boot_time() -> float | None:
    """When this host booted, in Unix seconds (Linux), else None."""
    for line in (_read("/proc/stat") or "").splitlines():
        if line.startswith("btime "):
            return float(line.split()[1])
    return None


def process_alive(pid: int) -> bool:
    """Whether `pid` names a live (not zombie) process on this host."""
    state = _proc_stat_fields(pid)
    if state is not None:
        return state[0] != "Z"
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def process_start_time(pid: int) -> float | None:
    """When process `pid` started, in Unix seconds (Linux), else None."""
    fields = _proc_stat_fields(pid)
    booted = boot_time()
    if fields is None or booted is None:
        return None
    # Field 22 of /proc/PID/stat is the start time in clock ticks after boot.
    return booted + int(fields[19]) / os.sysconf("SC_CLK_TCK")


def _proc_stat_fields(pid: int) -> list[str] | None:
    """/proc/PID/stat from the state field on (the command name may hold spaces)."""
    text = _read(f"/proc/{pid}/stat")
    if not text or ")" not in text:
        return None
    return text.rsplit(")", 1)[1].split()
