"""`colltune suite`: the benchmarks of Furst and Coskun's message-passing study (seed paper
rcce-message-passing-monitoring-scc) as tools/suite/ct_suite runs them (docs/SUITE.md):
pingpong between pairs at increasing communication distance (machine.json's `comm_layers`
when given, else core distance) and with 1 to all pairs at once, shift (ring) with 2 to all
ranks, bcast from rank 0 to N ranks, stencil (2D halo exchange with a Jacobi sweep) and share
(memory-bound copy by 1 to all ranks at once). Each configuration is one job whose JSON line
is kept as it comes (Ctrl-C keeps what was measured).

`colltune suite --overhead`: the monitor's cost, the shift benchmark under the drop-in at every
COLLTUNE_MONITOR level (and without the drop-in), repetitions interleaved level by level so that
drifts in the machine's load hit every level alike; ratios to `off` with median, min and max."""

from __future__ import annotations

import argparse
import datetime
import json
import shlex
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from ..core.args import add_db, add_output, add_ranks, byte_size, hidden
from ..core.mpi import MPIBuild, MPIError, run_json_lines

SCHEMA = "colltune-suite"
SCHEMA_VERSION = 1
BENCHES = ("pingpong", "shift", "stencil", "share", "bcast")
LEVELS = ("none", "off", "counters", "count", "peers", "sizes")  # none: no drop-in at all
OVERHEAD_ITERS = 20000  # shifts per timing
APP_ITERS = 5  # factorisations per job
MONITOR_ENV = ("LD_PRELOAD", "COLLTUNE_MONITOR", "COLLTUNE_MONITOR_OUT", "COLLTUNE_PROGRESS")


class SuiteError(RuntimeError):
    pass


def _spread(values: list[int]) -> list[int]:
    """1, 2, 4, ... up to the last value, and the last value."""
    out, v = [], 1
    while v < values[-1]:
        if v >= values[0]:
            out.append(v)
        v *= 2
    return sorted(set(out + [values[-1]]))


def machine_cores(build: MPIBuild) -> tuple[list[int], bool]:
    """The machine's cores (first PU of each) and whether this build can bind, from the
    probe's topology helper; ([], False) when it cannot tell."""
    try:
        out = subprocess.run([str(build.tool("ct_probe")), "topo"], capture_output=True,
                             text=True, timeout=60)
        topo = json.loads(out.stdout.splitlines()[0]) if out.returncode == 0 else {}
    except (MPIError, OSError, subprocess.TimeoutExpired, json.JSONDecodeError, IndexError):
        topo = {}
    return list(topo.get("cores") or []), bool(topo.get("can_bind"))


def plan(cores: list[int], can_bind: bool, quick: bool, machine: dict | None = None,
         max_ranks: int | None = None) -> list[dict]:
    """The configurations, each {bench, view, ranks, active, size, cores, distance}. With
    fewer than 2 bindable cores the jobs run unpinned on 2 ranks (oversubscribed)."""
    pinned = can_bind and len(cores) >= 2
    usable = cores[:max_ranks] if max_ranks else cores
    if not pinned:
        usable = [0, 1]
    n = max(2, len(usable))
    sizes = [8] if quick else [8, 65536]
    big = 1 << 20 if quick else 8 << 20
    out: list[dict] = []

    def add(bench, view, ranks, size, core_list, active=None, distance=None):
        out.append({"bench": bench, "view": view, "ranks": ranks, "size": size,
                    "active": active, "distance": distance,
                    "cores": core_list[:ranks] if pinned else None})

    layers = (machine or {}).get("comm_layers") or []
    pairs = ([(int(la.get("layer", i)), list(la["representative"]))
              for i, la in enumerate(layers) if la.get("representative")]
             if pinned else [])
    if not pairs:
        dists = _spread(list(range(1, n))) if pinned else [1]
        pairs = [(d, [usable[0], usable[d]]) for d in dists]
    for size in sizes:
        for dist, pair in pairs:
            add("pingpong", "distance", 2, size, pair, distance=dist)
        for p in _spread(list(range(1, n // 2 + 1))):
            add("pingpong", "pairs", 2 * (n // 2), size, usable, active=p)
        for r in _spread(list(range(2, n + 1))) if n > 2 else [2]:
            add("shift", "pairs", r, size, usable)
    for r in _spread(list(range(2, n + 1))) if n > 2 else [2]:
        add("bcast", "ranks", r, 4096, usable)
    add("stencil", "ranks", n, 32768, usable)
    for a in _spread(list(range(1, n + 1))):
        add("share", "active", n, big, usable, active=a)
    return out


def iterations(cfg: dict, quick: bool) -> int:
    base = {"pingpong": 2000, "shift": 2000, "bcast": 1000, "stencil": 500, "share": 20}
    k = base[cfg["bench"]] // (10 if quick else 1)
    if cfg["size"] >= 65536 and cfg["bench"] != "share":
        k //= 10
    return max(k, 5)


def command(build: MPIBuild, cfg: dict, iters: int, reps: int) -> list[str]:
    args = [str(build.tool("ct_suite")), cfg["bench"], "--size", str(cfg["size"]),
            "--iters", str(iters), "--reps", str(reps)]
    if cfg.get("active") is not None:
        args += ["--active", str(cfg["active"])]
    if cfg.get("cores"):
        args += ["--cores", ",".join(map(str, cfg["cores"]))]
    # pinned by ct_suite itself when cores are given
    return build.launch_command(cfg["ranks"], args, bind=False, export=MONITOR_ENV)


def parse_app(text: str) -> dict:
    """--app cholesky[:N[:NB]]: the real application of the overhead study, colltune's tiled
    Cholesky over plain MPI point-to-point (its task runtime's sends and receives are the
    application's own, so every message goes through the monitor)."""
    name, *rest = text.split(":")
    if name != "cholesky" or len(rest) > 2:
        raise argparse.ArgumentTypeError(f"--app {text!r}: only cholesky[:N[:NB]]")
    try:
        n = int(rest[0]) if rest else 1920
        nb = int(rest[1]) if len(rest) > 1 else 192
    except ValueError:
        raise argparse.ArgumentTypeError(f"--app {text!r}: N and NB are integers") from None
    if not 0 < nb <= n:
        raise argparse.ArgumentTypeError(f"--app {text!r}: need 0 < NB <= N")
    return {"name": name, "n": n, "nb": nb}


def app_command(build: MPIBuild, app: dict, ranks: int, iters: int) -> list[str]:
    from ..dyn.cholesky import default_grid

    p, q = default_grid(ranks)
    args = [str(build.tool("ct_cholesky")), "--n", str(app["n"]), "--nb", str(app["nb"]),
            "--grid", f"{p}x{q}", "--comm", "mpi", "--precision", "d", "--workers", "1",
            "--iters", str(iters + 1), "--no-check"]
    return build.launch_command(ranks, args, bind=ranks <= len(machine_cores(build)[0]),
                                export=(*MONITOR_ENV, "OPENBLAS_NUM_THREADS"))


def _new_doc(build: MPIBuild, kind: str, quick: bool) -> dict:
    from .. import __version__
    from ..core.machine import fingerprint

    return {"schema": SCHEMA, "schema_version": SCHEMA_VERSION, "colltune_version": __version__,
            "kind": kind, "quick": quick,
            "created_at": datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds"),
            "host": fingerprint(), "mpi": {"build": build.name}, "complete": False,
            "warnings": [], "configs": [], "commands": []}


def _stats(times: list[float]) -> dict:
    return {"median_us": statistics.median(times), "min_us": min(times), "max_us": max(times)}


def run_suite(build: MPIBuild, *, quick: bool, machine: dict | None = None,
              max_ranks: int | None = None, progress: bool = True,
              doc: dict | None = None) -> dict:
    """Every configuration of plan(), each one job; `doc` (given or new) is filled as they
    finish, so a Ctrl-C (KeyboardInterrupt, re-raised) leaves what was measured in it."""
    doc = doc if doc is not None else _new_doc(build, "suite", quick)
    cores, can_bind = machine_cores(build)
    configs = plan(cores, can_bind, quick, machine, max_ranks)
    if not configs[0]["cores"]:
        doc["warnings"].append("ranks not pinned (fewer than 2 cores or no binding): 2 "
                               "ranks, unpinned")
    started = time.monotonic()
    reps = 3 if quick else 5
    failures = 0
    for i, cfg in enumerate(configs):
        iters = iterations(cfg, quick)
        cmd = command(build, cfg, iters, reps)
        doc["commands"].append(shlex.join(cmd))
        label = (f"suite {i + 1}/{len(configs)} {cfg['bench']} {cfg['ranks']} ranks"
                 + (f" active {cfg['active']}" if cfg["active"] is not None else ""))
        records: list[dict] = []
        try:
            run_json_lines(cmd, label, env=build.launch_env(cfg["ranks"]), timeout=600,
                           records=records, progress=progress, error=SuiteError)
        except SuiteError as e:
            failures += 1
            doc["warnings"].append(f"{label}: {e}")
            continue
        for rec in records[:1]:
            entry = {**cfg, **rec, **_stats(rec["time_us"]), "view": cfg["view"],
                     "distance": cfg["distance"], "cores": rec.get("cores") or cfg["cores"]}
            if rec.get("instructions") and rec.get("cycles"):
                entry["ipc"] = rec["instructions"] / rec["cycles"]
                iters_done = rec["iters"] * len(rec["time_us"])
                entry["messages_per_instruction"] = (rec["messages_per_iter"] * iters_done
                                                     / rec["instructions"])
            doc["configs"].append(entry)
            lib = rec.get("library", "")
            if lib and not doc["mpi"].get("library"):
                from ..core.mpi import describe_library

                doc["mpi"].update(describe_library(lib))
    doc["duration_s"] = round(time.monotonic() - started, 2)
    doc["complete"] = failures == 0
    if failures == len(configs):
        raise SuiteError("; ".join(doc["warnings"]))
    return doc


def run_overhead(build: MPIBuild, *, ranks: int | None = None, reps: int = 5,
                 iters: int = OVERHEAD_ITERS, size: int = 8, progress: bool = True,
                 doc: dict | None = None, levels: tuple[str, ...] = LEVELS,
                 app: dict | None = None) -> dict:
    """The shift benchmark at every level, repetition r of every level before r+1 of any.
    Per level: the per-shift times (median of ct_suite's 3 inner repetitions per job), the
    ratios to `off` of the same repetition (median, min, max), and the monitor's message
    total (a sanity check: it must be ranks x shifts from `count` on). With `app` (from
    parse_app) a real application instead: per job, the median time of `iters`
    factorisations after one not counted; its message total must be the same at every
    level from `count` on."""
    from ..core.progress import ProgressBar

    doc = doc if doc is not None else _new_doc(build, "overhead", False)
    cores, can_bind = machine_cores(build)
    n = ranks or max(2, len(cores))
    pinned = can_bind and len(cores) >= n
    cfg = {"bench": "shift", "ranks": n, "size": size, "active": None,
           "cores": cores[:n] if pinned else None}
    doc["overhead"] = ov = {
        "bench": app["name"] if app else "shift", "ranks": n, "size": None if app else size,
        "iters": iters, "inner_reps": None if app else 3, "app": app,
        "reps": reps, "levels": list(levels), "progress_thread": "off",
        "binding": "core (ct_suite, hwloc)" if pinned else
        ("none (oversubscribed)" if n > len(cores) else "none"),
        "times_us": {lv: [] for lv in levels}, "app_messages": {lv: [] for lv in levels}}
    lib = str(build.tool("libcolltune_pmpi.so"))
    bar = ProgressBar(f"overhead ({ov['bench']})") if progress else None
    started = time.monotonic()
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "monitor.json"
        try:
            for r in range(reps):
                for k, level in enumerate(levels):
                    env = {**build.launch_env(n), "COLLTUNE_PROGRESS": "off",
                           "OPENBLAS_NUM_THREADS": "1"}
                    if level != "none":
                        env.update(LD_PRELOAD=lib, COLLTUNE_MONITOR=level,
                                   COLLTUNE_MONITOR_OUT=str(out))
                    out.unlink(missing_ok=True)
                    cmd = app_command(build, app, n, iters) if app else command(
                        build, cfg, iters, 3)
                    if r == 0 and k == 0:
                        doc["commands"].append(shlex.join(cmd))
                    recs = run_json_lines(cmd, f"overhead {level}", env=env, timeout=600,
                                          progress=False, error=SuiteError)
                    if app:
                        ov["times_us"][level].append(
                            1e6 * statistics.median(x["seconds"] for x in recs[1:] or recs))
                    else:
                        ov["times_us"][level].append(statistics.median(recs[0]["time_us"]))
                    rec = recs[0]
                    msgs = None
                    if out.exists():
                        mon = json.loads(out.read_text())
                        msgs = sum(x["app_messages"] for x in mon["per_rank"])
                    ov["app_messages"][level].append(msgs)
                    if rec.get("library") and not doc["mpi"].get("library"):
                        from ..core.mpi import describe_library

                        doc["mpi"].update(describe_library(rec["library"]))
                    if bar:
                        bar.update(r * len(levels) + k + 1, reps * len(levels))
        finally:
            if bar:
                bar.done()
            if not app:
                ov["shifts_per_job"] = iters * 3 + min(iters, 10)
            ov["ratios"] = overhead_ratios(ov)
            doc["duration_s"] = round(time.monotonic() - started, 2)
    doc["complete"] = True
    return doc


def overhead_ratios(ov: dict) -> dict:
    base = ov["times_us"].get("off") or []
    out = {}
    for level, times in ov["times_us"].items():
        ratios = [t / b for t, b in zip(times, base, strict=False) if b > 0]
        if ratios:
            out[level] = {"median": statistics.median(ratios), "min": min(ratios),
                          "max": max(ratios), "median_us": statistics.median(times)}
    return out


def overhead_label(ov: dict) -> str:
    """What the overhead study ran: 'shift of 8 B' or 'cholesky N 1920 NB 192'."""
    app = ov.get("app")
    if app:
        return f"{app['name']} N {app['n']} NB {app['nb']}"
    return f"shift of {ov['size']} B"


def suite_bench(doc: dict, command: str = "") -> dict:
    """The suite as a colltune-bench/1 document: op 'suite', the whole document under
    'suite', one result per configuration (median_us)."""
    results = [{"algorithm": f"{c['bench']} {c['view']}", "size": c["size"],
                "median_us": c["median_us"], "ranks": c["ranks"], "active": c.get("active")}
               for c in doc.get("configs", [])]
    for level, r in (doc.get("overhead") or {}).get("ratios", {}).items():
        results.append({"algorithm": f"{doc['overhead'].get('bench', 'shift')} monitor {level}",
                        "size": doc["overhead"]["size"] or 0,
                        "median_us": r["median_us"], "ratio_to_off": r["median"]})
    mpi = {k: doc["mpi"].get(k, "") for k in ("implementation", "version", "library")}
    return {"schema": "colltune-bench/1", "op": "suite", "ranks": max(
        [c["ranks"] for c in doc.get("configs", [])] + [(doc.get("overhead") or {}).get(
            "ranks", 0)] + [1]), "command": command, "mpi": mpi, "suite": doc,
        "results": results}


def summary(doc: dict) -> str:
    lines = []
    if doc.get("configs"):
        lines.append(f"{'benchmark':<10} {'view':<9} {'ranks':>5} {'active':>6} {'dist':>4} "
                     f"{'size':>8} {'median us':>10} {'min':>9} {'max':>9}")
        for c in doc["configs"]:
            lines.append(f"{c['bench']:<10} {c['view']:<9} {c['ranks']:>5} "
                         f"{c.get('active') if c.get('active') is not None else '':>6} "
                         f"{c.get('distance') if c.get('distance') is not None else '':>4} "
                         f"{c['size']:>8} {c['median_us']:>10.3f} {c['min_us']:>9.3f} "
                         f"{c['max_us']:>9.3f}")
        ctr = doc["configs"][0].get("counters_unavailable")
        lines.append("IPC, messages per instruction: " + (f"unavailable: {ctr}" if ctr else
                                                          "in the record"))
    ov = doc.get("overhead")
    if ov:
        lines.append(f"monitor overhead, {overhead_label(ov)} on {ov['ranks']} ranks, "
                     f"{ov['reps']} interleaved repetitions (ratio to off: median [min, max])")
        for level, r in ov.get("ratios", {}).items():
            lines.append(f"  {level:<9} {r['median_us']:9.3f} us  {r['median']:.4f} "
                         f"[{r['min']:.4f}, {r['max']:.4f}]")
    for w in doc.get("warnings", []):
        lines.append(f"warning: {w}")
    return "\n".join(lines)


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("suite", help="the monitoring paper's benchmarks (pingpong, shift, "
                                     "stencil, share, bcast); --overhead: the monitor's cost")
    p.add_argument("--quick", action="store_true", help="fewer sizes and iterations (seconds)")
    p.add_argument("--machine", help="machine.json whose comm_layers choose the pingpong "
                                     "pairs (default: core distance)")
    add_ranks(p, "ranks: use at most this many cores (--overhead: this many ranks; default: "
                 "every core)", type=int, default=None, old=("--max-ranks",))
    p.add_argument("--overhead", action="store_true",
                   help="only the monitoring-overhead study on the shift benchmark")
    p.add_argument("--reps", type=int, default=5, help="--overhead: interleaved repetitions")
    p.add_argument("--iters", type=int, default=None,
                   help=f"--overhead: shifts per timing ({OVERHEAD_ITERS}; with --app: "
                        f"factorisations, {APP_ITERS})")
    p.add_argument("--sizes", dest="size", type=byte_size, default=8, metavar="SIZE",
                   help="--overhead: the bytes each rank shifts (one size; K, M and G are "
                        "binary: 4M = 4 MiB) (default 8)")
    hidden(p, "--size", dest="size", type=byte_size)
    p.add_argument("--app", type=parse_app, default=None, metavar="cholesky[:N[:NB]]",
                   help="--overhead: a real application instead of shift: colltune's tiled "
                        "Cholesky over plain MPI (default N 1920, NB 192; --iters "
                        "factorisations a job)")
    add_output(p, "the JSON document of the results (default colltune-suite.json)",
               default="colltune-suite.json")
    p.add_argument("--mpi", help="mpich, openmpi, intelmpi or system "
                                 "(default: $COLLTUNE_MPI or mpich)")
    p.add_argument("--no-record", action="store_true", help="do not record the run")
    add_db(p)
    p.set_defaults(func=cmd_suite)


def cmd_suite(args: argparse.Namespace) -> int:
    from ..core.files import write_atomic

    try:
        build = MPIBuild.select(args.mpi)
        build.tool("ct_suite")
    except MPIError as e:
        print(f"colltune: {e}", file=sys.stderr)
        return 2
    machine = None
    if args.machine:
        from ..probe.schema import MachineFileError, load

        try:
            machine = load(args.machine)
        except MachineFileError as e:
            print(f"colltune suite: {e}", file=sys.stderr)
            return 2
    command_line = shlex.join(["colltune", *sys.argv[1:]])
    doc = _new_doc(build, "overhead" if args.overhead else "suite", args.quick)
    store = run = None
    if not args.no_record:
        from ..store.store import Store

        store = Store.open()
        run = store.begin_run("suite", sys.argv[1:], ranks=None, binding=None)
    status, reason, rc = "complete", None, 0
    try:
        if args.overhead:
            iters = args.iters or (APP_ITERS if args.app else OVERHEAD_ITERS)
            run_overhead(build, ranks=args.ranks, reps=args.reps, iters=iters,
                         size=args.size, doc=doc, app=args.app)
        else:
            run_suite(build, quick=args.quick, machine=machine, max_ranks=args.ranks,
                      doc=doc)
        if not doc["complete"]:
            status, reason, rc = "failed", "some configurations failed", 1
    except KeyboardInterrupt:
        doc["warnings"].append("interrupted: the configurations not measured are missing")
        status, reason, rc = "interrupted", "interrupted by the user", 130
    except (SuiteError, MPIError, OSError) as e:
        doc["warnings"].append(str(e))
        status, reason, rc = "failed", str(e), 1
    write_atomic(args.output, json.dumps(doc, indent=1) + "\n")
    if run:
        run.add_bench(suite_bench(doc, command_line))
        run.finish(status, reason)
    print(summary(doc))
    print(f"suite file: {Path(args.output).resolve()}")
    if run:
        print(f"recorded as run {run.id} in {store.path}")
        store.close()
    if rc == 130:
        print("colltune suite: interrupted; what was measured is kept", file=sys.stderr)
    return rc


# -- the report's section ------------------------------------------------------------------

VIEWS = (("pingpong", "distance", "distance", "pingpong round trip vs communication distance "
          "(layer or core distance)"),
         ("pingpong", "pairs", "active", "pingpong round trip vs pairs active at once"),
         ("shift", "pairs", "ranks", "shift (ring) vs ranks"),
         ("bcast", "ranks", "ranks", "bcast from rank 0 vs N"),
         ("share", "active", "active", "memory-bound copy vs ranks copying at once"))


def _line_svg(series: dict, xlabel: str, title: str) -> str:
    import matplotlib
    from matplotlib.figure import Figure

    from ..render.plot import PLOT_LOCK, RC, to_svg

    with PLOT_LOCK, matplotlib.rc_context(RC):
        fig = Figure(figsize=(5.5, 3.2))
        ax = fig.add_subplot()
        for label, pts in series.items():
            pts = sorted(pts)
            ax.errorbar([p[0] for p in pts], [p[1] for p in pts],
                        yerr=[[p[1] - p[2] for p in pts], [p[3] - p[1] for p in pts]],
                        marker="o", capsize=3, label=label)
        ax.set_xlabel(xlabel)
        ax.set_ylabel("time per iteration (µs), median [min, max]")
        ax.set_title(title)
        ax.legend(fontsize=7)
        return to_svg(fig, title)


def suite_section(data):
    """`colltune suite` (and the suite step of `colltune run`): the paper's views, the
    configurations as a table with IPC and messages per instruction, the overhead study."""
    from ..render.html import Section, esc, figure, table

    parts = []
    for run in data.runs:
        for bench in run.get("benches", []):
            doc = bench.get("suite") if bench.get("op") == "suite" else None
            if not isinstance(doc, dict):
                continue
            mpi = doc.get("mpi") or {}
            out = [f"<h3>Run {esc(run['id'])}: {esc(bench.get('command', ''))}</h3>",
                   f"<p>{esc(mpi.get('implementation', mpi.get('build', '')))} "
                   f"{esc(mpi.get('version', ''))}; {'quick; ' if doc.get('quick') else ''}"
                   f"{'complete' if doc.get('complete') else 'incomplete'}.</p>"]
            configs = doc.get("configs") or []
            for bname, view, key, title in VIEWS:
                series: dict = {}
                for c in configs:
                    if c["bench"] == bname and c["view"] == view and c.get(key) is not None:
                        x = c[key] if key != "ranks" else c["ranks"]
                        series.setdefault(f"{c['size']} B", []).append(
                            (x, c["median_us"], c["min_us"], c["max_us"]))
                if series and sum(len(v) for v in series.values()) > 1:
                    out.append(figure(data, _line_svg(series, key, title), title + "."))
            if configs:
                rows = [[c["bench"], c["view"], c["ranks"], c.get("active"), c.get("distance"),
                         c["size"], round(c["median_us"], 3), round(c["min_us"], 3),
                         round(c["max_us"], 3), c.get("messages_per_iter"),
                         None if c.get("ipc") is None else round(c["ipc"], 3),
                         c.get("messages_per_instruction")] for c in configs]
                out.append(table(["benchmark", "view", "ranks", "active", "distance", "bytes",
                                  "median (µs)", "min", "max", "messages/iter", "IPC",
                                  "messages/instruction"], rows))
                why = configs[0].get("counters_unavailable")
                if why:
                    out.append(f"<p>IPC and messages per instruction: unavailable: "
                               f"{esc(why)}.</p>")
            ov = doc.get("overhead")
            if ov and ov.get("ratios"):
                out.append(f"<p>Monitor overhead on {esc(overhead_label(ov))} "
                           f"({ov['ranks']} ranks, {ov['reps']} interleaved repetitions, binding "
                           f"{esc(ov.get('binding', ''))}): ratio to level off.</p>")
                out.append(table(["level", "median (µs)", "ratio median", "min", "max"],
                                 [[lv, round(r["median_us"], 3), round(r["median"], 4),
                                   round(r["min"], 4), round(r["max"], 4)]
                                  for lv, r in ov["ratios"].items()]))
            for w in doc.get("warnings", []):
                out.append(f"<p class='warn'>{esc(w)}</p>")
            parts.append("\n".join(out))
    if not parts:
        return None
    return Section("suite", "Benchmark suite", "\n".join(parts))
