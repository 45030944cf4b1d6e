"""Where the ranks run: this machine, the hosts of a hostfile, or an emulated test bed
(docs/TESTBED.md; `colltune testbed` makes and removes one, core.testbed), as a Placement:
plain data (hosts, ranks a host, remote shell, interface). The mpiexec command lines for a
Placement are the launchers' (core.launch, one module per MPI), which MPI builds (core.mpi)
call; nothing here knows an MPI."""

from __future__ import annotations

import json
import os
import re
from dataclasses import dataclass, field
from pathlib import Path

DEFAULT_NAME = "ctb"

IFACE = "eth0"

STATE_SCHEMA = "colltune-testbed"


class MPIError(RuntimeError):
    """The requested MPI build is missing or unusable."""


class TestbedError(RuntimeError):
    """The test bed could not be made, used or removed; the message says why."""


def project_root() -> Path:
    env = os.environ.get("COLLTUNE_HOME")
    return Path(env) if env else Path(__file__).resolve().parents[3]


def run_dir() -> Path:
    return Path(os.environ.get("COLLTUNE_TESTBED_RUN", "/run/colltune-testbed"))


def rsh_wrapper() -> str:
    return str(project_root() / "scripts" / "testbed-rsh.sh")


def check_name(name: str) -> str:
    if not re.fullmatch(r"ctb[a-z0-9]{0,6}", name):
        raise TestbedError(f"test-bed name {name!r}: 'ctb' and up to 6 lowercase letters or "
                           "digits (every object is named after it)")
    return name


def state_path(name: str) -> Path:
    return run_dir() / name / "state.json"


def read_state(name: str) -> dict | None:
    try:
        doc = json.loads(state_path(name).read_text())
    except FileNotFoundError:
        return None
    except (OSError, json.JSONDecodeError) as e:
        raise TestbedError(f"unreadable state file {state_path(name)}: {e}") from e
    if doc.get("schema") != STATE_SCHEMA:
        raise TestbedError(f"{state_path(name)} is not a test-bed state file")
    return doc


def bed_placement(name: str | None = None, ppn: int | None = None) -> Placement:
    """The Placement of the test bed that is up: its hosts, the namespace
    wrapper as remote shell, eth0 between hosts, mpiexec inside the first host."""
    name = check_name(name or DEFAULT_NAME)
    state = read_state(name)
    if state is None or not state.get("complete"):
        raise MPIError(f"test bed {name} is not up: `colltune testbed up --hosts K` first")
    first = state["hosts"][0]
    return Placement(hosts=[h["name"] for h in state["hosts"]], ppn=ppn or 1,
                     rsh=rsh_wrapper(), iface=state.get("iface", IFACE),
                     prefix=["nsenter", f"--net={first['netns']}", f"--uts={first['uts']}",
                             "--"],
                     same_machine=True, source=f"test bed {name}")


@dataclass
class Placement:
    """Ranks spread over several hosts: the test bed's emulated hosts (colltune.testbed) or
    a real cluster's hosts from a hostfile. `rsh`: the remote shell the launcher uses (the
    test bed's namespace wrapper; None: the MPI's default, ssh); `iface`: the network
    interface MPI must use between hosts (None: the MPI's choice); `prefix`: what runs
    mpiexec itself (the test bed: inside its first host); `same_machine`: every host is
    this machine (the test bed), so all ranks share its cores."""

    hosts: list[str]
    ppn: int
    rsh: str | None = None
    iface: str | None = None
    prefix: list[str] = field(default_factory=list)
    same_machine: bool = False
    source: str = ""

    @classmethod
    def from_environment(cls) -> Placement | None:
        """$COLLTUNE_TESTBED (a test bed's name, or 1 for the default one) or
        $COLLTUNE_HOSTFILE, with $COLLTUNE_PPN ranks a host; None when neither is set."""
        ppn = int(os.environ.get("COLLTUNE_PPN", "0") or 0) or None
        bed = os.environ.get("COLLTUNE_TESTBED")
        if bed:
            return bed_placement(None if bed == "1" else bed, ppn)
        hostfile = os.environ.get("COLLTUNE_HOSTFILE")
        if hostfile:
            return cls.from_hostfile(hostfile, ppn)
        return None

    @classmethod
    def from_hostfile(cls, path: str, ppn: int | None = None) -> Placement:
        """One host a line, `name`, `name:slots` or `name slots=N` (# comments); ppn: the
        given one, else the smallest slot count, else 1."""
        hosts, slots = [], []
        try:
            text = Path(path).read_text()
        except OSError as e:
            raise MPIError(f"cannot read the hostfile {path}: {e.strerror}") from e
        for line in text.splitlines():
            line = line.split("#", 1)[0].strip()
            if not line:
                continue
            m = re.fullmatch(r"([^\s:=]+)(?::(\d+))?((?:\s+\w+\s*=\s*\S+)*)", line)
            if not m:
                raise MPIError(f"{path}: not a host line: {line!r}")
            hosts.append(m.group(1))
            kv = re.search(r"\bslots\s*=\s*(\d+)", m.group(3))
            n = m.group(2) or (kv.group(1) if kv else None)
            if n:
                slots.append(int(n))
        if not hosts:
            raise MPIError(f"{path}: no host")
        return cls(hosts=hosts, ppn=ppn or (min(slots) if slots else 1), source=path)

    def rank_hosts(self, nranks: int) -> list[str]:
        """The host of each rank: ppn ranks on each host in turn."""
        if nranks > len(self.hosts) * self.ppn:
            raise MPIError(f"{nranks} ranks do not fit on {len(self.hosts)} host(s) x "
                           f"{self.ppn} rank(s) a host")
        return [self.hosts[r // self.ppn] for r in range(nranks)]

    @property
    def max_ranks(self) -> int:
        return len(self.hosts) * self.ppn
