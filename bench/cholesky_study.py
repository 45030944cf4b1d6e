#!/usr/bin/env python3
"""The tiled Cholesky across the test bed (issue 24): dynamic broadcasts on, off and plain
(the dyn layer with grouping off) on K emulated hosts at one rank a host, per link rate and
matrix order, with the bytes each host sent (docs/CHOLESKY.md, "Across hosts").

    sudo .venv/bin/python bench/cholesky_study.py [--hosts 4 8] [--links 100mbit 1gbit]
        [--max-n 3840] [--reps 3] [--warmup 1] [--out cholesky_study.json]

One bed (`ctbs`, taken down however the study ends) per (K, link); N runs from 1920,
doubling, up to --max-n; NB = N / 12 (1920 / 160, the ratio of docs/CHOLESKY.md's runs). Each
(K, link, N, variant) is one `colltune cholesky --testbed ctbs --ppn 1 --json` job of --warmup
+ --reps factorisations and the residual, under the drop-in's monitor: seconds are the median
(min, max) over the reps; bytes are per host over the whole job, from the monitor (which
does not see the dyn layer's own sends: docs/CHOLESKY.md) and from each host's eth0 counter.
The JSON goes to --out; the table gives the on/off and on/plain gains (time off / time on - 1,
time plain / time on - 1) per (K, link, N). StarPU-MPI's mpi_cholesky is not run across hosts
(the reason is printed and kept in the JSON)."""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "python"))

from colltune.core import testbed  # noqa: E402
from colltune.dyn.cholesky import find_starpu  # noqa: E402

BED = "ctbs"
VARIANTS = ("on", "off", "plain")
RATIO = 12  # N / NB


def sizes(max_n: int) -> list[int]:
    out, n = [], 1920
    while n <= max_n:
        out.append(n)
        n *= 2
    return out or [1920]


def starpu_reason() -> str:
    sp = find_starpu()
    where = ("bench/cholesky_compare.sh launches it through `colltune cholesky --starpu`: "
             "Debian's mpiexec.openmpi on this one machine, not through the test bed's "
             "hosts")
    if sp is None:
        return "StarPU's mpi_cholesky is not installed (apt-get install starpu-examples " \
               "openmpi-bin); " + where
    return f"StarPU's mpi_cholesky is at {sp['program']} but " + where


def run_one(k: int, n: int, mode: str, args, mon_dir: Path) -> dict:
    env = {**os.environ, "COLLTUNE_TESTBED": BED, "COLLTUNE_PPN": "1",
           "PYTHONPATH": str(ROOT / "python") + os.pathsep + os.environ.get("PYTHONPATH", "")}
    cmd = [sys.executable, "-m", "colltune.cli", "cholesky", "--n", str(n), "--nb",
           str(n // RATIO), "--ranks", str(k), "--dynbcast", mode, "--iters", str(args.reps),
           "--warmup", str(args.warmup), "--mpi", args.mpi, "--json", "--no-record",
           "--monitor-dir", str(mon_dir), "--timeout", str(args.timeout)]
    p = subprocess.run(cmd, capture_output=True, text=True, env=env)
    if p.returncode not in (0, 1):
        raise RuntimeError(f"{' '.join(cmd)}: exit {p.returncode}: {p.stderr[-1500:]}")
    doc = json.loads(p.stdout)
    (r,) = doc["results"]
    return {"variant": mode, "grid": doc["grid"], "nb": doc["nb"],
            "panel_crosses_hosts": doc["placement"]["panel_crosses_hosts"],
            **{key: r.get(key) for key in ("seconds", "seconds_min", "seconds_max", "gflops",
                                           "residual", "samples_s", "stats", "factorisations",
                                           "hosts", "link_tx_bytes")}}


def gain(a: dict | None, b: dict | None) -> float | None:
    """time b / time a - 1 (positive: a is faster)."""
    if not a or not b or not a["seconds"]:
        return None
    return b["seconds"] / a["seconds"] - 1


def table(doc: dict) -> str:
    lines = [f"{'K':>2} {'link':>8} {'N':>6} {'NB':>4} {'grid':>5} {'variant':>6} "
             f"{'median s':>9} {'min s':>8} {'max s':>8} {'residual':>9} "
             f"{'max host MB (eth0)':>18} {'on/off':>7} {'on/plain':>8}"]
    for c in doc["cases"]:
        by = {r["variant"]: r for r in c["results"]}
        for r in c["results"]:
            tx = [b for b in (r.get("link_tx_bytes") or {}).values() if b is not None]
            on = r["variant"] == "on"
            g1, g2 = gain(by.get("on"), by.get("off")), gain(by.get("on"), by.get("plain"))
            res = "-" if r["residual"] is None else f"{r['residual']:.1e}"
            lines.append(
                f"{c['hosts']:>2} {c['link']:>8} {c['n']:>6} {r['nb']:>4} {r['grid']:>5} "
                f"{r['variant']:>6} {r['seconds']:9.4f} {r['seconds_min']:8.4f} "
                f"{r['seconds_max']:8.4f} {res:>9} "
                f"{(max(tx) / 1e6 if tx else float('nan')):18.2f} "
                f"{(f'{g1:+.1%}' if on and g1 is not None else ''):>7} "
                f"{(f'{g2:+.1%}' if on and g2 is not None else ''):>8}")
    lines.append("bytes per host (whole job; monitor = the MPI_Isend the drop-in saw, "
                 "eth0 = what left the host):")
    for c in doc["cases"]:
        for r in c["results"]:
            per = ", ".join(
                f"{h} {v['bytes'] / 1e6:.2f}/{(r['link_tx_bytes'] or {}).get(h, 0) / 1e6:.2f}"
                for h, v in (r.get("hosts") or {}).items())
            lines.append(f"  K={c['hosts']} {c['link']} N={c['n']} {r['variant']:>5}: "
                         f"MB monitor/eth0 {per}")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--hosts", type=int, nargs="+", default=[4, 8], help="K hosts (4 8)")
    ap.add_argument("--links", nargs="+", default=["100mbit", "1gbit"],
                    help="link rates (100mbit 1gbit)")
    ap.add_argument("--max-n", type=int, default=3840, help="largest N (default 3840)")
    ap.add_argument("--reps", type=int, default=3, help="measured factorisations per job")
    ap.add_argument("--warmup", type=int, default=1, help="factorisations not counted")
    ap.add_argument("--variants", nargs="+", choices=VARIANTS, default=list(VARIANTS))
    ap.add_argument("--mpi", default=os.environ.get("COLLTUNE_MPI", "mpich"))
    ap.add_argument("--timeout", type=float, default=1800, help="seconds per job")
    ap.add_argument("--out", default="cholesky_study.json", help="the JSON (written as it goes)")
    args = ap.parse_args(argv)
    why = testbed.unavailable_reason(rate=True)
    if why:
        print(f"cholesky_study: no test bed here: {why}", file=sys.stderr)
        return 2
    out = Path(args.out)
    doc = {"schema": "colltune-cholesky-study", "schema_version": 1,
           "created_at": time.strftime("%FT%T%z"), "ratio_n_over_nb": RATIO,
           "reps": args.reps, "warmup": args.warmup, "mpi": args.mpi, "ppn": 1,
           "cores": os.cpu_count(), "starpu": starpu_reason(), "cases": []}
    print(f"cholesky_study: StarPU not run: {doc['starpu']}", file=sys.stderr)
    mon_dir = out.resolve().parent / (out.stem + "-monitor")
    for k in args.hosts:
        for link in args.links:
            testbed.down(BED)  # one left by a killed study
            with testbed.running(k, testbed.parse_rate(link), BED):
                for n in sizes(args.max_n):
                    case = {"hosts": k, "link": link, "n": n, "results": []}
                    for mode in args.variants:
                        print(f"[cholesky_study {time.strftime('%T')}] K={k} {link} N={n} "
                              f"NB={n // RATIO} dynbcast={mode}", file=sys.stderr)
                        case["results"].append(run_one(k, n, mode, args,
                                                       mon_dir / f"k{k}-{link}"))
                    doc["cases"].append(case)
                    out.write_text(json.dumps(doc, indent=1) + "\n")
    doc["complete"] = True
    out.write_text(json.dumps(doc, indent=1) + "\n")
    print(table(doc))
    return 0


if __name__ == "__main__":
    sys.exit(main())
