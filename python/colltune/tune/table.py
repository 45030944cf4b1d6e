"""The tuning table (colltune-table, schema version 1, docs/TABLE.md): a validator that
names the file, the field and the reason, an atomic writer, and the lookup rule that the
drop-in's C code (src/select/table.c) applies too."""

from __future__ import annotations

import json
import math
from pathlib import Path

from ..core.colls import COLLS
from ..core.files import is_int, is_number, problem_recorder, read_validated, write_atomic

SCHEMA = "colltune-table"
SCHEMA_VERSION = 1
OPS = COLLS  # every blocking operation (the drop-in uses those whose sizes all ranks know)
# The non-blocking operations a table may tune (`colltune tune --forms nonblocking`,
# `colltune tune-nbc`): every operation with an "i" before it; their entries may add the split
# level, the progress mode and, measured with the thread, the best choice without one.
NONBLOCKING = tuple(f"i{op}" for op in COLLS)
# The persistent forms (`colltune tune --forms persistent`): "bcast_init" ..., the same fields
# as the non-blocking entries (src/select/table.c). Both started forms fall back to the
# blocking operation's entries where the table has none of their own.
PERSISTENT = tuple(f"{op}_init" for op in COLLS)
PROGRESS_MODES = ("thread", "none")
# The call forms `colltune tune --forms` takes, and how each names its table entries.
FORMS = ("blocking", "nonblocking", "persistent")


def table_op(op: str, form: str) -> str:
    """The entry's op for an operation in a form: bcast, ibcast, bcast_init."""
    return {"blocking": op, "nonblocking": f"i{op}", "persistent": f"{op}_init"}[form]


def split_op(name: str) -> tuple[str, str]:
    """An entry's op as (operation, form): "ibcast" -> ("bcast", "nonblocking")."""
    if name in PERSISTENT:
        return name[:-5], "persistent"
    if name in NONBLOCKING:
        return name[1:], "nonblocking"
    return name, "blocking"


class TableFileError(ValueError):
    """A table that cannot be used: the message names the file, the field, why."""


def validate(doc, where: str = "table.json") -> list[str]:
    """Every problem found in a table document (empty: valid)."""
    errors: list[str] = []

    need = problem_recorder(where, errors)

    if not need(isinstance(doc, dict), "(top)", "not a JSON object"):
        return errors
    if not need(doc.get("schema") == SCHEMA, "schema",
                f"expected {SCHEMA!r}, found {doc.get('schema')!r}"):
        return errors
    version = doc.get("schema_version")
    if not need(version == SCHEMA_VERSION and is_int(version), "schema_version",
                f"schema_version {version!r} is not supported "
                f"(this colltune reads {SCHEMA_VERSION})"):
        return errors
    for key in ("colltune_version", "created_at", "strategy"):
        need(isinstance(doc.get(key), str), key, "missing" if key not in doc else "not a string")
    machine = doc.get("machine")
    if need(isinstance(machine, dict), "machine", "missing or not an object"):
        need(isinstance(machine.get("cpu_model"), str), "machine.cpu_model",
             "missing or not a string")
        need(is_int(machine.get("logical_cores")) and machine["logical_cores"] >= 1,
             "machine.logical_cores", "missing or not a positive integer")
    mpi = doc.get("mpi")
    if need(isinstance(mpi, dict), "mpi", "missing or not an object"):
        for key in ("implementation", "version"):
            need(isinstance(mpi.get(key), str), f"mpi.{key}",
                 "missing" if key not in mpi else "not a string")
    entries = doc.get("entries")
    if not need(isinstance(entries, list), "entries", "missing or not a list"):
        return errors
    seen: dict[tuple, int] = {}
    for i, e in enumerate(entries):
        f = f"entries[{i}]"
        if not need(isinstance(e, dict), f, "not an object"):
            continue
        op_ok = need(e.get("op") in OPS + NONBLOCKING + PERSISTENT, f + ".op",
                     "missing" if "op" not in e else
                     f"unknown operation {e.get('op')!r} (one of "
                     f"{', '.join(OPS)}, each with an 'i' before it for the non-blocking "
                     "form or '_init' after it for the persistent one)")
        if e.get("op") in NONBLOCKING + PERSISTENT:
            check_nonblocking(e, f, need)
        ranks_ok = need(is_int(e.get("ranks")) and e["ranks"] >= 1, f + ".ranks",
                        "missing" if "ranks" not in e else "not a positive integer")
        size_ok = need(is_int(e.get("size_bytes")) and e["size_bytes"] >= 0, f + ".size_bytes",
                       "missing" if "size_bytes" not in e else "not a non-negative integer")
        need(isinstance(e.get("algorithm"), str) and e["algorithm"] != "", f + ".algorithm",
             "missing" if "algorithm" not in e else "not a non-empty string")
        need(is_int(e.get("segsize")) and e["segsize"] >= 0, f + ".segsize",
             "missing" if "segsize" not in e else "not a non-negative integer")
        for key, null in (("time_us", False), ("native_us", True)):
            v = e.get(key, "missing")
            need((null and v is None) or (is_number(v) and v >= 0), f"{f}.{key}",
                 "missing" if v == "missing" else
                 "not a non-negative number" + (" or null" if null else ""))
        need(is_int(e.get("evaluations")) and e["evaluations"] >= 0, f + ".evaluations",
             "missing" if "evaluations" not in e else "not a non-negative integer")
        if op_ok and ranks_ok and size_ok:
            key = (e["op"], e["ranks"], e["size_bytes"])
            if key in seen:
                need(False, f, f"same op, ranks and size_bytes as entries[{seen[key]}]")
            else:
                seen[key] = i
    return errors


def check_split(split, where: str, need) -> None:
    need(split == "model" or (is_int(split) and 0 <= split <= 63), where,
         'not a level from 0 to 63 or "model"')


def check_nonblocking(e: dict, f: str, need) -> None:
    """The fields a non-blocking entry adds (docs/TABLE.md, "Non-blocking entries")."""
    if "split" in e:
        check_split(e["split"], f + ".split", need)
    progress = e.get("progress", "none")
    need(progress in PROGRESS_MODES, f + ".progress", 'not "thread" or "none"')
    alt = e.get("no_thread")
    if alt is None:
        return
    if not need(progress == "thread", f + ".no_thread",
                "given for an entry measured without the thread"):
        return
    if not need(isinstance(alt, dict), f + ".no_thread", "not an object"):
        return
    need(isinstance(alt.get("algorithm"), str) and alt["algorithm"] != "",
         f + ".no_thread.algorithm", "missing or not a non-empty string")
    need(is_int(alt.get("segsize")) and alt["segsize"] >= 0, f + ".no_thread.segsize",
         "missing or not a non-negative integer")
    if "split" in alt:
        check_split(alt["split"], f + ".no_thread.split", need)


def load(path: str | Path) -> dict:
    """Read and validate a table file; TableFileError says what is wrong."""

    return read_validated(path, validate, TableFileError)


def write_table(doc: dict, path: str | Path) -> None:
    """Validate `doc` and write it to `path` atomically."""
    errors = validate(doc, str(path))
    if errors:
        raise TableFileError("; ".join(errors))

    write_atomic(path, json.dumps(doc, indent=1) + "\n")


def takes_smaller(a: int, b: int, x: int) -> bool:
    """For keys a < b, whether x is at least as near a as b in log scale (ties go to the
    smaller): |log x - log a| <= |log b - log x|, i.e. x*x <= a*b, in exact integers (so a
    key or a size of 0 needs no logarithm: only 0 is nearer 0 than any positive key)."""
    return x * x <= a * b


def nearest(keys: list[int], x: int) -> int:
    """The key nearest x in log scale, the smaller on ties (keys ascending, distinct)."""
    if x <= keys[0]:
        return keys[0]
    for a, b in zip(keys, keys[1:], strict=False):
        if x <= b:
            return a if takes_smaller(a, b, x) else b
    return keys[-1]


def first_size_for(a: int, b: int) -> int:
    """For keys a < b, the smallest x that takes b: the least x with x*x > a*b."""
    return math.isqrt(a * b) + 1


def lookup(doc: dict, op: str, ranks: int, size: int) -> dict | None:
    """The entry docs/TABLE.md picks for a call: among the operation's entries the nearest
    communicator size (log scale, the smaller on ties), then among that size's entries the
    nearest message size (log scale, the smaller on ties). None if the operation has none."""
    entries = [e for e in doc["entries"] if e["op"] == op]
    if not entries:
        return None
    comm = nearest(sorted({e["ranks"] for e in entries}), ranks)
    at = {e["size_bytes"]: e for e in entries if e["ranks"] == comm}
    return at[nearest(sorted(at), size)]


def ranges(keys: list[int]) -> list[tuple[int, int, int | None]]:
    """(key, lo, hi) for ascending keys: the values that `nearest` sends to key, lo..hi
    inclusive; the first range starts at 0 and the last has no end (hi None)."""
    out = []
    for i, k in enumerate(keys):
        lo = 0 if i == 0 else first_size_for(keys[i - 1], k)
        hi = None if i == len(keys) - 1 else first_size_for(k, keys[i + 1]) - 1
        out.append((k, lo, hi))
    return out
