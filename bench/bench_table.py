#!/usr/bin/env python3
"""Markdown tables for docs/BENCHMARKS.md from a study directory of ct_bench JSON Lines.

    bench/bench_table.py STUDY_DIR [--op bcast ...] [--summary]

Files are named <label>-<op>.jsonl, label one of mpich, mpich-seg32k, mpich-async, openmpi
(see bench/study.sh). Every colltune algorithm column is colltune over MPICH
("32K": with 32 KiB segments); natives are MPICH, MPICH with its async progress thread and
Open MPI. Cells: median [min-max] over iterations of the slowest rank's time, in us.
"best colltune over Open MPI" is the best of the same algorithms run over Open MPI's
point-to-point. ratio = best colltune (over either MPI) / best native of all three: below 1,
colltune is faster.
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
    return "\n".join(table_rows(study, op)[0])


def table_rows(study: Path, op: str) -> tuple[list[str], dict[int, tuple]]:
    """The markdown lines, and per size (best colltune label, its time, best native label,
    its time)."""
    series: dict[str, dict[int, dict]] = {}
    for label in ("mpich", "mpich-seg32k", "mpich-async", "openmpi"):
        f = study / f"{label}-{op}.jsonl"
        if not f.exists():
            continue
        _, rows = load(f)
        for r in rows:
            name = r["algorithm"]
            if name == "native" and label == "mpich-seg32k":
                continue
            if name == "native":
                key = {"mpich": "MPICH native", "mpich-async": "MPICH native+async",
                       "openmpi": "Open MPI native"}[label]
            elif label == "mpich":
                key = name
            elif label == "mpich-seg32k":
                if name in ("scatter_allgather", "scatter_bruck"):
                    continue  # not segmentable: the same as in the mpich run
                key = f"{name} 32K"
            else:
                key = f"{name}@ompi"
            series.setdefault(key, {})[r["size"]] = r
    ct_cols = [k for k in series if "native" not in k and "@ompi" not in k]
    ompi_cols = [k for k in series if "@ompi" in k and "native" not in k]
    natives = [k for k in ("MPICH native", "MPICH native+async", "Open MPI native") if k in series]
    sizes = sorted({s for col in series.values() for s in col})
    head = ["size", *ct_cols, *natives, "best colltune over MPICH",
            "best colltune over Open MPI", "best native", "ratio"]
    out = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    summary: dict[int, tuple] = {}

    def best(cols: list[str], s: int) -> tuple[float, str] | None:
        vals = [(series[k][s]["median_us"], k.removesuffix("@ompi")) for k in cols
                if s in series[k]]
        return min(vals) if vals else None

    for s in sizes:
        row = [human(s)]
        for k in ct_cols + natives:
            r = series[k].get(s)
            row.append(cell(r) if r else "-")
        picks = [best(ct_cols, s), best(ompi_cols, s), best(natives, s)]
        row += [f"{b[1]} {b[0]:.1f}" if b else "-" for b in picks]
        vias = zip(picks[:2], ("MPICH", "Open MPI"), strict=True)
        cts = [(b[0], f"{b[1]} ({via})") for b, via in vias if b]
        row.append(f"**{min(cts)[0] / picks[2][0]:.2f}**" if cts and picks[2] else "-")
        out.append("| " + " | ".join(row) + " |")
        if cts and picks[2]:
            summary[s] = (min(cts)[1], min(cts)[0], picks[2][1], picks[2][0])
    return out, summary


OPS = ("bcast", "reduce", "allreduce", "scatter", "gather", "allgather", "alltoall", "barrier")


def summary_table(study: Path, ops: tuple[str, ...] | list[str] = OPS) -> str:
    """Per size (rows) and operation (columns): best colltune / best native, with the best
    colltune algorithm. Only operations the study measured."""
    per_op = {op: table_rows(study, op)[1] for op in ops
              if any(study.glob(f"*-{op}.jsonl"))}
    sizes = sorted({s for rows in per_op.values() for s in rows})
    lines = ["| size | " + " | ".join(per_op) + " |", "|---|" + "---|" * len(per_op)]
    for size in sizes:
        row = [human(size)]
        for op in per_op:
            v = per_op[op].get(size)
            row.append(f"**{v[1] / v[3]:.2f}** {v[0]}" if v else "-")
        lines.append("| " + " | ".join(row) + " |")
    return "\n".join(lines)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("study", type=Path)
    ap.add_argument("--op", choices=OPS, action="append")
    ap.add_argument("--summary", action="store_true", help="one table of best vs best per size")
    a = ap.parse_args()
    if a.summary:
        print(summary_table(a.study, a.op or OPS))
        return
    for op in a.op or [o for o in OPS if any(a.study.glob(f"*-{o}.jsonl"))]:
        print(f"### {op}\n")
        print(table(a.study, op))
        print()


if __name__ == "__main__":
    main()
