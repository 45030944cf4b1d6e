"""Several hosts without MPI or root: hostfiles, the launch command lines for the test bed
and a cluster, and the layers inside and between hosts (probe_cluster.host_layers)."""

from __future__ import annotations

from pathlib import Path

import pytest
from colltune.core.hosts import Placement
from colltune.core.mpi import MPIBuild, MPIError
from colltune.probe.cluster import host_layers


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
