#!/usr/bin/env python3
"""Flat against hierarchical collectives across emulated hosts, measured and predicted
(issue 11, docs/BENCHMARKS.md section 11).

    bench/hier_study.py OUTDIR [--hosts 4] [--ppn 4] [--rate 1gbit] [--mpi mpich]
        [--sizes 8-1M] [--ops bcast,allreduce] [--iters 10]

On a test bed of --hosts emulated hosts (`colltune testbed`, needs root) with links limited
to --rate: the probe's communication layers (`colltune probe --parts comm`), the
point-to-point costs of each layer (`colltune p2p`), then `colltune bench` of the flat
algorithms, `hier` and native at every size, and `colltune predict --hosts` of the same
algorithms from the p2p costs. Writes OUTDIR/study.json and OUTDIR/study.md: per operation
and size the measured and predicted times, the best flat algorithm against hier, and the
crossover (the smallest size from which hier is the faster) measured and predicted. Every
step keeps its output: a second run skips the steps whose files exist. The bed is always
taken down at the end.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

from colltune.core.args import byte_size as _size
from colltune.core.files import write_atomic
from colltune.core.units import human_size
from colltune.tune.search import grid_sizes

FLAT = {"bcast": ["binomial", "scatter_allgather", "pipeline"],
        "allreduce": ["recursive_doubling", "ring", "rabenseifner"],
        "reduce": ["binomial", "rabenseifner"], "allgather": ["bruck", "ring"],
        "barrier": ["dissemination"]}
BED = "ctbh"


def colltune(*args: str, env: dict | None = None, timeout: int = 1800) -> str:
    cmd = [sys.executable, "-m", "colltune.cli", *args]
    print("+ colltune " + " ".join(args), file=sys.stderr, flush=True)
    out = subprocess.run(cmd, stdout=subprocess.PIPE, text=True, timeout=timeout,
                         env={**os.environ, **(env or {})})
    if out.returncode != 0:
        raise SystemExit(f"hier_study: colltune {' '.join(args)} failed ({out.returncode})")
    return out.stdout


def predict(op: str, algs: list[str], sizes: list[int], ranks: int, hosts: int,
            p2p: Path) -> dict[str, dict[int, float]]:
    out: dict[str, dict[int, float]] = {a: {} for a in algs}
    for size in sizes:
        rows = json.loads(colltune("predict", "--op", op, "--alg", "all", "--size", str(size),
                                   "--ranks", str(ranks), "--hosts", str(hosts), "--p2p",
                                   str(p2p), "--json"))
        for r in rows if isinstance(rows, list) else [rows]:
            if r["algorithm"] in out:
                out[r["algorithm"]][size] = r["predicted_us"]
    return out


def crossover(times: dict[str, dict[int, float]], sizes: list[int]) -> int | None:
    """The smallest size from which hier stays faster than every flat algorithm."""
    wins = [times["hier"].get(s, float("inf")) < min(
        times[a].get(s, float("inf")) for a in times if a not in ("hier", "native"))
        for s in sizes]
    for i in range(len(sizes)):
        if all(wins[i:]):
            return sizes[i]
    return None


def switches(times: dict[str, dict[int, float]], flat: str, sizes: list[int]) -> str:
    """Where hier and one flat algorithm change places: 'hier from 8 B, ring from 32 KiB'
    (tie: within 2 %)."""
    at = [s for s in sizes if s in times["hier"] and s in times[flat]]
    if not at:
        return "-"
    parts, prev = [], None
    for s in at:
        h, f = times["hier"][s], times[flat][s]
        who = "tie" if abs(h - f) <= 0.02 * min(h, f) else "hier" if h < f else flat
        if who != prev:
            parts.append(f"{who} from {human_size(s)}")
            prev = who
    return ", ".join(parts)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("outdir")
    p.add_argument("--hosts", type=int, default=4)
    p.add_argument("--ppn", type=int, default=4)
    p.add_argument("--rate", default="1gbit")
    p.add_argument("--mpi", default="mpich")
    p.add_argument("--sizes", default="8-1M")
    p.add_argument("--ops", default="bcast,allreduce")
    p.add_argument("--iters", type=int, default=10)
    args = p.parse_args(argv)
    out = Path(args.outdir)
    out.mkdir(parents=True, exist_ok=True)
    lo, _, hi = args.sizes.partition("-")
    sizes = grid_sizes(_size(lo), _size(hi or lo))[::3]  # every 8x: 8 B, 64 B, 512 B, ...
    ops = args.ops.split(",")
    ranks = args.hosts * args.ppn
    bed_env = {"COLLTUNE_TESTBED": BED, "COLLTUNE_PPN": str(args.ppn)}
    started = time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())
    colltune("testbed", "--name", BED, "down")
    try:
        colltune("testbed", "--name", BED, "up", "--hosts", str(args.hosts), "--link-rate",
                 args.rate)
        machine, p2p = out / "machine.json", out / "p2p.json"
        if not machine.is_file():
            colltune("probe", "--quick", "--parts", "comm", "--mpi", args.mpi, "--testbed", BED,
                     "--ppn", str(args.ppn), "--no-record", "-o", str(machine))
        if not p2p.is_file():
            colltune("p2p", "--quick", "--machine", str(machine), "--mpi", args.mpi,
                     "--testbed", BED, "--max-size", str(sizes[-1]), "--no-record", "-o", str(p2p))
        for op in ops:
            bench = out / f"bench-{op}.json"
            if bench.is_file():
                continue
            colltune("bench", "--op", op, "--mpi", args.mpi, "-n", str(ranks), "--min",
                     str(sizes[0]), "--max", str(sizes[-1]), "--iters", str(args.iters),
                     "--algs", ",".join([*FLAT[op], "hier", "native"]), "--no-record",
                     "--json", str(bench), env=bed_env)
    finally:
        colltune("testbed", "--name", BED, "down")

    study = {"hosts": args.hosts, "ppn": args.ppn, "rate": args.rate, "mpi": args.mpi,
             "started": started, "ops": {}}
    lines = [f"{args.hosts} hosts x {args.ppn} ranks, links {args.rate}, {args.mpi}; cells: "
             "median us [min-max] measured, then predicted.", ""]
    for op in ops:
        doc = json.loads((out / f"bench-{op}.json").read_text())
        algs = [*FLAT[op], "hier"]
        measured: dict[str, dict[int, float]] = {a: {} for a in [*algs, "native"]}
        spread: dict[tuple[str, int], tuple[float, float]] = {}
        for r in doc["results"]:
            if r["algorithm"] in measured and r["size"] in sizes:
                measured[r["algorithm"]][r["size"]] = r["median_us"]
                samples = r.get("samples_us") or [r["median_us"]]  # slowest rank's, per call
                spread[(r["algorithm"], r["size"])] = (min(samples), max(samples))
        predicted = predict(op, algs, sizes, ranks, args.hosts, out / "p2p.json")
        m_cross = crossover({a: measured[a] for a in algs}, sizes)
        p_cross = crossover(predicted, sizes)
        study["ops"][op] = {"measured": measured, "predicted": predicted,
                            "crossover_measured": m_cross, "crossover_predicted": p_cross}
        lines += [f"### {op}", "",
                  "| size | " + " | ".join(algs) + " | native | best flat / hier measured "
                  "| predicted |", "|---" * (len(algs) + 4) + "|"]
        for s in sizes:
            row = [human_size(s)]
            for a in [*algs, "native"]:
                m = measured[a].get(s)
                if m is None:
                    row.append("-")
                    continue
                lo_, hi_ = spread[(a, s)]
                pr = predicted.get(a, {}).get(s)
                row.append(f"{m:.0f} [{lo_:.0f}-{hi_:.0f}]"
                           + (f" / {pr:.0f}" if pr is not None else ""))
            flat_m = min(measured[a].get(s, float("inf")) for a in FLAT[op])
            flat_p = min(predicted[a].get(s, float("inf")) for a in FLAT[op])
            row.append(f"{flat_m / measured['hier'][s]:.2f}" if s in measured["hier"] else "-")
            row.append(f"{flat_p / predicted['hier'][s]:.2f}" if s in predicted["hier"] else "-")
            lines.append("| " + " | ".join(row) + " |")
        lines += ["", f"Crossover (hier faster than every flat algorithm from this size on): "
                  f"measured {human_size(m_cross) if m_cross else 'none'}, predicted "
                  f"{human_size(p_cross) if p_cross else 'none'}.", "",
                  "| hier against | measured: the faster | predicted: the faster |",
                  "|---|---|---|"]
        lines += [f"| {a} | {switches(measured, a, sizes)} | {switches(predicted, a, sizes)} |"
                  for a in FLAT[op]]
        study["ops"][op]["switches"] = {a: {"measured": switches(measured, a, sizes),
                                            "predicted": switches(predicted, a, sizes)}
                                        for a in FLAT[op]}
        lines.append("")
    write_atomic(out / "study.json", json.dumps(study, indent=1) + "\n")
    write_atomic(out / "study.md", "\n".join(lines))
    print("\n".join(lines))
    return 0


if __name__ == "__main__":
    sys.exit(main())
