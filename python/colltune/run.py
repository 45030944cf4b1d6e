"""`colltune run`, the main job: probe, p2p, every operation benchmarked, tuning, overlap and
the suite, recorded, then the report. It drives every stage, so it sits above them all, next
to the command line (cli.py)."""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

from .bench.bench import (
    BenchFailed,
    BenchInterrupted,
    BenchStream,
    bench_arguments,
    check_bench_args,
    comparison_table,
    open_store,
    run_bench,
    size_versus,
)
from .core.args import add_output, writes
from .core.colls import CLASSIC, COLLS
from .core.files import Terminated
from .core.mpi import MPIBuild, MPIError
from .core.stats import FASTER, SLOWER
from .core.units import human_size
from .p2p.p2p import latency_text

# `colltune run` on a small machine: every operation, every algorithm, in a few minutes, up
# to the benchmark of record's largest size (bench/record.py: 4 MiB), so that its table
# holds measured entries there instead of the 1 MiB entry stretched.
RUN_MAX = "4M"
RUN_ITERS = 10
# Its last tuning step, the table verified through the drop-in: few rounds, to stay short.
RUN_VERIFY_ROUNDS = 2
TABLE = "colltune-table.json"
# Its stages, in order (the README lists them; tests/python/test_cli_names.py compares).
STAGES = ["probe", "p2p", *(f"bench {op}" for op in COLLS), "tune", "verify", "overlap", "suite"]


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("run", help="the main job: benchmark every operation, record, report")
    bench_arguments(p, max_size=RUN_MAX, iters=RUN_ITERS)
    add_output(p, "the HTML report to write (default: colltune-report.html)",
               default="colltune-report.html")
    # What the stages leave in the current directory, beside the report.
    p.set_defaults(func=cmd_run, cwd_outputs=("machine.json", "p2p.json", TABLE))
    writes(p, "cwd_outputs")


class Stages:
    """The steps of `colltune run`, in one style: `[k/N] name: what it does` when a step
    starts, then one line `[k/N] name: result (T s)` (or `... FAILED: why (T s)`) when it ends;
    what a step prints in between (tables) is its detail."""

    def __init__(self, names: list[str]):
        self.names = names
        self.k = 0
        self.started = time.monotonic()

    @property
    def label(self) -> str:
        return f"[{self.k}/{len(self.names)}] {self.names[self.k - 1]}"

    def start(self, what: str) -> None:
        self.k += 1
        self.started = time.monotonic()
        print(f"{self.label}: {what}", flush=True)

    def done(self, result: str) -> None:
        print(f"{self.label}: {result} ({time.monotonic() - self.started:.1f} s)", flush=True)

    def failed(self, why) -> None:
        why = " ".join(str(why).split())  # one line
        print(f"{self.label}: FAILED: {why}; the run goes on without it "
              f"({time.monotonic() - self.started:.1f} s)", flush=True)


def probe_result(doc: dict) -> str:
    from .core.units import fmt_size

    parts = []
    if doc.get("caches"):
        parts.append("caches " + ", ".join(f"L{c['level']} {fmt_size(c['size_bytes'])}"
                                           for c in doc["caches"]))
    mem = doc.get("memory")
    if mem:
        parts.append(f"memory copy {mem['reference_gbps']:.2f} GB/s on one core")
    layers = doc.get("comm_layers") or []
    if layers:
        parts.append(f"{len(layers)} communication layer(s)")
    bad = [n for n, p in doc.get("parts", {}).items() if p.get("status") not in ("ok", "skipped")]
    if bad:
        parts.append("failed parts: " + ", ".join(bad))
    return "; ".join(parts) or "nothing measured"


def p2p_result(doc: dict) -> str:
    layers = doc.get("layers", [])
    text = "; ".join(f"layer {la['layer']}: {len(la['points'])} sizes"
                     + (f", {latency_text(la)}" if la.get("latency_us") is not None else "")
                     for la in layers)
    return (text or "no layer measured") + ("" if doc.get("complete", True) else ", INCOMPLETE")


def bench_result(doc: dict) -> str:
    """One line per operation: at how many sizes colltune's best is faster than native
    with a speed-up interval above 1, slower (below 1) or tied, and the largest speed-up
    that is a verdict (native / colltune, higher is better)."""
    results = doc.get("results", [])
    rows = [(s, v) for s, v in size_versus(doc) if v.speedup is not None]
    text = f"{len(results)} results"
    if rows:
        faster = [(s, v) for s, v in rows if v.verdict == FASTER]
        slower = sum(v.verdict == SLOWER for _, v in rows)
        text += (f"; colltune faster than native at {len(faster)} of {len(rows)} size(s), "
                 f"slower at {slower}, no difference within noise at "
                 f"{len(rows) - len(faster) - slower}")
        if faster:
            s, v = max(faster, key=lambda r: r[1].speedup.value)
            where = "" if doc.get("op") == "barrier" else f" at {human_size(s)}"
            text += f"; best {v.best}{where}: speed-up {v.speedup_text()}"
    failed = sorted({r["algorithm"] for r in results if r.get("check") == "FAILED"})
    if failed:
        text += "; RESULT DIFFERS FROM NATIVE for " + ", ".join(failed)
    return text


def overlap_result(doc: dict) -> str:
    parts = []
    for st in doc.get("studies", []):
        for row in st.get("rows", []):
            # The overlap of the variant the row names (colltune at its best S): the
            # largest over every variant took the blocking reference's or another MPI's
            # column, whose total time can be hundreds of times colltune's.
            best = row["results"].get(f"S{row['measured_best_s']}", {})
            pct = best.get("overlap_pct")
            parts.append(f"N = {row['n']}: best S {row['measured_best_s']}, model S "
                         f"{row['model_s']}"
                         + (f", overlap {pct:.1f}% at S {row['measured_best_s']} "
                            f"(total {best.get('total_us', 0):.0f} us)" if pct is not None
                            else ""))
    return "; ".join(parts) or "no row measured"


def suite_result(doc: dict) -> str:
    benches = sorted({c["bench"] for c in doc.get("configs", [])})
    text = (f"{len(doc.get('configs', []))} configuration(s) measured"
            + (f" ({', '.join(benches)})" if benches else ""))
    warnings = doc.get("warnings", [])
    return text + (f"; {len(warnings)} warning(s): {warnings[0]}" if warnings else "")


def verify_stage(stages: Stages, run, build: MPIBuild, args: argparse.Namespace,
                 tuned: bool) -> None:
    """The tuned table through the drop-in against native in separate jobs (colltune
    verify); the corrected table replaces it as the run's result, the tuner's own is kept
    beside it (colltune-table.tuned.json)."""
    import shutil

    from .tune.verify import VerifyError, run_verify, summary, text_tables, verify_bench

    stages.start(f"the table through the drop-in against native, separate jobs (colltune "
                 f"verify {TABLE}) -> {TABLE}")
    if not tuned:
        stages.failed(f"the tuning step did not finish: {TABLE} is not this run's table")
        return
    try:
        tuned = str(Path(TABLE).with_suffix("")) + ".tuned.json"
        shutil.copyfile(TABLE, tuned)
        _, record = run_verify(build, tuned, TABLE, rounds=RUN_VERIFY_ROUNDS,
                               iters=args.iters or RUN_ITERS)
        print(text_tables(record))
        run.add_bench(verify_bench(record, tuned, TABLE, f"colltune verify {tuned} -o {TABLE}"))
        stages.done(summary(record))
    except (VerifyError, ValueError, OSError, MPIError) as e:
        stages.failed(e)


def cmd_run(args: argparse.Namespace) -> int:
    """The main job on this machine: a quick probe of the machine (machine.json), then every
    algorithm of every operation and native on all cores (sizes up to 4 MiB, 10 iterations
    each by default, so that it takes minutes on a small machine; `colltune bench` does the
    full sweep), recorded in the store, with a table per operation, then the report."""
    from .report.report import write_report

    try:
        build = MPIBuild.select(args.mpi)
        check_bench_args(args, list(COLLS), build)
    except MPIError as e:
        print(f"colltune: {e}", file=sys.stderr)
        return 2
    store = open_store()
    started = time.monotonic()
    print(f"colltune run: {args.ranks} ranks, MPI {build.name}, "
          f"binding {build.binding_label(args.ranks, not args.no_bind)}, "
          f"{len(COLLS)} operations, sizes {human_size(args.min)} to {human_size(args.max)}, "
          f"{args.iters or 'adaptive'} iterations; store {store.path}")
    run = store.begin_run("run", sys.argv[1:], ranks=args.ranks,
                          binding=build.binding_label(args.ranks, not args.no_bind))
    stages = Stages(STAGES)
    try:
        # The machine first: caches, sharing, memory and communication layers, quickly.
        from .probe.probe import quick_probe

        stages.start("quick probe of the machine (colltune probe --quick) -> machine.json")
        mdoc = quick_probe(run, build=build, output="machine.json")
        if mdoc is None:
            stages.failed("nothing measured (see above)")
        else:
            stages.done(probe_result(mdoc))
        stages.start("point-to-point costs (colltune p2p --quick) -> p2p.json")
        from .p2p.p2p import P2PError, measure_p2p, p2p_bench

        try:
            machine = "machine.json" if Path("machine.json").exists() else None
            p2p = measure_p2p(build, quick=True, machine=machine, output="p2p.json")
            run.add_bench(p2p_bench(p2p, "colltune p2p --quick"))
            stages.done(p2p_result(p2p))
        except (P2PError, ValueError) as e:  # the benchmarks still run without it
            stages.failed(e)
        for op in COLLS:
            stages.start(f"every algorithm and native, {human_size(args.min)} to "
                         f"{human_size(args.max)}" if op != "barrier" else
                         "every algorithm and native")
            stream = BenchStream(run)
            try:
                doc = run_bench(build, op, args, sink=stream, progress_label=stages.label)
            except (BenchInterrupted, BenchFailed) as e:
                stream.close(e.doc)
                raise
            stream.close(doc)
            run.set_meta(mpi=doc["mpi"])
            print(comparison_table(doc))
            stages.done(bench_result(doc))
        stages.start("model-guided tuning of every operation on a reduced size grid "
                     "(colltune tune --strategy model) -> colltune-table.json")
        from .tune.tune import TuneError, run_tuning, summary, tune_bench

        tuned = False  # only a table tuned by this run is verified, never one left before
        try:
            from .model.model import Model, load_p2p
            from .tune.search import reduced_sizes

            predict = Model.from_p2p(build, load_p2p("p2p.json"))
            # the classic eight, as `colltune tune` by default (issue 22's operations are
            # benchmarked above; `colltune tune --ops` tunes them on request)
            points = [(op, args.ranks, 0 if op == "barrier" else s) for op in CLASSIC
                      for s in (reduced_sizes(8, args.max) if op != "barrier" else [0])]
            tdoc, evals, secs, _ = run_tuning(build, build.registry(), points, "model",
                                              output=TABLE, iters=5, predict_model=predict)
            first, *rest = summary(tdoc, evals, secs).splitlines()
            print("\n".join(rest))
            run.add_bench(tune_bench(tdoc, evals, secs, TABLE))
            tuned = True
            stages.done(first)
        except (TuneError, ValueError, OSError, MPIError) as e:
            stages.failed(e)
        verify_stage(stages, run, build, args, tuned)
        stages.start("a short overlap study (colltune overlap: 256 KiB bcast, N = Nproc-1)")
        from .nbc.overlap import OverlapError, overlap_bench, short_study

        try:
            ov = short_study(build, args.ranks)
            run.add_bench(overlap_bench(ov))
            stages.done(overlap_result(ov))
        except OverlapError as e:  # the rest of the run stands without it
            stages.failed(e)
        stages.start("the monitoring paper's benchmarks, quick (colltune suite --quick)")
        from .report.suite import SuiteError, run_suite, suite_bench

        try:
            machine = "machine.json" if Path("machine.json").exists() else None
            if machine:
                from .probe.schema import load as load_machine

                machine = load_machine(machine)
            sdoc = run_suite(build, quick=True, machine=machine, max_ranks=args.ranks)
            run.add_bench(suite_bench(sdoc, "colltune suite --quick"))
            stages.done(suite_result(sdoc))
        except (SuiteError, MPIError, ValueError) as e:  # the rest of the run stands
            stages.failed(e)
    except KeyboardInterrupt as e:
        terminated = isinstance(e, Terminated) or getattr(e, "terminated", False)
        how = "SIGTERM" if terminated else "SIGINT (Ctrl-C)"
        run.finish("interrupted", f"interrupted by {how}")
        print(f"colltune: interrupted by {how}; what was measured is kept in the store",
              file=sys.stderr)
        return 143 if terminated else 130
    except BenchFailed as e:
        run.finish("failed", e.reason)
        print(f"colltune: {e}", file=sys.stderr)
        return 1
    except Exception as e:
        run.finish("failed", str(e))
        print(f"colltune: {e}", file=sys.stderr)
        return 1
    run.finish("complete")
    out = args.output or "colltune-report.html"
    write_report(store, [run.id], out)
    # The time the store holds for the run, so that what is printed is what is recorded.
    recorded = store.runs(limit=None, verb="run")
    took = next((r["duration_s"] for r in recorded if r["id"] == run.id), None)
    took = time.monotonic() - started if took is None else took
    print(f"done in {took:.1f} s: run {run.id} recorded in {store.path}")
    print(f"report: {Path(out).resolve()}")
    return 0
