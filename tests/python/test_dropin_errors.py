"""The drop-in under MPI_ERRORS_RETURN (tests/c/plain_errors.c, built with plain mpicc): every
intercepted collective, blocking, non-blocking and large-count, with every kind of invalid
argument (root, count, datatype, operation, communicator) returns the error class native MPI
returns and the program goes on to a correct call of the same function, whether colltune's
algorithms are forced (each operation's k-th at once, for every k) or chosen by a tuning
table, on 1 and 3 ranks. colltune's own failure (an unknown forced algorithm) goes through the
communicator's error handler: MPI_ERR_ARG returned, the program goes on."""

from __future__ import annotations

import json
import re
import subprocess

import pytest
from colltune.core.mpi import MPIBuild, MPIError, describe_library
from colltune.tune.tune import build_library, machine_id
from conftest import run_plain

OPS = ("bcast", "reduce", "allreduce", "scatter", "gather", "allgather", "alltoall", "barrier")
MPI_NAMES = {"bcast": "Bcast", "reduce": "Reduce", "allreduce": "Allreduce",
             "scatter": "Scatter", "gather": "Gather", "allgather": "Allgather",
             "alltoall": "Alltoall", "barrier": "Barrier"}
NONBLOCKING = ("bcast", "reduce", "allreduce", "scatter", "gather")  # MPI_Ibcast ... MPI_Igather
NRANKS = (1, 3)
EXPORT = ("LD_PRELOAD", "COLLTUNE_LOG", "COLLTUNE_TABLE",
          *(f"COLLTUNE_{op.upper()}_ALGORITHM" for op in OPS))
CASE = re.compile(r"^case (\S+) -> (.+)$")
LOG = re.compile(r"colltune: rank \d+/\d+ MPI_([A-Za-z]+) -?\d+ bytes -> ([a-z0-9_]+)")


def _registry() -> list[dict]:
    """The registry at collection time (empty without a build)."""
    try:
        return MPIBuild.select().registry()
    except MPIError:
        return []


REGISTRY = _registry()


def algorithms(op: str) -> list[str]:
    return [a["name"] for a in REGISTRY if a["coll"] == op and not a["native"]]


# Runs forcing one algorithm of every operation at once, cycling through each list.
ALL_AT_ONCE = max((len(algorithms(op)) for op in OPS), default=0)


@pytest.fixture(scope="module")
def build() -> MPIBuild:
    return MPIBuild.select()


def launch(build: MPIBuild, *args: str, nranks: int, preload: bool = True,
           timeout: int = 120, **env: str) -> subprocess.CompletedProcess:
    return run_plain(build, "plain_errors", nranks, *args, preload=preload, timeout=timeout,
                     export=EXPORT, **env)


def case_lines(stdout: str) -> list[str]:
    return [ln for ln in stdout.splitlines() if CASE.match(ln)]


def finished(p: subprocess.CompletedProcess, what) -> list[str]:
    """The case lines of a run that ended well ("all ok", exit status 0)."""
    assert p.returncode == 0 and "all ok" in p.stdout.splitlines(), (
        what, p.returncode, p.stdout[-3000:], p.stderr[-3000:])
    return case_lines(p.stdout)


def routed(stderr: str) -> dict[str, set[str]]:
    """Per MPI function (Bcast, Ibcast, ...), the algorithms the COLLTUNE_LOG=debug log shows."""
    out: dict[str, set[str]] = {}
    for name, alg in LOG.findall(stderr):
        out.setdefault(name, set()).add(alg)
    return out


def function_names(op: str) -> list[str]:
    """The MPI functions of an operation the log names (the _c forms log as the classic)."""
    return [MPI_NAMES[op], *([f"I{op}"] if op in NONBLOCKING else [])]


@pytest.fixture(scope="module")
def native(build) -> dict[int, list[str]]:
    """The case lines of the program without colltune, per number of ranks."""
    out = {}
    for n in NRANKS:
        lines = finished(launch(build, nranks=n, preload=False), ("native", n))
        names = [CASE.match(ln).group(1) for ln in lines]
        classes = [CASE.match(ln).group(2) for ln in lines]
        assert len(names) == len(set(names)) and len(names) >= 40, lines
        # Every intercepted function is there, with invalid arguments MPI refuses.
        for op in OPS:
            forms = [op, *([f"i{op}"] if op in NONBLOCKING else [])]
            for form in forms:
                assert any(n.startswith(f"{form}_") for n in names), (form, names)
        if build.flavor == "mpich":  # MPI 4: the large-count forms too
            assert any("_c_" in n for n in names), names
        assert all(c.startswith("MPI_ERR_") or c == "MPI_SUCCESS" for c in classes), lines
        assert sum(c != "MPI_SUCCESS" for c in classes) >= 0.9 * len(classes), lines
        out[n] = lines
    return out


def test_native_classes_are_the_usual_ones(native):
    """A few classes every MPI agrees on: the test would say little if they were not seen."""
    for lines in native.values():
        got = dict(CASE.match(ln).groups() for ln in lines)
        assert got["bcast_root_negative"] == "MPI_ERR_ROOT"
        assert got["ibcast_root_size"] == "MPI_ERR_ROOT"
        assert got["scatter_count_negative"] == "MPI_ERR_COUNT"
        assert got["alltoall_type_null"] == "MPI_ERR_TYPE"
        assert got["reduce_op_null"] == "MPI_ERR_OP"
        assert got["allreduce_op_band_double"] == "MPI_ERR_OP"
        assert got["gather_comm_null"] == "MPI_ERR_COMM"
        assert got["barrier_comm_null"] == "MPI_ERR_COMM"


@pytest.mark.parametrize("nranks", NRANKS)
@pytest.mark.parametrize("index", range(ALL_AT_ONCE))
def test_forced_algorithms_give_the_native_errors(build, native, index, nranks):
    """One algorithm of every operation forced together (run `index` takes each operation's
    algorithm number `index`, cycling, so these runs cover every algorithm): the same class
    for every invalid call as native, and every correct call after one right (the program
    checks); the log shows the forced algorithm served each function's correct calls."""
    chosen = {op: algorithms(op)[index % len(algorithms(op))] for op in OPS}
    env = {f"COLLTUNE_{op.upper()}_ALGORITHM": alg for op, alg in chosen.items()}
    p = launch(build, nranks=nranks, COLLTUNE_LOG="debug", **env)
    assert finished(p, chosen) == native[nranks]
    seen = routed(p.stderr)
    for op, alg in chosen.items():
        for name in function_names(op):
            # the shm family serves every call form (issue 36): the non-blocking ones too
            assert alg in seen.get(name, set()), (name, alg, seen.get(name))


@pytest.fixture(scope="module")
def table(build, tmp_path_factory) -> tuple[str, dict[str, set[str]]]:
    """A valid tuning table for this machine and MPI whose every entry is one of colltune's
    algorithms: for each operation at 1 and 3 ranks, one algorithm for 4-byte calls and
    another for 12-byte ones (what the program's invalid and correct calls move). Its path
    and the algorithms it names per operation."""
    mpi = {"build": build.name, **describe_library(build_library(build))}
    mpi.pop("library", None)
    assert mpi["version"], mpi
    entries, named = [], {}
    for op in OPS:
        algs = algorithms(op)
        sizes = [0] if op == "barrier" else [4, 12]
        for ranks in NRANKS:
            for i, size in enumerate(sizes):
                alg = algs[(i + ranks) % len(algs)]
                named.setdefault(op, set()).add(alg)
                entries.append({"op": op, "ranks": ranks, "size_bytes": size, "algorithm": alg,
                                "segsize": 0, "time_us": 1.0, "native_us": 2.0,
                                "evaluations": 1})
    doc = {"schema": "colltune-table", "schema_version": 1, "colltune_version": "test",
           "created_at": "2026-01-01T00:00:00+0000", "machine": machine_id(), "mpi": mpi,
           "strategy": "exhaustive", "entries": entries}
    path = tmp_path_factory.mktemp("table") / "table.json"
    path.write_text(json.dumps(doc))
    return str(path), named


@pytest.mark.parametrize("nranks", NRANKS)
def test_tuning_table_gives_the_native_errors(build, native, table, nranks):
    path, named = table
    p = launch(build, nranks=nranks, COLLTUNE_TABLE=path, COLLTUNE_LOG="debug")
    assert "COLLTUNE_TABLE not used" not in p.stderr, p.stderr[-2000:]
    assert finished(p, "table") == native[nranks]
    seen = routed(p.stderr)
    for op in OPS:
        for name in function_names(op):
            algs = seen.get(name, set())
            # every algorithm, the shm family's too, serves the non-blocking forms
            assert algs <= named[op] | {"native"}, (name, algs, named[op])
            assert algs & named[op], (name, algs, named[op])


def test_unknown_algorithm_goes_through_the_error_handler(build):
    """COLLTUNE_BCAST_ALGORITHM=nosuch under MPI_ERRORS_RETURN: every bcast-family call
    returns MPI_ERR_ARG with colltune's message (MPI_Error_string) instead of aborting, every
    other call is served, and the program ends well, also after 3000 failed calls in a row
    (one error code for them all: MPICH crashed after some 2000 made). The message is said
    on stderr once per rank."""
    nranks = 3
    want = finished(launch(build, "--valid", nranks=nranks, preload=False), "native --valid")
    assert want and all(ln.endswith(" -> MPI_SUCCESS") for ln in want), want
    p = launch(build, "--valid", nranks=nranks, COLLTUNE_BCAST_ALGORITHM="nosuch")
    bcast = re.compile(r"^case i?bcast_")
    expected = [ln.replace("MPI_SUCCESS", "MPI_ERR_ARG") if bcast.match(ln) else ln
                for ln in want]
    assert finished(p, "nosuch") == expected
    assert sum(bcast.match(ln) is not None for ln in expected) >= 3  # blocking, non-blocking
    msg = ("colltune: COLLTUNE_BCAST_ALGORITHM='nosuch' is not a bcast algorithm; valid: "
           + ", ".join(["native", *algorithms("bcast")]))
    strings = [ln for ln in p.stdout.splitlines() if ln.startswith("error ")]
    assert strings and all(ln.endswith(f": {msg}") for ln in strings), strings
    assert p.stderr.count(msg) == nranks, p.stderr[-2000:]
