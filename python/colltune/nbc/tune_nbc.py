"""`colltune tune-nbc TABLE`: the non-blocking collectives in the tuning table (issue 21).

A non-blocking collective is worth what it costs next to the computation it hides behind, so
the metric is the overlap study's total (tools/ct_overlap.c): start the collective, compute
for C without MPI calls, wait; C is the blocking native collective's time at the point (the
computation a program would overlap it with). At every point (operation, ranks, size) every
colltune algorithm of the blocking operation (hierarchical and shared-memory ones aside:
the split tree needs one process a tree node) is measured at its default segment size and
unsegmented, and the MPI library's own non-blocking collective beside them:

- without a progress thread (`progress: none`): everything runs inside the waits, so the
  split does not matter (S = 0);
- with the thread, where this machine leaves a core free beside the ranks (the drop-in
  starts one only there): S = 0, 1, 2 and the model's S ("model").

The entry (op "ibcast" ...) keeps the best total; when that was measured with the thread it
also keeps the best without one (`no_thread`), which the drop-in runs where no core is free.
A colltune choice must beat the native non-blocking collective by --margin (5 %), else the
entry says native. Entries already in the table for the same point are replaced; the rest of
the table is kept. docs/TABLE.md, "Non-blocking entries", says what the drop-in does with it.
"""

from __future__ import annotations

import argparse
import os
import sys
import time

from ..core.args import add_output, add_ranks, add_table, check_writable, parse_size_list
from ..core.mpi import MPIBuild, MPIError
from ..core.progress import ProgressBar
from ..tune import table as tbl
from .overlap import OverlapError, run_tool

# The blocking operation behind each non-blocking one ct_overlap measures.
BASE = {"ibcast": "bcast", "ireduce": "reduce", "iallreduce": "allreduce",
        "iscatter": "scatter", "igather": "gather"}
SPLITS_WITH_THREAD = ("S0", "S1", "S2", "Sauto")
DEFAULT_MARGIN = 0.05


def candidates(registry: list[dict], op: str, size: int) -> list[tuple[str, int]]:
    """(algorithm, segment size) pairs of the blocking operation worth measuring at size."""
    out = []
    for a in registry:
        if a["coll"] != BASE[op] or a["native"] or a["hierarchical"] or a["shared_memory"]:
            continue
        out.append((a["name"], 0))
        seg = a.get("default_segsize") or 0
        if a["segmentable"] and 0 < seg < size:
            out.append((a["name"], seg))
    return out


def threads_fit(ranks: int, cores: int | None = None) -> bool:
    """Whether ranks bound one a core leave a core for progress threads (the drop-in's rule)."""
    return ranks < (cores if cores is not None else (os.cpu_count() or 1))


def split_of(variant: str) -> int | str:
    return "model" if variant == "Sauto" else int(variant[1:])


def choose_entry(op: str, ranks: int, size: int, rows: list[dict],
                 margin: float = DEFAULT_MARGIN) -> dict:
    """The table entry from one point's measurements: rows of ct_overlap output, each with
    variant, algorithm, segsize, total_us and progress ("thread" or "none"). The native row
    is the reference; a colltune row wins only when its total is at least margin below it."""
    native = [r for r in rows if r["variant"] == "native"]
    if not native:
        raise ValueError(f"{op} {ranks} ranks {size} B: no measurement of native")
    native_us = min(r["total_us"] for r in native)
    ours = [r for r in rows if r["variant"].startswith("S")]

    def best(progress: str) -> dict | None:
        pool = [r for r in ours if r["progress"] == progress]
        return min(pool, key=lambda r: r["total_us"]) if pool else None

    def wins(r: dict | None) -> bool:
        return r is not None and r["total_us"] <= (1 - margin) * native_us

    def choice(r: dict | None) -> dict:
        if not wins(r):
            return {"algorithm": "native", "segsize": 0, "split": "model"}
        return {"algorithm": r["algorithm"], "segsize": int(r["segsize"]),
                "split": split_of(r["variant"])}

    with_thread, without = best("thread"), best("none")
    use_thread = wins(with_thread) and (without is None
                                        or with_thread["total_us"] < without["total_us"])
    pick = with_thread if use_thread else without
    entry = {"op": op, "ranks": ranks, "size_bytes": size, **choice(pick),
             "progress": "thread" if use_thread else "none",
             "time_us": round(pick["total_us"] if wins(pick) else native_us, 3),
             "native_us": round(native_us, 3),
             "compute_us": round(rows[0].get("compute_us", 0.0), 3),
             "evaluations": len(rows)}
    if use_thread:
        entry["no_thread"] = choice(without)
    return entry


def measure_point(build: MPIBuild, registry: list[dict], op: str, ranks: int, size: int,
                  iters: int, compute_us: float | None) -> list[dict]:
    """Every candidate at one point, in as few jobs as the progress modes need."""
    base = BASE[op]
    nbytes = max(8, size)
    common = ["--op", base, "--bytes", str(nbytes), "--iters", str(iters)]
    if compute_us is None:  # the computation lasts as long as the blocking collective
        ref = run_tool(build, ranks, [*common, "--variants", "blocking", "--progress", "none"])
        compute_us = ref[0]["pure_us"]
    common += ["--compute-us", f"{compute_us:.3f}"]
    rows = []
    modes = ["none", "thread"] if threads_fit(ranks) else ["none"]
    for k, (alg, seg) in enumerate(candidates(registry, op, nbytes)):
        for mode in modes:
            variants = ["S0"] if mode == "none" else list(SPLITS_WITH_THREAD)
            if k == 0 and mode == "none":
                variants.insert(0, "native")
            out = run_tool(build, ranks, [*common, "--alg", alg, "--segsize", str(seg),
                                          "--progress", mode, "--variants", ",".join(variants)])
            rows += [{**r, "progress": mode} for r in out]
    return rows


def merge(doc: dict, entries: list[dict]) -> dict:
    """The table with entries in place of any for the same (op, ranks, size)."""
    keys = {(e["op"], e["ranks"], e["size_bytes"]) for e in entries}
    kept = [e for e in doc["entries"] if (e["op"], e["ranks"], e["size_bytes"]) not in keys]
    return {**doc, "entries": kept + entries}


def default_points(doc: dict, ops: list[str]) -> list[tuple[str, int, int]]:
    """The blocking operations' grid points of the table, for their non-blocking forms."""
    return sorted({(op, e["ranks"], e["size_bytes"]) for op in ops for e in doc["entries"]
                   if e["op"] == BASE[op] and e["ranks"] > 1})


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("tune-nbc", help="tune the non-blocking collectives into a table: "
                                        "algorithm, split level and progress thread, by the "
                                        "time next to computation")
    add_table(p, "the tuning table to add the entries to (written in place unless -o is "
                 "given; needed)", positional=True)
    p.add_argument("--ops", default=",".join(BASE),
                   help=f"comma-separated non-blocking operations (default {','.join(BASE)})")
    add_ranks(p, "tune at this communicator size (default: the table's)", type=int,
              default=None)
    p.add_argument("--sizes", default=None,
                   help="sizes: a comma list, e.g. 8,64K,1M, or a range MIN-MAX (powers of two "
                        "between; K, M and G are binary: 4M = 4 MiB) (default: the table's)")
    p.add_argument("--compute-us", type=float, default=None,
                   help="the computation beside the collective (default: the blocking native "
                        "collective's time at each point)")
    p.add_argument("--iters", type=int, default=10, help="iterations a variant (default 10)")
    p.add_argument("--margin", type=float, default=DEFAULT_MARGIN,
                   help="how much faster than native a choice must be (default 0.05)")
    p.add_argument("--mpi", help="mpich, openmpi, intelmpi or system (default: the table's)")
    add_output(p, "write the table here instead")
    p.set_defaults(func=cmd_tune_nbc)


def cmd_tune_nbc(args: argparse.Namespace) -> int:
    check_writable(args.output or args.table)  # in place without -o: before any measurement
    try:
        doc = tbl.load(args.table)
        ops = [o for o in args.ops.split(",") if o]
        bad = [o for o in ops if o not in BASE]
        if bad:
            raise ValueError(f"--ops: {', '.join(bad)} not among {', '.join(BASE)}")
        if args.iters < 1 or not 0 <= args.margin < 1:
            raise ValueError("--iters must be >= 1 and --margin in [0, 1)")
        build = MPIBuild.select(args.mpi or doc["mpi"].get("build"))
        registry = build.registry()
        if args.sizes or args.ranks:
            ranks = args.ranks or max(e["ranks"] for e in doc["entries"])
            sizes = parse_size_list(args.sizes) if args.sizes else sorted(
                {e["size_bytes"] for e in doc["entries"] if e["ranks"] == ranks})
            points = [(op, ranks, s) for op in ops for s in sizes]
        else:
            points = default_points(doc, ops)
        if not points or min(p[1] for p in points) < 2:
            raise ValueError("nothing to tune: give --ranks (2 or more) and --sizes, or a "
                             "table with blocking entries at 2 or more ranks")
    except (MPIError, ValueError, OSError, KeyError, tbl.TableFileError) as e:
        print(f"colltune tune-nbc: {e}", file=sys.stderr)
        return 2
    out = args.output or args.table
    bar = ProgressBar("tune-nbc")
    t0, entries = time.monotonic(), []
    try:
        for op, ranks, size in points:
            rows = measure_point(build, registry, op, ranks, size, args.iters, args.compute_us)
            entries.append(choose_entry(op, ranks, size, rows, args.margin))
            doc = merge(doc, entries[-1:])
            tbl.write_table(doc, out)  # after every point: an interrupted run keeps them
            bar.update(len(entries), len(points))
    except (OverlapError, MPIError, OSError) as e:
        print(f"colltune tune-nbc: {e}", file=sys.stderr)
        return 1
    finally:
        bar.done()
    print(f"{len(entries)} non-blocking entries in {out} "
          f"({time.monotonic() - t0:.0f} s of measurement)")
    for e in entries:
        alt = e.get("no_thread")
        print(f"  {e['op']:10} {e['ranks']:3} ranks {e['size_bytes']:>9} B: {e['algorithm']}"
              f"{' seg ' + str(e['segsize']) if e['segsize'] else ''} S={e['split']} "
              f"progress {e['progress']}: {e['time_us']:.1f} us vs native {e['native_us']:.1f}"
              + (f"; without a thread {alt['algorithm']}" if alt else ""))
    return 0
