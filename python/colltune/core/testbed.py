"""`colltune testbed`: several emulated hosts on this machine, for multi-host MPI runs
(docs/TESTBED.md).

`up` makes K hosts: each a network namespace `ctb-hI` (loopback, one veth `eth0` with
198.18.0.(I+1)/24, optionally a tbf egress rate limit) plugged into a bridge that lives in a
namespace of its own (`ctb-br`), and a persistent UTS namespace (its own hostname, `ctb-hI`)
bind-mounted under /run/colltune-testbed/ctb/. Nothing is added to the root namespace: no
address, link or route. Every object is written to the state file before it is made, so
`down` removes exactly what `up` made, even after a failed or interrupted `up` or run.

MPI jobs start inside the first host (`nsenter`), and reach the others through
scripts/testbed-rsh.sh, a remote shell that enters a host's namespaces: MPICH's hydra with
`-launcher rsh -launcher-exec`, Open MPI's PRRTE with `plm_rsh_agent` (core.launch).
"""

from __future__ import annotations

import argparse
import contextlib
import datetime
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

from .args import add_ranks
from .files import write_atomic
from .hosts import (
    DEFAULT_NAME,
    IFACE,
    STATE_SCHEMA,
    TestbedError,
    bed_placement,
    check_name,
    read_state,
    run_dir,
    state_path,
)
from .mpi import MPIBuild, MPIError

SUBNET = "198.18.0"  # RFC 2544's benchmarking range; it exists only inside the bed's bridge
MAX_HOSTS = 64
RUN_TIMEOUT_S = 600


class Unavailable(TestbedError):
    """This machine or user cannot make a test bed (not root, no ip/unshare/nsenter)."""


def unavailable_reason(rate: bool = False) -> str | None:
    """Why no test bed can be made here, or None."""
    if os.geteuid() != 0:
        return "the test bed needs root (network and UTS namespaces, bridges, mounts)"
    tools = ["ip", "unshare", "nsenter", "mount", "umount"] + (["tc"] if rate else [])
    missing = [t for t in tools if not shutil.which(t)]
    if missing:
        return f"the test bed needs {', '.join(missing)} (not found on PATH)"
    if not Path("/proc/self/ns/net").exists() or not Path("/proc/self/ns/uts").exists():
        return "this kernel has no network or UTS namespaces"
    return None


def host_name(name: str, i: int) -> str:
    return f"{name}-h{i}"


def bridge_ns(name: str) -> str:
    return f"{name}-br"


def uts_path(name: str, i: int) -> Path:
    return run_dir() / name / f"uts-h{i}"


def parse_rate(text: str) -> int:
    """'1gbit', '100mbit', '500kbit', '1G', '2.5gbit' -> bits per second."""
    m = re.fullmatch(r"\s*([0-9]+(?:\.[0-9]+)?)\s*([kmg]?)(?:bit|bps|b)?(?:/s)?\s*", text, re.I)
    if not m:
        raise argparse.ArgumentTypeError(f"not a rate: {text!r} (e.g. 1gbit, 100mbit)")
    value = float(m.group(1)) * {"": 1, "k": 1e3, "m": 1e6, "g": 1e9}[m.group(2).lower()]
    if value < 1e5:
        raise argparse.ArgumentTypeError(f"rate {text!r} below 100 kbit/s")
    return int(value)


def _sh(cmd: list[str], check: bool = True, timeout: float = 30) -> subprocess.CompletedProcess:
    try:
        out = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired as e:
        raise TestbedError(f"{' '.join(cmd)}: no answer in {timeout:.0f} s") from e
    if check and out.returncode != 0:
        raise TestbedError(f"{' '.join(cmd)}: {(out.stderr or out.stdout).strip()}")
    return out


# -- the state file -----------------------------------------------------------------------


def _save(state: dict) -> None:
    write_atomic(state_path(state["name"]), json.dumps(state, indent=1) + "\n")


# -- up, down, status ---------------------------------------------------------------------


def up(hosts: int, rate_bps: int | None = None, name: str = DEFAULT_NAME) -> dict:
    """Make the test bed; returns its state. On any failure what was made is removed."""
    check_name(name)
    why = unavailable_reason(rate=rate_bps is not None)
    if why:
        raise Unavailable(why)
    if not 1 <= hosts <= MAX_HOSTS:
        raise TestbedError(f"--hosts must be 1 to {MAX_HOSTS}")
    if read_state(name) is not None:
        raise TestbedError(f"test bed {name} is already up ({state_path(name)}): "
                           "`colltune testbed down` first")
    leftovers = _our_netns(name)
    if leftovers:
        raise TestbedError(f"namespaces {', '.join(leftovers)} exist without a state file: "
                           "`colltune testbed down` removes them")
    (run_dir() / name).mkdir(parents=True, exist_ok=True)
    state = {"schema": STATE_SCHEMA, "name": name, "complete": False,
             "created_at": datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds"),
             "link_rate_bps": rate_bps, "iface": IFACE, "hosts": [], "objects": []}

    def make(kind: str, obj: str, cmds: list[list[str]]) -> None:
        # recorded before it exists: an interrupted up leaves nothing down cannot find
        state["objects"].append({"kind": kind, "name": obj})
        _save(state)
        for cmd in cmds:
            _sh(cmd)

    try:
        br = bridge_ns(name)
        make("netns", br, [["ip", "netns", "add", br],
                           ["ip", "-n", br, "link", "add", "br0", "type", "bridge"],
                           ["ip", "-n", br, "link", "set", "br0", "up"]])
        for i in range(hosts):
            h = host_name(name, i)
            uts = uts_path(name, i)
            make("uts", str(uts), [["touch", str(uts)],
                                   ["unshare", f"--uts={uts}", "hostname", h]])
            addr = f"{SUBNET}.{i + 1}"
            # the veth is made inside the host's namespace, its peer inside the bridge's:
            # it never appears in the root namespace
            cmds = [["ip", "netns", "add", h],
                    ["ip", "-n", h, "link", "set", "lo", "up"],
                    ["ip", "-n", h, "link", "add", IFACE, "type", "veth",
                     "peer", "name", f"h{i}", "netns", br],
                    ["ip", "-n", h, "addr", "add", f"{addr}/24", "dev", IFACE],
                    ["ip", "-n", h, "link", "set", IFACE, "up"],
                    ["ip", "-n", br, "link", "set", f"h{i}", "master", "br0", "up"]]
            if rate_bps:
                cmds.append(["tc", "-n", h, "qdisc", "add", "dev", IFACE, "root", "tbf",
                             *tbf_args(rate_bps)])
            make("netns", h, cmds)
            state["hosts"].append({"name": h, "hostname": h, "address": addr,
                                   "netns": f"/run/netns/{h}", "uts": str(uts)})
        state["complete"] = True
        _save(state)
    except BaseException:
        try:
            down(name)
        except TestbedError:
            pass
        raise
    return state


@contextlib.contextmanager
def running(hosts: int, rate_bps: int | None = None, name: str = DEFAULT_NAME):
    """`with running(2) as state:` a test bed for the block, removed however it ends."""
    state = up(hosts, rate_bps, name)
    try:
        yield state
    finally:
        down(name)


def leftovers(name: str) -> list[str]:
    """What of the bed named `name` exists now: namespaces, mounts, its run directory
    (after `down`: nothing)."""
    found = [f"netns {n}" for n in _our_netns(name)]
    found += [f"mount {m}" for m in _our_mounts(name)]
    if (run_dir() / name).exists():
        found.append(f"directory {run_dir() / name}")
    return found


def tbf_args(rate_bps: int) -> list[str]:
    """tbf at `rate_bps`: a bucket of 1 ms of traffic (at least 32 KiB, so TCP's segments
    pass whole) and 20 ms of queue, so a flow sees the rate and not the bucket."""
    burst = max(32 << 10, rate_bps // 8 // 1000)
    return ["rate", f"{rate_bps}bit", "burst", str(burst), "latency", "20ms"]


def _our_netns(name: str) -> list[str]:
    out = _sh(["ip", "netns", "list"], check=False)
    names = [line.split()[0] for line in out.stdout.splitlines() if line.strip()]
    pat = re.compile(rf"{re.escape(name)}-(h\d+|br)")
    return [n for n in names if pat.fullmatch(n)]


def _our_mounts(name: str) -> list[str]:
    base = str(run_dir() / name) + "/"
    try:
        lines = Path("/proc/self/mounts").read_text().splitlines()
    except OSError:
        return []
    return [line.split()[1] for line in lines
            if len(line.split()) > 1 and line.split()[1].startswith(base)]


def netns_pids(ns: str) -> list[int]:
    out = _sh(["ip", "netns", "pids", ns], check=False)
    return [int(p) for p in out.stdout.split() if p.isdigit()]


def kill_processes(name: str, hosts: list[str] | None = None) -> int:
    """SIGKILL to every process left in the bed's namespaces (ranks of a failed or timed-out
    job); returns how many there were."""
    killed = 0
    for ns in hosts if hosts is not None else _our_netns(name):
        for pid in netns_pids(ns):
            if pid == os.getpid():
                continue
            try:
                os.kill(pid, signal.SIGKILL)
                killed += 1
            except ProcessLookupError:
                pass
    return killed


def down(name: str = DEFAULT_NAME) -> list[str]:
    """Remove what `up` made (state file), and anything of this bed's names left without
    one; returns what was removed. Safe to run again, or when nothing is up."""
    check_name(name)
    if os.geteuid() != 0:
        raise Unavailable("the test bed needs root")
    removed: list[str] = []
    try:
        state = read_state(name)
    except TestbedError:
        state = None
    objects = list(reversed((state or {}).get("objects", [])))
    netns = [o["name"] for o in objects if o["kind"] == "netns"]
    netns += [n for n in _our_netns(name) if n not in netns]
    kill_processes(name, [n for n in netns if Path(f"/run/netns/{n}").exists()])
    if netns:
        time.sleep(0.1)  # the killed processes let go of their namespaces
    errors = []
    for ns in netns:
        if Path(f"/run/netns/{ns}").exists():
            out = _sh(["ip", "netns", "del", ns], check=False)
            if out.returncode:
                errors.append(f"netns {ns}: {out.stderr.strip()}")
            else:
                removed.append(f"netns {ns}")
    uts = [o["name"] for o in objects if o["kind"] == "uts"]
    uts += [m for m in _our_mounts(name) if m not in uts]
    for path in uts:
        if path in _our_mounts(name):
            out = _sh(["umount", path], check=False)
            if out.returncode:
                out = _sh(["umount", "-l", path], check=False)
            if out.returncode:
                errors.append(f"mount {path}: {out.stderr.strip()}")
                continue
            removed.append(f"uts {path}")
    d = run_dir() / name
    if d.is_dir() and not errors:
        shutil.rmtree(d, ignore_errors=True)
        with contextlib.suppress(OSError):
            run_dir().rmdir()  # only when no other bed is left in it
    if errors:
        raise TestbedError("could not remove " + "; ".join(errors))
    return removed


def status(name: str = DEFAULT_NAME) -> dict:
    """What is up: the state plus, per host, whether its namespaces exist, its hostname,
    qdisc and processes."""
    check_name(name)
    state = read_state(name)
    if state is None:
        return {"name": name, "up": False, "leftovers": _our_netns(name) + _our_mounts(name)}
    hosts = []
    for h in state["hosts"]:
        ok = Path(h["netns"]).exists() and h["uts"] in _our_mounts(name)
        info = {**h, "present": ok}
        if ok:
            info["hostname_now"] = _sh(["nsenter", f"--uts={h['uts']}", "hostname"],
                                       check=False).stdout.strip()
            q = _sh(["tc", "-n", h["name"], "qdisc", "show", "dev", IFACE], check=False)
            info["qdisc"] = q.stdout.strip().splitlines()[0] if q.stdout.strip() else None
            info["processes"] = len(netns_pids(h["name"]))
        hosts.append(info)
    return {"name": name, "up": state["complete"] and all(h["present"] for h in hosts),
            "link_rate_bps": state["link_rate_bps"], "hosts": hosts}


# -- launching ----------------------------------------------------------------------------


def run_job(build: MPIBuild, nranks: int, program: list[str], *, timeout: float,
            hosts: list[str] | None = None, name: str = DEFAULT_NAME) -> int:
    """Run an MPI program across the test bed (output passed through); its exit status,
    124 after `timeout` seconds. Whatever the job leaves in the bed's namespaces is
    killed when it ends, however it ends."""
    cmd = build.launch_command(nranks, program, hosts=hosts)
    env = {**os.environ, **build.launch_env(nranks)}
    proc = subprocess.Popen(cmd, env=env, start_new_session=True)
    try:
        rc = proc.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        print(f"colltune testbed: the job ran past {timeout:.0f} s: stopped", file=sys.stderr)
        _stop(proc)
        rc = 124
    except BaseException:
        _stop(proc)
        raise
    finally:
        kill_processes(name, (build.placement.hosts if build.placement else None))
    return rc


def _stop(proc: subprocess.Popen) -> None:
    from .mpi import stop_process_group

    stop_process_group(proc, 3)


# -- the command --------------------------------------------------------------------------


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("testbed", help="emulated hosts on this machine (network and UTS "
                                       "namespaces) for multi-host MPI runs; needs root")
    p.add_argument("--name", default=os.environ.get("COLLTUNE_TESTBED_NAME", DEFAULT_NAME),
                   help="the bed's name, prefix of every object (default: ctb)")
    tsub = p.add_subparsers(dest="action", metavar="ACTION", required=True)
    q = tsub.add_parser("up", help="make K hosts on a bridge")
    q.add_argument("--hosts", type=int, required=True, help="number of hosts")
    q.add_argument("--link-rate", type=parse_rate, default=None,
                   help="egress rate limit of every host's link (tc tbf), e.g. 1gbit")
    q.set_defaults(func=cmd_up)
    q = tsub.add_parser("down", help="remove everything up made")
    q.set_defaults(func=cmd_down)
    q = tsub.add_parser("status", help="what is up")
    q.add_argument("--json", action="store_true", help="print the state as JSON")
    q.set_defaults(func=cmd_status)
    q = tsub.add_parser("mpiexec", help="run an MPI program across the hosts")
    q.add_argument("--mpi", help="mpich, openmpi, intelmpi or system "
                                 "(default: $COLLTUNE_MPI or mpich)")
    add_ranks(q, "ranks (default: hosts x ppn)", type=int, default=None, dest="n")
    q.add_argument("-ppn", "--ppn", type=int, default=1, help="ranks per host (default 1)")
    q.add_argument("--timeout", type=float, default=RUN_TIMEOUT_S,
                   help=f"seconds before the job is stopped (default {RUN_TIMEOUT_S})")
    q.add_argument("program", nargs=argparse.REMAINDER, help="-- PROGRAM [ARGS...]")
    q.set_defaults(func=cmd_mpiexec)


def _fail(e: Exception) -> int:
    print(f"colltune testbed: {e}", file=sys.stderr)
    return 2 if isinstance(e, Unavailable) else 1


def cmd_up(args: argparse.Namespace) -> int:
    try:
        state = up(args.hosts, args.link_rate, args.name)
    except TestbedError as e:
        return _fail(e)
    rate = (f", links limited to {args.link_rate / 1e9:g} Gbit/s" if args.link_rate else "")
    print(f"test bed {state['name']} up: {len(state['hosts'])} host(s) "
          f"{', '.join(h['name'] + ' ' + h['address'] for h in state['hosts'])}{rate}")
    return 0


def cmd_down(args: argparse.Namespace) -> int:
    try:
        removed = down(args.name)
    except TestbedError as e:
        return _fail(e)
    print(f"test bed {args.name} down: removed {len(removed)} object(s)"
          + (f" ({', '.join(removed)})" if removed else ""))
    return 0


def cmd_status(args: argparse.Namespace) -> int:
    if os.geteuid() != 0:
        return _fail(Unavailable("the test bed needs root"))
    try:
        st = status(args.name)
    except TestbedError as e:
        return _fail(e)
    if args.json:
        print(json.dumps(st, indent=1))
    elif not st.get("hosts"):
        print(f"test bed {args.name}: down"
              + (f" (left over: {', '.join(st['leftovers'])})" if st.get("leftovers") else ""))
    else:
        print(f"test bed {args.name}: {'up' if st['up'] else 'BROKEN'}")
        for h in st["hosts"]:
            print(f"  {h['name']}: {h['address']}, "
                  + (f"hostname {h['hostname_now']}, {h['qdisc']}, {h['processes']} "
                     "process(es)" if h["present"] else "MISSING"))
    return 0 if st.get("up", False) or not st.get("hosts") else 1


def cmd_mpiexec(args: argparse.Namespace) -> int:
    program = args.program[1:] if args.program[:1] == ["--"] else args.program
    if not program:
        print("colltune testbed mpiexec: no program (… -- PROGRAM ARGS)", file=sys.stderr)
        return 2
    why = unavailable_reason()
    if why:
        return _fail(Unavailable(why))
    try:
        build = MPIBuild.select(args.mpi)
        build.placement = bed_placement(args.name, args.ppn)
        n = args.n or build.placement.max_ranks
        build.placement.rank_hosts(n)
    except MPIError as e:
        print(f"colltune testbed: {e}", file=sys.stderr)
        return 2
    return run_job(build, n, program, timeout=args.timeout, name=args.name)
