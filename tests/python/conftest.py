"""Fixtures for the results store, report and dashboard tests.

Helpers are handed out as session fixtures (not imported from here), so the tests
work under any pytest import mode.
"""

from __future__ import annotations

import copy
import json
import os
import subprocess
from pathlib import Path
from typing import TYPE_CHECKING

import colltune
import pytest
from colltune.store.store import Store

if TYPE_CHECKING:
    from colltune.core.mpi import MPIBuild

FIXTURES = Path(__file__).parent / "fixtures"
# Markup in stored values must come back as literal text everywhere.
EVIL = "<script>alert(1)</script><b>bold</b>"

# A fixed machine description, so tests do not depend on the host that runs them.
MACHINE = {
    "hostname": "node17.cluster", "cpu_model": "AMD EPYC 7763 64-Core Processor",
    "logical_cores": 128, "memory_total_bytes": 256 * 2**30, "os": "Linux",
    "os_release": "Debian GNU/Linux 12 (bookworm)", "kernel": "6.1.0-18-amd64",
    "arch": "x86_64",
    "caches": [{"level": 1, "type": "Data", "size": "32K", "shared_cpu_list": "0,64"},
               {"level": 2, "type": "Unified", "size": "512K", "shared_cpu_list": "0,64"},
               {"level": 3, "type": "Unified", "size": "32768K", "shared_cpu_list": "0-7,64-71"}],
}


def load_doc(name: str) -> dict:
    return json.loads((FIXTURES / name).read_text())


@pytest.fixture
def docs() -> dict[str, dict]:
    """The fixture bench documents by short name, fresh copies for each test."""
    return {"bcast_mpich": load_doc("bcast_mpich_16.json"),
            "allreduce_mpich": load_doc("allreduce_mpich_16.json"),
            "bcast_openmpi": load_doc("bcast_openmpi_16.json")}


def record_run(store: Store, benches: list[dict], *, argv: list[str] | None = None,
               machine: dict | None = None, status: str = "complete", **meta) -> int:
    """A finished run holding `benches`; returns its id."""
    run = store.begin_run("bench", argv or ["colltune", "bench", "--op", "bcast"],
                          machine=copy.deepcopy(machine or MACHINE), **meta)
    for bench in benches:
        run.add_bench(bench)
    run.finish(status)
    return run.id


def evil_doc(doc: dict) -> dict:
    """`doc` with markup, mathtext and a legend-hiding name among its stored values."""
    doc = copy.deepcopy(doc)
    doc["mpi"] = {"implementation": f"Evil{EVIL}", "version": "6.6", "library": EVIL}
    doc["command"] = f"mpiexec -n 16 ct_bench --note '{EVIL}'"
    renames = {"linear": EVIL, "binomial": "$a^b$", "knomial": "_hidden"}
    for result in doc["results"]:
        result["algorithm"] = renames.get(result["algorithm"], result["algorithm"])
    return doc


def record_evil_run(store: Store, doc: dict) -> int:
    machine = {**MACHINE, "hostname": f"host{EVIL}", "cpu_model": EVIL}
    return record_run(store, [evil_doc(doc)], argv=["colltune", "bench", "--note", EVIL],
                      machine=machine)


@pytest.fixture
def filled_db(tmp_path, docs) -> Path:
    """A store with run 1 (MPICH: bcast, allreduce) and run 2 (Open MPI: bcast)."""
    path = tmp_path / "colltune.db"
    with Store.open(path) as store:
        record_run(store, [docs["bcast_mpich"], docs["allreduce_mpich"]],
                   argv=["colltune", "bench", "--op", "bcast,allreduce", "-n", "16"])
        record_run(store, [docs["bcast_openmpi"]],
                   argv=["colltune", "bench", "--op", "bcast", "-n", "16"])
    return path


def subprocess_env(**extra: str) -> dict[str, str]:
    """The environment for a child Python that must import this very colltune."""
    package_root = str(Path(colltune.__file__).resolve().parents[1])
    path = os.pathsep.join(filter(None, [package_root, os.environ.get("PYTHONPATH")]))
    return {**os.environ, "PYTHONPATH": path, **extra}


def nonblocking_algorithms(ops: tuple[str, ...]) -> dict[str, list[str]]:
    """colltune's point-to-point algorithms of each operation (not native, not the shm
    family, whose non-blocking forms test_requests.py's test_shm_serves_nonblocking_calls
    and tests/c/test_shm_forms_mpi.c cover), from the C registry; empty lists when no
    build is there."""
    from colltune.core.mpi import MPIBuild, MPIError
    try:
        registry = MPIBuild.select().registry()
    except MPIError:
        return {op: [] for op in ops}
    return {op: [a["name"] for a in registry
                 if a["coll"] == op and not a["native"] and not a["shared_memory"]]
            for op in ops}


def forced_env(algs: dict[str, list[str]], k: int) -> dict[str, str]:
    """COLLTUNE_<OP>_ALGORITHM for the k-th algorithm of every operation (cycling through
    shorter lists)."""
    return {f"COLLTUNE_{op.upper()}_ALGORITHM": names[k % len(names)]
            for op, names in algs.items() if names}


def run_plain(build: MPIBuild, program: str, nranks: int, *args: str, preload: bool = True,
              timeout: int = 300, export: tuple[str, ...] = (),
              **env: str) -> subprocess.CompletedProcess:
    """tests/c/<program> (a plain MPI program) on nranks ranks, under the drop-in unless
    preload is False, with the caller's COLLTUNE_* variables left out and env added; export
    names the variables the launcher must hand to every rank."""
    e = {k: v for k, v in os.environ.items() if not k.startswith("COLLTUNE_")}
    e.update(build.launch_env(nranks))
    e.update(env)
    if preload:
        e["LD_PRELOAD"] = str(build.tool("libcolltune_pmpi.so"))
    cmd = build.launch_command(nranks, [str(build.tool(f"tests/c/{program}")), *args],
                               bind=False, export=export)
    return subprocess.run(cmd, env=e, capture_output=True, text=True, timeout=timeout)


@pytest.fixture(scope="session")
def record():
    return record_run


@pytest.fixture(scope="session")
def record_evil():
    return record_evil_run


@pytest.fixture(scope="session")
def evil() -> str:
    return EVIL


@pytest.fixture(scope="session")
def machine() -> dict:
    return copy.deepcopy(MACHINE)


@pytest.fixture(scope="session")
def fixture_doc():
    return load_doc


@pytest.fixture(scope="session")
def child_env():
    return subprocess_env
