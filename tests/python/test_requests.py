"""The drop-in inside programs that complete non-blocking collectives every way MPI allows
(issue 27): tests/c/plain_requests.c, a plain MPI program, puts each intercepted non-blocking
collective beside its own point-to-point requests, a native collective, MPI_REQUEST_NULL, an
inactive persistent request and an already completed one, frees the datatype, op and
duplicated communicator right after the start, and completes the array with every wait, test
and get_status call. Run natively, then through the drop-in with every algorithm forced in turn
(the k-th of every operation at once) and through a tuning table, at 1 to 8 ranks: its
hand-computed checks pass, its digest of every result equals native's, nothing hangs (the
timeout). The leak check: after 10,000 such collectives colltune holds no handle.

Open MPI 5.0.11's own non-blocking collectives crash when the communicator is freed right
after the start (libnbc, inside MPI_Wait; a plain run without colltune shows it), so its
native reference frees only the datatype and op; colltune's runs free all three."""

from __future__ import annotations

import json
import os
import re
import subprocess
from pathlib import Path

import pytest
from colltune.core.mpi import MPIBuild, describe_library
from colltune.tune.tune import build_library
from conftest import forced_env, nonblocking_algorithms, run_plain

NRANKS = (1, 2, 3, 4, 5, 8)
# The operations the drop-in intercepts in their non-blocking form.
OPS = ("bcast", "reduce", "allreduce", "scatter", "gather")
EXPORT = ("LD_PRELOAD", "COLLTUNE_TABLE", "COLLTUNE_LOG",
          *(f"COLLTUNE_{op.upper()}_ALGORITHM" for op in OPS))
DIGEST = re.compile(r"rank (\d+) cases (\d+) digest ([0-9a-f]+)")
HELD = re.compile(r"rank (\d+) held comms (-?\d+) datatypes (-?\d+) ops (-?\d+) after (\d+)")
PENDING = re.compile(r"rank (\d+) pending comms (-?\d+) datatypes (-?\d+) ops (-?\d+)")
LOG = re.compile(r"MPI_I([a-z]+) \d+ bytes -> ([a-z0-9_]+)")


# The point-to-point algorithms; the shm family in one run of its own (test_shm_serves_...).
ALGS = nonblocking_algorithms(OPS)
ROUNDS = max((len(v) for v in ALGS.values()), default=0)


def forced(k: int) -> dict[str, str]:
    """The k-th algorithm of every operation (cycling through shorter lists)."""
    return forced_env(ALGS, k)


@pytest.fixture(scope="module")
def build() -> MPIBuild:
    return MPIBuild.select()


def run(build: MPIBuild, nranks: int, *args: str, preload: bool = True, timeout: int = 240,
        **env: str) -> subprocess.CompletedProcess:
    return run_plain(build, "plain_requests", nranks, *args, preload=preload, timeout=timeout,
                     export=EXPORT, **env)


def digests(p: subprocess.CompletedProcess, nranks: int, what) -> dict[int, tuple[int, str]]:
    assert p.returncode == 0 and "all ok" in p.stdout, (what, p.stdout[-2000:], p.stderr[-3000:])
    found = {int(r): (int(c), d) for r, c, d in DIGEST.findall(p.stdout)}
    assert sorted(found) == list(range(nranks)), (what, p.stdout[-2000:])
    return found


_native: dict[int, dict[int, tuple[int, str]]] = {}


def native(build: MPIBuild, nranks: int) -> dict[int, tuple[int, str]]:
    """The program without colltune: what every colltune run must reproduce."""
    if nranks not in _native:
        free = ["--free", "type,op"] if build.flavor == "openmpi" else []
        _native[nranks] = digests(run(build, nranks, *free, preload=False), nranks,
                                  ("native", nranks))
    return _native[nranks]


def table_for(build: MPIBuild, nranks: int, path: Path) -> dict[str, str]:
    """A table for this machine and MPI that sends every operation at every size to a
    colltune algorithm, a different one per size."""
    model = ""
    for line in Path("/proc/cpuinfo").read_text().splitlines():
        if line.startswith("model name"):
            model = line.split(":", 1)[1].strip()
            break
    entries = [{"op": op, "ranks": nranks, "size_bytes": size,
                "algorithm": ALGS[op][i % len(ALGS[op])], "segsize": 0, "time_us": 1.0,
                "native_us": 2.0, "evaluations": 1}
               for op in OPS for i, size in enumerate((4, 16, 40, 64, 1 << 20))]
    doc = {"schema": "colltune-table", "schema_version": 1, "colltune_version": "0.1.0",
           "created_at": "2026-11-25T00:00:00+0000",
           "machine": {"hostname": "test", "cpu_model": model,
                       "logical_cores": os.cpu_count()},
           "mpi": {"build": build.name, **describe_library(build_library(build))},
           "strategy": "test", "entries": entries}
    path.write_text(json.dumps(doc))
    return {"COLLTUNE_TABLE": str(path)}


@pytest.mark.parametrize("nranks", NRANKS)
def test_every_completion_call_with_every_algorithm(build, nranks, tmp_path):
    want = native(build, nranks)
    assert all(c == want[0][0] and c > 0 for c, _ in want.values())
    variants = [(f"forced#{k}", forced(k)) for k in range(ROUNDS)]
    variants.append(("table", table_for(build, nranks, tmp_path / "table.json")))
    for name, env in variants:
        p = run(build, nranks, COLLTUNE_LOG="debug", **env)
        assert digests(p, nranks, (name, env)) == want, (name, env)
        # The collectives really were colltune's: the log names the chosen algorithms.
        ran = {(op, alg) for op, alg in LOG.findall(p.stderr) if op in OPS}
        if name == "table":
            assert ran and all(alg != "native" for _, alg in ran), (name, sorted(ran))
        else:
            for op in OPS:
                assert (op, env[f"COLLTUNE_{op.upper()}_ALGORITHM"]) in ran, (name, op, ran)


def test_shm_serves_nonblocking_calls(build):
    """shm forced for every operation: each non-blocking call runs through the node's shared
    segment (issue 36: a lane of its own per call in flight), with the native results,
    under every completion call."""
    nranks = NRANKS[-1]
    want = native(build, nranks)
    env = {f"COLLTUNE_{op.upper()}_ALGORITHM": "shm" for op in OPS}
    p = run(build, nranks, COLLTUNE_LOG="debug", **env)
    assert digests(p, nranks, ("shm", env)) == want
    ran = {(op, alg) for op, alg in LOG.findall(p.stderr) if op in OPS}
    assert ran == {(op, "shm") for op in OPS}, sorted(ran)


def test_without_a_progress_thread(build):
    """Everything runs inside the completion calls then (the split tree's other end)."""
    want = native(build, 5)
    for k in range(0, ROUNDS, 3):
        p = run(build, 5, COLLTUNE_PROGRESS="off", **forced(k))
        assert digests(p, 5, ("no thread", k)) == want


def test_no_handle_is_held_after_ten_thousand_collectives(build):
    p = run(build, 2, "--leak", "10000", timeout=600, **forced(1))
    assert p.returncode == 0 and "all ok" in p.stdout, (p.stdout[-2000:], p.stderr[-2000:])
    held = HELD.findall(p.stdout)
    assert sorted(int(r) for r, *_ in held) == [0, 1], p.stdout
    for _, comms, types, ops, after in held:
        assert (int(comms), int(types), int(ops), int(after)) == (0, 0, 0, 10000), held
    # The count is real: one reduce in flight, handles freed, is held until its wait.
    for _, comms, types, ops in PENDING.findall(p.stdout):
        assert (int(comms), int(types), int(ops)) == (1, 1, 1), p.stdout
    assert len(PENDING.findall(p.stdout)) == 2


def test_cancel_of_a_collective_request_is_refused(build):
    """Erroneous in MPI and impossible: an error through the communicator's handler, not a
    crash; the collective still completes with the right result. (MPI_Request_free, which
    the libraries accept, is accepted too: test_release.py.)"""
    p = run(build, 3, "--misuse", COLLTUNE_BCAST_ALGORITHM="binomial", COLLTUNE_LOG="debug")
    assert p.returncode == 0 and "all ok" in p.stdout, (p.stdout[-2000:], p.stderr[-2000:])
    assert p.stdout.count("misuse Cancel -> MPI_ERR_REQUEST") == 3, p.stdout
    assert "MPI_Ibcast" in p.stderr and "-> binomial" in p.stderr
    # A persistent start's too (its plan colltune's: the init's debug line), whose handler
    # colltune fetches only when the error is raised.
    assert p.stdout.count("misuse persistent Cancel -> MPI_ERR_REQUEST") == 3, p.stdout
    assert re.search(r"MPI_Bcast_init \d+ bytes -> binomial", p.stderr), p.stderr[-2000:]


def test_docs_list_the_intercepted_symbols():
    """docs/DROPIN.md's table of symbols is the built libraries' (scripts/dropin-symbols.py)."""
    root = Path(__file__).resolve().parents[2]
    if not all((root / "build" / b / "libcolltune_pmpi.so").is_file()
               for b in ("mpich", "openmpi")):
        pytest.skip("needs build/mpich and build/openmpi (make test builds both)")
    p = subprocess.run(["python3", str(root / "scripts" / "dropin-symbols.py"), "--check"],
                       capture_output=True, text=True, timeout=120)
    assert p.returncode == 0, p.stderr
