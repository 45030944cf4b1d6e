"""`colltune probe`: measure the machine (Servet) and write machine.json (docs/MACHINE.md).

Four parts, each runnable alone (`--parts`), each recorded with its status: a part that
fails says why in its section and the others still run.

- caches: the traversal curve (`ct_probe traverse`, one core) over growing sizes, on base
  pages and on huge pages, read by `probe_caches.analyze_curve`;
- sharing: per cache level, every pair of cores traverses arrays of 2/3 of that level at
  once; a slowdown over the core alone above 1.5 means the pair shares it;
- memory: copy bandwidth of each core alone, of each pair at once, pairs grouped by
  bandwidth, then the bandwidth of 1, 2, ... cores of each contention group at once;
- comm: MPI latency of an L1-sized message between every pair of cores (one job), layers
  of similar latency, a bandwidth curve (1 B to 16 MiB) for one pair per layer, and the
  latency matrix exported as an hwloc XML topology with a distances matrix.

`quick_probe` is the short version `colltune run` starts with.
"""

from __future__ import annotations

import argparse
import datetime
import json
import math
import os
import shlex
import sys
import time
from itertools import combinations
from pathlib import Path

from .. import __version__
from ..core.args import add_db, add_output, writes
from ..core.files import write_atomic
from ..core.machine import fingerprint
from ..core.mpi import MPIBuild, MPIError, add_host_arguments, apply_host_arguments, run_json_lines
from ..core.units import fmt_size
from .caches import analyze_curve, size_grid
from .cluster import bandwidth_groups, comm_layers, host_layers, sharing_groups
from .decide import (
    SETTLE_TOLERANCE,
    alone_fits,
    decide_levels,
    decide_pair,
    decide_sharing,
    floor_curve,
    pair_settled,
    pass_ratio,
    resident,
    unsettled,
)
from .schema import SCHEMA, SCHEMA_VERSION
from .truth import compare, hwloc_caches, level_of, os_caches

PARTS = ("caches", "sharing", "memory", "comm")
SHARED_RATIO = 1.5  # the paper's threshold
KiB, MiB = 1 << 10, 1 << 20


class ProbeError(RuntimeError):
    """A part of the probe could not be measured; the message says why."""


# -- settings ----------------------------------------------------------------------------


def settings(quick: bool) -> dict:
    """How much each part measures: --quick takes coarser grids, fewer repeats and pairs."""
    if quick:
        return {"grid_steps": 2, "passes": 2, "reps": 15, "accesses": 4000, "sharing_passes": 2,
                "max_passes": 8, "settle_budget_s": 20.0, "sharing_max_passes": 6,
                "sharing_budget_s": 20.0,
                "all_pairs_up_to": 4, "copy_reps": 3, "lat_iters": 20, "lat_reps": 5,
                "bw_volume": 2 * MiB, "bw_reps": 3}
    return {"grid_steps": 4, "passes": 3, "reps": 21, "accesses": 4000, "sharing_passes": 3,
            "all_pairs_up_to": 1 << 30, "copy_reps": 5, "lat_iters": 50, "lat_reps": 7,
            "bw_volume": 16 * MiB, "bw_reps": 5}


def probe_pairs(cores: list[int], s: dict) -> list[tuple[int, int]]:
    """Every pair, or in a quick run on many cores the pairs with the first core."""
    if len(cores) <= s["all_pairs_up_to"]:
        return list(combinations(cores, 2))
    return [(cores[0], c) for c in cores[1:]]


# -- running the C tools ---------------------------------------------------------------------


def run_tool(cmd: list[str], label: str, env: dict | None = None,
             timeout: float | None = None) -> list[dict]:
    """Run a probe program (mpi.run_json_lines); raises ProbeError with its last words."""
    return run_json_lines(cmd, label, env=env, timeout=timeout, error=ProbeError)


def _csv(values) -> str:
    return ",".join(str(int(v)) for v in values)


def _sets(sets: list[list[int]]) -> str:
    return ";".join(_csv(s) for s in sets)


# -- the probe ----------------------------------------------------------------------------------


class Probe:
    """One probe run: the document it fills (machine.json) and the parts that fill it."""

    def __init__(self, build: MPIBuild | None, quick: bool, cores: list[int] | None = None,
                 mpi_error: str | None = None, log=None):
        self.build = build
        self.mpi_error = mpi_error
        self.quick = quick
        self.s = settings(quick)
        self.log = log or (lambda msg: print(msg, file=sys.stderr))
        self.asked_cores = cores
        self.doc: dict = {
            "schema": SCHEMA, "schema_version": SCHEMA_VERSION, "colltune_version": __version__,
            "created_at": datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds"),
            "quick": quick, "complete": False, "host": fingerprint(), "warnings": [],
            "parts": {}, "caches": [], "sharing": [], "memory": None, "comm_layers": [],
        }
        self.ct_probe: Path | None = None
        self.topo: dict = {}
        self.cores: list[int] = []

    # -- set-up

    def warn(self, text: str) -> None:
        self.doc["warnings"].append(text)
        self.log(f"colltune probe: warning: {text}")

    def setup(self) -> None:
        """Find ct_probe, read the topology, choose the cores, read the OS's caches."""
        if self.build is None:
            raise ProbeError(self.mpi_error or "no colltune build")
        self.ct_probe = self.build.tool("ct_probe")
        (self.topo,) = run_tool([str(self.ct_probe), "topo"], "topology") or [{}]
        machine_cores = self.topo.get("cores") or []
        if not machine_cores:
            raise ProbeError("ct_probe found no cores")
        cores = machine_cores
        if self.asked_cores:
            cores = [c for c in self.asked_cores if c in machine_cores]
            missing = [c for c in self.asked_cores if c not in machine_cores]
            if missing:
                self.warn(f"asked for {len(self.asked_cores)} cores but "
                          f"{', '.join(map(str, missing))} "
                          f"{'is' if len(missing) == 1 else 'are'} not on this machine "
                          f"(cores: {_ranges(machine_cores)}): probing {len(cores)} core(s) "
                          f"{_ranges(cores)}")
            if not cores:
                raise ProbeError("none of the asked cores is on this machine")
        self.cores = cores
        self.doc["cores"] = cores
        self.doc["page_size"] = self.topo.get("page_size") or os.sysconf("SC_PAGE_SIZE")
        self.doc["binding"] = {"binder": self.topo.get("binder"),
                               "can_bind": bool(self.topo.get("can_bind")), "refused": []}
        if not self.topo.get("can_bind"):
            self.warn(f"threads and ranks are not bound ({self.topo.get('binder')}): "
                      "the results are those of wherever the OS ran them")
        self.doc["os"] = {"caches": os_caches(cores)}
        self.doc["hwloc"] = {"binder": self.topo.get("binder"),
                             "caches": hwloc_caches(self.topo, cores)}

    def note_binding(self, records: list[dict]) -> None:
        for r in records:
            if r.get("bound") is False and self.doc["binding"]["can_bind"]:
                msg = r.get("bind_error") or "binding refused"
                if msg not in self.doc["binding"]["refused"]:
                    self.doc["binding"]["refused"].append(msg)
                    self.warn(f"{msg}: that measurement ran unbound")

    def estimate_seconds(self, parts: list[str]) -> float:
        """A rough forecast of the run time, from the plan and typical costs."""
        llc = self.os_llc()
        n, s = len(self.cores), self.s
        pairs = len(probe_pairs(self.cores, s))
        grid = self.grid()

        def traverse_cost(size):
            ns = 2 if size < MiB else 20 if size < llc else 150
            return (2 * size / KiB + s["reps"] * s["accesses"]) * ns * 1e-9 + size / 1e9

        total = 0.0
        if "caches" in parts:
            total += s["passes"] * sum(traverse_cost(z) for z in grid)
            total += sum(traverse_cost(z) for z in grid if z >= 64 * KiB)
        if "sharing" in parts:
            total += s["sharing_passes"] * sum(traverse_cost(c["size_bytes"] * 2 / 3) * (pairs + n)
                                               for c in self.doc["os"]["caches"])
        if "memory" in parts:
            b = self.copy_bytes()
            copies = n + pairs + n
            total += copies * (s["copy_reps"] + 1) * 2 * b / 4e9 + n * 2 * b / 2e9
        if "comm" in parts:
            total += 3 + pairs * s["lat_iters"] * s["lat_reps"] * 20e-6 + 4 * 25 * 0.05
        return total

    # -- helpers

    def os_llc(self) -> int:
        sizes = [c["size_bytes"] for c in self.doc.get("os", {}).get("caches", [])
                 if c.get("size_bytes")]
        return max(sizes) if sizes else 32 * MiB

    def grid(self) -> list[int]:
        hi = max(64 * MiB, 2 * self.os_llc())
        return size_grid(4 * KiB, hi, steps_small=2, steps_large=self.s["grid_steps"])

    def copy_bytes(self) -> int:
        """Per core, twice the last level (so the copy runs from memory), 64 to 256 MiB, and
        all cores' arrays within half of the available memory."""
        b = min(256 * MiB, max(64 * MiB, 2 * self.os_llc()))
        avail = _mem_available()
        if avail:
            b = min(b, avail // (2 * 2 * max(1, len(self.cores))))
        return max(MiB, b - b % MiB)

    def traverse(self, sets: list[list[int]], sizes: list[int], label: str,
                 huge: bool = False) -> list[dict]:
        cmd = [str(self.ct_probe), "traverse", "--sets", _sets(sets), "--sizes", _csv(sizes),
               "--reps", str(self.s["reps"]), "--min-accesses", str(self.s["accesses"]),
               "--huge", "1" if huge else "0"]
        records = run_tool(cmd, label)
        self.note_binding(records)
        bad = [r for r in records if "error" in r]
        if bad:
            raise ProbeError(bad[0]["error"])
        return records

    # -- parts

    def sample_until_settled(self, sizes: list[int], label: str, huge: bool = False,
                             passes: int | None = None) -> tuple[dict[int, list[float]], int]:
        """Traversal samples per size: `passes` passes over every size, then passes over
        the sizes not yet settled (decide.unsettled) until they are, `max_passes` is reached
        or the time budget is spent. Returns (samples, passes run)."""
        core = self.cores[0]
        samples: dict[int, list[float]] = {z: [] for z in sizes}
        first = self.s["passes"] if passes is None else passes
        t0, n = time.monotonic(), 0
        todo = list(sizes)
        while todo:
            n += 1
            tag = f"{n}/{first}" if n <= first else f"{n} (repeat, {len(todo)} unsettled)"
            for r in self.traverse([[core]], todo, f"{label} {tag}", huge=huge):
                samples[r["size"]].append(r["ns"][0])
            todo = sizes if n < first else unsettled({z: samples[z] for z in sizes})
            if n >= self.s["max_passes"] or time.monotonic() - t0 > self.s["settle_budget_s"]:
                break
        return samples, n

    def part_caches(self) -> None:
        grid = self.grid()
        core = self.cores[0]
        samples, passes = self.sample_until_settled(grid, "caches: traversal")
        sizes, ns = floor_curve(samples)
        noisy = unsettled(samples)
        huge_sizes = [z for z in grid if z >= 64 * KiB]
        huge = None
        huge_noisy: list[int] = []
        if _thp_available():
            hsamples, hpasses = self.sample_until_settled(huge_sizes, "caches: huge pages",
                                                          huge=True, passes=1)
            huge = floor_curve(hsamples)
            huge_noisy = unsettled(hsamples) if hpasses > 1 else []
        else:
            self.warn("transparent huge pages are off: spread rises are read with the "
                      "binomial model only")
        levels = analyze_curve(sizes, ns, self.doc["page_size"], huge)
        if not levels:
            raise ProbeError("the traversal curve shows no rise: no cache level found "
                             f"(ns per access from {min(ns):.2f} to {max(ns):.2f})")
        decided, phantoms = decide_levels(levels, self.doc["os"]["caches"], grid,
                                          sorted(set(noisy) | set(huge_noisy)))
        self.doc["cache_curve"] = {"core": core, "sizes_bytes": sizes, "ns_per_access": ns,
                                   "page_bytes": self.doc["page_size"], "stride_bytes": KiB,
                                   "huge_pages": ({"sizes_bytes": huge[0],
                                                   "ns_per_access": huge[1]} if huge else None),
                                   "grid": grid, "passes": passes,
                                   "samples": {str(z): [round(x, 4) for x in v]
                                               for z, v in samples.items()},
                                   "unsettled_bytes": noisy,
                                   "settle_tolerance": SETTLE_TOLERANCE,
                                   "uncertain_rises": phantoms}
        for ph in phantoms:
            self.warn(f"caches: uncertain rise at {fmt_size(ph['size_bytes'])}: "
                      + "; ".join(ph["evidence"]))
        caches = []
        for d in decided:
            lv = d["measured"] or {}
            os_c = level_of(self.doc["os"]["caches"], d["level"])
            hw_c = level_of(self.doc["hwloc"]["caches"], d["level"])
            caches.append({
                "level": d["level"],
                "type": os_c["type"] if os_c else ("Data" if d["level"] == 1 else "Unified"),
                "size_bytes": d["size_bytes"], "method": lv.get("method", "os"),
                "status": d["status"], "evidence": d["evidence"],
                "measured_bytes": lv.get("size_bytes"),
                "associativity": lv.get("associativity"),
                "os_size_bytes": os_c["size_bytes"] if os_c else None,
                "os_associativity": os_c["associativity"] if os_c else None,
                "hwloc_size_bytes": hw_c["size_bytes"] if hw_c else None,
                "shared_by": None, "sharing_status": None,
                "os_shared_by": os_c["shared_by"] if os_c else None,
                "hwloc_shared_by": hw_c["shared_by"] if hw_c else None,
                "detail": {k: v for k, v in lv.items()
                           if k not in ("level", "size_bytes", "method", "associativity")},
            })
            if d["status"] == "uncertain":
                self.warn(f"caches: L{d['level']} uncertain: " + "; ".join(d["evidence"]))
        self.doc["caches"] = caches

    def sharing_levels(self) -> list[dict]:
        """The levels to test: measured ones, else (caches part not run or failed) the OS's."""
        if self.doc["caches"]:
            return [{"level": c["level"], "size_bytes": c["size_bytes"], "source": "measured"}
                    for c in self.doc["caches"]]
        return [{"level": c["level"], "size_bytes": c["size_bytes"], "source": "os"}
                for c in self.doc["os"]["caches"] if c.get("size_bytes")]

    def curve_ns_at(self, size: int, huge: bool) -> float | None:
        """The single-core traversal's ns per access at the largest measured size <= `size`
        (the huge-page curve when `huge` and there is one), None without a curve."""
        cc = self.doc.get("cache_curve") or {}
        curve = (cc.get("huge_pages") if huge else None) or cc
        sizes, ns = curve.get("sizes_bytes") or [], curve.get("ns_per_access") or []
        below = [n for z, n in zip(sizes, ns, strict=True) if z <= size]
        return round(below[-1], 4) if below else None

    def part_sharing(self) -> None:
        if len(self.cores) < 2:
            raise ProbeError("one core only: no pair to test")
        levels = self.sharing_levels()
        if not levels:
            raise ProbeError("no cache size known (caches part failed and the OS reports none)")
        pairs = probe_pairs(self.cores, self.s)
        results = []
        for lv in levels:
            size = int(lv["size_bytes"] * 2 / 3)
            size = max(KiB, size - size % KiB)
            alone: dict[int, float] = {}
            together: dict[tuple[int, int], list[float]] = {}
            ratios: dict[tuple[int, int], list[float]] = {tuple(p): [] for p in pairs}
            # Beyond L1, huge pages: no TLB step, no placement luck (see probe_caches).
            huge = lv["level"] >= 2 and _thp_available()
            discarded: dict[tuple[int, int], list[str]] = {tuple(q): [] for q in pairs}
            curve_ns = self.curve_ns_at(size, huge)
            memory_ns = self.curve_ns_at(1 << 62, huge)  # the largest size: memory
            os_c = level_of(self.doc["os"]["caches"], lv["level"])
            os_pairs = ({(a, b) for g in os_c["shared_by"] for a in g for b in g if a < b}
                        if os_c and os_c.get("shared_by") else None)
            t0, p = time.monotonic(), 0
            todo = [tuple(q) for q in pairs]
            # Each pass measures the cores of the pairs still open alone and then together:
            # a pass's ratio compares measurements taken moments apart. Passes go on for the
            # pairs whose ratios are not yet clear (decide.pair_settled).
            while todo:
                p += 1
                cores = sorted({c for q in todo for c in q})
                sets = [[c] for c in cores] + [list(q) for q in todo]
                label = (f"sharing L{lv['level']}: pass {p}/{self.s['sharing_passes']}"
                         if p <= self.s["sharing_passes"] else
                         f"sharing L{lv['level']}: pass {p} (repeat, {len(todo)} pair(s) unclear)")
                this_alone: dict[int, float] = {}
                recs = self.traverse(sets, [size], label, huge=huge)
                for r in recs:
                    if len(r["cpus"]) == 1:
                        c = r["cpus"][0]
                        this_alone[c] = r["ns"][0]
                        alone[c] = min(alone.get(c, float("inf")), r["ns"][0])
                for r in recs:
                    cpus = r["cpus"]
                    if len(cpus) == 2:
                        key = (cpus[0], cpus[1])
                        prev = together.get(key)
                        together[key] = (r["ns"] if prev is None
                                         else [min(a, b) for a, b in zip(prev, r["ns"],
                                                                         strict=True)])
                        slow = [f"core {c} alone {this_alone[c]:.1f} ns, the traversal curve "
                                f"{curve_ns:.1f} ns" for c in cpus
                                if not alone_fits(this_alone[c], curve_ns)]
                        slow += [f"core {c} alone {this_alone[c]:.1f} ns, memory {memory_ns:.1f}"
                                 " ns: not in its cache" for c in cpus
                                 if not resident(this_alone[c], memory_ns)]
                        if slow:
                            discarded[key].append(", ".join(slow))
                        else:
                            ratios[key].append(pass_ratio(r["ns"],
                                                          [this_alone[c] for c in cpus]))
                if p < self.s["sharing_passes"]:
                    continue
                todo = [q for q in todo
                        if not pair_settled(ratios[q], os_shared=(
                            None if os_pairs is None else q in os_pairs))]
                if (p >= self.s["sharing_max_passes"]
                        or time.monotonic() - t0 > self.s["sharing_budget_s"]):
                    break
            cache = level_of(self.doc.get("caches") or [], lv["level"])
            if cache and cache.get("status") == "uncertain":
                # No rise confirmed this level (a loaded machine: the curve at this size is
                # already memory's): the passes compare memory with memory and cannot tell.
                for q in ratios:
                    if ratios[q]:
                        discarded[q].append(f"{len(ratios[q])} pass(es) at a size no measured "
                                            f"rise confirmed as L{lv['level']}")
                    ratios[q] = []
            decision = decide_sharing(ratios, discarded=discarded, os_shared=os_pairs)
            verdict = {q: decide_pair(r) for q, r in ratios.items()}
            rows = []
            for (a, b), ns in sorted(together.items()):
                ratio = max(ns[0] / alone[a], ns[1] / alone[b])
                rows.append({"cores": [a, b], "ns": [round(x, 4) for x in ns],
                             "ratio": round(ratio, 3),
                             "pass_ratios": [round(x, 3) for x in ratios[(a, b)]],
                             "decision": verdict[(a, b)],
                             "shared": (True if verdict[(a, b)] == "shared" else
                                        False if verdict[(a, b)] == "private" else None)})
            groups = (sharing_groups(self.cores, decision["shared"])
                      if decision["status"] in ("decided", "os") else None)
            results.append({"level": lv["level"], "array_bytes": size,
                            "size_source": lv["source"], "huge_pages": huge, "passes": p,
                            "alone_ns": {str(c): round(v, 4) for c, v in sorted(alone.items())},
                            "curve_ns": curve_ns,
                            "pairs": rows, "shared_by": groups, "status": decision["status"],
                            "evidence": decision["evidence"],
                            "complete_pairs": len(pairs) == len(self.cores) * (len(self.cores)
                                                                                 - 1) // 2})
            if decision["status"] != "decided":
                how = ("uncertain" if decision["status"] == "uncertain"
                       else "from the OS, not measured clearly")
                self.warn(f"sharing L{lv['level']} {how}: " + "; ".join(decision["evidence"]))
            for c in self.doc["caches"]:
                if c["level"] == lv["level"]:
                    c["shared_by"] = groups
                    c["sharing_status"] = decision["status"]
        self.doc["sharing"] = results

    def part_memory(self) -> None:
        b = self.copy_bytes()
        reps = str(self.s["copy_reps"])
        pairs = probe_pairs(self.cores, self.s)

        def copy(sets, label):
            recs = run_tool([str(self.ct_probe), "copy", "--sets", _sets(sets), "--bytes",
                             str(b), "--reps", reps], label)
            self.note_binding(recs)
            bad = [r for r in recs if "error" in r]
            if bad:
                raise ProbeError(bad[0]["error"])
            return recs

        single = {r["cpus"][0]: r["gbps"][0]
                  for r in copy([[c] for c in self.cores], "memory: one core")}
        reference = max(single.values())
        pair_bw: dict[tuple[int, int], float] = {}
        if pairs:
            for r in copy([list(p) for p in pairs], "memory: pairs"):
                pair_bw[(r["cpus"][0], r["cpus"][1])] = sum(r["gbps"]) / 2
        groups = bandwidth_groups(pair_bw, reference)
        for g in groups:
            if not g["contention"]:
                g["scaling"] = []
                continue
            cores = g["cores"]
            sets = [cores[:k] for k in range(1, len(cores) + 1)]
            g["scaling"] = [{"cores": r["cpus"], "n": len(r["cpus"]),
                             "total_gbps": round(sum(r["gbps"]), 4),
                             "per_core_gbps": round(sum(r["gbps"]) / len(r["gbps"]), 4)}
                            for r in copy(sets, f"memory: 1..{len(cores)} cores at once")]
        self.doc["memory"] = {
            "array_bytes": b, "metric": "copy GB/s per core, bytes read + written (STREAM)",
            "single_core_gbps": {str(c): round(v, 4) for c, v in sorted(single.items())},
            "reference_gbps": round(reference, 4),
            "pairs": [{"cores": list(p), "gbps_per_core": round(v, 4),
                       "ratio": round(v / reference, 4)} for p, v in sorted(pair_bw.items())],
            "groups": groups,
        }

    def l1_bytes(self) -> tuple[int, str]:
        for c in self.doc["caches"]:
            if c["level"] == 1:
                return c["size_bytes"], "measured L1"
        os_l1 = level_of(self.doc["os"]["caches"], 1)
        if os_l1 and os_l1.get("size_bytes"):
            return os_l1["size_bytes"], "the OS's L1 (caches part not run)"
        return 32 * KiB, "32 KiB (no L1 size known)"

    def part_comm(self, xml_path: str | None) -> None:
        if self.build is None or self.mpi_error:
            raise ProbeError(self.mpi_error or "no MPI build")
        if self.build.placement:
            self.part_comm_hosts()
            return
        n = len(self.cores)
        if n < 2:
            raise ProbeError("one core only: no pair to measure")
        tool = str(self.build.tool("ct_probe_comm"))
        msg, msg_source = self.l1_bytes()
        cores = _csv(self.cores)
        env = self.build.launch_env(n)

        def launch(args, label):
            cmd = self.build.launch_command(n, [tool, *args, "--cores", cores], bind=True)
            return run_tool(cmd, label, env=env, timeout=600), cmd

        recs, cmd = launch(["latency", "--bytes", str(msg), "--iters", str(self.s["lat_iters"]),
                            "--reps", str(self.s["lat_reps"])], "comm: latency of every pair")
        head = recs[0] if recs and "ranks" in recs[0] else {"ranks": []}
        rank_core = {r["rank"]: r["core"] for r in head["ranks"]}
        for r in head["ranks"]:
            if not r.get("bound") and r.get("bind_error"):
                self.doc["binding"]["refused"].append(f"rank {r['rank']}: {r['bind_error']}")
                self.warn(f"rank {r['rank']}: {r['bind_error']} (left to the launcher: "
                          f"cpus {r.get('cpus')})")
        lat: dict[tuple[int, int], float] = {}
        med: dict[tuple[int, int], float] = {}
        for r in recs:
            if "pair" in r:
                a, b = (rank_core.get(x, x) for x in r["pair"])
                lat[(a, b)] = r["latency_us"]
                med[(a, b)] = r["median_us"]
        if not lat:
            raise ProbeError("the latency job measured nothing")
        layers = comm_layers(lat)
        matrix = [[0.0 if a == b else lat.get((min(a, b), max(a, b))) for b in self.cores]
                  for a in self.cores]
        self.doc["comm"] = {"message_bytes": msg, "message_size_source": msg_source,
                            "ranks": head["ranks"], "command": shlex.join(cmd),
                            "mpi": self.mpi_description(),
                            "latency_matrix_us": matrix, "cores": self.cores,
                            "median_us": {f"{a}-{b}": v for (a, b), v in sorted(med.items())}}
        for layer in layers:
            layer["between_hosts"] = False
        self.doc["comm_layers"] = layers
        core_rank = {c: r for r, c in rank_core.items()}
        reps = ";".join(f"{core_rank.get(a, a)}-{core_rank.get(b, b)}"
                        for a, b in (layer["representative"] for layer in layers))
        recs, _ = launch(["bandwidth", "--pairs", reps, "--min", "1", "--max", str(16 * MiB),
                          "--volume", str(self.s["bw_volume"]), "--reps", str(self.s["bw_reps"])],
                         "comm: bandwidth per layer")
        for layer in layers:
            a, b = layer["representative"]
            ra, rb = core_rank.get(a, a), core_rank.get(b, b)
            layer["bandwidth"] = [{"size_bytes": r["size"], "latency_us": r["latency_us"],
                                   "median_us": r["median_us"], "iterations": r["iters"],
                                   "bandwidth_MBps": r["bandwidth_MBps"]}
                                  for r in recs if r.get("pair") == [ra, rb]]
        if xml_path:
            self.export_xml(matrix, xml_path)

    def part_comm_hosts(self) -> None:
        """The comm part across several hosts (mpi.Placement: the test bed or a hostfile):
        one job of ppn ranks on every host; pairs, layers and representatives are ranks of
        that job, and the layers inside a host and between hosts are found apart
        (probe_cluster.host_layers)."""
        pl = self.build.placement
        n = pl.max_ranks
        if n < 2:
            raise ProbeError("one rank in all: no pair to measure")
        tool = str(self.build.tool("ct_probe_comm"))
        msg, msg_source = self.l1_bytes()
        # The test bed's hosts share this machine's cores: ranks pinned one per core when
        # they all fit, else left to the OS. On real hosts each host's ranks take its
        # first ppn cores.
        if pl.same_machine:
            cores = self.cores[:n] if n <= len(self.cores) else None
        else:
            cores = [self.cores[r % pl.ppn] for r in range(n)] if pl.ppn <= len(
                self.cores) else None
        if cores is None:
            self.warn(f"{n} ranks on {len(self.cores)} core(s): ranks not pinned")
        # ct_probe_comm's waiting ranks sleep (quiet_barrier): MPICH's throttled progress,
        # which would add its sleeps to every measured message, is not needed
        env = {k: v for k, v in self.build.launch_env(n).items()
               if not k.startswith("MPIR_CVAR_CH4_PROGRESS_THROTTLE")}

        def launch(args, label):
            extra = ["--cores", _csv(cores)] if cores else []
            cmd = self.build.launch_command(n, [tool, *args, *extra], bind=cores is None)
            return run_tool(cmd, label, env=env, timeout=900), cmd

        recs, cmd = launch(["latency", "--bytes", str(msg), "--iters", str(self.s["lat_iters"]),
                            "--reps", str(self.s["lat_reps"])],
                           f"comm: latency of every pair, {len(pl.hosts)} hosts")
        head = recs[0] if recs and "ranks" in recs[0] else {"ranks": []}
        expected = pl.rank_hosts(n)
        host = {r: (head["ranks"][r].get("host") if r < len(head["ranks"]) else None)
                or expected[r] for r in range(n)}
        core = {r["rank"]: (r["core"] if r.get("bound") else None) for r in head["ranks"]}
        lat = {tuple(r["pair"]): r["latency_us"] for r in recs if "pair" in r}
        med = {tuple(r["pair"]): r["median_us"] for r in recs if "pair" in r}
        if not lat:
            raise ProbeError("the latency job measured nothing")
        if len(set(host.values())) < 2:
            self.warn("every rank reported the same host: no layer between hosts")
        # The test bed's hosts are one machine: pairs of the same kind differ by noise only
        # (ranks sharing cores), so each kind is one layer; real hosts keep the clustering.
        layers = host_layers(lat, host, tolerance=math.inf if pl.same_machine else 0.2)
        if len(layers) == 2 and not layers[1]["latency_us"] > layers[0]["latency_us"]:
            self.warn("the layer between hosts is not slower than the one inside a host")
        matrix = [[0.0 if a == b else lat.get((min(a, b), max(a, b))) for b in range(n)]
                  for a in range(n)]
        self.doc["comm"] = {"message_bytes": msg, "message_size_source": msg_source,
                            "ranks": head["ranks"], "command": shlex.join(cmd),
                            "mpi": self.mpi_description(), "pairs_of": "ranks",
                            "placement": {"hosts": pl.hosts, "ppn": pl.ppn, "source": pl.source,
                                          "rank_hosts": [host[r] for r in range(n)]},
                            "latency_matrix_us": matrix,
                            "median_us": {f"{a}-{b}": v for (a, b), v in sorted(med.items())}}
        self.doc["hosts"] = list(dict.fromkeys(host[r] for r in range(n)))
        for layer in layers:
            a, b = layer["representative"]
            layer["representative_cores"] = [core.get(a), core.get(b)]
        self.doc["comm_layers"] = layers
        reps = ";".join(f"{a}-{b}" for a, b in (la["representative"] for la in layers))
        recs, _ = launch(["bandwidth", "--pairs", reps, "--min", "1", "--max", str(16 * MiB),
                          "--volume", str(self.s["bw_volume"]), "--reps", str(self.s["bw_reps"])],
                         "comm: bandwidth per layer")
        for layer in layers:
            layer["bandwidth"] = [{"size_bytes": r["size"], "latency_us": r["latency_us"],
                                   "median_us": r["median_us"], "iterations": r["iters"],
                                   "bandwidth_MBps": r["bandwidth_MBps"]}
                                  for r in recs if r.get("pair") == layer["representative"]]

    def export_xml(self, matrix: list[list[float | None]], path: str) -> None:
        values = [round((v or 0.0) * 1000.0, 1) for row in matrix for v in row]
        cmd = [str(self.ct_probe), "xml", "--cores", _csv(self.cores), "--latency-ns",
               ",".join(map(str, values)), "--out", path]
        try:
            run_tool(cmd, "comm: hwloc XML")
            self.doc["hwloc_xml"] = {"path": str(Path(path).resolve()),
                                     "distances": "colltune MPI latency (ns)",
                                     "objects": "PU (the first PU of each core)"}
        except ProbeError as e:
            self.doc["hwloc_xml"] = {"path": None, "error": str(e)}
            self.warn(f"no XML topology: {e}")

    def mpi_description(self) -> dict | None:
        return {"build": self.build.name, "flavor": self.build.flavor} if self.build else None

    # -- the whole run

    def run(self, parts: list[str], xml_path: str | None = None) -> dict:
        started = time.monotonic()
        try:
            self.setup()
        except (ProbeError, MPIError) as e:
            for p in parts:
                self.doc["parts"][p] = {"status": "failed", "error": f"set-up: {e}"}
            self.doc["complete"] = True
            self.doc["duration_s"] = round(time.monotonic() - started, 2)
            return self.doc
        estimate = self.estimate_seconds(parts)
        self.doc["estimated_s"] = round(estimate, 1)
        self.log(f"colltune probe: {'quick' if self.quick else 'full'} probe of "
                 f"{len(self.cores)} core(s) {_ranges(self.cores)}, parts "
                 f"{', '.join(parts)}: about {_clock(estimate)}")
        actions = {"caches": self.part_caches, "sharing": self.part_sharing,
                   "memory": self.part_memory, "comm": lambda: self.part_comm(xml_path)}
        for p in PARTS:
            if p not in parts:
                self.doc["parts"][p] = {"status": "skipped", "error": None}
                continue
            t0 = time.monotonic()
            self.doc["parts"][p] = {"status": "running"}
            try:
                actions[p]()
                self.doc["parts"][p] = {"status": "ok", "error": None}
            except (ProbeError, MPIError, OSError, ValueError) as e:
                self.doc["parts"][p] = {"status": "failed", "error": str(e)}
                self.log(f"colltune probe: part '{p}' failed: {e}")
            except KeyboardInterrupt:
                self.doc["parts"][p] = {"status": "interrupted",
                                        "error": "interrupted by the user"}
                self.doc["duration_s"] = round(time.monotonic() - started, 2)
                raise
            self.doc["parts"][p]["seconds"] = round(time.monotonic() - t0, 2)
        self.doc["disagreements"] = compare(self.doc["caches"],
                                            (self.doc.get("cache_curve") or {}).get("grid")
                                            or self.grid())
        self.doc["complete"] = True
        self.doc["duration_s"] = round(time.monotonic() - started, 2)
        return self.doc


def _thp_available() -> bool:
    try:
        text = Path("/sys/kernel/mm/transparent_hugepage/enabled").read_text()
    except OSError:
        return False
    return "[never]" not in text


def _mem_available() -> int | None:
    try:
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemAvailable:"):
                return int(line.split()[1]) * 1024
    except OSError:
        return None
    return None


def _ranges(ids: list[int]) -> str:
    out, i = [], 0
    ids = sorted(ids)
    while i < len(ids):
        j = i
        while j + 1 < len(ids) and ids[j + 1] == ids[j] + 1:
            j += 1
        out.append(str(ids[i]) if i == j else f"{ids[i]}-{ids[j]}")
        i = j + 1
    return ",".join(out)


def _clock(seconds: float) -> str:
    s = int(round(seconds))
    return f"{s} s" if s < 60 else f"{s // 60} min {s % 60:02d} s"


# -- the store --------------------------------------------------------------------------------


def probe_bench(doc: dict, command: str = "") -> dict:
    """The probe as a colltune-bench/1 document for the store: op 'probe', the whole
    machine document under 'probe', and the point-to-point curves as results."""
    results = []
    for layer in doc.get("comm_layers") or []:
        a, b = layer.get("representative") or (None, None)
        for p in layer.get("bandwidth") or []:
            results.append({"algorithm": f"p2p layer {layer['layer']} cores {a}-{b}",
                            "size": p["size_bytes"], "iterations": p.get("iterations"),
                            "min_us": p["latency_us"], "median_us": p["median_us"],
                            "bandwidth_MBps": p["bandwidth_MBps"]})
    return {"schema": "colltune-bench/1", "op": "probe", "ranks": len(doc.get("cores") or []),
            "binding": binding_label(doc), "command": command, "probe": doc,
            "results": results}


def binding_label(doc: dict) -> str:
    b = doc.get("binding") or {}
    if not b.get("can_bind"):
        return f"none ({b.get('binder') or 'no binder'})"
    return "core (hwloc)" + (" with refusals" if b.get("refused") else "")


# -- output --------------------------------------------------------------------------------


def summary(doc: dict) -> str:
    """The readable summary printed at the end of a probe."""
    from ..core.units import fmt_size

    lines = [f"machine probe ({'quick' if doc.get('quick') else 'full'}) of "
             f"{doc.get('host', {}).get('hostname')}: {len(doc.get('cores') or [])} core(s), "
             f"{doc.get('duration_s', 0):.1f} s"]
    for name, part in doc.get("parts", {}).items():
        if part.get("status") not in ("ok", "skipped"):
            lines.append(f"  part {name}: {part.get('status').upper()}: {part.get('error')}")
    if doc.get("caches"):
        lines.append(f"  {'cache':<8}{'size':>10}  {'status':<10}{'measured':>10}  "
                     f"{'method':<15}{'OS':>10}{'hwloc':>10}"
                     f"  {'shared by (measured)':<22}{'shared by (OS)':<20}")
        for c in doc["caches"]:
            agree = c.get("agree") or {}
            flag = "" if agree.get("size", True) and agree.get("sharing", True) else "  <- differs"
            shared = ("uncertain" if c.get("sharing_status") == "uncertain"
                      else _groups(c.get("shared_by")) + " (OS's)"
                      if c.get("sharing_status") == "os" else _groups(c.get("shared_by")))
            lines.append(
                f"  L{c['level']:<7}{fmt_size(c['size_bytes']):>10}  "
                f"{c.get('status') or 'measured':<10}"
                f"{fmt_size(c.get('measured_bytes', c['size_bytes'])):>10}  {c['method']:<15}"
                f"{fmt_size(c.get('os_size_bytes')):>10}{fmt_size(c.get('hwloc_size_bytes')):>10}"
                f"  {shared:<22}{_groups(c.get('os_shared_by')):<20}{flag}")
            if c.get("status") == "uncertain" or c.get("sharing_status") == "uncertain":
                ev = list(c.get("evidence") or []) if c.get("status") == "uncertain" else []
                for s in doc.get("sharing") or []:
                    if s["level"] == c["level"] and s.get("status") == "uncertain":
                        ev += s.get("evidence") or []
                lines += [f"      uncertain: {e}" for e in ev]
        for ph in (doc.get("cache_curve") or {}).get("uncertain_rises") or []:
            lines.append(f"  uncertain rise at {fmt_size(ph['size_bytes'])}: "
                         + "; ".join(ph["evidence"]))
    mem = doc.get("memory")
    if mem:
        lines.append(f"  memory: copy {mem['reference_gbps']:.2f} GB/s on one core "
                     f"(arrays of {fmt_size(mem['array_bytes'])})")
        for g in mem["groups"]:
            scale = ", ".join(f"{s['n']}: {s['total_gbps']:.2f}" for s in g.get("scaling", []))
            lines.append(f"    {len(g['pairs'])} pair(s) at {g['gbps_per_core']:.2f} GB/s per core"
                         f" ({g['ratio']:.2f} x alone)"
                         + (f"; cores at once -> GB/s in all: {scale}" if scale else
                            "; no contention"))
    for layer in doc.get("comm_layers") or []:
        peak = max((p["bandwidth_MBps"] for p in layer.get("bandwidth") or []), default=None)
        where = f"cores {layer['representative']}"
        if layer.get("hosts"):
            where = (f"ranks {layer['representative']} on {' and '.join(layer['hosts'])}"
                     if layer.get("between_hosts") else
                     f"ranks {layer['representative']} on {layer['hosts'][0]}")
        kind = (" between hosts" if layer.get("between_hosts") else
                " inside a host" if layer.get("hosts") else "")
        lines.append(f"  comm layer {layer['layer']}{kind}: {layer['latency_us']:.2f} us "
                     f"({fmt_size(doc['comm']['message_bytes'])} message), "
                     f"{len(layer['pairs'])} pair(s), e.g. {where}"
                     + (f", up to {peak:.0f} MB/s" if peak else ""))
    for w in doc.get("disagreements") or []:
        lines.append(f"  differs from the OS: {w}")
    return "\n".join(lines)


def _groups(groups) -> str:
    if groups is None:
        return "-"
    return " ".join("{" + ",".join(map(str, g)) + "}" for g in groups)


def default_xml_path(output: str) -> str:
    p = Path(output)
    return str(p.with_suffix(".xml") if p.suffix == ".json" else p.with_name(p.name + ".xml"))


def write_machine_json(doc: dict, path: str) -> None:
    write_atomic(path, json.dumps(doc, indent=1) + "\n")


# -- entry points -------------------------------------------------------------------------


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("probe", help="measure caches, sharing, memory contention and "
                                     "communication layers; write machine.json")
    add_output(p, "the machine file (default: machine.json)", default="machine.json")
    p.add_argument("--xml", default=None,
                   help="hwloc XML topology with the latency matrix (default: OUTPUT.xml)")
    writes(p, "xml")
    p.add_argument("--quick", action="store_true", help="a short run: coarser grids, fewer pairs")
    p.add_argument("--parts", default=",".join(PARTS),
                   help=f"comma-separated parts to run (default: {','.join(PARTS)})")
    p.add_argument("--cores", default=None, help="cores to probe, e.g. 0-3,8 (default: all)")
    p.add_argument("--mpi", help="mpich, openmpi, intelmpi or system "
                                 "(default: $COLLTUNE_MPI or mpich)")
    p.add_argument("--no-record", action="store_true", help="do not record the run in the store")
    add_db(p)
    add_host_arguments(p)
    p.set_defaults(func=cmd_probe)


def _select_build(mpi: str | None) -> tuple[MPIBuild | None, str | None]:
    try:
        return MPIBuild.select(mpi), None
    except MPIError as e:
        return None, str(e)


def cmd_probe(args: argparse.Namespace) -> int:
    from .cluster import parse_cpu_list

    parts = [p.strip() for p in args.parts.split(",") if p.strip()]
    unknown = [p for p in parts if p not in PARTS]
    if unknown or not parts:
        print(f"colltune probe: unknown part(s) {', '.join(unknown) or '(none)'}; "
              f"choose from {', '.join(PARTS)}", file=sys.stderr)
        return 2
    try:
        cores = parse_cpu_list(args.cores) if args.cores else None
    except ValueError:
        print(f"colltune probe: --cores: not a core list: {args.cores}", file=sys.stderr)
        return 2
    apply_host_arguments(args)
    build, mpi_error = _select_build(args.mpi)
    if build is None:
        print(f"colltune: {mpi_error}", file=sys.stderr)
        return 2
    store = run = None
    if not args.no_record:
        from ..store.store import Store

        store = Store.open()
        run = store.begin_run("probe", sys.argv[1:], ranks=None, binding=None)
    probe = Probe(build, args.quick, cores)
    xml_path = args.xml or default_xml_path(args.output)
    try:
        doc = probe.run(parts, xml_path)
    except KeyboardInterrupt:
        doc = probe.doc
        write_machine_json(doc, args.output)
        if run:
            run.add_bench(probe_bench(doc, shlex.join(["colltune", *sys.argv[1:]])))
            run.finish("interrupted", "interrupted by the user")
        print(f"colltune probe: interrupted; what was measured is in {args.output}",
              file=sys.stderr)
        return 130
    write_machine_json(doc, args.output)
    failed = [p for p, v in doc["parts"].items() if v["status"] == "failed"]
    if run:
        run.set_meta(ranks=len(doc.get("cores") or []) or None, binding=binding_label(doc))
        run.add_bench(probe_bench(doc, shlex.join(["colltune", *sys.argv[1:]])))
        ran = [p for p in parts if doc["parts"][p]["status"] != "skipped"]
        if failed and len(failed) == len(ran):
            run.finish("failed", "; ".join(f"{p}: {doc['parts'][p]['error']}" for p in failed))
        else:
            run.finish("complete", ("part(s) failed: " + ", ".join(failed)) if failed else None)
    print(summary(doc))
    print(f"machine file: {Path(args.output).resolve()}")
    if (doc.get("hwloc_xml") or {}).get("path"):
        print(f"hwloc XML topology with the latency matrix: {doc['hwloc_xml']['path']}")
    if run:
        print(f"recorded as run {run.id} in {store.path}")
        store.close()
    return 1 if failed else 0


def quick_probe(run=None, *, build: MPIBuild | None = None, output: str | None = "machine.json",
                cores: list[int] | None = None) -> dict | None:
    """The quick probe `colltune run` starts with. Adds the probe to `run` (a RunHandle) when
    given, writes `output` (None: no file) and returns the machine document; returns None
    (after saying why on stderr) if nothing could be measured. Never raises, except
    KeyboardInterrupt."""
    mpi_error = None
    if build is None:
        build, mpi_error = _select_build(None)
    probe = Probe(build, True, cores, mpi_error=mpi_error)
    xml = default_xml_path(output) if output else None
    try:
        doc = probe.run(list(PARTS), xml)
    except KeyboardInterrupt:
        raise
    except Exception as e:  # the main job goes on without a probe
        print(f"colltune: quick probe failed: {e}", file=sys.stderr)
        return None
    try:
        if output:
            write_machine_json(doc, output)
        if run is not None:
            run.add_bench(probe_bench(doc, "colltune probe --quick (first step of colltune run)"))
    except Exception as e:
        print(f"colltune: quick probe: could not save it: {e}", file=sys.stderr)
    print(summary(doc))
    if all(v["status"] != "ok" for v in doc["parts"].values()):
        return None
    return doc

