#!/usr/bin/env python3
"""The tiled Cholesky across the test bed (issue 24): dynamic broadcasts on, off and plain
(the dyn layer with grouping off), and StarPU-MPI's mpi_cholesky with cooperative sends on
and off, on K emulated hosts at one rank a host, per link rate and matrix order, with the
bytes each host sent (docs/CHOLESKY.md, "Across hosts").

    sudo .venv/bin/python bench/cholesky_study.py [--hosts 4 8] [--links 100mbit 1gbit]
        [--max-n 3840 | --sizes N...] [--reps 3] [--warmup 1] [--precision s]
        [--out cholesky_study.json]

One bed (`ctbs`, taken down however the study ends) per (K, link); N runs from 1920,
doubling, up to --max-n; NB = N / 12 (1920 / 160, the ratio of docs/CHOLESKY.md's runs). Each
(K, link, N, variant) is one `colltune cholesky --testbed ctbs --ppn 1 --json` job of --warmup
+ --reps factorisations and the residual, under the drop-in's monitor: seconds are the median
(min, max) over the reps; bytes are per host over the whole job, from the monitor (which
and the dyn layer's own sends, which it counts itself) and from each host's eth0 counter.
StarPU (variants starpu1 / starpu0: STARPU_MPI_COOP_SENDS=1 / 0) is Debian's starpu-examples
mpi_cholesky, launched across the same bed with Debian's Open MPI 4.1 (one job per
factorisation, its own "Computation time"; eth0 bytes only, no monitor); it computes in
single precision, so the study's default --precision is s (equal precision). Without it
installed the reason is printed and kept in the JSON. The JSON goes to --out; the table gives
the on/off, on/plain and on/StarPU gains (time off / time on - 1, ...) per (K, link, N)."""

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
from colltune.core.hosts import bed_placement, read_state  # noqa: E402
from colltune.dyn.cholesky import find_starpu, hosts_grid, run_starpu  # noqa: E402
from colltune.dyn.report import study_bench_document  # noqa: E402

BED = "ctbs"
VARIANTS = ("on", "off", "plain", "starpu1", "starpu0")
RATIO = 12  # N / NB


def sizes(max_n: int) -> list[int]:
    out, n = [], 1920
    while n <= max_n:
        out.append(n)
        n *= 2
    return out or [1920]


def starpu_reason() -> str | None:
    """Why StarPU cannot run here, or None."""
    if find_starpu() is None:
        return ("StarPU's mpi_cholesky or Debian's mpiexec.openmpi is not installed "
                "(apt-get install starpu-examples openmpi-bin)")
    return None


def run_starpu_one(k: int, n: int, coop: int, args) -> dict:
    """StarPU's example across the bed's K hosts, one rank a host, the grid colltune uses."""
    place = bed_placement(BED, 1)
    netns = {h["name"]: h["netns"] for h in (read_state(BED) or {}).get("hosts", [])}
    grid = hosts_grid(k, 1)
    r = run_starpu(find_starpu(), n=n, nb=n // RATIO, ranks=k, grid=grid, workers=1,
                   coop=coop, iters=args.reps, warmup=args.warmup, timeout=args.timeout,
                   place=place, netns=netns)
    return {"variant": f"starpu{coop}", "grid": f"{grid[0]}x{grid[1]}", "nb": n // RATIO,
            "panel_crosses_hosts": True, "hosts": None,
            **{key: r.get(key) for key in ("seconds", "seconds_min", "seconds_max", "gflops",
                                           "residual", "samples_s", "factorisations",
                                           "link_tx_bytes")}}


def run_one(k: int, n: int, mode: str, args, mon_dir: Path) -> dict:
    env = {**os.environ, "COLLTUNE_TESTBED": BED, "COLLTUNE_PPN": "1",
           "PYTHONPATH": str(ROOT / "python") + os.pathsep + os.environ.get("PYTHONPATH", "")}
    cmd = [sys.executable, "-m", "colltune.cli", "cholesky", "--n", str(n), "--nb",
           str(n // RATIO), "--ranks", str(k), "--dynbcast", mode, "--iters", str(args.reps),
           "--precision", args.precision,
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
    if not a or not b or not a["seconds"] or not b["seconds"]:
        return None
    return b["seconds"] / a["seconds"] - 1


def spread(r: dict) -> float:
    return r["seconds_max"] / r["seconds"] if r["seconds"] else 0.0


def measure_variant(k: int, n: int, variant: str, args, mon_dir: Path) -> dict:
    """One job (StarPU: one job per factorisation); when its slowest factorisation is more
    than --outlier times its median (the machine is shared), the job is run again and the
    one with the smaller spread kept, the other recorded under `repeated`."""
    def once() -> dict:
        if variant.startswith("starpu"):
            return run_starpu_one(k, n, int(variant[-1]), args)
        return run_one(k, n, variant, args, mon_dir)

    r = once()
    if spread(r) > args.outlier:
        print(f"[cholesky_study] K={k} N={n} {variant}: max {r['seconds_max']:.3f} s is "
              f"{spread(r):.2f} x the median: repeated", file=sys.stderr)
        again = once()
        keep, other = (again, r) if spread(again) < spread(r) else (r, again)
        keep["repeated"] = {key: other.get(key) for key in ("seconds", "seconds_min",
                                                            "seconds_max", "samples_s")}
        r = keep
    return r


def table(doc: dict) -> str:
    lines = [f"{'K':>2} {'link':>8} {'N':>6} {'NB':>4} {'grid':>5} {'variant':>7} "
             f"{'median s':>9} {'min s':>8} {'max s':>8} {'GFlop/s':>7} {'residual':>9} "
             f"{'max host MB (eth0)':>18} {'on/off':>7} {'on/plain':>8} {'on/SP1':>7} "
             f"{'on/SP0':>7}"]
    for c in doc["cases"]:
        by = {r["variant"]: r for r in c["results"]}
        for r in c["results"]:
            tx = [b for b in (r.get("link_tx_bytes") or {}).values() if b is not None]
            on = r["variant"] == "on"
            gains = [gain(by.get("on"), by.get(v)) for v in ("off", "plain", "starpu1",
                                                               "starpu0")]
            res = "-" if r["residual"] is None else f"{r['residual']:.1e}"
            lines.append(
                f"{c['hosts']:>2} {c['link']:>8} {c['n']:>6} {r['nb']:>4} {r['grid']:>5} "
                f"{r['variant']:>7} {r['seconds']:9.4f} {r['seconds_min']:8.4f} "
                f"{r['seconds_max']:8.4f} {r['gflops']:7.2f} {res:>9} "
                f"{(max(tx) / 1e6 if tx else float('nan')):18.2f} "
                + " ".join(f"{(f'{g:+.1%}' if on and g is not None else ''):>{w}}"
                           for g, w in zip(gains, (7, 8, 7, 7), strict=True)))
    lines.append("bytes per host (whole job; monitor = what the drop-in saw, with the dyn "
                 "layer's own messages; eth0 = what left the host; StarPU: eth0 only):")
    for c in doc["cases"]:
        for r in c["results"]:
            tx = r.get("link_tx_bytes") or {}
            mon = r.get("hosts") or {h: None for h in tx}
            per = ", ".join(
                f"{h} {'-' if v is None else format(v['bytes'] / 1e6, '.2f')}/"
                f"{(tx.get(h) or 0) / 1e6:.2f}" for h, v in mon.items())
            lines.append(f"  K={c['hosts']} {c['link']} N={c['n']} {r['variant']:>7}: "
                         f"MB monitor/eth0 {per}")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--hosts", type=int, nargs="+", default=[4, 8], help="K hosts (4 8)")
    ap.add_argument("--links", nargs="+", default=["100mbit", "1gbit"],
                    help="link rates (100mbit 1gbit)")
    ap.add_argument("--max-n", type=int, default=3840, help="largest N (default 3840)")
    ap.add_argument("--sizes", type=int, nargs="+", default=None,
                    help="the matrix orders (default: 1920 doubling up to --max-n)")
    ap.add_argument("--reps", type=int, default=3, help="measured factorisations per job")
    ap.add_argument("--warmup", type=int, default=1, help="factorisations not counted")
    ap.add_argument("--precision", choices=("d", "s"), default="s",
                    help="s (default: StarPU's example computes in single precision) or d")
    ap.add_argument("--variants", nargs="+", choices=VARIANTS, default=list(VARIANTS))
    ap.add_argument("--starpu-max-n", type=int, default=3840,
                    help="StarPU only up to this N (3840: beyond, one of its factorisations "
                         "takes minutes on the 2-core machine)")
    ap.add_argument("--resume", action="store_true",
                    help="keep the cases already in --out and measure only the others")
    ap.add_argument("--outlier", type=float, default=1.5,
                    help="repeat a job whose max is above this times its median (1.5)")
    ap.add_argument("--mpi", default=os.environ.get("COLLTUNE_MPI", "mpich"))
    ap.add_argument("--timeout", type=float, default=1800, help="seconds per job")
    ap.add_argument("--out", default="cholesky_study.json", help="the JSON (written as it goes)")
    ap.add_argument("--no-record", action="store_true",
                    help="do not record the study in the store (the report's section)")
    ap.add_argument("--record", metavar="JSON",
                    help="measure nothing: record this study JSON in the store, print its table")
    args = ap.parse_args(argv)
    if args.record:
        doc = json.loads(Path(args.record).read_text())
        print(f"cholesky_study: recorded as run {record(doc, sys.argv[1:])}", file=sys.stderr)
        print(table(doc))
        return 0
    why = testbed.unavailable_reason(rate=True)
    if why:
        print(f"cholesky_study: no test bed here: {why}", file=sys.stderr)
        return 2
    out = Path(args.out)
    sp = find_starpu()
    doc = {"schema": "colltune-cholesky-study", "schema_version": 2,
           "created_at": time.strftime("%FT%T%z"), "ratio_n_over_nb": RATIO,
           "reps": args.reps, "warmup": args.warmup, "mpi": args.mpi, "ppn": 1,
           "precision": args.precision, "cores": os.cpu_count(),
           "load_before": os.getloadavg()[0],
           "starpu": ({"program": sp["program"], "version": sp["version"],
                       "mpiexec": sp["mpiexec"], "launch": "across the bed (Debian Open MPI "
                       "4.1, ORTE, plm_rsh_agent = the bed's wrapper)"} if sp
                      else {"absent": starpu_reason()}),
           "starpu_max_n": args.starpu_max_n, "cases": []}
    if args.resume and out.exists():
        old = json.loads(out.read_text())
        doc["cases"] = old.get("cases", [])
        doc["resumed_from"] = old.get("created_at")
    variants = [v for v in args.variants if sp or not v.startswith("starpu")]
    cases = {(c["hosts"], c["link"], c["n"]): c for c in doc["cases"]}

    def wanted(k: int, link: str, n: int) -> list[str]:
        have = {r["variant"] for r in cases.get((k, link, n), {}).get("results", [])}
        return [v for v in variants if v not in have
                and not (v.startswith("starpu") and n > args.starpu_max_n)]

    if not sp:
        print(f"cholesky_study: StarPU not run: {starpu_reason()}", file=sys.stderr)
    elif args.precision != "s" and any(v.startswith("starpu") for v in variants):
        print("cholesky_study: note: StarPU computes in single precision", file=sys.stderr)
    mon_dir = out.resolve().parent / (out.stem + "-monitor")
    for k in args.hosts:
        for link in args.links:
            todo = [n for n in args.sizes or sizes(args.max_n) if wanted(k, link, n)]
            if not todo:
                continue
            testbed.down(BED)  # one left by a killed study
            with testbed.running(k, testbed.parse_rate(link), BED):
                for n in todo:
                    case = cases.get((k, link, n))
                    if case is None:
                        case = cases[(k, link, n)] = {"hosts": k, "link": link, "n": n,
                                                      "results": [], "load": []}
                        doc["cases"].append(case)
                    if not isinstance(case.get("load"), list):
                        case["load"] = [case.get("load")]
                    case["load"].append(os.getloadavg()[0])  # the machine is shared
                    for variant in wanted(k, link, n):
                        print(f"[cholesky_study {time.strftime('%T')}] K={k} {link} N={n} "
                              f"NB={n // RATIO} {variant}", file=sys.stderr)
                        case["results"].append(measure_variant(k, n, variant, args,
                                                               mon_dir / f"k{k}-{link}"))
                        out.write_text(json.dumps(doc, indent=1) + "\n")  # a kill keeps it
    doc["cases"].sort(key=lambda c: (c["hosts"], c["link"], c["n"]))
    doc["complete"] = True
    out.write_text(json.dumps(doc, indent=1) + "\n")
    if not args.no_record:
        print(f"cholesky_study: recorded as run {record(doc, sys.argv[1:])}", file=sys.stderr)
    print(table(doc))
    return 0


def record(doc: dict, argv: list[str]) -> int:
    """The study into the store, as one run (the report's "Cholesky across emulated hosts")."""
    from colltune.store.store import Store

    with Store.open() as store:
        run = store.begin_run("cholesky-study", ["bench/cholesky_study.py", *argv],
                              binding="none (emulated hosts share the machine's cores)")
        run.add_bench(study_bench_document(doc, ["bench/cholesky_study.py", *argv]))
        run.finish("complete" if doc.get("complete") else "incomplete")
        return run.id


if __name__ == "__main__":
    sys.exit(main())
