"""One table lookup rule (issue 35): the C library's (src/select/table.c, what the drop-in and
the public API run) against Python's (colltune.tune.table.lookup, what export-rules writes into
Open MPI's and MPICH's rule files), on generated tables whose keys include 0 and 8 and sizes
0, 1 and 2, for every operation and call form. Both must send every call to the same entry:
before, C measured a size of 0 as 0.5 in log scale and sent 1- and 2-byte calls to the 0 entry,
Python to the 8 entry."""

from __future__ import annotations

import ctypes
import json
import os
import random
from pathlib import Path

import pytest
from colltune.core.mpi import MPIBuild, MPIError, describe_library
from colltune.tune.table import COLLS, NONBLOCKING, lookup
from colltune.tune.tune import build_library


class Choice(ctypes.Structure):
    # src/select/table.h's ct_table_choice, member for member
    _fields_ = [("algorithm", ctypes.c_char_p), ("info", ctypes.c_void_p),
                ("segsize", ctypes.c_longlong), ("split", ctypes.c_int),
                ("progress_thread", ctypes.c_int)]


@pytest.fixture(scope="module")
def lib():
    try:
        build = MPIBuild.select()
        path = build.tool("libcolltune.so")
    except MPIError as e:
        pytest.skip(str(e))
    c = ctypes.CDLL(str(path))
    c.ct_table_load.argtypes = [ctypes.c_char_p, ctypes.c_char_p, ctypes.c_size_t]
    c.ct_table_lookup.argtypes = [ctypes.c_int, ctypes.c_int, ctypes.c_longlong,
                                  ctypes.POINTER(Choice)]
    c.ct_table_lookup_nonblocking.argtypes = [ctypes.c_int, ctypes.c_int, ctypes.c_longlong,
                                              ctypes.c_int, ctypes.POINTER(Choice)]
    c.ct_coll_from_name.argtypes = [ctypes.c_char_p]
    c.ct_coll_from_name.restype = ctypes.c_int
    c.ct_registry_json.restype = ctypes.c_char_p
    return build, c


def machine_doc(build: MPIBuild) -> dict:
    """The header of a table made for this machine and MPI (ct_table_load refuses others)."""
    model = ""
    for line in Path("/proc/cpuinfo").read_text().splitlines():
        if line.startswith("model name"):
            model = line.split(":", 1)[1].strip()
            break
    return {"schema": "colltune-table", "schema_version": 1, "colltune_version": "0.1.0",
            "created_at": "2026-11-27T00:00:00+0000",
            "machine": {"hostname": "test", "cpu_model": model,
                        "logical_cores": os.cpu_count()},
            "mpi": {"build": build.name, **describe_library(build_library(build))},
            "strategy": "test", "entries": []}


SIZE_KEYS = ([0, 8], [0, 1, 2, 8, 64], [1, 8, 1000, 1 << 20], [0, 3, 12, 48, 4096, 1 << 40])
RANK_KEYS = ([2], [1, 8], [2, 3, 16], [1, 2, 4, 7, 64])


def entries_for(op: str, algs: list[str], rank_keys: list[int], size_keys: list[int],
                rng: random.Random) -> list[dict]:
    out = []
    for r in rank_keys:
        for i, s in enumerate(size_keys):
            e = {"op": op, "ranks": r, "size_bytes": s,
                 "algorithm": algs[(i + r) % len(algs)], "segsize": 0,
                 "time_us": 1.0, "native_us": 2.0, "evaluations": 1}
            if op in NONBLOCKING:
                e["progress"] = "none"
            out.append(e)
    rng.shuffle(out)  # the C scan must not depend on the file's order
    return out


@pytest.mark.parametrize("case", range(len(SIZE_KEYS)))
def test_c_and_python_pick_the_same_entry(lib, tmp_path, case):
    build, c = lib
    registry = json.loads(c.ct_registry_json().decode())
    rng = random.Random(case)
    doc = machine_doc(build)
    ops = [*COLLS, *NONBLOCKING]
    algs = {}
    for op in ops:
        base = op[1:] if op in NONBLOCKING else op
        names = [a["name"] for a in registry if a["coll"] == base and not a["native"]
                 and not a["shared_memory"] and not a["hierarchical"]]
        algs[op] = names or ["native"]
        doc["entries"] += entries_for(op, algs[op], RANK_KEYS[case], SIZE_KEYS[case], rng)
    path = tmp_path / "table.json"
    path.write_text(json.dumps(doc))
    why = ctypes.create_string_buffer(512)
    assert c.ct_table_load(str(path).encode(), why, 512) == 0, why.value
    sizes = sorted({0, 1, 2, 3, 4, 5, 7, 8, 9, 23, 24, 25, 63, 64, 65, 1000, 2828, 2829,
                    (1 << 20) - 1, 1 << 20, (1 << 30) + 7, (1 << 40) + 1, (1 << 42)}
                   | {k + d for k in SIZE_KEYS[case] for d in (-1, 0, 1) if k + d >= 0})
    def check(op, ranks, size):
        nonblocking = op in NONBLOCKING
        coll = c.ct_coll_from_name((op[1:] if nonblocking else op).encode())
        assert coll >= 0, op
        want = lookup(doc, op, ranks, size)
        choice = Choice()
        if nonblocking:
            rc = c.ct_table_lookup_nonblocking(coll, ranks, size, 0, ctypes.byref(choice))
        else:
            rc = c.ct_table_lookup(coll, ranks, size, ctypes.byref(choice))
        got = choice.algorithm.decode() if rc == 0 else "native"
        assert got == want["algorithm"], (op, ranks, size, got, want)

    points = [(op, ranks, size) for op in ops for ranks in range(1, 70) for size in sizes]
    try:
        for point in points:
            check(*point)
        # Again in a shuffled order, each point twice or three times in a row now and then:
        # the C side remembers recent lookups per operation and form, and a program
        # alternates its collectives and sizes.
        order = rng.sample(points, min(len(points), 20000))
        for point in order:
            for _ in range(rng.choice((1, 1, 2, 3))):
                check(*point)
    finally:
        c.ct_table_unload()


def test_the_reported_case(lib, tmp_path):
    """Entries at 0 and 8 bytes: 1- and 2-byte calls go to the 8 entry (1*1 > 0*8), as in
    Python; a 0-byte call to the 0 entry."""
    build, c = lib
    doc = machine_doc(build)
    doc["entries"] = [{"op": "bcast", "ranks": 2, "size_bytes": s, "algorithm": a,
                       "segsize": 0, "time_us": 1.0, "native_us": 2.0, "evaluations": 1}
                      for s, a in ((0, "linear"), (8, "binomial"))]
    path = tmp_path / "table.json"
    path.write_text(json.dumps(doc))
    why = ctypes.create_string_buffer(512)
    assert c.ct_table_load(str(path).encode(), why, 512) == 0, why.value
    try:
        for size, want in ((0, "linear"), (1, "binomial"), (2, "binomial"), (9, "binomial")):
            choice = Choice()
            assert c.ct_table_lookup(0, 2, size, ctypes.byref(choice)) == 0
            assert choice.algorithm.decode() == want, size
            assert lookup(doc, "bcast", 2, size)["algorithm"] == want
    finally:
        c.ct_table_unload()
