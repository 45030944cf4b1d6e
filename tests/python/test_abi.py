"""The drop-in built against the MPI-5 standard ABI (docs/DROPIN.md, "MPI-5 standard ABI";
scripts/build-abi.sh: build/mpich-abi, configured with MPICH's mpicc_abi). The programs there
link libmpi_abi.so.1 only; under the preloaded libcolltune_pmpi_abi.so (or linked with it)
with an algorithm forced for every operation, the debug log shows colltune serving every
call, and the results are the library's: plain_collectives checks its own, and
test_dropin_diff_mpi compares each MPI_X (colltune's) with PMPI_X (the library's) on the
same inputs. At 1, 2, 3 and 5 ranks, each run forcing another algorithm of every operation,
from the front of the registry's list or from its back (the shm and hier families)."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest
from colltune.core.hosts import project_root
from colltune.core.mpi import MPIBuild
from conftest import run_plain
from test_dropin import OPS, calls, ok, routed

BUILD = project_root() / "build" / "mpich-abi"
MPICC_ABI = project_root() / ".mpi" / "mpich" / "bin" / "mpicc_abi"
DROPIN = BUILD / "libcolltune_pmpi_abi.so"
NRANKS = (1, 2, 3, 5)
ORDERS = ("front", "back")
# The operations test_dropin_diff_mpi calls in their blocking form.
DIFF_BLOCKING = ("allgatherv", "alltoallv", "gatherv", "scatterv", "reduce_scatter",
                 "reduce_scatter_block", "scan", "exscan")
LOG = re.compile(r"colltune: rank \d+/\d+ MPI_([A-Za-z_]+) \d+ bytes -> ([a-z0-9_]+)")

# Without the MPICH wheel (a system-MPI run: MPICC=...) there is no ABI to build against.
# With it, a missing build is a failure (scripts/test.sh runs scripts/build-abi.sh first).
pytestmark = pytest.mark.skipif(not MPICC_ABI.is_file(),
                                reason=f"{MPICC_ABI} missing: no MPICH with the standard ABI")


@pytest.fixture(scope="module")
def build() -> MPIBuild:
    assert (BUILD / "CMakeCache.txt").is_file() and DROPIN.is_file(), (
        f"no ABI build in {BUILD}: run scripts/build-abi.sh")
    return MPIBuild.select("mpich-abi")


@pytest.fixture(scope="module")
def algorithms(build) -> dict[str, list[str]]:
    """colltune's algorithms per operation, from the ABI build's own libcolltune_abi.so. Read
    in a child: this process may hold the other build's libcolltune and libmpi already."""
    code = ("import ctypes, sys; lib = ctypes.CDLL(sys.argv[1]); "
            "lib.ct_registry_json.restype = ctypes.c_char_p; "
            "print(lib.ct_registry_json().decode())")
    out = subprocess.run([sys.executable, "-c", code, str(BUILD / "libcolltune_abi.so")],
                         capture_output=True, text=True, check=True).stdout
    algs: dict[str, list[str]] = {}
    for a in json.loads(out):
        if not a["native"]:
            algs.setdefault(a["coll"], []).append(a["name"])
    assert set(OPS) <= set(algs), algs
    return algs


def chosen(algorithms: dict[str, list[str]], nranks: int, order: str) -> dict[str, str]:
    """One algorithm of every operation: the i-th from the front or the back of its list,
    i the rank count's place in NRANKS (cycling through shorter lists)."""
    i = NRANKS.index(nranks)
    return {op: names[i % len(names)] if order == "front" else names[-1 - i % len(names)]
            for op, names in algorithms.items()}


def forced(choice: dict[str, str]) -> dict[str, str]:
    return {f"COLLTUNE_{op.upper()}_ALGORITHM": alg for op, alg in choice.items()}


def needed(path: Path) -> list[str]:
    """The shared libraries an ELF file names (DT_NEEDED)."""
    out = subprocess.run(["readelf", "-d", str(path)], capture_output=True, text=True,
                         check=True).stdout
    return [line.split("[", 1)[1].rstrip("]") for line in out.splitlines() if "(NEEDED)" in line]


def test_programs_and_drop_in_link_the_standard_abi(build):
    for path in (DROPIN, BUILD / "tests" / "c" / "plain_collectives",
                 BUILD / "tests" / "c" / "test_dropin_diff_mpi"):
        libs = needed(path)
        assert "libmpi_abi.so.1" in libs and not any(
            lib.startswith("libmpi.so") for lib in libs), (path, libs)


def test_drop_in_has_no_fortran_entry_points(build):
    out = subprocess.run(["nm", "-D", "--defined-only", str(DROPIN)], capture_output=True,
                         text=True, check=True).stdout
    symbols = {line.split()[-1] for line in out.splitlines() if line.strip()}
    assert "MPI_Bcast" in symbols and "MPI_Allreduce" in symbols
    assert not symbols & {"mpi_bcast_", "mpi_bcast_f08_", "MPI_BCAST"}


@pytest.mark.parametrize("order", ORDERS)
@pytest.mark.parametrize("nranks", NRANKS)
def test_preloaded_forced_serves_every_call(build, algorithms, nranks, order):
    choice = {op: alg for op, alg in chosen(algorithms, nranks, order).items() if op in OPS}
    env = {**forced(choice), "LD_PRELOAD": str(DROPIN), "COLLTUNE_LOG": "debug"}
    p = run_plain(build, "plain_collectives", nranks, preload=False, timeout=120, **env)
    ok(p, choice)
    n = calls(p.stdout, nranks)
    assert all(n.values()), n
    for op, alg in choice.items():
        assert routed(p.stderr, op) == {alg: n[op]}, (op, alg)


# The front and the back of the lists in turn (every rank count both ways: a minute on two
# cores, most of it the debug log of 5 oversubscribed ranks).
@pytest.mark.parametrize(("nranks", "order"),
                         [(n, ORDERS[i % 2]) for i, n in enumerate(NRANKS)])
def test_linked_forced_matches_the_library(build, algorithms, nranks, order):
    choice = chosen(algorithms, nranks, order)
    p = run_plain(build, "test_dropin_diff_mpi", nranks, preload=False, timeout=120,
                  COLLTUNE_LOG="debug", **forced(choice))
    assert p.returncode == 0 and f"N={nranks}: " in p.stdout and " 0 failures" in p.stdout, (
        choice, p.stdout[-2000:], p.stderr[-3000:])
    # colltune served calls: the program's blocking calls are the v-operations', reduce-
    # scatters' and scans', and the log shows the forced algorithm serving each of them
    # (not every call: e.g. the non-commutative op falls back to native where the algorithm
    # needs a commutative one; the exact routing is test_dropin.py's).
    served: dict[str, set[str]] = {}
    for name, alg in LOG.findall(p.stderr):
        served.setdefault(name, set()).add(alg)
    for op in DIFF_BLOCKING:
        mpi_name = op[0].upper() + op[1:]
        assert choice[op] in served.get(mpi_name, set()), (op, choice[op], served.get(mpi_name))
