"""`colltune app [options] -- <program or launcher command line>`: from a program to a
verdict (issue 38).

1. The program runs once under the drop-in with the collective profile on (LD_PRELOAD of the
   MPI's libcolltune_pmpi.so, COLLTUNE_PROFILE=on, COLLTUNE_MONITOR_OUT in the run's
   directory): which collectives, forms and sizes it calls, and how long they take.
2. Exactly those points are tuned, the most time first, within --budget seconds
   (tuning.tune_points, the one door to the tuner).
3. The table is verified through the drop-in (`colltune verify`'s run_verify), which
   corrects points where it loses.
4. The program runs --repeat times natively (no drop-in) and as many times tuned (the drop-in
   with the verified table), alternately, after one warm-up pair that is discarded (its
   tuned run carries the profile, for the tuned side of the collective time). Every run's
   exit status is checked, its output against --expect, and --metric takes its own figure
   of merit instead of the wall time.
5. The verdict (core.stats): per variant the median and its 95% interval, the speed-up with
   its interval and "faster", "slower" or "no difference within noise"; the collective time
   and share of the run per operation, native against tuned; the algorithms that served the
   calls; the machine's load.

A failing or non-matching run stops the study with one line and exit status 1: the runs so
far stay in the store, no verdict is recorded. Ctrl-C (or SIGTERM) keeps what ran and marks
the run interrupted.

The command after `--` is either a launcher command line (mpiexec/mpirun ...: used as it
is, the variables colltune sets handed to the ranks with -x under Open MPI) or a program,
which colltune launches on --ranks ranks like its own programs (--testbed, --hostfile,
--ppn, --mpi).
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shlex
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

from ..core import stats
from ..core.args import UsageError, int_type, need, positive_int
from ..core.launch import identify
from ..core.mpi import (
    MPIBuild,
    MPIError,
    add_host_arguments,
    apply_host_arguments,
    stop_process_group,
)
from ..core.units import human_size
from . import profile as prof

LAUNCHERS = ("mpiexec", "mpirun", "srun", "aprun", "orterun", "prterun")
REPEAT = 5
BUDGET_S = 120.0
RUN_TIMEOUT_S = 600.0
# The variables colltune sets for a run; a launcher that passes only those it is told of
# (Open MPI's) gets them with -x.
PASSED = ("LD_PRELOAD", "COLLTUNE_PROFILE", "COLLTUNE_MONITOR", "COLLTUNE_MONITOR_OUT",
          "COLLTUNE_TABLE")
NATIVE, TUNED = "native", "tuned"


class AppError(RuntimeError):
    """The study cannot go on: one line says why."""


@dataclass
class Program:
    """How to start the program: the user's launcher line, or colltune's launch of it."""

    build: MPIBuild
    command: list[str]
    ranks: int
    timeout: float = RUN_TIMEOUT_S
    own_launcher: bool = field(init=False)

    def __post_init__(self):
        self.own_launcher = Path(self.command[0]).name.split(".")[0] in LAUNCHERS

    def argv(self, env: dict[str, str]) -> list[str]:
        """The command line of one run with `env` for the ranks."""
        if not self.own_launcher:
            # `env` in front of the program: the variables reach the ranks, not the
            # launcher, whatever it passes on (as `colltune verify` does).
            wrapped = ["env", *(f"{k}={v}" for k, v in env.items()), *self.command]
            return self.build.launch_command(self.ranks, wrapped, bind=True)
        cmd = list(self.command)
        if env and self.launcher_flavor() == "openmpi":
            cmd[1:1] = [a for k in env for a in ("-x", k)]
        return cmd

    def launcher_flavor(self) -> str:
        try:
            out = subprocess.run([self.command[0], "--version"], capture_output=True,
                                 text=True, timeout=30)
        except (OSError, subprocess.TimeoutExpired):
            return "unknown"
        return identify(out.stdout + out.stderr)

    def run(self, env: dict[str, str]) -> dict:
        """One run: {exit, wall_s, stdout, stderr, command}. Ctrl-C stops the job and goes
        on up."""
        argv = self.argv(env)
        full = {k: v for k, v in os.environ.items() if k not in PASSED
                and not k.startswith("COLLTUNE_")}
        full.update(self.build.launch_env(self.ranks))
        full.update(env)
        t0 = time.monotonic()
        try:
            proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                    text=True, env=full, start_new_session=True)
        except OSError as e:
            raise AppError(f"cannot start {argv[0]}: {e.strerror}") from e
        try:
            out, err = proc.communicate(timeout=self.timeout)
        except subprocess.TimeoutExpired:
            stop_process_group(proc, 5)
            raise AppError(f"the program ran past {self.timeout:.0f} s: "
                           f"{shlex.join(argv)}") from None
        except BaseException:
            stop_process_group(proc, 5)
            raise
        return {"exit": proc.returncode, "wall_s": time.monotonic() - t0, "stdout": out,
                "stderr": err, "command": shlex.join(argv)}


def check_run(r: dict, label: str, expect: str | None, metric: str | None) -> float | None:
    """Raises AppError (one line) when the run failed or its output does not match; returns
    the metric (None without --metric)."""
    text = r["stdout"] + r["stderr"]
    if r["exit"] != 0:
        last = next((x for x in reversed(r["stderr"].strip().splitlines()) if x.strip()),
                    "no message")
        raise AppError(f"{label}: the program exited with status {r['exit']} ({last.strip()})")
    if expect and not re.search(expect, text, re.MULTILINE):
        raise AppError(f"{label}: the output does not match --expect {expect!r}")
    if "COLLTUNE_TABLE not used" in r["stderr"]:
        line = next(x for x in r["stderr"].splitlines() if "COLLTUNE_TABLE not used" in x)
        raise AppError(f"{label}: the drop-in refused the table, nothing was tuned: {line}")
    if not metric:
        return None
    m = re.search(metric, text, re.MULTILINE)
    if not m:
        raise AppError(f"{label}: the output does not match --metric {metric!r}")
    try:
        return float(m.group(1))
    except (IndexError, ValueError):
        raise AppError(f"{label}: --metric {metric!r} matched {m.group(0)!r}, whose first "
                       "group is not a number") from None


def comparison_order(repeat: int) -> list[tuple[int, str]]:
    """(round, variant) in the order they run: round 0 the warm-up pair (discarded), then
    `repeat` rounds, native first in odd rounds, tuned first in even ones, so that neither
    always runs after the other."""
    order = [(0, NATIVE), (0, TUNED)]
    for r in range(1, repeat + 1):
        order += [(r, NATIVE), (r, TUNED)] if r % 2 else [(r, TUNED), (r, NATIVE)]
    return order


def analyse(runs: list[dict], higher_better: bool, metric: bool) -> dict:
    """The verdict of the measured (not warm-up) runs: per variant the median and its
    interval, the speed-up (native/tuned for times, tuned/native for a higher-is-better
    metric) with its interval and verdict, and the spread warnings."""
    vals = {v: [r["value"] for r in runs if r["variant"] == v and not r["warmup"]]
            for v in (NATIVE, TUNED)}
    need_n = min(len(x) for x in vals.values())
    if need_n == 0:
        raise AppError("no measured run of each variant: nothing to compare")
    variants = {v: stats.median_ci(x).as_dict() for v, x in vals.items()}
    if metric and higher_better:
        est = stats.ratio_ci(vals[TUNED], vals[NATIVE])
    else:
        est = stats.speedup(vals[NATIVE], vals[TUNED])
    v = stats.verdict(est)
    warnings = [w for name, x in vals.items()
                if (w := stats.spread_warning(name, x)) is not None]
    if not est.exact:
        warnings.append(f"warning: {need_n} runs a variant are too few for a "
                        f"{stats.CONFIDENCE:.0%} interval: it is the range of the resamples")
    return {"unit": "metric" if metric else "s", "higher_is_better": bool(metric and
                                                                        higher_better),
            "values": vals, "variants": variants, "speedup": est.as_dict(),
            "speedup_means": ("tuned / native" if metric and higher_better
                              else "native / tuned"),
            "verdict": v, "verdict_text": stats.verdict_text(v), "warnings": warnings}


# -- the command ------------------------------------------------------------------------


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("app", help="profile a program, tune what it calls, verify, and "
                                   "compare it natively and tuned: colltune app -- ./prog")
    p.add_argument("-n", "--ranks", type=positive_int, default=2,
                   help="ranks, when the command is a program rather than a launcher line")
    p.add_argument("--budget", type=float, default=BUDGET_S, metavar="SECONDS",
                   help="tuning time: the points the program spends most time in first")
    p.add_argument("--repeat", type=int_type(2), default=REPEAT, metavar="R",
                   help="runs of each variant compared, after one warm-up pair (at least 2: "
                        "one run a variant has no interval)")
    p.add_argument("--expect", default=None, metavar="REGEX",
                   help="a pattern every run's output must match (the program's 'passed')")
    p.add_argument("--metric", default=None, metavar="REGEX",
                   help="a pattern whose one group is the program's figure of merit, "
                        "compared instead of the wall time (lower is better unless "
                        "--metric-higher-better)")
    p.add_argument("--metric-higher-better", action="store_true",
                   help="the --metric figure is a rate (Gflop/s): higher is better")
    p.add_argument("--result-file", default=None, metavar="FILE",
                   help="a file the program writes its results to (HPC Challenge's "
                        "hpccoutf.txt): removed before each run, read after it and checked "
                        "with --expect and --metric like the output")
    p.add_argument("--table", default=None,
                   help="use this tuning table instead of tuning (still verified)")
    p.add_argument("--iters", type=positive_int, default=20,
                   help="iterations a measurement in tuning and verification")
    p.add_argument("--verify-rounds", type=positive_int, default=3,
                   help="tuned and native jobs per point in the verification")
    p.add_argument("--timeout", type=float, default=RUN_TIMEOUT_S, metavar="SECONDS",
                   help="a run of the program longer than this stops the study")
    p.add_argument("-o", "--output", default=None, metavar="DIR",
                   help="the study's directory: profiles, tables, outputs (default "
                        "colltune-app-DATE-TIME)")
    p.add_argument("--json", action="store_true", help="the study as JSON on stdout")
    p.add_argument("--db", default=None, help="the results store (default: $COLLTUNE_DB "
                                              "or ~/.local/share/colltune/colltune.db)")
    p.add_argument("--no-record", action="store_true", help="do not record the study")
    p.add_argument("--mpi", help="mpich, openmpi, intelmpi or system "
                                 "(default: $COLLTUNE_MPI or mpich)")
    add_host_arguments(p)
    p.add_argument("command", nargs=argparse.REMAINDER,
                   help="-- then the program (or an mpiexec line) and its arguments")
    p.set_defaults(func=cmd_app)


def _check_args(args: argparse.Namespace) -> list[str]:
    cmd = args.command[1:] if args.command[:1] == ["--"] else args.command
    need(bool(cmd), "give the program after --, e.g. colltune app -- ./prog or "
                    "colltune app -- mpiexec -n 4 ./prog")
    need(args.budget > 0, f"--budget {args.budget:g}: allowed > 0 seconds")
    need(args.timeout > 0, f"--timeout {args.timeout:g}: allowed > 0 seconds")
    need(not args.metric_higher_better or bool(args.metric),
         "--metric-higher-better needs --metric")
    for opt, pattern in (("--expect", args.expect), ("--metric", args.metric)):
        if pattern is None:
            continue
        try:
            compiled = re.compile(pattern)
        except re.error as e:
            raise UsageError(f"{opt} {pattern!r} is not a regular expression: {e}") from None
        need(opt != "--metric" or compiled.groups >= 1,
             f"--metric {pattern!r} has no group: put the number in ( )")
    return cmd


class Study:
    """One study: its directory, its store record, its progress lines."""

    def __init__(self, args, build: MPIBuild, program: Program, outdir: Path, run=None):
        self.args, self.build, self.program, self.dir, self.run = (args, build, program,
                                                                   outdir, run)
        self.started = time.monotonic()
        self.runs: list[dict] = []
        self.loads: list[float] = []
        self.runs_bench = None
        self.stage = "starting"

    def say(self, text: str) -> None:
        print(f"colltune app: {text} ({time.monotonic() - self.started:.0f} s)",
              file=sys.stderr, flush=True)
        if self.run:
            self.run.progress(f"{self.stage}: {text}")

    def record(self, stage: str, doc: dict, results: list[dict] | None = None) -> None:
        if self.run:
            self.run.add_bench({"schema": "colltune-bench/1", "op": "app", "stage": stage,
                                "ranks": self.program.ranks, "command":
                                shlex.join(self.program.command), "app": doc,
                                "results": results or []})

    def profiled_run(self, label: str, env: dict[str, str], name: str) -> tuple[dict, dict]:
        """One run under the drop-in with the profile on; (run, monitor record)."""
        out = (self.dir / f"{name}.monitor.json").resolve()
        out.unlink(missing_ok=True)
        lib = str(self.build.tool("libcolltune_pmpi.so"))
        full = {"LD_PRELOAD": lib, "COLLTUNE_PROFILE": "on", "COLLTUNE_MONITOR": "count",
                "COLLTUNE_MONITOR_OUT": str(out), **env}
        r = self.run_program(full)
        self._keep_output(name, r)
        value = check_run(r, label, self.args.expect, self.args.metric)
        if not out.exists():
            raise AppError(f"{label}: the drop-in wrote no monitor record to {out}: did the "
                           "program call MPI_Finalize, and does the launcher pass "
                           "LD_PRELOAD to the ranks?")
        r["value"] = value
        return r, json.loads(out.read_text())

    def run_program(self, env: dict[str, str]) -> dict:
        """One run of the program; with --result-file, the file it writes is read into the
        output that --expect and --metric look at (a stale one removed first, so that a run
        that wrote none cannot pass on the last one's)."""
        result = Path(self.args.result_file) if self.args.result_file else None
        if result:
            result.unlink(missing_ok=True)
        r = self.program.run(env)
        if result:
            if not result.exists() and r["exit"] == 0:  # a failed run: its status says why
                raise AppError(f"the program wrote no {result} (--result-file); exit status "
                               f"{r['exit']}")
            if result.exists():
                r["stdout"] += "\n" + result.read_text(errors="replace")
        return r

    def _keep_output(self, name: str, r: dict) -> None:
        (self.dir / f"{name}.out").write_text(r["stdout"])
        (self.dir / f"{name}.err").write_text(r["stderr"])


def cmd_app(args: argparse.Namespace) -> int:
    cmd = _check_args(args)
    try:
        apply_host_arguments(args)
        build = MPIBuild.select(args.mpi)
        build.tool("libcolltune_pmpi.so")
    except MPIError as e:
        print(f"colltune app: {e}", file=sys.stderr)
        return 2
    if args.table:
        from ..tune import table as tbl

        try:
            tbl.load(args.table)
        except tbl.TableFileError as e:
            raise UsageError(str(e)) from None
    outdir = Path(args.output or time.strftime("colltune-app-%Y%m%d-%H%M%S"))
    outdir.mkdir(parents=True, exist_ok=True)
    program = Program(build, cmd, args.ranks, args.timeout)
    store = run = None
    if not args.no_record:
        from ..store.store import Store

        store = Store.open(args.db)
        run = store.begin_run("app", sys.argv[1:], ranks=args.ranks,
                              binding=None if program.own_launcher
                              else build.binding_label(args.ranks))
    study = Study(args, build, program, outdir, run)
    try:
        doc = run_study(study)
    except AppError as e:
        print(f"colltune app: {e}", file=sys.stderr)
        if run:
            run.finish("failed", f"{e}; no verdict ({len(study.runs)} run(s) of the "
                                 "comparison kept)")
            store.close()
        return 1
    except (MPIError, OSError, ValueError) as e:
        print(f"colltune app: {study.stage}: {e}", file=sys.stderr)
        if run:
            run.finish("failed", f"{study.stage}: {e}; no verdict")
            store.close()
        return 1
    except KeyboardInterrupt as e:
        if run:
            how = "SIGTERM" if type(e).__name__ == "Terminated" else "SIGINT (Ctrl-C)"
            run.finish("interrupted", f"interrupted by {how} during {study.stage}; kept "
                                      f"{len(study.runs)} run(s) of the comparison; no "
                                      "verdict")
            store.close()
        raise
    (outdir / "study.json").write_text(json.dumps(doc, indent=1) + "\n")
    if args.json:
        print(json.dumps(doc, indent=1))
    else:
        print(text_report(doc))
    if run:
        run.finish("complete")
        print(f"recorded as run {run.id} in {store.path} (colltune report {run.id})",
              file=sys.stderr if args.json else sys.stdout)
        doc["run_id"] = run.id
        store.close()
    print(f"study files: {outdir}", file=sys.stderr if args.json else sys.stdout)
    return 0


def run_study(s: Study) -> dict:
    args, build = s.args, s.build
    # The MPI as the build names it; the library's own words come with the tuning table.
    mpi = {"build": build.name}
    # 1. the profile of a native run
    s.stage = "profile"
    s.say(f"1/4 profiling {shlex.join(s.program.command)} natively under the drop-in")
    r, native_rec = s.profiled_run("profile run", {}, "profile-native")
    r_native_wall = r["wall_s"]
    points, source = prof.profile_points(native_rec)
    if not points:
        raise AppError("the program made no collective call the drop-in saw: nothing to tune")
    ranks = int(native_rec.get("ranks") or s.program.ranks)
    order = prof.tune_order(points)
    s.say(f"{len(order)} point(s) from the {source}"
          + ("" if source == prof.SOURCE_PROFILE else
             " (this drop-in writes no collective profile: one blocking point per operation "
             "at its mean size, approximate)"))
    s.record("profile", {"source": source, "ranks": ranks, "points": points,
                         "order": order, "wall_s": r["wall_s"],
                         "monitor_wall_s": prof.run_wall(native_rec),
                         "mpi_share": prof.mpi_share(native_rec)})
    # 2. tuning exactly those points
    s.stage = "tune"
    table_path = s.dir / "table.json"
    if args.table:
        s.say(f"2/4 using the table {args.table} (no tuning)")
        tuning = {"table": None, "output": args.table, "tuned": [], "skipped": [],
                  "given": True}
        table_in = Path(args.table)
    else:
        from .tuning import tune_points

        s.say(f"2/4 tuning {len(order)} point(s) within {args.budget:g} s")
        tuning = tune_points(build, order, budget_s=args.budget, output=table_path,
                             iters=args.iters, log=s.say)
        if tuning["table"] is None:
            tuning["table"] = _empty_table(build, table_path)
        table_in = table_path
        for k in tuning["skipped"]:
            q = k["point"]
            s.say(f"not tuned: {prof.table_op(q['op'], q['form'])} {q['comm_size']} ranks "
                  f"{human_size(q['bytes'])}: {k['reason']}")
    from ..tune import table as tbl

    table_doc = tbl.load(table_in)
    mpi = {**mpi, **{k: v for k, v in table_doc["mpi"].items() if k != "library"}}
    if s.run:
        s.run.set_meta(mpi=mpi)
    s.record("tune", {"table_path": str(table_in), "table": table_doc,
                      "tuned": [prof.point_key(p) for p in tuning["tuned"]],
                      "skipped": [{"point": prof.point_key(k["point"]), "reason": k["reason"]}
                                  for k in tuning["skipped"]],
                      **{k: tuning.get(k) for k in ("elapsed_s", "measurements", "strategy",
                                                     "iters", "budget_s", "status")}})
    # 3. verifying the table through the drop-in
    s.stage = "verify"
    from ..tune.verify import run_verify, verify_points

    verified = s.dir / "table.verified.json"
    if verify_points(table_doc):
        s.say("3/4 verifying the table through the drop-in")
        _, vrec = run_verify(build, str(table_in), str(verified), rounds=args.verify_rounds,
                             iters=args.iters, log=s.say)
    else:
        s.say("3/4 no entry the verification times (ct_osu's blocking operations): the "
              "table is used as tuned")
        tbl.write_table(table_doc, verified)
        vrec = {"points": [], "corrections": [], "still_slower": [],
                "not_verified": sorted({e["op"] for e in table_doc["entries"]})}
    s.record("verify", {"table": str(verified), "record": vrec})
    # 4. the comparison
    s.stage = "compare"
    order_runs = comparison_order(args.repeat)
    s.say(f"4/4 {args.repeat} run(s) each natively and tuned, alternately, after a "
          "discarded warm-up pair")
    tuned_env = {"LD_PRELOAD": str(build.tool("libcolltune_pmpi.so")),
                 "COLLTUNE_TABLE": str(verified.resolve())}
    if s.run:
        s.runs_bench = s.run.open_bench({"schema": "colltune-bench/1", "op": "app",
                                         "stage": "runs", "ranks": s.program.ranks,
                                         "command": shlex.join(s.program.command),
                                         "results": []})
    tuned_rec, tuned_run_wall = None, None
    s.loads.append(stats.load_average())
    for i, (rnd, variant) in enumerate(order_runs):
        warm = rnd == 0
        label = f"run {i + 1} of {len(order_runs)} ({variant}{', warm-up' if warm else ''})"
        if warm and variant == TUNED:
            # The warm-up tuned run carries the profile: the tuned side of the collective
            # time, without slowing a measured run.
            r, tuned_rec = s.profiled_run(label, {"COLLTUNE_TABLE": tuned_env["COLLTUNE_TABLE"]},
                                          "profile-tuned")
            tuned_run_wall = r["wall_s"]
        else:
            r = s.run_program(tuned_env if variant == TUNED else {})
            s._keep_output(f"run-{i + 1:02d}-{variant}", r)
            r["value"] = check_run(r, label, args.expect, args.metric)
        load = stats.load_average()
        s.loads.append(load)
        value = r["value"] if args.metric else r["wall_s"]
        row = {"index": i + 1, "round": rnd, "variant": variant, "warmup": warm,
               "wall_s": round(r["wall_s"], 6), "metric": r["value"], "value": value,
               "exit": r["exit"], "load": load}
        s.runs.append(row)
        if s.runs_bench:
            s.runs_bench.add_results([{"algorithm": variant, "size": 0, "median_us":
                                       r["wall_s"] * 1e6, "samples_us": [r["wall_s"] * 1e6],
                                       **row}])
        s.say(f"{label}: {r['wall_s']:.3f} s" + (f", metric {r['value']:g}"
                                                 if args.metric else ""))
    # 5. the verdict
    s.stage = "verdict"
    result = analyse(s.runs, args.metric_higher_better, bool(args.metric))
    native_ops = prof.per_operation(points, ranks, prof.run_wall(native_rec))
    tuned_points, tuned_source = prof.profile_points(tuned_rec)
    tuned_ops = prof.per_operation(tuned_points, ranks, prof.run_wall(tuned_rec))
    loads = [x for x in s.loads if x is not None]
    doc = {"schema": "colltune-app/1", "command": shlex.join(s.program.command),
           "argv": sys.argv[1:], "ranks": ranks, "mpi": mpi,
           "placement": build.placement.source if build.placement else "this machine",
           "directory": str(s.dir), "profile_source": source, "repeat": args.repeat,
           "expect": args.expect, "metric": args.metric,
           "runs": s.runs, **result,
           "collectives": {"native": native_ops, "tuned": tuned_ops,
                           "native_total": prof.collective_total(native_ops),
                           "tuned_total": prof.collective_total(tuned_ops),
                           "native_mpi_share": prof.mpi_share(native_rec),
                           "tuned_mpi_share": prof.mpi_share(tuned_rec)},
           # MPI_Init to MPI_Finalize in the two profiled runs, against the launch to exit
           # that the comparison times: what the launcher and start-up add.
           "program_wall": {"native": prof.run_wall(native_rec),
                            "tuned": prof.run_wall(tuned_rec),
                            "native_run_s": r_native_wall,
                            "tuned_run_s": tuned_run_wall},
           "algorithms": prof.algorithms_served(tuned_points)
           if tuned_source == prof.SOURCE_PROFILE else _table_choices(points, verified),
           "algorithms_source": "profile" if tuned_source == prof.SOURCE_PROFILE
           else "table",
           "tuning": {"tuned": len(tuning["tuned"]), "points": len(order),
                      "given": bool(tuning.get("given")),
                      "skipped": [{"point": prof.point_key(k["point"]),
                                   "reason": k["reason"]} for k in tuning["skipped"]],
                      "table": str(table_in), "verified_table": str(verified),
                      "corrections": len(vrec.get("corrections") or [])},
           "load": {"samples": loads, "min": min(loads, default=None),
                    "max": max(loads, default=None), "cores": stats.cores(),
                    "warning": stats.load_warning(max(loads, default=None))}}
    s.record("verdict", doc, [{"algorithm": v, "size": 0,
                               "median_us": doc["variants"][v]["value"] * 1e6,
                               "samples_us": [x * 1e6 for x in doc["values"][v]]}
                              for v in (NATIVE, TUNED)])
    return doc


def _table_choices(points: list[dict], table_path: Path) -> list[dict]:
    """Without a profile, which algorithm served which calls is not measured: what the
    verified table chooses for each (approximate) point, by the drop-in's lookup rule, is
    the best that can be said (the drop-in may still refuse a call to native)."""
    from ..tune import table as tbl

    doc = tbl.load(table_path)
    rows = []
    for p in points:
        e = tbl.lookup(doc, prof.table_op(p["op"], p.get("form", "blocking")),
                       int(p["comm_size"]), int(p["bytes"]))
        rows.append({"op": prof.table_op(p["op"], p.get("form", "blocking")),
                     "comm_size": p["comm_size"], "bytes": p["bytes"],
                     "algorithm": e["algorithm"] if e else "native (not in the table)",
                     "segsize": int(e["segsize"]) if e else 0,
                     "calls": int(p.get("calls") or 0), "time_total_s": None})
    return rows


def _empty_table(build: MPIBuild, path: Path) -> dict:
    """A valid table with no entry (no point could be tuned): the tuned runs then go through
    the drop-in with everything native."""
    from ..core.mpi import describe_library
    from ..tune import table as tbl
    from ..tune.tune import build_library, machine_id

    mpi = {"build": build.name, **describe_library(build_library(build))}
    mpi.pop("library", None)
    from .. import __version__

    doc = {"schema": tbl.SCHEMA, "schema_version": tbl.SCHEMA_VERSION,
           "colltune_version": __version__, "created_at": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
           "machine": machine_id(), "mpi": mpi, "strategy": "none", "entries": []}
    tbl.write_table(doc, path)
    return doc


# -- the text report ------------------------------------------------------------------------


def _fmt(v: float | None, unit: str) -> str:
    if v is None:
        return "-"
    return f"{v:.4g} s" if unit == "s" else f"{v:.4g}"


def text_report(doc: dict) -> str:
    unit = doc["unit"]
    lines = [f"colltune app: {doc['command']} ({doc['ranks']} ranks, MPI "
             f"{doc['mpi'].get('implementation', doc['mpi'].get('build'))} "
             f"{doc['mpi'].get('version', '')}, {doc['placement']})",
             f"compared: {doc['repeat']} run(s) each, native and tuned alternately, after a "
             "discarded warm-up pair; "
             + (f"the metric {doc['metric']!r}" if doc["metric"] else "wall time")]
    lines.append(f"  {'variant':<8} {'median':>12}  {'95% interval':<26} n")
    for v in (NATIVE, TUNED):
        e = doc["variants"][v]
        interval = f"[{_fmt(e['lo'], unit)}, {_fmt(e['hi'], unit)}]"
        note = "" if e["exact"] else f" (covers {e['coverage']:.0%}: too few runs)"
        lines.append(f"  {v:<8} {_fmt(e['value'], unit):>12}  {interval:<26} {e['n']}{note}")
    sp = doc["speedup"]
    lines.append(f"speed-up ({doc['speedup_means']}): {sp['value']:.3f} "
                 f"[{sp['lo']:.3f}, {sp['hi']:.3f}]: {doc['verdict_text']}")
    lines += doc["warnings"]
    c = doc["collectives"]
    nt, ns = c["native_total"]
    tt, ts = c["tuned_total"]
    if nt is not None or tt is not None:
        lines.append("collective time a rank spent, and its share of the run (from the "
                     "profiles of one native and one tuned run):")
        lines.append(f"  {'operation':<22} {'calls':>7} {'native':>18} {'tuned':>18}")
        for op in sorted(set(c["native"]) | set(c["tuned"])):
            n, t = c["native"].get(op, {}), c["tuned"].get(op, {})
            lines.append(f"  {op:<22} {n.get('calls', t.get('calls', 0)):>7} "
                         f"{_share(n):>18} {_share(t):>18}")
        lines.append(f"  {'all collectives':<22} {'':>7} {_share({'time_s': nt, 'share': ns}):>18}"
                     f" {_share({'time_s': tt, 'share': ts}):>18}")
    else:
        ms = c.get("native_mpi_share")
        lines.append("collective time per operation: not measured (this drop-in writes no "
                     "collective profile)" + (f"; time in MPI, all calls: {ms:.1%} of the "
                                              "native run" if ms is not None else ""))
    pw = doc.get("program_wall") or {}
    if pw.get("native") is not None and pw.get("tuned") is not None:
        lines.append(f"the program's own time (MPI_Init to MPI_Finalize, slowest rank) in the "
                     f"profiled runs: native {pw['native']:.3f} s of {pw['native_run_s']:.3f} s "
                     f"launch to exit, tuned {pw['tuned']:.3f} s of {pw['tuned_run_s']:.3f} s")
    if doc["algorithms"]:
        lines.append("algorithms that served the calls (tuned run):"
                     if doc.get("algorithms_source") != "table" else
                     "algorithms the verified table chooses for those calls (no profile: not "
                     "measured):")
        for a in doc["algorithms"]:
            seg = f" seg {human_size(a['segsize'])}" if a["segsize"] else ""
            lines.append(f"  {a['op']:<22} {a['comm_size']:>3} ranks "
                         f"{human_size(a['bytes']):>8}: {a['algorithm']}{seg}, "
                         f"{a['calls']} call(s)")
    t = doc["tuning"]
    lines.append((f"the table {t['table']} given (--table), not tuned" if t.get("given") else
                  f"tuned {t['tuned']} of {t['points']} point(s) into {t['table']}")
                 + f"; verified: {t['corrections']} correction(s) -> {t['verified_table']}")
    for k in t["skipped"]:
        op, form, n, b = k["point"]
        lines.append(f"  not tuned: {prof.table_op(op, form)} {n} ranks {human_size(b)}: "
                     f"{k['reason']}")
    ld = doc["load"]
    if ld["max"] is not None:
        lines.append(f"load during the runs (1-minute average): {ld['min']:.2f} to "
                     f"{ld['max']:.2f} on {ld['cores']} core(s)")
    if ld["warning"]:
        lines.append(ld["warning"])
    return "\n".join(lines)


def _share(o: dict) -> str:
    """A rank's time in milliseconds and its share of the run, three digits each."""
    if not o or o.get("time_s") is None:
        return "-"
    share = f" ({o['share'] * 100:.3g}%)" if o.get("share") is not None else ""
    return f"{o['time_s'] * 1e3:.3g} ms{share}"
