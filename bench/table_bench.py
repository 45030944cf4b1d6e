#!/usr/bin/env python3
"""Tuned colltune against the best native collective, and tuning strategies against each
other, measured side by side in one run (issue 8, docs/BENCHMARKS.md §7).

    bench/table_bench.py --ranks 16 --table model=grid-mpich.json \
        --table exhaustive=grid-exh.json [--natives mpich,openmpi] [--rounds 3] \
        [--iters 20] -o table-bench.json [--markdown table-bench.md]

Every table's choice (what `colltune tune` put in it, looked up as the drop-in does) and the
native collective of every MPI in --natives are measured at every (operation, size) point of
the tables at --ranks. A table runs over the MPI it was tuned with. Candidates on one MPI are
measured in one `ct_bench --serve` job, round-robin, --rounds times; a choice that several
labels share at a point (two tables picking the same algorithm and segment size, or a table
picking native) is measured once and shared, so identical choices compare as equal rather
than differing by noise. A cell is the median of the rounds' medians, with the smallest and
largest iteration over all rounds. The output is
rewritten after every (operation, MPI), and a second run with the same output skips what is
done, so an interrupted run resumes.

The summary gives, per table: the ratio tuned / best native at every point (below 1:
colltune faster), the share of points within 5% of the best native and at least 1.2x faster,
the same against the native collective of the table's own MPI (colltune runs over that MPI's
point-to-point, so this ratio is what tuning gains there), and, when a table is labelled
exhaustive, for the tables tuned over the same MPI the share of points within 5% of the
exhaustive table's choice and the tuning time against it.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path

from colltune.core.files import write_atomic
from colltune.core.mpi import MPIBuild
from colltune.core.progress import ProgressBar
from colltune.core.units import human_size
from colltune.tune import table as tbl
from colltune.tune.tune import Server


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--ranks", type=int, required=True)
    p.add_argument("--table", action="append", default=[], metavar="LABEL=FILE",
                   help="a tuning table to measure (repeatable)")
    p.add_argument("--natives", default="mpich,openmpi",
                   help="MPIs whose native collectives are measured (default: both)")
    p.add_argument("--ops", default=None, help="only these operations (default: the tables')")
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--iters", type=int, default=20)
    p.add_argument("-o", "--output", required=True)
    p.add_argument("--markdown", default=None, help="also write the summary tables here")
    args = p.parse_args(argv)
    if not args.table:
        p.error("give at least one --table LABEL=FILE")
    if args.rounds < 1 or args.iters < 1:
        p.error("--rounds and --iters must be at least 1")
    return args


def load_tables(specs: list[str]) -> dict[str, dict]:
    tables = {}
    for spec in specs:
        label, sep, path = spec.partition("=")
        if not sep or not label or not path:
            sys.exit(f"table_bench: --table wants LABEL=FILE, not {spec!r}")
        if label.startswith("native"):
            sys.exit(f"table_bench: the label {label!r} is reserved for the natives")
        try:
            tables[label] = tbl.load(path)
        except tbl.TableFileError as e:
            sys.exit(f"table_bench: {e}")
    return tables


def plan(tables: dict[str, dict], natives: list[str], ranks: int,
         ops: list[str] | None) -> dict[tuple[str, str], dict[int, dict[str, tuple]]]:
    """{(op, mpi): {size: {label: (algorithm, segsize)}}} for every point of the tables."""
    points = sorted({(e["op"], e["size_bytes"]) for t in tables.values()
                     for e in t["entries"] if e["ranks"] == ranks})
    if ops:
        points = [p for p in points if p[0] in ops]
    if not points:
        sys.exit(f"table_bench: no table has entries at {ranks} ranks")
    out: dict[tuple[str, str], dict[int, dict[str, tuple]]] = {}
    for op, size in points:
        for mpi in natives:
            out.setdefault((op, mpi), {}).setdefault(size, {})[f"native-{mpi}"] = ("native", 0)
        for label, t in tables.items():
            e = tbl.lookup(t, op, ranks, size)
            if e is not None:
                out.setdefault((op, t["mpi"]["build"]), {}).setdefault(size, {})[label] = (
                    e["algorithm"], e["segsize"])
    return out


def distinct(cands: dict[str, tuple]) -> list[tuple]:
    """The (algorithm, segsize) choices of one point, each once, in first-seen order."""
    return list(dict.fromkeys(cands.values()))


def measure(build: MPIBuild, op: str, ranks: int, sizes: dict[int, dict[str, tuple]],
            rounds: int, iters: int, bar: ProgressBar, done_before: int, total: int) -> dict:
    server = Server(build, op, ranks, max(sizes))
    samples: dict[int, dict[tuple, list[dict]]] = {s: {ch: [] for ch in distinct(c)}
                                                   for s, c in sizes.items()}
    done = done_before
    try:
        for _ in range(rounds):
            for size, cands in sizes.items():
                for alg, seg in distinct(cands):
                    server.evaluate(alg, seg, size, iters)
                    samples[size][(alg, seg)].append(dict(server.last))
                    done += 1
                    bar.update(done, total)
    finally:
        server.close()
    cells = {}
    for size, cands in sizes.items():
        cells[str(size)] = {}
        for label, ch in cands.items():
            rs = samples[size][ch]
            cells[str(size)][label] = {
                "algorithm": ch[0], "segsize": ch[1],
                "median_us": statistics.median(r["median_us"] for r in rs),
                "min_us": min(r.get("min_us", r["median_us"]) for r in rs),
                "max_us": max(r.get("max_us", r["median_us"]) for r in rs)}
    return cells


def choice(cell: dict) -> str:
    seg = cell["segsize"]
    return cell["algorithm"] + (f"/{human_size(seg)}" if seg else "")


def summarise(doc: dict, tables: dict[str, dict]) -> str:
    lines: list[str] = []
    labels = list(tables)
    natives = sorted({lab for g in doc["groups"].values() for c in g["cells"].values()
                      for lab in c if lab.startswith("native-")})
    merged: dict[tuple[str, int], dict[str, dict]] = {}
    for g in doc["groups"].values():
        for size, cells in g["cells"].items():
            merged.setdefault((g["op"], int(size)), {}).update(cells)
    head = ["op", "size", *natives, *labels, *(f"{lab} / best native" for lab in labels)]
    lines += ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    ratios: dict[str, list[float]] = {lab: [] for lab in labels}
    own: dict[str, list[float]] = {lab: [] for lab in labels}  # against its own MPI's native
    exh_mpi = tables["exhaustive"]["mpi"]["build"] if "exhaustive" in tables else None
    vs_exh: dict[str, list[float]] = {lab: [] for lab in labels if lab != "exhaustive" and
                                      tables[lab]["mpi"]["build"] == exh_mpi}
    for (op, size), cells in sorted(merged.items()):
        best_native = min((cells[n]["median_us"] for n in natives if n in cells), default=None)
        row = [op, human_size(size)]
        for lab in [*natives, *labels]:
            c = cells.get(lab)
            row.append("-" if c is None else
                       f"{c['median_us']:.1f} [{c['min_us']:.1f}-{c['max_us']:.1f}]"
                       + ("" if lab.startswith("native") else " " + choice(c)))
        for lab in labels:
            c = cells.get(lab)
            if c is None or not best_native:
                row.append("-")
                continue
            r = c["median_us"] / best_native
            ratios[lab].append(r)
            row.append(f"{r:.2f}")
            mine = cells.get(f"native-{tables[lab]['mpi']['build']}")
            if mine and mine["median_us"] > 0:
                own[lab].append(c["median_us"] / mine["median_us"])
            if lab in vs_exh and "exhaustive" in cells:
                vs_exh[lab].append(c["median_us"] / cells["exhaustive"]["median_us"])
        lines.append("| " + " | ".join(row) + " |")
    lines.append("")
    for lab, rs in ratios.items():
        if not rs:
            continue
        within = sum(r <= 1.05 for r in rs)
        faster = sum(r <= 1 / 1.2 for r in rs)
        t = tables[lab]
        lines.append(f"- {lab} ({t['strategy']}, over {t['mpi']['build']}, tuned in "
                     f"{t.get('elapsed_s', 0):.0f} s with {t.get('measurements', 0)} "
                     f"measurements): within 5% of the best native at {within} of {len(rs)} "
                     f"points, at least 1.2x faster at {faster}; worst {max(rs):.2f}, "
                     f"best {min(rs):.2f}")
        ro = own[lab]
        if ro:
            lines.append(f"  - against native {t['mpi']['build']} alone: within 5% at "
                         f"{sum(r <= 1.05 for r in ro)} of {len(ro)} points, at least 1.2x "
                         f"faster at {sum(r <= 1 / 1.2 for r in ro)}; worst {max(ro):.2f}, "
                         f"best {min(ro):.2f}")
    exh = tables.get("exhaustive")
    for lab, rs in vs_exh.items():
        if rs and exh:
            within = sum(r <= 1.05 for r in rs)
            t_exh, t_lab = exh.get("elapsed_s") or 0, tables[lab].get("elapsed_s") or 0
            speed = (f"{t_exh / t_lab:.1f}x less tuning time ({t_lab:.0f} s against "
                     f"{t_exh:.0f} s)" if t_lab else "tuning time unknown")
            lines.append(f"- {lab} vs exhaustive: within 5% at {within} of {len(rs)} points "
                         f"({100 * within / len(rs):.0f}%), {speed}")
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    tables = load_tables(args.table)
    natives = [m for m in args.natives.split(",") if m]
    groups = plan(tables, natives, args.ranks, args.ops.split(",") if args.ops else None)
    out = Path(args.output)
    doc = {"schema": "colltune-table-bench/1", "ranks": args.ranks, "rounds": args.rounds,
           "iters": args.iters, "tables": {k: args.table[i].partition("=")[2]
                                           for i, k in enumerate(tables)},
           "started": time.strftime("%Y-%m-%dT%H:%M:%S%z"), "groups": {}}
    if out.is_file():
        old = json.loads(out.read_text())
        if old.get("ranks") == args.ranks and old.get("tables") == doc["tables"]:
            doc["groups"] = old.get("groups", {})
            print(f"table_bench: resuming {out}: {len(doc['groups'])} group(s) done",
                  file=sys.stderr)
    total = sum(len(distinct(c)) for g in groups.values() for c in g.values()) * args.rounds
    done = sum(len(distinct(c)) for k, g in groups.items() if f"{k[0]}@{k[1]}" in doc["groups"]
               for c in g.values()) * args.rounds
    bar = ProgressBar(f"table bench at {args.ranks} ranks")
    status = 0
    try:
        for (op, mpi), sizes in groups.items():
            key = f"{op}@{mpi}"
            if key in doc["groups"]:
                continue
            cells = measure(MPIBuild.select(mpi), op, args.ranks, sizes, args.rounds,
                            args.iters, bar, done, total)
            done += sum(len(distinct(c)) for c in sizes.values()) * args.rounds
            doc["groups"][key] = {"op": op, "mpi": mpi, "cells": cells}
            write_atomic(out, json.dumps(doc, indent=1) + "\n")
    except KeyboardInterrupt:
        print("\ntable_bench: interrupted; run the same command again to resume",
              file=sys.stderr)
        status = 130
    finally:
        bar.done()
    doc["finished"] = time.strftime("%Y-%m-%dT%H:%M:%S%z")
    write_atomic(out, json.dumps(doc, indent=1) + "\n")
    text = summarise(doc, tables)
    if args.markdown:
        write_atomic(Path(args.markdown), text)
    print(text)
    return status


if __name__ == "__main__":
    sys.exit(main())
