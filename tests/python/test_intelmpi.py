"""Intel MPI (the impi-rt wheel in .mpi/intelmpi) as the third MPI: it is MPICH-ABI, so the
programs and the drop-in of build/mpich run under its mpiexec (MPIBuild 'intelmpi'). The C
programs that check every algorithm of the eight operations and of the v-variants against
native (the ctests coll_vs_native_*, move_vs_native_*, coll_v_vs_native_*), with Intel MPI's
native as the reference, at 2 and 3 ranks; the unmodified plain_collectives under the drop-in
with every algorithm forced; `colltune bench` and `colltune verify` with COLLTUNE_MPI=intelmpi.
Results only, never timings. Skipped when Intel MPI is not installed
(`scripts/setup.sh intelmpi`)."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest
from colltune.core.mpi import MPIBuild, MPIError, describe_library, intelmpi_root
from colltune.tune import table as tbl

pytestmark = pytest.mark.skipif(
    not (intelmpi_root() / "bin" / "mpiexec").is_file(),
    reason=f"Intel MPI is not installed in {intelmpi_root()} (scripts/setup.sh intelmpi)")

RANKS = (2, 3)
OPS = ("bcast", "reduce", "allreduce", "scatter", "gather", "allgather", "alltoall", "barrier")
# Intel MPI 2021.13's own MPI_Allgather (shm fabric) writes wrong bytes and corrupts the heap
# at 3 ranks when the receive type is contiguous(4, INT) and the send type 4k INT (equal
# signatures): test_move_mpi finds it in `native`, the library under test, not in colltune.
# That run leaves allgather out and checks colltune's allgather algorithms one by one.
NATIVE_ALLGATHER_BROKEN = {3}


@pytest.fixture(scope="module")
def intel() -> MPIBuild:
    try:
        build = MPIBuild.select("intelmpi")
        build.tool("libcolltune_pmpi.so")
    except MPIError as e:
        pytest.fail(f"Intel MPI is installed but not usable: {e}")
    return build


def registry(build: MPIBuild) -> dict[str, list[str]]:
    out: dict[str, list[str]] = {}
    for a in build.registry():
        out.setdefault(a["coll"], []).append(a["name"])
    return out


def mpirun(build: MPIBuild, n: int, program: list[str], *, preload: bool = False,
           timeout: int = 120, **env: str) -> subprocess.CompletedProcess:
    e = {k: v for k, v in os.environ.items() if not k.startswith("COLLTUNE_")}
    e.update(build.launch_env(n), **env)
    if preload:
        e["LD_PRELOAD"] = str(build.tool("libcolltune_pmpi.so"))
    cmd = build.launch_command(n, program, bind=False)
    return subprocess.run(cmd, env=e, capture_output=True, text=True, timeout=timeout)


def test_the_intelmpi_build_is_intel_mpi_running_mpich_programs(intel):
    from colltune.tune.tune import build_library

    assert intel.flavor == "intelmpi" and intel.build_dir.name == "mpich"
    assert str(intelmpi_root()) in intel.mpiexec
    lib = describe_library(build_library(intel))
    # as the library says it: the drop-in matches a table's implementation in that text
    assert lib["implementation"] == "Intel(R) MPI" and lib["version"].startswith("20"), lib
    assert lib["implementation"] in lib["library"] and lib["version"] in lib["library"]


@pytest.mark.parametrize("n", RANKS)
@pytest.mark.parametrize(("program", "args", "verdict"), [
    ("test_coll_mpi", ["--small"], "all equal to native"),
    ("test_move_mpi", ["--small"], "all correct"),
    ("test_coll_v_mpi", [], " 0 failures"),
], ids=["coll", "move", "coll_v"])
def test_every_algorithm_against_intel_native(intel, n, program, args, verdict):
    if program == "test_move_mpi" and n in NATIVE_ALLGATHER_BROKEN:
        args = [*args, "--skip", "allgather"]
    p = mpirun(intel, n, [str(intel.tool(f"tests/c/{program}")), *args])
    assert p.returncode == 0 and verdict in p.stdout, (p.stdout[-3000:], p.stderr[-3000:])


@pytest.mark.parametrize("n", sorted(NATIVE_ALLGATHER_BROKEN))
def test_colltune_allgather_algorithms_where_intel_native_is_broken(intel, n):
    prog = str(intel.tool("tests/c/test_move_mpi"))
    for alg in registry(intel)["allgather"]:
        if alg == "native":
            continue
        p = mpirun(intel, n, [prog, "--small", "--only", f"allgather/{alg}"])
        assert p.returncode == 0 and "all correct" in p.stdout, (alg, p.stdout[-3000:],
                                                                 p.stderr[-3000:])


@pytest.mark.parametrize("n", RANKS)
def test_the_drop_in_routes_every_algorithm_under_intel_mpi(intel, n):
    """plain_collectives (built with plain mpicc, MPICH) preloaded with the drop-in: run k
    forces algorithm k of every operation at once (cycling), so the runs cover them all; the
    debug log shows every call of each operation taken by the forced algorithm."""
    from test_dropin import calls, routed

    algs = {op: [a for a in names if a != "native"] for op, names in registry(intel).items()
            if op in OPS}
    for k in range(max(len(v) for v in algs.values())):
        chosen = {op: names[k % len(names)] for op, names in algs.items()}
        p = mpirun(intel, n, [str(intel.tool("tests/c/plain_collectives"))], preload=True,
                   COLLTUNE_LOG="debug",
                   **{f"COLLTUNE_{op.upper()}_ALGORITHM": a for op, a in chosen.items()})
        assert p.returncode == 0 and "all ok" in p.stdout, (chosen, p.stdout[-2000:],
                                                            p.stderr[-3000:])
        counts = calls(p.stdout, n)
        for op, alg in chosen.items():
            assert routed(p.stderr, op) == {alg: counts[op]}, (op, alg)


def test_intel_native_allgather_bug_is_still_there(intel):
    """Names the Intel MPI bug the test above steps around; when a newer impi-rt fixes it this
    fails, and NATIVE_ALLGATHER_BROKEN can go."""
    p = mpirun(intel, 3, [str(intel.tool("tests/c/test_move_mpi")), "--small", "--only",
                          "allgather/native"])
    assert p.returncode != 0 and "allgather/native" in p.stdout + p.stderr


def cli(tmp_path, *args: str, timeout: int = 300) -> subprocess.CompletedProcess:
    from conftest import subprocess_env

    env = subprocess_env(COLLTUNE_MPI="intelmpi", COLLTUNE_DB=str(tmp_path / "ct.db"))
    return subprocess.run([sys.executable, "-m", "colltune.cli", *args], env=env,
                          cwd=tmp_path, capture_output=True, text=True, timeout=timeout)


def test_cli_tune_bench_and_verify_under_intel_mpi(tmp_path, intel):
    p = cli(tmp_path, "bench", "--op", "allreduce", "-n", "2", "--max", "1K", "--iters", "3",
            "--json", "bench.json")
    assert p.returncode == 0, p.stderr
    doc = json.loads((tmp_path / "bench.json").read_text())
    assert doc["mpi"]["implementation"] == "Intel(R) MPI" and "Intel(R) MPI 20" in p.stdout
    assert {r["algorithm"] for r in doc["results"]} == set(registry(intel)["allreduce"])
    assert all(r["check"] == ("not checked" if r["algorithm"] == "native" else "ok")
               for r in doc["results"]), doc["results"]
    # tune then verify: the table goes through the drop-in (LD_PRELOAD) under Intel MPI
    p = cli(tmp_path, "tune", "--strategy", "exhaustive", "--ops", "bcast,allreduce",
            "--ranks", "2", "--sizes", "64-4K", "--iters", "3", "-o", "t.json")
    assert p.returncode == 0, p.stderr
    table = json.loads((tmp_path / "t.json").read_text())
    assert table["mpi"]["build"] == "intelmpi"
    assert table["mpi"]["implementation"] == "Intel(R) MPI"
    p = cli(tmp_path, "verify", "t.json", "--rounds", "1", "--iters", "5")
    assert p.returncode == 0, p.stdout + p.stderr
    fixed = tmp_path / "t.verified.json"
    rec = json.loads(fixed.read_text())["verified"]
    assert rec["points"] and all(r["tuned_us"] > 0 and r["native_us"] > 0
                                 for r in rec["points"])
    # the drop-in takes the verified table under Intel MPI and follows it
    p = mpirun(intel, 2, [str(intel.tool("ct_osu")), "--iters", "1", "--warmup", "0", "--op",
                          "bcast", "--sizes", "4096"], preload=True, COLLTUNE_LOG="debug",
               COLLTUNE_TABLE=str(fixed))
    assert p.returncode == 0 and "COLLTUNE_TABLE not used" not in p.stderr, p.stderr
    want = tbl.lookup(json.loads(fixed.read_text()), "bcast", 2, 4096)["algorithm"]
    assert f"MPI_Bcast 4096 bytes -> {want}" in p.stderr, p.stderr
