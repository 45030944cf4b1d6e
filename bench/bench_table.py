#!/usr/bin/env python3
"""Markdown tables for docs/BENCHMARKS.md from a study directory of ct_bench JSON Lines.

    bench/bench_table.py STUDY_DIR [--op bcast]

Files are named <label>-<op>.jsonl, label one of mpich, mpich-async, openmpi. Every colltune
algorithm column is colltune over MPICH; natives are MPICH, MPICH with its async progress
thread and Open MPI. Ratio = best colltune (over MPICH) / best native of all three.
"""

from __future__ import annotations

import argparse
import json
import statistics
from pathlib import Path


def load(path: Path) -> tuple[dict, list[dict]]:
    lines = [json.loads(x) for x in path.read_text().splitlines() if x.strip()]
    return lines[0], lines[1:]


def human(n: int) -> str:
    for unit, div in (("MiB", 1 << 20), ("KiB", 1 << 10)):
        if n >= div and n % div == 0:
            return f"{n // div} {unit}"
    return f"{n} B"


def cell(r: dict) -> str:
    """median [min-max] of the per-iteration slowest-rank samples."""
    s = r["samples_us"]
    return f"{statistics.median(s):.1f} [{min(s):.1f}-{max(s):.1f}]"


def table(study: Path, op: str) -> str:
    series: dict[str, dict[int, dict]] = {}
    for label in ("mpich", "mpich-async", "openmpi"):
        f = study / f"{label}-{op}.jsonl"
        if not f.exists():
            continue
        _, rows = load(f)
        for r in rows:
            name = r["algorithm"]
            if name == "native":
                key = {"mpich": "MPICH native", "mpich-async": "MPICH native+async",
                       "openmpi": "Open MPI native"}[label]
            elif label == "mpich":
                key = name
            else:
                key = f"{name}@ompi"
                series.setdefault("best ct@ompi", {})
            series.setdefault(key, {})[r["size"]] = r
    ct_cols = [k for k in series if "native" not in k and "@ompi" not in k]
    natives = [k for k in ("MPICH native", "MPICH native+async", "Open MPI native") if k in series]
    sizes = sorted({s for col in series.values() for s in col})
    head = ["size", *ct_cols, *natives, "best colltune", "best native", "ratio"]
    out = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for s in sizes:
        row = [human(s)]
        for k in ct_cols + natives:
            r = series[k].get(s)
            row.append(cell(r) if r else "-")
        ct = [(series[k][s]["median_us"], k) for k in ct_cols if s in series[k]]
        nat = [(series[k][s]["median_us"], k) for k in natives if s in series[k]]
        if ct and nat:
            bc, bn = min(ct), min(nat)
            row += [f"{bc[1]} {bc[0]:.1f}", f"{bn[1]} {bn[0]:.1f}", f"**{bc[0] / bn[0]:.2f}**"]
        else:
            row += ["-", "-", "-"]
        out.append("| " + " | ".join(row) + " |")
    return "\n".join(out)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("study", type=Path)
    ap.add_argument("--op", choices=("bcast", "allreduce"), action="append")
    a = ap.parse_args()
    for op in a.op or ("bcast", "allreduce"):
        print(f"### {op}\n")
        print(table(a.study, op))
        print()


if __name__ == "__main__":
    main()
