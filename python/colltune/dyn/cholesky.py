"""`colltune cholesky`: the tiled Cholesky over colltune's task runtime (issue 10), with
dynamic broadcasts on or off, and StarPU-MPI's own example beside it (docs/CHOLESKY.md).

ct_cholesky (tools/cholesky) runs under the chosen MPI's mpiexec and prints one JSON line per
factorisation; this module launches it, keeps the median with min and max over the
iterations, the residual ||A - L L^T||_F / ||A||_F of the last one, and records the run. With
--starpu, Debian's `mpi_cholesky` (starpu-examples, single precision, built on Debian's Open
MPI) runs at the same size, tile size, grid and ranks with STARPU_MPI_COOP_SENDS=1 and 0.
"""

from __future__ import annotations

import argparse
import glob
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path

from ..core.mpi import MPIBuild, MPIError, describe_library, run_json_lines, stop_process_group

SCHEMA = "colltune-cholesky"
STARPU_GLOB = "/usr/lib/*/starpu/mpi/mpi_cholesky"


class CholeskyError(RuntimeError):
    pass


class CholeskyUsage(CholeskyError):
    """Bad input (exit status 2)."""


def default_grid(ranks: int) -> tuple[int, int]:
    """The most square P x Q = ranks with P <= Q (as ct_cholesky picks it)."""
    p = max(d for d in range(1, int(ranks ** 0.5) + 1) if ranks % d == 0)
    return p, ranks // p


def parse_grid(text: str | None, ranks: int) -> tuple[int, int]:
    if not text:
        return default_grid(ranks)
    m = re.fullmatch(r"(\d+)[xX](\d+)", text.strip())
    if not m or int(m[1]) < 1 or int(m[2]) < 1:
        raise CholeskyUsage(f"bad --grid {text!r}: expected PxQ, e.g. 2x3")
    p, q = int(m[1]), int(m[2])
    if p * q != ranks:
        raise CholeskyUsage(f"grid {p}x{q} has {p * q} ranks but --ranks is {ranks}")
    return p, q


def check_sizes(n: int, nb: int, ranks: int) -> None:
    if n < 1 or nb < 1:
        raise CholeskyUsage(f"--n and --nb must be positive (got {n} and {nb})")
    if nb > n:
        raise CholeskyUsage(f"--nb {nb} is larger than --n {n}")
    if ranks < 1:
        raise CholeskyUsage("--ranks must be at least 1")


def _launch(build: MPIBuild, ranks: int, workers: int, args: list[str],
            timeout: float | None, label: str) -> list[dict]:
    # One BLAS thread per task (ct_cholesky also tells OpenBLAS); ranks pinned one per core
    # only when each rank runs a single worker and they fit.
    env = {**build.launch_env(ranks), "OPENBLAS_NUM_THREADS": "1"}
    bind = workers == 1
    cmd = build.launch_command(ranks, [str(build.tool("ct_cholesky")), *args], bind=bind,
                               export=("OPENBLAS_NUM_THREADS",))
    return run_json_lines(cmd, label, env=env, timeout=timeout, progress=False,
                          error=CholeskyError)


def run_cases(build: MPIBuild, ranks: int, cases: list[str], workers: int = 1,
              timeout: float | None = 600) -> list[dict]:
    """Many small factorisations in one job: cases are N:NB:PxQ:d|s:mpi|dyn|dyn-plain."""
    return _launch(build, ranks, workers, ["--cases", ",".join(cases), "--workers",
                                           str(workers)], timeout, "cholesky cases")


def summarize(records: list[dict], warmup: int) -> dict:
    """Median (min, max) over the measured iterations; the residual of the last one."""
    kept = records[warmup:] or records
    secs = [r["seconds"] for r in kept]
    first = kept[-1]
    med = statistics.median(secs)
    n = first["n"]
    return {"seconds": med, "seconds_min": min(secs), "seconds_max": max(secs),
            "gflops": n ** 3 / 3 / med * 1e-9, "residual": records[-1].get("residual"),
            "samples_s": secs, "iterations": len(secs),
            "stats": {k: first.get(k) for k in ("tasks", "sends", "recvs", "bytes_sent", "dyn")
                      if k in first}}


def run_colltune(build: MPIBuild, *, n: int, nb: int, ranks: int, grid: tuple[int, int],
                 dynbcast: str, precision: str, workers: int, iters: int, warmup: int,
                 check: bool, timeout: float | None) -> dict:
    comm = {"on": "dyn", "off": "mpi", "plain": "dyn-plain"}[dynbcast]
    args = ["--n", str(n), "--nb", str(nb), "--grid", f"{grid[0]}x{grid[1]}", "--comm", comm,
            "--precision", precision, "--workers", str(workers), "--iters",
            str(iters + warmup)]
    if not check:
        args.append("--no-check")
    records = _launch(build, ranks, workers, args, timeout, f"cholesky dynbcast={dynbcast}")
    if len(records) != iters + warmup:
        raise CholeskyError(f"ct_cholesky printed {len(records)} results, expected "
                            f"{iters + warmup}")
    out = {"variant": f"colltune dynbcast={dynbcast}", "runtime": "colltune",
           "dynbcast": dynbcast, "comm": comm, **summarize(records, warmup)}
    out["library"] = records[0].get("library", "")
    return out


# -- StarPU-MPI's example ----------------------------------------------------------------------


def find_starpu() -> dict | None:
    """Debian's mpi_cholesky and the Open MPI launcher it was built for, or None."""
    prog = os.environ.get("COLLTUNE_STARPU_CHOLESKY") or next(iter(glob.glob(STARPU_GLOB)), None)
    mpiexec = os.environ.get("COLLTUNE_STARPU_MPIEXEC") or shutil.which("mpiexec.openmpi")
    if not prog or not Path(prog).is_file() or not mpiexec:
        return None
    version = ""
    try:
        out = subprocess.run(["dpkg-query", "-W", "-f=${Version}", "starpu-examples"],
                             capture_output=True, text=True, timeout=10)
        version = out.stdout.strip()
    except (OSError, subprocess.TimeoutExpired):
        pass
    return {"program": prog, "mpiexec": mpiexec, "version": version}


def run_starpu(sp: dict, *, n: int, nb: int, ranks: int, grid: tuple[int, int], workers: int,
               coop: int, iters: int, warmup: int, timeout: float | None) -> dict:
    """StarPU's example, one job per iteration (it factorises once). Its blocks are
    size/nblocks, so nb must divide n; its grid is -dblockx P -dblocky Q."""
    if n % nb:
        raise CholeskyUsage(f"StarPU's mpi_cholesky needs --nb to divide --n ({n} % {nb} != 0)")
    env = {"STARPU_NCPU": str(workers), "STARPU_NCUDA": "0", "STARPU_NOPENCL": "0",
           "STARPU_SILENT": "1", "STARPU_MPI_COOP_SENDS": str(coop),
           # Several ranks on one machine: StarPU would bind every rank's workers to the same
           # first cores.
           "STARPU_WORKERS_NOBIND": "1",
           "OMPI_ALLOW_RUN_AS_ROOT": "1", "OMPI_ALLOW_RUN_AS_ROOT_CONFIRM": "1",
           "OMPI_MCA_mpi_yield_when_idle": "1"}
    cmd = [sp["mpiexec"], "-n", str(ranks)]
    for k in env:
        cmd += ["-x", k]
    if ranks > (os.cpu_count() or 1):
        cmd.append("--oversubscribe")
    cmd += ["--bind-to", "none", sp["program"], "-size", str(n), "-nblocks", str(n // nb),
            "-dblockx", str(grid[0]), "-dblocky", str(grid[1])]
    secs, reported = [], []
    for _ in range(iters + warmup):
        proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                                env={**os.environ, **env}, start_new_session=True)
        try:
            out, err = proc.communicate(timeout=timeout)
        except (subprocess.TimeoutExpired, KeyboardInterrupt):
            stop_process_group(proc, 5)
            raise
        m = re.search(r"Computation time \(in ms\):\s*([\d.]+)", out)
        g = re.search(r"Synthetic GFlops\s*:\s*([\d.]+)", out)
        if proc.returncode != 0 or not m:
            raise CholeskyError(f"StarPU's mpi_cholesky failed (exit {proc.returncode}): "
                                + (err or out).strip()[-600:])
        secs.append(float(m[1]) / 1e3)
        reported.append(float(g[1]) if g else None)
    kept = secs[warmup:] or secs
    med = statistics.median(kept)
    return {"variant": f"starpu coop_sends={coop}", "runtime": "starpu", "coop_sends": coop,
            "seconds": med, "seconds_min": min(kept), "seconds_max": max(kept),
            "gflops": n ** 3 / 3 / med * 1e-9, "gflops_reported": reported[-1],
            "residual": None, "samples_s": kept, "iterations": len(kept),
            "library": f"StarPU {sp['version']} (Debian starpu-examples), Debian Open MPI"}


# -- the verb ----------------------------------------------------------------------------------


def measure(args: argparse.Namespace, build: MPIBuild, log=print) -> dict:
    check_sizes(args.n, args.nb, args.ranks)
    grid = parse_grid(args.grid, args.ranks)
    if args.workers < 1 or args.iters < 1 or args.warmup < 0:
        raise CholeskyUsage("--workers and --iters must be at least 1, --warmup at least 0")
    modes = ["on", "off"] if args.dynbcast == "both" else [args.dynbcast]
    doc = {"schema": SCHEMA, "schema_version": 1, "created_at": time.strftime("%FT%T%z"),
           "n": args.n, "nb": args.nb, "ranks": args.ranks, "grid": f"{grid[0]}x{grid[1]}",
           "precision": args.precision, "workers": args.workers, "mpi": build.name,
           "binding": build.binding_label(args.ranks, bind=args.workers == 1),
           "cores": os.cpu_count(), "results": [], "complete": False}
    for mode in modes:
        log(f"colltune cholesky: n={args.n} nb={args.nb} grid={doc['grid']} "
            f"dynbcast={mode}", file=sys.stderr)
        doc["results"].append(run_colltune(
            build, n=args.n, nb=args.nb, ranks=args.ranks, grid=grid, dynbcast=mode,
            precision=args.precision, workers=args.workers, iters=args.iters,
            warmup=args.warmup, check=not args.no_check, timeout=args.timeout))
    if args.starpu:
        sp = find_starpu()
        if sp is None:
            doc["starpu"] = "not installed (apt-get install starpu-examples openmpi-bin)"
            log(f"colltune cholesky: StarPU skipped: {doc['starpu']}", file=sys.stderr)
        else:
            doc["starpu"] = sp
            if args.precision != "s":
                log("colltune cholesky: note: StarPU's example computes in single precision",
                    file=sys.stderr)
            for coop in (1, 0):
                log(f"StarPU mpi_cholesky: STARPU_MPI_COOP_SENDS={coop}", file=sys.stderr)
                doc["results"].append(run_starpu(
                    sp, n=args.n, nb=args.nb, ranks=args.ranks, grid=grid,
                    workers=args.workers, coop=coop, iters=args.iters, warmup=args.warmup,
                    timeout=args.timeout))
    first = doc["results"][0]
    doc.update(seconds=first["seconds"], gflops=first["gflops"], residual=first["residual"],
               library=describe_library(first.get("library", "")))
    doc["complete"] = True
    return doc


def bench_document(doc: dict, argv: list[str]) -> dict:
    """The run as a colltune-bench/1 document for the store (op 'cholesky')."""
    return {"schema": "colltune-bench/1", "op": "cholesky", "ranks": doc["ranks"],
            "binding": doc["binding"], "datatype": {"d": "double", "s": "float"}[doc["precision"]],
            "command": " ".join(["colltune", *argv]), "cholesky": doc,
            "mpi": doc.get("library"),
            "results": [{"algorithm": r["variant"], "size": doc["n"],
                         "median_us": r["seconds"] * 1e6, "min_us": r["seconds_min"] * 1e6,
                         "max_us": r["seconds_max"] * 1e6, "iterations": r["iterations"],
                         "gflops": r["gflops"], "residual": r["residual"]}
                        for r in doc["results"]]}


def text_table(doc: dict) -> str:
    lines = [f"Cholesky n={doc['n']} nb={doc['nb']} grid {doc['grid']} ({doc['ranks']} ranks, "
             f"{doc['workers']} worker(s) each, precision {doc['precision']}, {doc['mpi']})",
             f"{'variant':28} {'median s':>10} {'min s':>10} {'max s':>10} {'GFlop/s':>9} "
             f"{'residual':>10}"]
    for r in doc["results"]:
        res = "-" if r["residual"] is None else f"{r['residual']:.2e}"
        lines.append(f"{r['variant']:28} {r['seconds']:10.4f} {r['seconds_min']:10.4f} "
                     f"{r['seconds_max']:10.4f} {r['gflops']:9.3f} {res:>10}")
    return "\n".join(lines)


def cmd_cholesky(args: argparse.Namespace) -> int:
    try:
        build = MPIBuild.select(args.mpi)
        doc = measure(args, build, log=print)
    except (MPIError, CholeskyError) as e:
        print(f"colltune cholesky: {e}", file=sys.stderr)
        return 2 if isinstance(e, (MPIError, CholeskyUsage)) else 1
    threshold = 1e-12 if args.precision == "d" else 1e-4
    bad = [r for r in doc["results"] if r["residual"] is not None and
           not r["residual"] < threshold]
    if not args.no_record:
        from ..store.store import Store

        with Store.open() as store:
            run = store.begin_run("cholesky", sys.argv[1:], ranks=args.ranks,
                                  binding=doc["binding"])
            run.add_bench(bench_document(doc, sys.argv[1:]))
            run.finish("failed" if bad else "complete",
                       "residual above threshold" if bad else None)
            doc["run_id"] = run.id
    print(json.dumps(doc, indent=1) if args.json else text_table(doc))
    for r in bad:
        print(f"colltune cholesky: {r['variant']}: residual {r['residual']:.3e} is not below "
              f"{threshold:g}", file=sys.stderr)
    return 1 if bad else 0


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("cholesky", help="tiled Cholesky over colltune's task runtime, dynamic "
                                        "broadcasts on/off (and StarPU-MPI's example)")
    p.add_argument("--n", type=int, required=True, help="matrix order")
    p.add_argument("--nb", type=int, required=True,
                   help="tile size (need not divide N; StarPU's example needs it to)")
    p.add_argument("--ranks", type=int, default=os.cpu_count() or 1,
                   help="MPI ranks (default: all cores)")
    p.add_argument("--grid", help="process grid PxQ with P*Q = ranks (default: most square)")
    p.add_argument("--dynbcast", choices=("on", "off", "both", "plain"), default="on",
                   help="on: dynamic broadcasts; off: one MPI_Isend per destination (StarPU "
                        "over MPI); both: on then off; plain: the dyn layer with grouping off")
    p.add_argument("--precision", choices=("d", "s"), default="d",
                   help="d: double, s: single precision (default d)")
    p.add_argument("--workers", type=int, default=1, help="worker threads per rank")
    p.add_argument("--iters", type=int, default=3, help="measured factorisations")
    p.add_argument("--warmup", type=int, default=1, help="factorisations not counted")
    p.add_argument("--no-check", action="store_true", help="skip the residual")
    p.add_argument("--starpu", action="store_true",
                   help="also StarPU-MPI's mpi_cholesky, STARPU_MPI_COOP_SENDS=1 and 0")
    p.add_argument("--timeout", type=float, default=1800, help="seconds per MPI job")
    p.add_argument("--mpi", help="mpich, openmpi or system (default: $COLLTUNE_MPI or mpich)")
    p.add_argument("--json", action="store_true", help="print the result as JSON")
    p.add_argument("--no-record", action="store_true", help="do not record in the store")
    p.set_defaults(func=cmd_cholesky)


# -- the report's section ----------------------------------------------------------------------


def cholesky_section(data):
    """`colltune cholesky` runs: GFlop/s with dynamic broadcasts on and off, StarPU-MPI's
    example beside them when it ran; a figure of GFlop/s by N when several sizes were run."""
    from ..render.html import Section, table

    rows, series = [], {}
    for run in data.runs:
        for bench in run.get("benches", []):
            doc = bench.get("cholesky") if bench.get("op") == "cholesky" else None
            if not isinstance(doc, dict):
                continue
            by_mode = {r.get("dynbcast"): r for r in doc.get("results", [])
                       if r.get("runtime") == "colltune"}
            gain = None
            if "on" in by_mode and "off" in by_mode and by_mode["on"]["seconds"] > 0:
                gain = by_mode["off"]["seconds"] / by_mode["on"]["seconds"] - 1
            for r in doc.get("results", []):
                res = r.get("residual")
                rows.append([run["id"], doc["n"], doc["nb"], doc["grid"], doc["precision"],
                             doc.get("workers"), r["variant"],
                             f"{r['seconds']:.4f} ({r['seconds_min']:.4f}–"
                             f"{r['seconds_max']:.4f})", f"{r['gflops']:.2f}",
                             "-" if res is None else f"{res:.1e}",
                             f"{gain:+.1%}" if gain is not None and r.get("dynbcast") == "on"
                             else ""])
                key = (doc["ranks"], doc["nb"], doc["precision"], r["variant"])
                series.setdefault(key, []).append((doc["n"], r["gflops"]))
    if not rows:
        return None
    body = ["<p>Tiled Cholesky over colltune's task runtime (docs/CHOLESKY.md): seconds are "
            "the median (min–max) over the measured factorisations; GFlop/s = N³/3 over the "
            "median. <em>on/off gain</em>: time with dynamic broadcasts off over time with "
            "them on, minus one. StarPU rows: Debian's starpu-examples mpi_cholesky (single "
            "precision, Debian's Open MPI).</p>",
            table(["run", "N", "NB", "grid", "prec.", "workers", "variant",
                   "seconds median (min–max)", "GFlop/s", "residual", "on/off gain"], rows)]
    if any(len({n for n, _ in pts}) > 1 for pts in series.values()):
        from ..render.html import figure

        body.append(figure(data, _gflops_svg(series), "Cholesky GFlop/s by matrix order, "
                            "one line per variant (ranks, NB, precision)."))
    return Section("cholesky", "Tiled Cholesky: dynamic broadcasts on and off", "\n".join(body))


def _gflops_svg(series: dict) -> str:
    import matplotlib
    from matplotlib.figure import Figure

    from ..render.plot import PLOT_LOCK, RC, to_svg

    with PLOT_LOCK, matplotlib.rc_context(RC):
        fig = Figure(figsize=(7.5, 4))
        ax = fig.add_subplot()
        for i, ((ranks, nb, prec, variant), pts) in enumerate(sorted(series.items())):
            best: dict[int, float] = {}
            for n, g in pts:
                best[n] = max(g, best.get(n, 0.0))
            ns = sorted(best)
            ax.plot(ns, [best[n] for n in ns], "o-", color=f"C{i % 10}",
                    label=f"{variant} ({ranks} ranks, NB {nb}, {prec})")
        ax.set_xlabel("N (matrix order)")
        ax.set_ylabel("GFlop/s")
        ax.legend(fontsize=7)
        return to_svg(fig, "cholesky")
