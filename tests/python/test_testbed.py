"""The multi-host test bed (colltune testbed, docs/TESTBED.md) on 2 and 3 emulated hosts with
2 ranks each, under MPICH and Open MPI: every host its own hostname and shared-memory
communicator, every colltune collective and algorithm equal to native across the hosts, and
nothing of the bed left afterwards, also after failed, timed-out and half-made beds.

Needs root and network/UTS namespaces: skipped otherwise (CI runs as root). The beds are
named `ctbt` (a user's default bed `ctb` is never touched)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest
from colltune.core import testbed
from colltune.core.hosts import project_root
from colltune.core.mpi import MPIBuild, MPIError, available_builds

NAME = "ctbt"
OTHER = "ctbf"  # the beds of the failure tests, apart from the module's
PPN = 2
MPIS = [m for m in ("mpich", "openmpi") if m in available_builds()]

_why = testbed.unavailable_reason(rate=True)
pytestmark = pytest.mark.skipif(_why is not None, reason=f"no test bed here: {_why}")

# Two defects of the MPIs themselves across hosts, found by these tests, worked around here
# only (docs/TESTBED.md): MPICH 5.0's native OFI RMA over libfabric's tcp provider lets
# MPI_Win_flush_all return before a put is visible at its target (test_move_mpi's barrier
# check relies on it), and Open MPI 5.0's coll/han (active only across nodes) gathers into
# a vector receive type wrongly, for native gather and allgather.
MPI_ENV = {"mpich": {"MPIR_CVAR_CH4_OFI_ENABLE_RMA": "0"},
           "openmpi": {"OMPI_MCA_coll": "^han"}}


def colltune(*args: str, timeout: float = 300, env: dict | None = None, name: str = NAME):
    return subprocess.run([sys.executable, "-m", "colltune.cli", "testbed", "--name", name,
                           *args], capture_output=True, text=True, timeout=timeout,
                          env={**os.environ, **(env or {})})


def assert_nothing_left(name: str = NAME) -> None:
    assert testbed.leftovers(name) == []
    links = subprocess.run(["ip", "-o", "link"], capture_output=True, text=True).stdout
    assert f"{name}-" not in links
    assert not Path(f"/run/netns/{name}-br").exists()


@pytest.fixture(scope="module", params=[2, 3], ids=["2hosts", "3hosts"])
def bed(request):
    testbed.down(NAME)  # a bed left by an earlier, killed run
    out = colltune("up", "--hosts", str(request.param), timeout=120)
    assert out.returncode == 0, out.stderr
    yield request.param
    out = colltune("down", timeout=120)
    assert out.returncode == 0, out.stderr
    assert_nothing_left()


def mpiexec(mpi: str, program: list[str], *, n: int | None = None, timeout: float = 240,
            name: str = NAME):
    args = ["mpiexec", "--mpi", mpi, "-ppn", str(PPN), "--timeout", str(timeout)]
    if n:
        args += ["-n", str(n)]
    return colltune(*args, "--", *program, timeout=timeout + 60, env=MPI_ENV.get(mpi),
                    name=name)


@pytest.mark.parametrize("mpi", MPIS)
def test_hosts_and_shared_communicators(bed, mpi):
    out = mpiexec(mpi, [str(build_tool(mpi, "tests/c/testbed_check"))])
    assert out.returncode == 0, out.stderr[-3000:]
    doc = json.loads(out.stdout.strip().splitlines()[-1])
    hosts = [f"{NAME}-h{i}" for i in range(bed)]
    assert doc["ranks"] == bed * PPN
    assert [r["host"] for r in doc["per_rank"]] == [h for h in hosts for _ in range(PPN)]
    assert doc["nodes"] == bed
    assert all(r["shared_size"] == PPN for r in doc["per_rank"])
    assert [r["shared_leader"] for r in doc["per_rank"]] == [
        PPN * i for i in range(bed) for _ in range(PPN)]
    assert doc["consistent"] and doc["ring_ok"]


@pytest.mark.parametrize("mpi", MPIS)
@pytest.mark.parametrize("program", ["test_coll_mpi", "test_move_mpi"])
def test_collectives_equal_native_across_hosts(bed, mpi, program):
    out = mpiexec(mpi, [str(build_tool(mpi, f"tests/c/{program}")), "--small"])
    assert out.returncode == 0, (out.stdout[-3000:], out.stderr[-3000:])
    assert f"N={bed * PPN}" in out.stdout
    assert "FAIL" not in out.stdout


def build_tool(mpi: str, rel: str) -> Path:
    try:
        return MPIBuild.select(mpi).tool(rel)
    except MPIError as e:
        pytest.skip(str(e))


def test_failed_and_timed_out_jobs_leave_nothing():
    """On purpose: a job that exits 1 and one killed by the timeout, inside `running`;
    then a half-made bed (up fails part-way) and one whose maker was killed."""
    mpi = MPIS[0]
    testbed.down(OTHER)
    with testbed.running(2, 10**9, OTHER) as state:
        assert len(state["hosts"]) == 2
        st = testbed.status(OTHER)
        assert st["up"] and all("tbf" in h["qdisc"] for h in st["hosts"])
        assert [h["hostname_now"] for h in st["hosts"]] == [f"{OTHER}-h0", f"{OTHER}-h1"]
        out = mpiexec(mpi, ["sh", "-c", "exit 1"], n=2, name=OTHER)
        assert out.returncode != 0
        t0 = time.monotonic()
        out = mpiexec(mpi, ["sleep", "300"], n=4, timeout=3, name=OTHER)
        assert out.returncode == 124
        assert time.monotonic() - t0 < 60
        assert [testbed.netns_pids(h["name"]) for h in state["hosts"]] == [[], []]
    assert_nothing_left(OTHER)


def test_debian_open_mpi_4_across_hosts():
    """Debian's Open MPI 4.1 (ORTE's mpiexec, which the Debian-built applications of
    bench/apps.sh need: `colltune app --mpi system --testbed`) on 2 hosts, one rank each:
    each rank on its own host and the ring across the link. PRRTE's options stopped it
    before ("unknown option --prtemca"; with them fixed, "btl sm is dead": Open MPI 4's
    shared memory is vader)."""
    debian = project_root() / "build" / "debian-openmpi"
    tool = debian / "tests" / "c" / "testbed_check"
    if not tool.is_file():
        pytest.skip(f"{tool} was not built (scripts/build-debian-mpi.sh openmpi)")
    name = "ctbo"
    testbed.down(name)
    with testbed.running(2, 10**9, name):
        out = colltune("mpiexec", "--mpi", "system", "-ppn", "1", "--timeout", "120", "--",
                       str(tool), env={"COLLTUNE_BUILD": str(debian)}, name=name,
                       timeout=180)
        assert out.returncode == 0, out.stderr[-3000:]
        doc = json.loads(out.stdout.strip().splitlines()[-1])
        assert [r["host"] for r in doc["per_rank"]] == [f"{name}-h0", f"{name}-h1"]
        assert doc["nodes"] == 2 and doc["consistent"] and doc["ring_ok"]
    assert_nothing_left(name)


def test_half_made_bed_is_removed(monkeypatch):
    testbed.down(OTHER)
    real, calls = testbed._sh, []

    def failing(cmd, *a, **k):
        calls.append(cmd)
        if cmd[:3] == ["ip", "netns", "add"] and cmd[3] == f"{OTHER}-h1":
            raise testbed.TestbedError("injected failure")
        return real(cmd, *a, **k)

    monkeypatch.setattr(testbed, "_sh", failing)
    with pytest.raises(testbed.TestbedError, match="injected"):
        testbed.up(3, None, OTHER)
    monkeypatch.undo()
    assert_nothing_left(OTHER)


def test_killed_up_then_down_from_the_state_file():
    testbed.down(OTHER)
    out = colltune("up", "--hosts", "2", timeout=120, name=OTHER)
    assert out.returncode == 0, out.stderr
    # a process left inside a host, as a crashed job would leave it
    stray = subprocess.Popen(["nsenter", f"--net=/run/netns/{OTHER}-h1", "sleep", "300"])
    try:
        deadline = time.monotonic() + 20  # nsenter enters, then execs sleep
        while testbed.netns_pids(f"{OTHER}-h1") != [stray.pid] and time.monotonic() < deadline:
            time.sleep(0.05)
        assert testbed.netns_pids(f"{OTHER}-h1") == [stray.pid]
        out = colltune("status", name=OTHER)
        assert out.returncode == 0 and f"{OTHER}-h1" in out.stdout
        out = colltune("down", timeout=120, name=OTHER)
        assert out.returncode == 0, out.stderr
        assert stray.wait(timeout=10) != 0
    finally:
        if stray.poll() is None:
            stray.kill()
    assert_nothing_left(OTHER)
    out = colltune("status", name=OTHER)
    assert out.returncode == 0 and "down" in out.stdout


def test_refuses_clearly_without_root():
    nobody = ["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups"]
    # The unprivileged user must be able to run this Python and import colltune from this
    # checkout; a clone in a directory only its owner can read (under /root, mode 0700)
    # does not allow that, and then there is nothing to test here.
    can = subprocess.run([*nobody, sys.executable, "-c", "import colltune.cli"],
                         capture_output=True, text=True, timeout=60, env=os.environ)
    if can.returncode != 0:
        why = (can.stderr.strip().splitlines() or [f"exit status {can.returncode}"])[-1]
        pytest.skip(f"uid 65534 cannot run {sys.executable} or read the checkout "
                    f"{Path(__file__).resolve().parents[2]}: {why}")
    out = subprocess.run([*nobody, sys.executable, "-m", "colltune.cli", "testbed", "--name",
                          OTHER, "up", "--hosts", "2"], capture_output=True, text=True,
                         timeout=60, env=os.environ)
    assert out.returncode == 2
    assert "needs root" in out.stderr


LIMIT_BPS = 10**9
PROBE_BED = "ctbp"


def test_probe_and_p2p_find_the_layer_between_hosts(tmp_path):
    """Must-show 2: on 2 hosts x 2 ranks with 1 Gbit/s links the probe finds one layer
    inside a host and one between hosts, whose bandwidth at 16 MiB is capped by the limit
    (tbf: a slow or busy machine can only read less, so only the cap is asserted; the
    measured figure, within 20 % of the limit, is in docs/BENCHMARKS.md section 9); p2p
    measures a pair on each layer and marks the one between hosts."""
    mpi = MPIS[0]
    testbed.down(PROBE_BED)
    env = {"COLLTUNE_DB": str(tmp_path / "ct.db")}
    with testbed.running(2, LIMIT_BPS, PROBE_BED):
        machine = tmp_path / "machine.json"
        out = subprocess.run([sys.executable, "-m", "colltune.cli", "probe", "--quick",
                              "--parts", "comm", "--mpi", mpi, "--testbed", PROBE_BED,
                              "--ppn", "2", "--no-record", "-o", str(machine)],
                             capture_output=True, text=True, timeout=600,
                             env={**os.environ, **env})
        assert out.returncode == 0, out.stderr[-3000:]
        doc = json.loads(machine.read_text())
        layers = doc["comm_layers"]
        assert [la["between_hosts"] for la in layers] == [False, True]
        inside, between = layers
        assert inside["hosts"][0] == inside["hosts"][1]
        assert sorted(between["hosts"]) == [f"{PROBE_BED}-h0", f"{PROBE_BED}-h1"]
        assert len(between["pairs"]) == 4 and len(inside["pairs"]) == 2
        hosts = doc["comm"]["placement"]["rank_hosts"]
        assert all(hosts[a] != hosts[b] for a, b in between["pairs"])
        big = [p for p in between["bandwidth"] if p["size_bytes"] == 16 << 20]
        assert big, between["bandwidth"]
        limit_mbps = LIMIT_BPS / 8 / 1e6
        assert 0 < big[0]["bandwidth_MBps"] <= 1.2 * limit_mbps

        p2p = tmp_path / "p2p.json"
        out = subprocess.run([sys.executable, "-m", "colltune.cli", "p2p", "--quick",
                              "--machine", str(machine), "--mpi", mpi, "--testbed", PROBE_BED,
                              "--max-size", "4K", "--no-record", "-o", str(p2p)],
                             capture_output=True, text=True, timeout=600,
                             env={**os.environ, **env})
        assert out.returncode == 0, out.stderr[-3000:]
        from colltune.p2p.schema import load

        pdoc = load(p2p)
        assert [la["between_hosts"] for la in pdoc["layers"]] == [False, True]
        assert [la["hosts"] for la in pdoc["layers"]] == [inside["hosts"], between["hosts"]]
        assert all(la["points"][-1]["size_bytes"] == 4096 for la in pdoc["layers"])
        assert "between hosts" in out.stdout
    assert_nothing_left(PROBE_BED)
