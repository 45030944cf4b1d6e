"""Several hosts without MPI or root: hostfiles, the launch command lines for the test bed
and a cluster, and the layers inside and between hosts (probe_cluster.host_layers)."""

from __future__ import annotations

from pathlib import Path

import pytest
from colltune.core.hosts import Placement
from colltune.core.launch import openmpi
from colltune.core.mpi import MPIBuild, MPIError
from colltune.probe.cluster import host_layers


@pytest.fixture(autouse=True)
def prrte(request, monkeypatch):
    """The command lines below are PRRTE's (Open MPI 5): whatever `mpiexec` is on this
    machine's PATH (Debian's is ORTE's) must not decide them. test_orte_* asks real
    (fake) launchers."""
    if not request.node.name.startswith("test_orte"):
        monkeypatch.setattr(openmpi, "orte", lambda mpiexec: False)


def build(flavor: str, placement: Placement) -> MPIBuild:
    b = MPIBuild(name=flavor, build_dir=Path("/nonexistent"), mpiexec="mpiexec",
                 placement=placement)
    b.flavor = flavor  # cached_property: no mpiexec is asked
    return b


def test_hostfile_forms(tmp_path):
    f = tmp_path / "hosts"
    f.write_text("# the nodes\nn1:4\nn2 slots=8  # big one\n\nn3\n")
    p = Placement.from_hostfile(str(f))
    assert p.hosts == ["n1", "n2", "n3"] and p.ppn == 4
    assert Placement.from_hostfile(str(f), 2).ppn == 2
    assert p.rank_hosts(6) == ["n1"] * 4 + ["n2", "n2"]
    with pytest.raises(MPIError, match="do not fit"):
        p.rank_hosts(13)
    f.write_text("n1 :: bad\n")
    with pytest.raises(MPIError, match="not a host line"):
        Placement.from_hostfile(str(f))


def test_cluster_command_lines():
    p = Placement(hosts=["a", "b"], ppn=2)
    cmd = build("mpich", p).launch_command(4, ["prog"])
    assert cmd == ["mpiexec", "-hosts", "a:2,b:2", "-n", "4", "-bind-to", "core", "prog"]
    cmd = build("openmpi", p).launch_command(2, ["prog"], hosts=["a", "b"], export=("X",))
    assert cmd[:5] == ["mpiexec", "--host", "a:1,b:1", "-n", "2"]
    assert "--bind-to" in cmd and cmd[cmd.index("--bind-to") + 1] == "core"
    assert cmd[cmd.index("-x") + 1] == "X" and cmd[-1] == "prog"
    assert "plm_ssh_agent" not in cmd


def test_testbed_command_lines():
    p = Placement(hosts=["ctb-h0", "ctb-h1", "ctb-h2"], ppn=2, rsh="/w/rsh", iface="eth0",
                  prefix=["nsenter", "--net=/run/netns/ctb-h0", "--"], same_machine=True)
    cmd = build("mpich", p).launch_command(5, ["prog"])
    assert cmd[:3] == ["nsenter", "--net=/run/netns/ctb-h0", "--"]
    assert cmd[cmd.index("-hosts") + 1] == "ctb-h0:2,ctb-h1:2,ctb-h2:1"
    assert cmd[cmd.index("-launcher-exec") + 1] == "/w/rsh"
    assert cmd[cmd.index("-iface") + 1] == "eth0" and "-bind-to" not in cmd
    assert build("mpich", p).launch_env(6)["FI_TCP_IFACE"] == "eth0"
    cmd = build("openmpi", p).launch_command(6, ["prog"])
    assert cmd[cmd.index("plm_ssh_agent") + 1] == "/w/rsh"
    assert cmd[cmd.index("btl_tcp_if_include") + 1] == "eth0"
    assert cmd[cmd.index("btl") + 1] == "self,sm,tcp"
    assert cmd[cmd.index("--bind-to") + 1] == "none"


def test_orte_testbed_command_lines(tmp_path):
    """Open MPI 4.1's ORTE mpiexec (Debian's, which the Debian-built applications need)
    rejects --prtemca, ignores plm_ssh_agent and has no `sm` transport ("btl sm is dead"):
    told apart by its --version, it gets --mca plm_rsh_agent and vader; PRRTE's stays."""
    p = Placement(hosts=["ctb-h0", "ctb-h1"], ppn=1, rsh="/w/rsh", iface="eth0",
                  prefix=["nsenter", "--"], same_machine=True)
    for name, text, agent, shm in (
            ("orterun", "mpiexec.openmpi (OpenRTE) 4.1.4", "plm_rsh_agent", "vader"),
            ("prterun", "mpiexec (Open MPI) 5.0.11", "plm_ssh_agent", "sm")):
        exe = tmp_path / name
        exe.write_text(f"#!/bin/sh\necho '{text}'\n")
        exe.chmod(0o755)
        b = build("openmpi", p)
        b.mpiexec = str(exe)
        cmd = b.launch_command(2, ["prog"])
        assert cmd[cmd.index(agent) + 1] == "/w/rsh" and cmd[cmd.index(agent) - 1] == (
            "--mca" if shm == "vader" else "--prtemca")
        assert cmd[cmd.index("oob_tcp_if_include") + 1] == "eth0"
        assert ("--prtemca" in cmd) == (shm == "sm")
        assert cmd[cmd.index("btl") + 1] == f"self,{shm},tcp"


def test_layers_inside_and_between_hosts_never_mix():
    host = {0: "a", 1: "a", 2: "b", 3: "b"}
    lat = {(0, 1): 1.0, (2, 3): 1.1, (0, 2): 1.05, (0, 3): 30.0, (1, 2): 31.0, (1, 3): 29.0}
    layers = host_layers(lat, host)
    assert [la["between_hosts"] for la in layers] == [False, True, True]
    assert layers[0]["pairs"] == [[0, 1], [2, 3]]
    assert layers[1]["pairs"] == [[0, 2]] and layers[1]["hosts"] == ["a", "b"]
    assert [la["layer"] for la in layers] == [0, 1, 2]
    one = host_layers(lat, host, tolerance=float("inf"))
    assert [len(la["pairs"]) for la in one] == [2, 4]


def test_one_machine_command_lines_per_launcher(monkeypatch):
    """core.launch: one module per MPI. On this machine (no placement) MPICH binds with
    -bind-to, Open MPI with --bind-to and --oversubscribe when the ranks do not fit, Intel MPI
    pins by default and is told I_MPI_PIN 0 when it must not; an unknown launcher gets the
    bare command."""
    monkeypatch.setattr("os.cpu_count", lambda: 4)
    none = None
    assert build("mpich", none).launch_command(4, ["p"]) == [
        "mpiexec", "-n", "4", "-bind-to", "core", "p"]
    assert build("mpich", none).launch_command(5, ["p"]) == ["mpiexec", "-n", "5", "p"]
    assert build("openmpi", none).launch_command(2, ["p"], export=("X",)) == [
        "mpiexec", "-n", "2", "-x", "X", "--bind-to", "core", "--map-by", "core", "p"]
    assert build("openmpi", none).launch_command(5, ["p"]) == [
        "mpiexec", "-n", "5", "--oversubscribe", "p"]
    assert build("intelmpi", none).launch_command(4, ["p"]) == [
        "mpiexec", "-n", "4", "-genv", "I_MPI_PIN", "1", "-genv", "I_MPI_PIN_DOMAIN", "core",
        "p"]
    for n, bind in ((5, True), (2, False)):
        assert build("intelmpi", none).launch_command(n, ["p"], bind=bind) == [
            "mpiexec", "-n", str(n), "-genv", "I_MPI_PIN", "0", "p"]
    assert build("unknown", none).launch_command(2, ["p"]) == ["mpiexec", "-n", "2", "p"]
    assert build("intelmpi", none).binding_label(4) == "core"
    assert build("unknown", none).binding_label(4) == "none (unknown launcher)"
    assert build("mpich", none).launch_env(5)["MPIR_CVAR_CH4_PROGRESS_THROTTLE"] == "1"
    assert build("openmpi", none).launch_env(5) == {}


def test_launchers_are_told_apart_by_their_version_text():
    from colltune.core.launch import identify

    assert identify("Intel(R) MPI Library for Linux* OS, Version 2021.13 Build 2024") == \
        "intelmpi"
    assert identify("HYDRA build details:\n    Version: 5.0.2") == "mpich"
    assert identify("mpiexec (Open MPI) 5.0.11") == "openmpi"
    assert identify("something else") == "unknown"


def test_intel_mpi_refuses_several_hosts():
    with pytest.raises(MPIError, match="Intel MPI runs on this machine only"):
        build("intelmpi", Placement(hosts=["a", "b"], ppn=1)).launch_command(2, ["p"])


def test_describe_library_names_each_mpi():
    from colltune.core.mpi import describe_library

    intel = describe_library("Intel(R) MPI Library 2021.13 for Linux* OS\n")
    # the drop-in matches a table's implementation inside this text (src/select)
    assert (intel["implementation"], intel["version"]) == ("Intel(R) MPI", "2021.13")
    assert describe_library("MPICH Version:      5.0.2\nMPICH Release date")["version"] == \
        "5.0.2"
    assert describe_library("Open MPI v5.0.11, package: ...")["implementation"] == "Open MPI"
