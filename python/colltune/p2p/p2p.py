"""`colltune p2p`: the point-to-point costs the collective models are built on (docs/P2P.md).

For each communication layer of the machine (machine.json's `comm_layers`, one
representative pair of cores each; without a machine file one pair, cores 0 and 1), one
2-rank job of `ct_p2p` measures, from 1 B to 16 MiB: the send overhead os, the receive
overhead or, the gap g, the one-way time, the Isend mode (blocking, immediate,
rendezvous), os and g with 1 to 16 Isends pending, and rank 0's copy and reduction costs.
Then, for the first layer inside a host and the first between hosts, a job of 2P ranks
(`ct_p2p --concurrent`) measures the one-way time of 1 to P pairs at once (contention: the
layer's `concurrent_pairs` and its points' `oneway_concurrent_us`); P = min(8, cores / 2),
none when P < 2.
Across hosts (a placement of H >= 2 hosts, one rank a host), a third job (`ct_p2p --stream`)
measures the per-message gap of streams of 1 KiB to 256 KiB messages: one pair, both
directions of that pair at once (duplex), and k = 2, 3 (and H - 1, at most 8) hosts sending to
one (fan-in): the inter-host layer's `stream` (issue 21; docs/MODEL.md "Host stack").
With H >= 3 hosts a fourth job (`ct_p2p --stream 0>1,0>2 --messages 1`) times one message
of 256 KiB to 4 MiB from host 0 to each of two hosts, posted one after the other: how far
ahead the first flow gets before the two share the link (the `stream`'s `fanout`,
docs/MODEL.md "Sends of one round share the link").
The result is p2p.json (schema colltune-p2p version 1, `p2p_schema`).

`measure_p2p` is what `colltune run` calls.
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import shlex
import subprocess
import sys
import time
from pathlib import Path

from .. import __version__
from ..core.args import add_db, add_output, hidden
from ..core.files import write_atomic
from ..core.machine import fingerprint
from ..core.mpi import (
    MPIBuild,
    MPIError,
    add_host_arguments,
    apply_host_arguments,
    describe_library,
    run_json_lines,
)
from ..core.units import human_size
from .schema import SCHEMA, SCHEMA_VERSION, switches, validate

PENDING_COUNTS = [1, 2, 4, 8, 16]
MAX_BYTES = 16 << 20
JOB_TIMEOUT_S = 600
# What ct_p2p does per sample (keep in step with tools/p2p/ct_p2p.c), for the forecast:
# transfers per iteration (os 1, ping-pong 2, or 2, gap 8, pending 1+2+4+8+16) and
# synchronisations per iteration; the mode test's samples.
_TRANSFERS, _SYNCS, _MODE_SAMPLES = 13 + sum(PENDING_COUNTS), 5 + len(PENDING_COUNTS), 6
MAX_PAIRS = 8  # concurrent pairs measured at most (ct_p2p --concurrent)
STREAM_SIZES = [1 << k for k in range(10, 19)]  # 1 KiB .. 256 KiB (ct_p2p --stream)
FANOUT_SIZES = [256 << 10, 1 << 20, 4 << 20]  # one message a flow (ct_p2p --messages 1)
FANOUT_FLOWS = [(0, 1), (0, 2)]  # posted in this order


def stream_scenarios(hosts: int) -> list[tuple[str, int, list[tuple[int, int]]]]:
    """The `ct_p2p --stream` scenarios across `hosts` hosts (rank i on host i), as (kind,
    flows at the busiest host, flows): one pair; both directions of that pair (duplex); k
    hosts sending to host 0 (fan-in) for k = 2, 3 and hosts - 1 (at most 8) where there are
    that many. Empty below 2 hosts."""
    if hosts < 2:
        return []
    out = [("pair", 1, [(0, 1)]), ("duplex", 2, [(0, 1), (1, 0)])]
    for k in sorted({2, 3, min(8, hosts - 1)}):
        if 2 <= k <= hosts - 1:  # a fan-in of one is the pair again
            out.append(("fanin", k, [(i, 0) for i in range(1, k + 1)]))
    return out


def merge_stream(layer: dict, records: list[dict], scenarios: list) -> bool:
    """Merge a `ct_p2p --stream` job's output into a layer's `stream`: `sizes_bytes`,
    `pair_us`, `duplex_us` (the slower direction), `fanin_flows` and `fanin_us` (one row
    per count), each a per-message gap per size, and `scenarios` (the flows of each). Only
    when every scenario has every size (else the layer is left without it): True when
    merged."""
    lines = [r for r in records if "scenario" in r and "max_gap_us" in r]
    sizes = sorted({r["size_bytes"] for r in lines})
    got = {(r["scenario"], r["size_bytes"]): r["max_gap_us"] for r in lines}
    if not sizes or any((j, m) not in got or not got[(j, m)] > 0
                        for j in range(len(scenarios)) for m in sizes):
        return False

    def row(j):
        return [got[(j, m)] for m in sizes]

    kinds = [k for k, _, _ in scenarios]
    stream = {"sizes_bytes": sizes, "pair_us": row(kinds.index("pair"))}
    if "duplex" in kinds:
        stream["duplex_us"] = row(kinds.index("duplex"))
    fanin = [(n, j) for j, (k, n, _) in enumerate(scenarios) if k == "fanin"]
    if fanin:
        stream["fanin_flows"] = [n for n, _ in fanin]
        stream["fanin_us"] = [row(j) for _, j in fanin]
    stream["scenarios"] = {f"{k} {n}": [list(f) for f in flows] for k, n, flows in scenarios}
    layer["stream"] = stream
    return True


def merge_fanout(layer: dict, records: list[dict]) -> bool:
    """Merge the fan-out job's output (`ct_p2p --stream 0>1,0>2 --messages 1`) into a
    layer's `stream` as `fanout`: `sizes_bytes`, `first_us` and `second_us`, when each of the
    two messages landed from the common start, the first posted first, for every size the
    job printed. Only into a layer that has its streams: True when merged."""
    st = layer.get("stream")
    lines = {r["size_bytes"]: r["gap_us"] for r in records
             if "scenario" in r and len(r.get("gap_us") or []) == 2}
    if st is None or not lines or any(not (g[0] > 0 and g[1] > 0) for g in lines.values()):
        return False
    sizes = sorted(lines)
    st["fanout"] = {"sizes_bytes": sizes, "first_us": [lines[m][0] for m in sizes],
                    "second_us": [lines[m][1] for m in sizes]}
    return True


class P2PError(RuntimeError):
    """The measurement could not be made; the message says why."""


def settings(quick: bool) -> dict:
    """Quick: 2 sizes per octave (a protocol switch located within 41 %) and fewer samples."""
    return {"per_octave": 2, "iters": 30} if quick else {"per_octave": 4, "iters": 100}


def size_grid(per_octave: int, max_bytes: int = MAX_BYTES) -> list[int]:
    """2^(k + i/per_octave) rounded, 1 B to max_bytes, without repeats."""
    out: list[int] = []
    j = 0
    while (v := int(2 ** (j / per_octave) + 0.5)) <= max_bytes:
        if not out or v != out[-1]:
            out.append(v)
        j += 1
    return out


def iterations(base: int, size: int) -> int:
    """ct_p2p's rule: about 64 KiB x base bytes per measurement, from 5 to base samples."""
    return max(min(5, base), min(base, base * 65536 // size))


def estimate_seconds(sizes: list[int], base: int, layers: int,
                     concurrent: list[list[int]] = ()) -> float:
    """A rough forecast: 2 us a message plus 2 GB/s, 1.5 s to start each job; `concurrent`:
    the pair counts of each concurrent-pairs job (k pairs sharing the bandwidth)."""
    total = 0.0
    for m in sizes:
        message = 2e-6 + m / 2e9
        delay = max(50e-6, 10 * message)
        total += iterations(base, m) * (_TRANSFERS * message + _SYNCS * 3e-6)
        total += _MODE_SAMPLES * (delay + message)
    extra = 0.0
    for counts in concurrent:
        extra += 1.5 + sum((iterations(base, m) + 1) * (2 * k * (2e-6 + m / 2e9) + 2 * 5e-6)
                           for m in sizes for k in counts)
    return layers * (1.5 + total) + extra


def pair_counts(pairs: int) -> list[int]:
    """The pair counts of a concurrent job of `pairs` pairs: 1, 2, 4, ... and `pairs`."""
    out, k = [], 1
    while k < pairs:
        out.append(k)
        k *= 2
    return out + [pairs]


def merge_concurrent(layer: dict, records: list[dict]) -> bool:
    """Merge a `ct_p2p --concurrent` job's output (its JSON lines: a header with
    `concurrent`, then one line per size) into a p2p layer: `concurrent_pairs`, and each
    point's `oneway_concurrent_us` from the line of equal size_bytes. Only when every point
    has its line (else the layer is left without the fields): True when merged."""
    head = next((r for r in records if "concurrent" in r), None)
    if not head or not head["concurrent"]:
        return False
    by_size = {r["size_bytes"]: r["oneway_concurrent_us"] for r in records
               if "size_bytes" in r and "oneway_concurrent_us" in r}
    points = layer.get("points") or []
    if not points or any(p["size_bytes"] not in by_size for p in points):
        return False
    if any(len(by_size[p["size_bytes"]]) != len(head["concurrent"]) for p in points):
        return False
    layer["concurrent_pairs"] = list(head["concurrent"])
    for p in points:
        p["oneway_concurrent_us"] = list(by_size[p["size_bytes"]])
    return True


# -- running ct_p2p ------------------------------------------------------------------------


def _run_job(cmd: list[str], label: str, env: dict, records: list[dict], progress: bool,
             timeout: float = JOB_TIMEOUT_S) -> None:
    """Run one ct_p2p job (mpi.run_json_lines), appending its JSON lines to `records` as they
    come, so an interrupted job leaves what it measured."""
    run_json_lines(cmd, label, env=env, timeout=timeout, records=records, progress=progress,
                   error=P2PError)


# -- the measurement ----------------------------------------------------------------------


def _load_machine(machine) -> dict | None:
    if machine is None or isinstance(machine, dict):
        return machine
    from ..probe.schema import load

    return load(machine)


class P2PRun:
    """One `colltune p2p`: the document it fills (p2p.json) and the jobs that fill it."""

    def __init__(self, build: MPIBuild, quick: bool, machine: dict | None = None,
                 progress: bool = True, log=None, max_bytes: int = MAX_BYTES):
        self.build = build
        self.quick = quick
        self.machine = machine
        self.progress = progress
        self.log = log or (lambda msg: print(msg, file=sys.stderr))
        self.s = settings(quick)
        self.sizes = size_grid(self.s["per_octave"], max_bytes)
        self.commands: list[str] = []
        self.doc: dict = {
            "schema": SCHEMA, "schema_version": SCHEMA_VERSION, "colltune_version": __version__,
            "created_at": datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds"),
            "host": fingerprint(),
            "mpi": {"build": build.name, "implementation": "unknown", "version": "",
                    "library": ""},
            "quick": quick, "complete": False, "warnings": [],
            "pending_counts": list(PENDING_COUNTS), "layers": [],
            "local": {"sizes_bytes": [], "copy_us": [], "reduce_us": []},
        }

    def warn(self, text: str) -> None:
        self.doc["warnings"].append(text)
        self.log(f"colltune p2p: warning: {text}")

    def plan(self) -> list[dict]:
        """One entry per layer to measure: layer number, pair of cores (None: unpinned) and
        the machine's latency for it."""
        layers = (self.machine or {}).get("comm_layers") or []
        placement = self.build.placement
        if layers and any(la.get("hosts") for la in layers):
            # a probe across hosts: the representative is a pair of ranks on `hosts`
            if placement is None:
                raise P2PError("the machine file was probed across hosts: run p2p across "
                               "them too (--testbed or --hostfile)")
            pair = self._default_pair()
            return [{"layer": int(la.get("layer", i)), "hosts": list(la["hosts"]),
                     "between_hosts": bool(la.get("between_hosts")),
                     "pair": _cores(la.get("representative_cores"), pair),
                     "latency_us": la.get("latency_us")} for i, la in enumerate(layers)]
        if layers:
            return [{"layer": int(la.get("layer", i)), "pair": list(la["representative"]),
                     "latency_us": la.get("latency_us")} for i, la in enumerate(layers)]
        if self.machine is not None:
            self.warn("the machine file has no communication layers: measuring one pair")
        if placement and len(placement.hosts) > 1:
            # no probe: one pair inside the first host, one between the first two
            pair = self._default_pair()
            h0, h1 = placement.hosts[:2]
            return [{"layer": 0, "hosts": [h0, h0], "between_hosts": False, "pair": pair,
                     "latency_us": None},
                    {"layer": 1, "hosts": [h0, h1], "between_hosts": True, "pair": pair,
                     "latency_us": None}]
        return [{"layer": 0, "pair": self._default_pair(), "latency_us": None}]

    def _default_pair(self) -> list[int] | None:
        """The first two cores, when there are two and this build can bind."""
        cores = self._cores() or []
        if len(cores) >= 2:
            return [cores[0], cores[1]]
        self.warn("ranks not pinned (" + ("one core only" if 0 < len(cores) < 2 else
                                          "no binding available") + "): pair is null")
        return None

    def command(self, pair: list[int] | None, hosts: list[str] | None = None) -> list[str]:
        tool = str(self.build.tool("ct_p2p"))
        args = [tool, "--sizes", ",".join(map(str, self.sizes)), "--iters",
                str(self.s["iters"]), "--pending", ",".join(map(str, PENDING_COUNTS))]
        if pair:
            args += ["--cores", f"{pair[0]},{pair[1]}"]
        if self.quick:
            args.append("--quick")
        # pinned by ct_p2p itself when a pair is given; else by the launcher
        return self.build.launch_command(2, args, bind=pair is None, hosts=hosts)

    def run(self) -> dict:
        """Measure every layer; on Ctrl-C the document keeps what was measured
        (complete: false) and KeyboardInterrupt goes on up."""
        started = time.monotonic()
        plan = self.plan()
        conc = self.concurrent_plan(plan)
        estimate = estimate_seconds(self.sizes, self.s["iters"], len(plan),
                                    [pair_counts(c["pairs"]) for c in conc.values()])
        self.doc["estimated_s"] = round(estimate, 1)
        self.log(f"colltune p2p: {'quick' if self.quick else 'full'} measurement with "
                 f"{self.build.name}, {len(self.sizes)} sizes from 1 B to "
                 f"{_fmt(self.sizes[-1])}, {len(plan)} layer(s): about {_clock(estimate)}")
        env = self.build.launch_env(2)
        failures = []
        stream_entry = self.stream_plan(plan)
        try:
            for entry in plan:
                records: list[dict] = []
                cmd = self.command(entry["pair"], entry.get("hosts"))
                self.commands.append(shlex.join(cmd))
                pair = entry["pair"]
                label = (f"p2p layer {entry['layer']}"
                         + (f" (cores {pair[0]}-{pair[1]})" if pair else "")
                         + (f" {entry['hosts'][0]}-{entry['hosts'][1]}"
                            if entry.get("hosts") else ""))
                try:
                    _run_job(cmd, label, env, records, self.progress)
                except P2PError as e:
                    failures.append(str(e))
                    self.warn(f"layer {entry['layer']}: {e}")
                finally:
                    self.add_layer(entry, records)
                if id(entry) in conc and self.doc["layers"] and \
                        self.doc["layers"][-1]["layer"] == entry["layer"]:
                    self.run_concurrent(entry, conc[id(entry)], self.doc["layers"][-1])
                if entry is stream_entry and self.doc["layers"] and \
                        self.doc["layers"][-1]["layer"] == entry["layer"]:
                    self.run_stream(entry, self.doc["layers"][-1])
        except KeyboardInterrupt:
            self.warn("interrupted: the layers and sizes not measured are missing")
            self.doc["duration_s"] = round(time.monotonic() - started, 2)
            raise
        self.doc["duration_s"] = round(time.monotonic() - started, 2)
        if failures and len(failures) == len(plan):
            raise P2PError("; ".join(failures))
        self.doc["complete"] = not failures
        return self.doc

    def concurrent_plan(self, plan: list[dict]) -> dict[int, dict]:
        """The concurrent-pairs jobs, keyed by id() of their plan entry: the first layer inside
        a host (pairs on its first 2P cores) and the first between hosts (P ranks a host,
        block placement, pinned to the first P cores of each); P = min(MAX_PAIRS, cores / 2),
        no job when P < 2."""
        cores = self._cores()
        pairs = min(MAX_PAIRS, len(cores or []) // 2 if cores is not None
                    else (os.cpu_count() or 1) // 2)
        if pairs < 2:
            return {}
        out: dict[int, dict] = {}
        intra = next((e for e in plan if not e.get("between_hosts")), None)
        inter = next((e for e in plan if e.get("between_hosts")), None)
        if intra is not None:
            host = (intra.get("hosts") or [None])[0]
            out[id(intra)] = {"pairs": pairs, "cores": cores[:2 * pairs] if cores else None,
                              "hosts": [host] * (2 * pairs) if host else None}
        if inter is not None and inter.get("hosts"):
            h0, h1 = inter["hosts"][:2]
            out[id(inter)] = {"pairs": pairs,
                              "cores": cores[:pairs] * 2 if cores else None,
                              "hosts": [h0] * pairs + [h1] * pairs}
        return out

    def stream_plan(self, plan: list[dict]) -> dict | None:
        """The plan entry whose layer gets the streams: the first between hosts, when the
        placement has at least 2 hosts (one rank a host)."""
        placement = self.build.placement
        if not placement or len(placement.hosts) < 2:
            return None
        return next((e for e in plan if e.get("between_hosts")), None)

    def stream_command(self, scenarios: list) -> list[str]:
        tool = str(self.build.tool("ct_p2p"))
        spec = "/".join(",".join(f"{a}>{b}" for a, b in flows) for _, _, flows in scenarios)
        args = [tool, "--stream", spec, "--sizes", ",".join(map(str, STREAM_SIZES)),
                "--iters", "5"]
        hosts = list(self.build.placement.hosts)
        return self.build.launch_command(len(hosts), args, bind=False, hosts=hosts)

    def run_stream(self, entry: dict, layer: dict) -> None:
        """The streams job across the hosts, merged into the layer; a failure is a warning
        (the layer stays without host-stack data)."""
        hosts = len(self.build.placement.hosts)
        scenarios = stream_scenarios(hosts)
        records: list[dict] = []
        cmd = self.stream_command(scenarios)
        self.commands.append(shlex.join(cmd))
        label = f"p2p layer {entry['layer']} (streams across {hosts} hosts)"
        try:
            _run_job(cmd, label, self.build.launch_env(hosts), records, self.progress)
        except P2PError as e:
            self.warn(f"layer {entry['layer']}: streams: {e}")
            return
        if not merge_stream(layer, records, scenarios):
            self.warn(f"layer {entry['layer']}: streams: output incomplete, not kept")
            return
        if hosts >= 3:
            self.run_fanout(entry, layer)

    def fanout_command(self) -> list[str]:
        tool = str(self.build.tool("ct_p2p"))
        spec = ",".join(f"{a}>{b}" for a, b in FANOUT_FLOWS)
        args = [tool, "--stream", spec, "--messages", "1", "--sizes",
                ",".join(map(str, FANOUT_SIZES)), "--iters", "5"]
        hosts = list(self.build.placement.hosts)[:3]
        return self.build.launch_command(3, args, bind=False, hosts=hosts)

    def run_fanout(self, entry: dict, layer: dict) -> None:
        """The fan-out job on the first 3 hosts, merged into the layer's streams; a failure
        is a warning (the model then lets the flows of a round share from their first
        byte)."""
        cmd = self.fanout_command()
        self.commands.append(shlex.join(cmd))
        records: list[dict] = []
        label = f"p2p layer {entry['layer']} (one message to each of 2 hosts)"
        try:
            _run_job(cmd, label, self.build.launch_env(3), records, self.progress)
        except P2PError as e:
            self.warn(f"layer {entry['layer']}: fan-out: {e}")
            return
        if not merge_fanout(layer, records):
            self.warn(f"layer {entry['layer']}: fan-out: output incomplete, not kept")

    def _cores(self) -> list[int] | None:
        """The cores ct_probe lists when this build can bind (None: unpinned), once."""
        if not hasattr(self, "_topo_cores"):
            try:
                probe = self.build.tool("ct_probe")
                out = subprocess.run([str(probe), "topo"], capture_output=True, text=True,
                                     timeout=60)
                topo = json.loads(out.stdout.splitlines()[0]) if out.returncode == 0 else {}
            except (MPIError, OSError, subprocess.TimeoutExpired, json.JSONDecodeError,
                    IndexError):
                topo = {}
            cores = topo.get("cores") or []
            self._topo_cores = list(cores) if cores and topo.get("can_bind") else None
        return self._topo_cores

    def concurrent_command(self, job: dict) -> list[str]:
        pairs = job["pairs"]
        tool = str(self.build.tool("ct_p2p"))
        args = [tool, "--concurrent", ",".join(map(str, pair_counts(pairs))), "--sizes",
                ",".join(map(str, self.sizes)), "--iters", str(self.s["iters"])]
        if job["cores"]:
            args += ["--cores", ",".join(map(str, job["cores"]))]
        if self.quick:
            args.append("--quick")
        return self.build.launch_command(2 * pairs, args, bind=not job["cores"],
                                         hosts=job["hosts"])

    def run_concurrent(self, entry: dict, job: dict, layer: dict) -> None:
        """The concurrent-pairs job of a layer, merged into it; a failure is a warning (the
        layer stays without contention data)."""
        records: list[dict] = []
        cmd = self.concurrent_command(job)
        self.commands.append(shlex.join(cmd))
        label = f"p2p layer {entry['layer']} ({job['pairs']} concurrent pairs)"
        try:
            _run_job(cmd, label, self.build.launch_env(2 * job["pairs"]), records,
                     self.progress)
        except P2PError as e:
            self.warn(f"layer {entry['layer']}: concurrent pairs: {e}")
            return
        if not merge_concurrent(layer, records):
            self.warn(f"layer {entry['layer']}: concurrent pairs: output incomplete, not kept")

    def add_layer(self, entry: dict, records: list[dict]) -> None:
        head = next((r for r in records if "ranks" in r), None)
        points = [r for r in records if "size_bytes" in r]
        if head:
            if self.doc["mpi"]["implementation"] == "unknown":
                self.doc["mpi"] = {"build": self.build.name,
                                   **describe_library(head.get("library", ""))}
            pair = entry["pair"]
            for r in head["ranks"]:
                if pair and not r.get("bound"):
                    self.warn(f"layer {entry['layer']}: rank {r['rank']} not bound to core "
                              f"{r.get('core')}: {r.get('bind_error', 'refused')} "
                              f"(ran on cpus {r.get('cpus')})")
                    entry = {**entry, "pair": None}
        if not points:
            return
        kept = ("size_bytes", "os_us", "or_us", "g_us", "oneway_us", "mode", "os_pending_us",
                "g_pending_us", "iterations", "isend_wait_us", "late_isend_wait_us", "delay_us")
        pts = [{k: r[k] for k in kept if k in r} for r in points]
        latency, latency_bytes = entry["latency_us"], None
        if latency is None:  # no machine file: the smallest message's one-way time
            # ...whose size is kept beside it: with --min 32K it is a 32 KiB message's
            # time, not a latency in the usual sense (issue 39).
            latency, latency_bytes = pts[0]["oneway_us"], pts[0]["size_bytes"]
        layer = {"layer": entry["layer"], "pair": entry["pair"], "latency_us": latency,
                 "latency_bytes": latency_bytes,
                 "points": pts, "switches": switches(pts),
                 "between_hosts": bool(entry.get("between_hosts"))}
        if entry.get("hosts"):
            layer["hosts"] = list(entry["hosts"])
        self.doc["layers"].append(layer)
        if len(self.doc["layers"]) == 1:  # rank 0's local costs, once
            self.doc["local"] = {"sizes_bytes": [r["size_bytes"] for r in points],
                                 "copy_us": [r["copy_us"] for r in points],
                                 "reduce_us": [r["reduce_us"] for r in points]}


def _cores(cores: list | None, default: list[int] | None) -> list[int] | None:
    """The probe's cores of a representative pair when both were pinned, else `default`."""
    if cores and len(cores) == 2 and all(isinstance(c, int) and c >= 0 for c in cores):
        return list(cores)
    return default


def write_p2p_json(doc: dict, path: str | os.PathLike) -> None:
    """Validated, then written atomically; an invalid document is a bug, never written."""
    errors = validate(doc, str(path))
    if errors:
        raise P2PError("refusing to write an invalid p2p document: " + "; ".join(errors))
    write_atomic(path, json.dumps(doc, indent=1) + "\n")


def measure_p2p(build: MPIBuild, *, quick: bool, machine: dict | str | None = None,
                output: str | os.PathLike | None = None, progress: bool = True) -> dict:
    """Measure the point-to-point costs (for `colltune run`): returns the p2p document and
    writes it to `output` when given. `machine`: a machine document or file (its comm_layers
    choose the pairs). Raises P2PError (nothing measured), MachineFileError (bad machine
    file); on Ctrl-C writes what was measured (complete: false) and re-raises."""
    p = P2PRun(build, quick, _load_machine(machine), progress=progress)
    try:
        doc = p.run()
    except KeyboardInterrupt:
        if output:
            write_p2p_json(p.doc, output)
        raise
    if output:
        write_p2p_json(doc, output)
    return doc


# -- the store and the summary ---------------------------------------------------------


def p2p_bench(doc: dict, command: str = "") -> dict:
    """The measurement as a colltune-bench/1 document: op 'p2p', the whole p2p document
    under 'p2p', and os, or, g and one-way per layer as results (median_us)."""
    results = []
    for layer in doc["layers"]:
        for p in layer["points"]:
            for name in ("os", "or", "g", "oneway"):
                results.append({"algorithm": f"{name} layer {layer['layer']}",
                                "size": p["size_bytes"], "iterations": p.get("iterations"),
                                "median_us": p[f"{name}_us"]})
    return {"schema": "colltune-bench/1", "op": "p2p", "ranks": 2,
            "binding": binding_label(doc), "command": command,
            "mpi": {k: doc["mpi"][k] for k in ("implementation", "version", "library")},
            "p2p": doc, "results": results}


def binding_label(doc: dict) -> str:
    pinned = [la for la in doc["layers"] if la.get("pair")]
    if doc["layers"] and len(pinned) == len(doc["layers"]):
        return "core (hwloc, one pair per layer)"
    return "none" if not pinned else "partly pinned"


def summary(doc: dict) -> str:
    """The readable summary printed at the end: a few sizes per layer and the switches."""
    from ..core.units import fmt_size

    mpi = doc["mpi"]
    name = f"{mpi['implementation']} {mpi['version']}".strip()
    lines = [f"point-to-point costs ({'quick' if doc['quick'] else 'full'}) with {name} "
             f"(build {mpi['build']}) on {doc['host'].get('hostname')}: "
             f"{doc.get('duration_s', 0):.1f} s" + ("" if doc["complete"] else ", INCOMPLETE")]
    shown = {1, 64, 1 << 10, 8 << 10, 64 << 10, 512 << 10, 4 << 20, 16 << 20}
    for layer in doc["layers"]:
        pair = layer["pair"]
        hosts = layer.get("hosts")
        lines.append(f"  layer {layer['layer']} ("
                     + (f"between hosts {hosts[0]} and {hosts[1]}, " if layer.get(
                         "between_hosts") else f"inside host {hosts[0]}, " if hosts else "")
                     + (f"cores {pair[0]}-{pair[1]}" if pair else "unpinned")
                     + (f", {latency_text(layer)}" if layer["latency_us"] is not None
                        else "") + ")")
        lines.append(f"    {'size':>10} {'os us':>9} {'or us':>9} {'g us':>9} "
                     f"{'one-way us':>11}  mode")
        at = {s["at_bytes"] for s in layer["switches"]}
        for p in layer["points"]:
            if p["size_bytes"] in shown or p["size_bytes"] in at:
                lines.append(f"    {fmt_size(p['size_bytes']):>10} {p['os_us']:>9.3f} "
                             f"{p['or_us']:>9.3f} {p['g_us']:>9.3f} {p['oneway_us']:>11.3f}  "
                             f"{p['mode']}")
        for s in layer["switches"]:
            lines.append(f"    {mpi['implementation']}: {s['from']} -> {s['to']} at "
                         f"{fmt_size(s['at_bytes'])}")
        if not layer["switches"]:
            lines.append("    no mode switch")
    for w in doc["warnings"]:
        lines.append(f"  warning: {w}")
    return "\n".join(lines)


def _max_size(text: str) -> int:
    from ..core.args import byte_size

    value = byte_size(text)
    if value > MAX_BYTES:
        raise argparse.ArgumentTypeError(f"at most {MAX_BYTES >> 20}M")
    return value


def _size_range(text: str) -> int:
    """--sizes: MAX or 1-MAX (the grid starts at 1 B): MAX in bytes."""
    lo, dash, hi = text.partition("-")
    if dash:
        from ..core.args import byte_size

        if byte_size(lo) != 1:
            raise argparse.ArgumentTypeError(f"'{text}': the p2p grid always starts at 1 B; "
                                             "give MAX or 1-MAX")
    return _max_size(hi if dash else text)


def _fmt(n: int) -> str:
    from ..core.units import fmt_size

    return fmt_size(n)


def _clock(seconds: float) -> str:
    s = int(round(seconds))
    return f"{s} s" if s < 60 else f"{s // 60} min {s % 60:02d} s"


# -- the command --------------------------------------------------------------------------


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("p2p", help="measure point-to-point costs (os, or, g, Isend modes) "
                                   "per communication layer; write p2p.json")
    add_output(p, "the p2p file (default: p2p.json)", default="p2p.json")
    p.add_argument("--quick", action="store_true",
                   help="a short run: 2 sizes per octave, fewer samples")
    p.add_argument("--machine", default=None,
                   help="machine.json whose comm_layers choose the pairs (default: cores 0-1)")
    p.add_argument("--mpi", help="mpich, openmpi, intelmpi or system "
                                 "(default: $COLLTUNE_MPI or mpich)")
    p.add_argument("--no-record", action="store_true", help="do not record the run in the store")
    p.add_argument("--sizes", dest="max_size", type=_size_range, default=MAX_BYTES,
                   metavar="[1-]MAX",
                   help="the message sizes, 1 B to MAX, e.g. 64K for a short check (K, M and G "
                        "are binary: 4M = 4 MiB; the grid always starts at 1 B) (default 16M)")
    hidden(p, "--max-size", dest="max_size", type=_max_size)
    add_db(p)
    add_host_arguments(p)
    p.set_defaults(func=cmd_p2p)


def cmd_p2p(args: argparse.Namespace) -> int:
    from ..probe.schema import MachineFileError

    apply_host_arguments(args)
    try:
        build = MPIBuild.select(args.mpi)
        build.tool("ct_p2p")
    except MPIError as e:
        print(f"colltune: {e}", file=sys.stderr)
        return 2
    try:
        machine = _load_machine(args.machine)
    except MachineFileError as e:
        print(f"colltune p2p: {e}", file=sys.stderr)
        return 2
    store = run = None
    command = shlex.join(["colltune", *sys.argv[1:]])
    if not args.no_record:
        from ..store.store import Store

        store = Store.open()
        run = store.begin_run("p2p", sys.argv[1:], ranks=2)
    p = P2PRun(build, args.quick, machine, max_bytes=args.max_size)
    try:
        doc = p.run()
    except KeyboardInterrupt:
        write_p2p_json(p.doc, args.output)
        if run:
            run.add_bench(p2p_bench(p.doc, command))
            run.finish("interrupted", "interrupted by the user")
            store.close()
        print(f"colltune p2p: interrupted; what was measured is in {args.output}",
              file=sys.stderr)
        return 130
    except P2PError as e:
        if run:
            run.finish("failed", str(e))
            store.close()
        print(f"colltune p2p: {e}", file=sys.stderr)
        return 1
    write_p2p_json(doc, args.output)
    if run:
        run.set_meta(binding=binding_label(doc))
        run.add_bench(p2p_bench(doc, command))
        run.finish("complete", None if doc["complete"] else "some layers failed")
    print(summary(doc))
    print(f"p2p file: {Path(args.output).resolve()}")
    if run:
        print(f"recorded as run {run.id} in {store.path}")
        store.close()
    return 0 if doc["complete"] else 1


def latency_text(layer: dict) -> str:
    """'latency 1.23 us' labelled with what it is: the probe's, or the one-way time of the
    smallest message measured, whose size is said (it need not be a small one)."""
    b = layer.get("latency_bytes")
    if b is None:
        return f"latency {layer['latency_us']:.2f} us (from the machine file)"
    return f"one-way time {layer['latency_us']:.2f} us at {human_size(b)}"
