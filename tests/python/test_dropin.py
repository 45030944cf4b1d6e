"""The PMPI drop-in on an unmodified program (tests/c/plain_collectives.c, built with plain
mpicc): every collective goes through colltune (counted in the COLLTUNE_LOG=debug log),
results are right for every forced algorithm, on split and dup communicators too, and bad
input gives the error classes native MPI gives."""

from __future__ import annotations

import os
import re
import subprocess
import sys

import pytest
from colltune.mpi import MPIBuild

NRANKS = 3  # not a power of two; the split makes communicators of 2 and 1
EXPORT = ("LD_PRELOAD", "COLLTUNE_LOG", "COLLTUNE_SEGSIZE", "COLLTUNE_BCAST_ALGORITHM",
          "COLLTUNE_REDUCE_ALGORITHM", "COLLTUNE_ALLREDUCE_ALGORITHM")
OPS = {"bcast": "Bcast", "reduce": "Reduce", "allreduce": "Allreduce"}


@pytest.fixture(scope="module")
def build() -> MPIBuild:
    return MPIBuild.select()


def launch(build: MPIBuild, *args: str, preload: bool = True, **env: str):
    e = {k: v for k, v in os.environ.items() if not k.startswith("COLLTUNE_")}
    e.update(build.launch_env(NRANKS))
    e.update(env)
    if preload:
        e["LD_PRELOAD"] = str(build.tool("libcolltune_pmpi.so"))
    cmd = build.launch_command(NRANKS, [str(build.tool("tests/c/plain_collectives")), *args],
                               bind=False, export=EXPORT)
    return subprocess.run(cmd, env=e, capture_output=True, text=True, timeout=300)


def calls(stdout: str) -> dict[str, int]:
    total = dict.fromkeys(OPS, 0)
    for m in re.finditer(r"calls bcast=(\d+) reduce=(\d+) allreduce=(\d+)", stdout):
        for op, n in zip(OPS, m.groups(), strict=True):
            total[op] += int(n)
    return total


def routed(stderr: str, op: str) -> dict[str, int]:
    """How many MPI_<op> calls the log shows, per chosen algorithm."""
    out: dict[str, int] = {}
    for m in re.finditer(rf"colltune: rank \d+/\d+ MPI_{OPS[op]} \d+ bytes -> (\w+)", stderr):
        out[m.group(1)] = out.get(m.group(1), 0) + 1
    return out


def algorithms(build: MPIBuild, op: str) -> list[str]:
    return [a["name"] for a in build.registry() if a["coll"] == op and not a["native"]]


@pytest.mark.parametrize("op", list(OPS))
def test_every_forced_algorithm_runs_every_call(build, op):
    for alg in algorithms(build, op):
        env = {f"COLLTUNE_{op.upper()}_ALGORITHM": alg, "COLLTUNE_LOG": "debug"}
        p = launch(build, **env)
        assert p.returncode == 0 and "all ok" in p.stdout, (alg, p.stdout, p.stderr[-2000:])
        n = calls(p.stdout)
        assert sum(n.values()) > 0
        assert routed(p.stderr, op) == {alg: n[op]}, alg
        for other in OPS:
            if other != op:
                assert routed(p.stderr, other) == {"native": n[other]}


def test_segment_size_from_the_environment(build):
    p = launch(build, COLLTUNE_BCAST_ALGORITHM="pipeline", COLLTUNE_SEGSIZE="100",
               COLLTUNE_LOG="debug")
    assert p.returncode == 0 and "all ok" in p.stdout
    assert "MPI_Bcast 4000 bytes -> pipeline segsize 100" in p.stderr


def test_without_forcing_everything_is_native_and_silent(build):
    p = launch(build)
    assert p.returncode == 0 and "all ok" in p.stdout and "colltune:" not in p.stderr


def test_unknown_algorithm_names_the_valid_ones(build):
    p = launch(build, COLLTUNE_REDUCE_ALGORITHM="fastest")
    assert p.returncode != 0
    valid = ", ".join(["native", *algorithms(build, "reduce")])
    assert f"COLLTUNE_REDUCE_ALGORITHM='fastest' is not a reduce algorithm; valid: {valid}" \
        in p.stderr


def test_bad_segment_size_is_refused(build):
    p = launch(build, COLLTUNE_ALLREDUCE_ALGORITHM="ring", COLLTUNE_SEGSIZE="12k")
    assert p.returncode != 0
    assert "COLLTUNE_SEGSIZE='12k' is not a positive number of bytes" in p.stderr


def test_bad_input_gives_the_native_error_classes(build):
    native = launch(build, "--errors", preload=False)
    assert native.returncode == 0, native.stderr
    lines = native.stdout.splitlines()
    assert len(lines) == 9 and all(not ln.endswith(" 0") for ln in lines), lines
    forced = launch(build, "--errors", COLLTUNE_BCAST_ALGORITHM="binomial",
                    COLLTUNE_REDUCE_ALGORITHM="binomial", COLLTUNE_ALLREDUCE_ALGORITHM="ring")
    assert forced.returncode == 0, forced.stderr
    assert forced.stdout.splitlines() == lines


def test_preload_prints_the_library(build):
    p = subprocess.run([sys.executable, "-m", "colltune.cli", "preload"], capture_output=True,
                       text=True, check=True)
    assert p.stdout.strip() == str(build.tool("libcolltune_pmpi.so"))
