"""Fortran programs under the drop-in (docs/DROPIN.md, "Fortran"): tests/fortran's program
through mpif.h, `use mpi` and `use mpi_f08`, built with Debian's mpif90.openmpi and
mpif90.mpich and run at 3 ranks with LD_PRELOAD of the drop-in built against that MPI
(build/debian-openmpi, build/debian-mpich: scripts/build-debian-mpi.sh). With an algorithm
forced for every operation, the COLLTUNE_LOG=debug log shows every Fortran collective call,
blocking and non-blocking, the classic eight and the v-variants, reduce-scatters and scans,
routed to it (counted against the program's own count) and the results are right (the
program checks them: MPI_IN_PLACE, MPI_BOTTOM, uneven counts with gaps, 1-based indices of
the wait and test family, requests back as MPI_REQUEST_NULL). Under COLLTUNE_MONITOR=count
the monitor counts those collectives as colltune's (no native call, colltune's messages
consistent), or, nothing forced, as native calls one for one; and the program's
point-to-point messages exactly. With an MPI 4 (MPICH here) the program also starts
persistent collectives twice each: right either way, and intercepted once the drop-in
exports the C MPI_<Op>_init (checked with nm -D, so the test holds before and after the
drop-in's persistent side lands). Skips without Debian's MPIs or gfortran
(scripts/ensure-system-mpi.sh installs them as root)."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest
from colltune.core.mpi import project_root
from colltune.monitor.monitor import consistency

NRANKS = 3
PROGRAMS = ("mpif", "mpi", "f08")  # tests/fortran/coll_<program>.F90
# The program's operations, in the order of its "rank R calls ..." line.
CALLS = ("Bcast", "Reduce", "Allreduce", "Scatter", "Gather", "Allgather", "Alltoall",
         "Barrier", "Ibcast", "Ireduce", "Iallreduce", "Iscatter", "Igather",
         "Allgatherv", "Alltoallv", "Gatherv", "Scatterv", "Reduce_scatter",
         "Reduce_scatter_block", "Scan", "Exscan", "Iallgather", "Ialltoall", "Ibarrier",
         "Iallgatherv", "Ialltoallv", "Igatherv", "Iscatterv", "Ireduce_scatter",
         "Ireduce_scatter_block", "Iscan", "Iexscan")
# The persistent ones (an MPI 4 only): "Bcast_init=I/S", I inits and S starts.
PERSISTENT = ("Bcast_init", "Allreduce_init", "Allgatherv_init", "Barrier_init")
# gatherv and scatterv linear: their binomial trees want every count at the start, which
# a non-blocking start leaves to the library.
FORCED = {"bcast": "binomial", "reduce": "binomial", "gather": "binomial",
          "scatter": "binomial", "allreduce": "ring", "allgather": "ring",
          "alltoall": "pairwise", "barrier": "dissemination", "allgatherv": "bruck",
          "alltoallv": "linear", "gatherv": "linear", "scatterv": "linear",
          "reduce_scatter": "recursive_halving", "reduce_scatter_block": "pairwise",
          "scan": "recursive_doubling", "exscan": "linear"}
P2P_BYTES = 5 * 4  # each point-to-point message: 5 INTEGERs
RECORD = re.compile(r"rank (\d+) calls" + "".join(rf" {c}=(\d+)" for c in CALLS)
                    + r" p2p=(\d+) persistent"
                    + "".join(rf" {p}=(\d+)/(\d+)" for p in PERSISTENT))
LOG = re.compile(r"colltune: rank \d+/\d+ MPI_([A-Za-z_]+) \d+ bytes -> ([a-z0-9_]+)")


def operation(call: str) -> str:
    """'Ibcast' -> 'bcast', 'Bcast_init' -> 'bcast': COLLTUNE_<OP>_ALGORITHM names the
    blocking operation's."""
    name = call.lower().removesuffix("_init")
    return name[1:] if name[1:] in FORCED else name


def mpi_version(name: str) -> int:
    """MPI_VERSION of Debian's MPI `name` (its mpi.h through its mpicc)."""
    p = subprocess.run([f"/usr/bin/mpicc.{name}", "-E", "-dM", "-x", "c", "-"],
                       input="#include <mpi.h>\n", capture_output=True, text=True, timeout=60)
    assert p.returncode == 0, p.stderr
    found = re.search(r"^#define MPI_VERSION (\d+)", p.stdout, re.M)
    assert found, "no MPI_VERSION in mpi.h"
    return int(found.group(1))


def exported(library: Path) -> set[str]:
    """The functions the library defines (nm -D)."""
    nm = subprocess.run(["nm", "-D", "--defined-only", str(library)],
                        capture_output=True, text=True, timeout=60)
    assert nm.returncode == 0, nm.stderr
    return {line.split()[-1] for line in nm.stdout.splitlines() if " T " in line}


class Debian:
    """One of Debian's MPIs: its tools, the drop-in built against it, the programs."""

    def __init__(self, name: str, programs: Path, mpi4: bool):
        self.name = name
        self.mpiexec = f"/usr/bin/mpiexec.{name}"
        self.library = project_root() / "build" / f"debian-{name}" / "libcolltune_pmpi.so"
        self.programs = programs
        self.mpi4 = mpi4  # the programs start persistent collectives
        self.symbols = exported(self.library)

    def intercepts(self, persistent: str) -> bool:
        """Whether the drop-in defines the C function of 'Bcast_init' (else the Fortran
        entry point's call reaches the library's, unseen by colltune)."""
        return f"MPI_{persistent}" in self.symbols

    def run(self, program: str, **env: str) -> subprocess.CompletedProcess:
        e = {k: v for k, v in os.environ.items() if not k.startswith("COLLTUNE_")}
        e.update(env, LD_PRELOAD=str(self.library))
        cmd = [self.mpiexec, "-n", str(NRANKS)]
        if self.name == "openmpi":  # its launcher passes only what it is told; 3 on 2 cores
            e.update(OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1")
            cmd += ["--oversubscribe"]
            for var in ["LD_PRELOAD", *env]:
                cmd += ["-x", var]
        cmd.append(str(self.programs / f"coll_{program}"))
        return subprocess.run(cmd, env=e, capture_output=True, text=True, timeout=180)


def missing(name: str) -> str | None:
    tools = [f"/usr/bin/{t}.{name}" for t in ("mpicc", "mpif90", "mpiexec")]
    absent = [t for t in tools if not os.access(t, os.X_OK)]
    if not shutil.which("gfortran"):
        absent.append("gfortran")
    if not absent:
        return None
    return (f"Debian's {name} or gfortran is not installed ({', '.join(absent)} missing): "
            "scripts/ensure-system-mpi.sh installs them as root")


@pytest.fixture(scope="module", params=["openmpi", "mpich"])
def debian(request, tmp_path_factory) -> Debian:
    name = request.param
    reason = missing(name)
    if reason:
        pytest.skip(reason)
    root = project_root()
    # Up to date in a moment when scripts/test.sh has just built it.
    b = subprocess.run([str(root / "scripts" / "build-debian-mpi.sh"), name],
                       capture_output=True, text=True, timeout=1200)
    assert b.returncode == 0, b.stderr[-4000:]
    out = tmp_path_factory.mktemp(f"fortran-{name}")
    mpi4 = mpi_version(name) >= 4  # MPICH 4.0 has the persistent collectives, Open MPI 4.1 not
    for program in PROGRAMS:
        # mpif.h declares no interfaces: gfortran 10 and later want argument mismatches
        # (one buffer an INTEGER array here, a REAL*8 one there) allowed.
        c = subprocess.run([f"/usr/bin/mpif90.{name}", "-O0", "-g", "-w",
                            "-ffree-line-length-none", "-fallow-argument-mismatch",
                            *(["-DCOLL_MPI4"] if mpi4 else []),
                            "-I", str(root / "tests" / "fortran"), "-J", str(out),
                            "-o", str(out / f"coll_{program}"),
                            str(root / "tests" / "fortran" / f"coll_{program}.F90")],
                           capture_output=True, text=True, timeout=300)
        assert c.returncode == 0, c.stderr[-4000:]
    return Debian(name, out, mpi4)


def ok(p: subprocess.CompletedProcess) -> None:
    assert p.returncode == 0 and "all ok" in p.stdout, (p.stdout[-2000:], p.stderr[-3000:])


def records(stdout: str) -> dict[int, dict[str, int]]:
    """Each rank's own count of its calls (and of its point-to-point messages, 'p2p'; of
    its persistent inits, 'Bcast_init', and starts, 'Bcast_init/starts')."""
    found = RECORD.findall(stdout)
    assert sorted(int(m[0]) for m in found) == list(range(NRANKS)), stdout
    keys = [*CALLS, "p2p", *(k for p in PERSISTENT for k in (p, f"{p}/starts"))]
    return {int(m[0]): dict(zip(keys, map(int, m[1:]), strict=True)) for m in found}


def persistent_calls(debian: Debian, counts: dict[int, dict[str, int]]) -> dict[str, tuple]:
    """Per persistent operation, all ranks' (inits, starts): both > 0 with an MPI 4 (the
    program starts each twice), none without."""
    calls = {p: (sum(c[p] for c in counts.values()),
                 sum(c[f"{p}/starts"] for c in counts.values())) for p in PERSISTENT}
    for p, (inits, starts) in calls.items():
        assert (inits > 0 and starts == 2 * inits) if debian.mpi4 else inits == starts == 0, p
    return calls


def forced_env() -> dict[str, str]:
    return {f"COLLTUNE_{op.upper()}_ALGORITHM": alg for op, alg in FORCED.items()}


@pytest.mark.parametrize("program", PROGRAMS)
def test_every_collective_call_runs_the_forced_algorithm(debian, program):
    p = debian.run(program, COLLTUNE_LOG="debug", **forced_env())
    ok(p)
    counts = records(p.stdout)
    routed: dict[str, dict[str, int]] = {}
    for call, alg in LOG.findall(p.stderr):
        routed.setdefault(call, {}).setdefault(alg, 0)
        routed[call][alg] += 1
    for call in CALLS:
        n = sum(c[call] for c in counts.values())
        assert n > 0, call  # the program calls every one
        assert routed.get(call) == {FORCED[operation(call)]: n}, (call, routed.get(call))
    # A persistent collective the drop-in intercepts runs the forced algorithm, logged
    # under its MPI_<Op>_init name once per init or once per start; one it does not leaves
    # no line (the library runs it, and the program checked its results all the same).
    for p, (inits, starts) in persistent_calls(debian, counts).items():
        if debian.mpi4 and debian.intercepts(p):
            got = routed.get(p, {})
            assert set(got) == {FORCED[operation(p)]} and sum(got.values()) in (inits, starts), \
                (p, got, inits, starts)
        else:
            assert p not in routed, (p, routed[p])


def monitored(debian: Debian, program: str, tmp_path: Path, **env: str) -> tuple[dict, dict]:
    out = tmp_path / f"monitor-{program}.json"
    p = debian.run(program, COLLTUNE_MONITOR="count", COLLTUNE_MONITOR_OUT=str(out), **env)
    ok(p)
    doc = json.loads(out.read_text())
    assert doc["level"] == "count" and doc["ranks"] == NRANKS
    return records(p.stdout), doc


def check_point_to_point(counts: dict, doc: dict) -> None:
    """The program's ring: p2p messages to the right neighbour, as many from the left."""
    for r in doc["per_rank"]:
        n = counts[r["rank"]]["p2p"]
        assert (r["app_messages"], r["app_bytes"]) == (n, n * P2P_BYTES), r
        assert (r["recv_messages"], r["recv_bytes"]) == (n, n * P2P_BYTES), r
        assert r["untracked_receives"] == 0, r


@pytest.mark.parametrize("program", PROGRAMS)
def test_monitor_counts_the_collectives_as_colltunes(debian, program, tmp_path):
    counts, doc = monitored(debian, program, tmp_path, **forced_env())
    for r in doc["per_rank"]:
        assert all(v["calls"] == 0 for v in r["native"].values()), r["native"]
        assert r["coll_messages"] > 0 and r["coll_recv_messages"] > 0, r
    check = consistency(doc)
    assert check["collective"]["consistent"] and check["application"]["consistent"], check
    check_point_to_point(counts, doc)


@pytest.mark.parametrize("program", PROGRAMS)
def test_monitor_counts_every_native_call(debian, program, tmp_path):
    counts, doc = monitored(debian, program, tmp_path)
    persistent_calls(debian, counts)
    for r in doc["per_rank"]:
        mine = counts[r["rank"]]
        want = {op: sum(mine[c] for c in CALLS if operation(c) == op) for op in FORCED}
        got = {op: int(v["calls"]) for op, v in r["native"].items()}
        # A persistent collective the drop-in intercepts and passes on is one native call
        # per init or per start; one it does not intercept the monitor never sees.
        for p in PERSISTENT:
            op = operation(p)
            extra = got.get(op, 0) - want[op]
            allowed = {mine[p], mine[f"{p}/starts"]} if debian.intercepts(p) else {0}
            assert extra in allowed, (op, got.get(op), want[op], allowed)
            got[op] = want[op]
        assert got == want
        assert r["coll_messages"] == 0, r
    check_point_to_point(counts, doc)


def test_every_fortran_name_is_exported(debian):
    """mpif.h's four manglings and mpi_f08's specific procedure, for each routine."""
    names = debian.symbols
    routines = [c.lower() for c in CALLS] + [
        "wait", "test", "waitall", "testall", "waitany", "testany", "waitsome", "testsome",
        "request_free", "request_get_status", "cancel", "op_free", "init", "init_thread",
        "finalize", "send", "ssend", "rsend", "bsend", "isend", "issend", "irsend",
        "ibsend", "recv", "irecv", "sendrecv", "sendrecv_replace", "mprobe", "improbe"]
    if debian.mpi4:  # the persistent collectives, every one of MPI 4's
        routines += [f"{op}_init" for op in FORCED] + ["start", "startall"]
    for r in routines:
        want = {f"mpi_{r}_", f"mpi_{r}__", f"mpi_{r}", f"MPI_{r.upper()}", f"mpi_{r}_f08_"}
        assert want <= names, (r, want - names)
