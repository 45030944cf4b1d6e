"""The message monitor on an unmodified program with known traffic (tests/c/plain_patterns.c:
a ring of 3 x 400 B, an all-to-all of 10 B messages, a one-to-many of 1 KiB from rank 0, a
binomial MPI_Bcast by colltune, native allreduces, receives from MPI_ANY_SOURCE on a reordered
communicator through MPI_Waitany/MPI_Testsome, MPI_Mprobe/MPI_Mrecv): at every level the record
holds exactly the expected counts, bytes, matrices and histograms, on the send and the receive
side; colltune's collective traffic is exactly its schedule's; counters and energy are numbers
or "unavailable" with a reason. Then an mpi4py program (installed by scripts/ensure-mpi4py.sh)
under `colltune monitor`: its matrices are consistent (every rank's sends to j equal j's
receives from it) and its buffer messages are exactly the ones it sent."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest
from colltune.core.mpi import MPIBuild
from colltune.monitor.monitor import consistency, run_monitored

N = 4
BINS = 48


def expected(n: int):
    msgs = [[0] * n for _ in range(n)]
    byts = [[0] * n for _ in range(n)]
    hist = [[[0] * BINS for _ in range(n)] for _ in range(n)]

    def add(i, j, size, times=1):
        msgs[i][j] += times
        byts[i][j] += size * times
        hist[i][j][size.bit_length() - 1] += times

    for i in range(n):
        add(i, (i + 1) % n, 400, 3)
        for d in range(1, n):
            add(i, (i + d) % n, 10)
    for j in range(1, n):
        add(0, j, 1024)
    for parity in (0, 1):  # the split communicators: members by descending world rank
        members = sorted((r for r in range(n) if r % 2 == parity), reverse=True)
        for p, r in enumerate(members):
            if len(members) > 1:
                add(r, members[(p + 1) % len(members)], 8)
    members = list(range(n - 1, -1, -1))  # the reversed world, its communicator freed early
    for p, r in enumerate(members):
        if n > 1:
            add(r, members[(p + 1) % n], 4)
    if n > 1:
        add(1, 0, 12)
    coll = [[0] * n for _ in range(n)]
    for v in range(1, n):  # colltune's binomial tree from 0: v's parent clears its low bit
        coll[v & (v - 1)][v] += 1
    return msgs, byts, hist, coll


@pytest.fixture(scope="module")
def build():
    return MPIBuild.select()


def record(build, level, tmp_path):
    cmd = build.launch_command(N, [str(build.tool("tests/c/plain_patterns"))], bind=False,
                               export=("COLLTUNE_BCAST_ALGORITHM",))
    env = {**build.launch_env(N), "COLLTUNE_BCAST_ALGORITHM": "binomial"}
    doc = run_monitored(build, cmd, level, tmp_path / f"{level}.json", env=env, timeout=300)
    assert doc["exit_code"] == 0
    return doc


@pytest.mark.parametrize("level", ["counters", "count", "peers", "sizes"])
def test_every_level_counts_exactly(build, level, tmp_path):
    doc = record(build, level, tmp_path)
    msgs, byts, hist, coll = expected(N)
    assert doc["level"] == level and doc["ranks"] == N
    ranks = doc["per_rank"]
    for r in ranks:
        assert level == "counters" or r["native"]["allreduce"]["calls"] == 2
        for key in ("instructions", "cycles", "cache_misses"):
            assert r[key] is None or r[key] > 0
        assert r["energy_uj"] is None or r["energy_uj"] >= 0
    if any(r["instructions"] is None for r in ranks):
        assert "perf_event_open" in doc["counters_unavailable"]
    if any(r["energy_uj"] is None for r in ranks):
        assert doc["energy_unavailable"]
    if level == "counters":
        assert all(r["app_messages"] == 0 and r["coll_messages"] == 0 for r in ranks)
        assert "messages" not in doc
        return
    def column(m, j):
        return sum(row[j] for row in m)

    for i, r in enumerate(ranks):
        assert r["app_messages"] == sum(msgs[i]) and r["app_bytes"] == sum(byts[i])
        assert r["coll_messages"] == sum(coll[i]) and r["coll_bytes"] == 4096 * sum(coll[i])
        assert r["recv_messages"] == column(msgs, i) and r["recv_bytes"] == column(byts, i)
        assert r["coll_recv_messages"] == column(coll, i)
        assert r["coll_recv_bytes"] == 4096 * column(coll, i)
        assert r["untracked_receives"] == 0
    check = doc["consistency"]
    assert check["application"]["consistent"] and check["collective"]["consistent"]
    assert check["application"]["scope"] == ("totals" if level == "count" else "pairs")
    if level == "count":
        assert "messages" not in doc
        return
    assert doc["messages"] == msgs and doc["bytes"] == byts

    def transpose(m):
        return [list(col) for col in zip(*m, strict=True)]

    assert doc["recv_messages"] == transpose(msgs) and doc["recv_bytes"] == transpose(byts)
    assert doc["coll_recv_messages"] == transpose(coll)
    assert doc["coll_recv_bytes"] == [[4096 * c for c in row] for row in transpose(coll)]
    assert doc["coll_messages"] == coll
    assert doc["coll_bytes"] == [[4096 * c for c in row] for row in coll]
    if level == "sizes":
        got = [[row[j * BINS:(j + 1) * BINS] for j in range(N)] for row in doc["histogram"]]
        assert got == hist
    else:
        assert "histogram" not in doc


def test_monitor_command_records_the_matrices(build, tmp_path, child_env):
    env = child_env(COLLTUNE_DB=str(tmp_path / "ct.db"), COLLTUNE_BCAST_ALGORITHM="binomial")
    env.update(build.launch_env(N))
    cmd = build.launch_command(N, [str(build.tool("tests/c/plain_patterns"))], bind=False,
                               export=("COLLTUNE_BCAST_ALGORITHM",))
    p = subprocess.run([sys.executable, "-m", "colltune.cli", "monitor", "-o",
                        str(tmp_path / "m.json"), "--", *cmd], env=env, cwd=tmp_path,
                       capture_output=True, text=True, timeout=300)
    assert p.returncode == 0, p.stderr
    assert "messages (row: sender)" in p.stdout
    run_id = p.stdout.split("recorded as run ")[1].split()[0]
    e = subprocess.run([sys.executable, "-m", "colltune.cli", "export", run_id, "--format",
                        "json"], env=env, cwd=tmp_path, capture_output=True, text=True,
                       timeout=60)
    assert e.returncode == 0, e.stderr
    (bench,) = json.loads(e.stdout)["benches"]
    assert bench["monitor"]["messages"] == expected(N)[0]
    r = subprocess.run([sys.executable, "-m", "colltune.cli", "report", run_id, "-o",
                        str(tmp_path / "r.html")], env=env, cwd=tmp_path, capture_output=True,
                       text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    html = (tmp_path / "r.html").read_text()
    assert "<section id='monitor'>" in html and html.count("<figure") == 3


def test_monitor_needs_a_command(tmp_path, child_env):
    p = subprocess.run([sys.executable, "-m", "colltune.cli", "monitor", "--no-record"],
                       env=child_env(), cwd=tmp_path, capture_output=True, text=True,
                       timeout=60)
    assert p.returncode == 2 and "give the command after --" in p.stderr


def test_consistency_finds_a_lost_message():
    """The check is not vacuous: a message sent and not received is named."""
    doc = {"level": "peers", "per_rank": [{"recv_messages": 0, "untracked_receives": 0}] * 2,
           "messages": [[0, 2], [1, 0]], "bytes": [[0, 20], [10, 0]],
           "recv_messages": [[0, 1], [1, 0]], "recv_bytes": [[0, 10], [10, 0]],
           "coll_messages": [[0, 0], [0, 0]], "coll_bytes": [[0, 0], [0, 0]],
           "coll_recv_messages": [[0, 0], [0, 0]], "coll_recv_bytes": [[0, 0], [0, 0]]}
    check = consistency(doc)
    assert check["collective"]["consistent"]
    assert not check["application"]["consistent"]
    assert check["application"]["mismatches"] == [{"sender": 0, "receiver": 1, "sent": [2, 20],
                                                   "received": [1, 10]}]


def mpi4py_python(build) -> Path:
    """The MPI wheel's own venv python, where scripts/ensure-mpi4py.sh puts mpi4py."""
    py = Path(build.mpiexec).parent / "python"
    probe = subprocess.run([str(py), "-c", "import mpi4py"], capture_output=True, timeout=60) \
        if py.exists() else None
    if probe is None or probe.returncode != 0:
        pytest.skip(f"no mpi4py next to {build.mpiexec}: run scripts/ensure-mpi4py.sh "
                    f"{build.name}")
    return py


def test_mpi4py_program_is_consistent(build, tmp_path, child_env):
    py = mpi4py_python(build)
    program = Path(__file__).parent / "programs" / "mpi4py_traffic.py"
    env = child_env(COLLTUNE_DB=str(tmp_path / "ct.db"))
    env.update(build.launch_env(N))
    cmd = build.launch_command(N, [str(py), str(program)], bind=False)
    p = subprocess.run([sys.executable, "-m", "colltune.cli", "monitor", "--mpi", build.name,
                        "-o", str(tmp_path / "m.json"), "--", *cmd], env=env, cwd=tmp_path,
                       capture_output=True, text=True, timeout=300)
    assert p.returncode == 0, p.stdout + p.stderr
    assert "application consistent, collective consistent" in p.stdout
    doc = json.loads((tmp_path / "m.json").read_text())
    check = consistency(doc)
    assert check["application"]["consistent"] and check["collective"]["consistent"]
    assert check["untracked_receives"] == 0
    expected = json.loads(p.stdout.splitlines()[0])["buffer_traffic"]
    for i in range(N):
        for j in range(N):
            pickled = 2 if j == (i + 1) % N else 0  # the ring of comm.send objects
            assert doc["messages"][i][j] == expected[i][j][0] + pickled
            if pickled:
                assert doc["bytes"][i][j] > expected[i][j][1]
            else:
                assert doc["bytes"][i][j] == expected[i][j][1]


def test_mpi4py_collectives_go_through_colltune(build, child_env):
    """The drop-in serves an mpi4py program's buffer collectives, also where mpi4py calls
    the MPI 4 large-count forms (MPI_Bcast_c, ... on MPICH): with every algorithm forced,
    the log names colltune's algorithm for each call, and the program's own checks hold."""
    py = mpi4py_python(build)
    program = Path(__file__).parent / "programs" / "mpi4py_collectives.py"
    forced = {"BCAST": "binomial", "ALLREDUCE": "ring", "SCATTER": "binomial",
              "BARRIER": "dissemination"}
    env = child_env(LD_PRELOAD=str(build.tool("libcolltune_pmpi.so")), COLLTUNE_LOG="debug",
                    COLLTUNE_PROGRESS="off",
                    **{f"COLLTUNE_{op}_ALGORITHM": alg for op, alg in forced.items()})
    env.update(build.launch_env(N))
    cmd = build.launch_command(N, [str(py), str(program)], bind=False,
                               export=("LD_PRELOAD", "COLLTUNE_LOG", "COLLTUNE_PROGRESS",
                                       *(f"COLLTUNE_{op}_ALGORITHM" for op in forced)))
    p = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=300)
    assert p.returncode == 0, p.stdout + p.stderr
    assert "ok" in p.stdout.split()
    for call, alg in (("Bcast", "binomial"), ("Allreduce", "ring"), ("Scatter", "binomial"),
                      ("Ibcast", "binomial"), ("Barrier", "dissemination")):
        ran = re.findall(rf"MPI_{call} \d+ bytes -> ([a-z_]+)", p.stderr)
        assert len(ran) == N and set(ran) == {alg}, (call, ran, p.stderr[-2000:])
