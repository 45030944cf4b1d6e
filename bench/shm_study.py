#!/usr/bin/env python3
"""Shared-memory collectives on one node against the MPI library's own, and against the
memory bound (issue 20, docs/BENCHMARKS.md section 12).

    bench/shm_study.py OUTDIR [-n RANKS] [--mpi mpich] [--iters 20000] [--large 4M]

One run, ranks pinned one per core (default: all cores): `ct_bench` of `shm` and native for
bcast, allreduce and barrier at 8 B, and of bcast at --large; `copy_bound` (tools/) at
--large, the memory-bound reference: every rank but the root copies the same bytes at once;
and the per-call overhead: bcast of 8 B at one rank, colltune's `shm` against native (a
collective of one rank moves nothing: the difference is what each library spends per call).
Prints the ratios and writes OUTDIR/shm_study.json (each measurement: median, min, max).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from pathlib import Path

from colltune.core.mpi import MPIBuild
from colltune.core.units import parse_size


def launch(build: MPIBuild, nranks: int, program: list[str]) -> list[dict]:
    env = {**os.environ, **build.env, **build.launch_env(nranks)}
    cmd = build.launch_command(nranks, program, bind=True)
    p = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=1200)
    if p.returncode != 0:
        sys.exit(f"shm_study: {' '.join(cmd)} failed:\n{p.stderr[-2000:]}")
    return [json.loads(line) for line in p.stdout.splitlines() if line.startswith("{")]


def bench(build: MPIBuild, nranks: int, op: str, size: int, iters: int,
          outdir: Path) -> dict[str, dict]:
    """{algorithm: result} of shm and native for op at size (ct_bench's JSON lines)."""
    out = outdir / f"ct_bench-{op}-{size}-{nranks}.jsonl"
    launch(build, nranks, [str(build.tool("ct_bench")), "--op", op, "--algs", "shm,native",
                           "--min", str(size), "--max", str(size), "--iters", str(iters),
                           "--json", str(out)])
    results = [json.loads(line) for line in out.read_text().splitlines()[1:] if line]
    return {r["algorithm"]: stats(r["samples_us"]) for r in results}


def stats(samples: list[float]) -> dict:
    """Median, min and max of the per-iteration times (the slowest rank's each)."""
    s = sorted(samples)
    n = len(s)
    median = s[n // 2] if n % 2 else 0.5 * (s[n // 2 - 1] + s[n // 2])
    return {"median_us": median, "min_us": s[0], "max_us": s[-1], "iterations": n}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("outdir", type=Path)
    ap.add_argument("-n", "--ranks", type=int, default=os.cpu_count() or 2)
    ap.add_argument("--mpi", default=os.environ.get("COLLTUNE_MPI", "mpich"))
    ap.add_argument("--iters", type=int, default=20000, help="iterations at 8 B")
    ap.add_argument("--large", default="4M", help="the large bcast (default 4M)")
    args = ap.parse_args()
    build = MPIBuild.select(args.mpi)
    large = parse_size(args.large)
    args.outdir.mkdir(parents=True, exist_ok=True)
    rows, doc = [], {"ranks": args.ranks, "mpi": build.name, "binding": "one rank per core",
                     "cases": {}}
    for op in ("bcast", "allreduce", "barrier"):
        r = bench(build, args.ranks, op, 8, args.iters, args.outdir)
        doc["cases"][f"{op} 8 B"] = r
        rows.append((f"{op} 8 B", r["shm"], r["native"], "native"))
    r = bench(build, args.ranks, "bcast", large, 50, args.outdir)
    bound = launch(build, args.ranks, [str(build.tool("copy_bound")), str(large),
                                       "--iters", "50"])[0]
    r["copy_bound"] = bound
    doc["cases"][f"bcast {args.large}"] = r
    rows.append((f"bcast {args.large}", r["shm"], r["native"], "native"))
    rows.append((f"bcast {args.large}", r["shm"], bound, "memory bound"))
    one = bench(build, 1, "bcast", 8, args.iters, args.outdir)
    doc["cases"]["bcast 8 B, 1 rank"] = one
    doc["per_call_overhead_us"] = {"colltune": one["shm"]["median_us"],
                                   "native": one["native"]["median_us"]}
    print(f"{args.ranks} ranks, {build.name}, pinned; median (min..max) in us")
    print(f"{'case':<14}{'shm':>22}{'reference':>24}  ratio")
    for case, a, b, what in rows:
        ratio = a["median_us"] / b["median_us"] if b["median_us"] > 0 else float("inf")
        print(f"{case:<14}{a['median_us']:>9.2f} ({a['min_us']:.2f}..{a['max_us']:.2f})"
              f"{b['median_us']:>11.2f} ({b['min_us']:.2f}..{b['max_us']:.2f}) {what}: "
              f"{ratio:.2f}")
        doc["cases"][case].setdefault("ratios", {})[what] = round(ratio, 3)
    print(f"per call, 1 rank, bcast 8 B: colltune {one['shm']['median_us']:.2f} us, "
          f"native {one['native']['median_us']:.2f} us")
    (args.outdir / "shm_study.json").write_text(json.dumps(doc, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
