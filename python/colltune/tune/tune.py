"""`colltune tune`: the autotuner of Vadhiyar, Fagg and Dongarra (seed paper sections 2-3).

For a grid of {operation, call form, process count, message size} it finds the best
{algorithm, segment size}, the native collective always a candidate, with a search strategy
from search.py (exhaustive, MGD, SMGD, pipeline, model-guided). Measurements come from one
`ct_bench --serve` job per {operation, form, process count}: the strategy asks for one
candidate at a time and mpiexec starts once. Every operation the drop-in serves can be tuned
(`--ops`), in the blocking, non-blocking and persistent forms (`--forms`: entries "bcast",
"ibcast", "bcast_init", each form timed from its start to its completion by ct_bench
--form). The table (docs/TABLE.md) is written after every grid point, so a killed run keeps
what it tuned and the next run with the same output resumes; `--export` writes the Open MPI
and MPICH rule files from it. `tune_points` tunes a given list of points within a time
budget (what `colltune app` calls).
"""

from __future__ import annotations

import argparse
import json
import os
import shlex
import statistics
import subprocess
import sys
import time
from pathlib import Path

from ..bench.bench import bench_bytes_per_rank
from ..core import stats
from ..core.args import (
    UsageError,
    add_db,
    add_output,
    add_ranks,
    check_memory,
    need,
    parse_counts,
    positive_int,
    split_list,
)
from ..core.colls import CLASSIC, COLLS
from ..core.files import Terminated
from ..core.mpi import MPIBuild, MPIError, describe_library, stop_process_group
from ..core.progress import ProgressBar
from ..core.units import human_size, parse_size
from ..model.validate import host_layout
from . import table as tbl

SEG_MIN = 1024
# A candidate replaces native only when it measured at least this much faster: measurements
# repeat within a few percent, so a smaller win is as likely noise, and keeping native then
# costs nothing (issue 8's goal: never more than 5% slower than native).
NATIVE_MARGIN = 0.05
# And it must do so again in this many more measurements of the two, alternated: one batch of
# iterations can be off by more than the margin (a page fault, a descheduled rank), and the
# strategy, having measured many candidates once, tends to pick the luckiest.
CONFIRM_ROUNDS = 2


class TuneError(RuntimeError):
    pass


def confirm_choice(evaluate, alg: str, seg: int, t: float, native: float, rounds: int,
                   margin: float, seed: int = 0) -> tuple[str, int, float, float, dict]:
    """The strategy's choice measured again against native in `rounds` interleaved rounds
    (each round both, in a fresh shuffled order: stats.interleaved_rounds), beside the
    strategy's own measurement of each. The choice stands where its median beats native's
    by `margin`, else native is kept. Returns (algorithm, segsize, its time, native's time,
    the record of the comparison: the speed-up native / choice with its 95% interval and the
    verdict that interval allows, 'tie' where it holds 1)."""
    runs, natives = [t], [native]
    for order in stats.interleaved_rounds(["native", "choice"], rounds, seed=seed):
        for who in order:
            if who == "native":
                natives.append(evaluate("native", 0))
            else:
                runs.append(evaluate(alg, seg))
    sp = stats.speedup(natives, runs)
    record = {"speedup": round(sp.value, 4), "speedup_lo": round(sp.lo, 4),
              "speedup_hi": round(sp.hi, 4), "verdict": stats.verdict(sp),
              "candidate": alg, "candidate_segsize": seg}
    t, native = statistics.median(runs), statistics.median(natives)
    if t * (1 + margin) > native:
        return "native", 0, native, native, record  # within the noise of native: keep it
    return alg, seg, t, native, record


class Server:
    """One `ct_bench --serve` job: candidates in, medians out."""

    def __init__(self, build: MPIBuild, op: str, ranks: int, max_size: int,
                 form: str = "blocking"):
        program = [str(build.tool("ct_bench")), "--op", op, "--min", "1", "--max",
                   str(max(max_size, 8)), "--serve",  # the barrier's size is 0 whatever they say
                   *(["--form", form] if form != "blocking" else [])]
        self.cmd = build.launch_command(ranks, program, bind=True)
        self.proc = subprocess.Popen(self.cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                     stderr=subprocess.PIPE, text=True, bufsize=1,
                                     env={**os.environ, **build.launch_env(ranks)},
                                     start_new_session=True)
        self.calls = 0
        self.last: dict = {}

    def evaluate(self, alg: str, segsize: int, size: int, iters: int) -> float:
        self.proc.stdin.write(f"{alg} {segsize} {size} {iters}\n")
        self.proc.stdin.flush()
        line = self.proc.stdout.readline()
        if not line:
            err = self.proc.stderr.read()[-800:]
            raise TuneError(f"the measurement job ended: {shlex.join(self.cmd)}\n{err}")
        r = json.loads(line)
        if "error" in r or not r.get("ok", True):
            raise TuneError(f"{alg} segsize {segsize} at {size} B: {r.get('error', 'failed')}")
        self.calls += 1
        self.last = r  # the whole answer: median, min and max over the iterations
        return float(r["median_us"])

    def close(self) -> None:
        try:
            self.proc.stdin.write("quit\n")
            self.proc.stdin.close()
            self.proc.wait(timeout=30)
        except (OSError, ValueError, subprocess.TimeoutExpired):
            stop_process_group(self.proc, 5)


def methods_for(registry: list[dict], op: str, size: int,
                one_node: bool = True, form: str = "blocking") -> dict[str, list[int]]:
    """Every algorithm of op (native included) and the segment sizes worth trying at size:
    0 (unsegmented: the whole message at once), then 1 KiB, 2 KiB, ... below the message.
    Across nodes (one_node False) the shared-memory family is left out: its ranks must share
    memory, and ct_bench refuses it there. So are, for the non-blocking and persistent forms,
    the algorithms that serve blocking calls only (the engine refuses them there)."""
    out = {}
    for a in registry:
        if a["coll"] != op or (a["shared_memory"] and not one_node):
            continue
        if form != "blocking" and a.get("blocking_only"):
            continue
        if a["segmentable"] and size > SEG_MIN:
            segs, s = [], SEG_MIN
            while s < size:
                segs.append(s)
                s *= 2
            out[a["name"]] = [0, *segs]
        else:
            out[a["name"]] = [0]
    return out


def parse_ranks(text: str | None, cores: int) -> list[int]:
    """'2-16', '4,8,16' or '2-4,8': process counts, each at least 1 (UsageError if not)."""
    if not text:
        return list(range(2, max(2, cores) + 1))
    return parse_counts(text, "--ranks")


def parse_sizes(text: str | None, reduced: bool) -> list[int]:
    """'8-4M', '64K' or a comma list of either: the powers of two between (UsageError if not
    sizes in order)."""
    from .search import grid_sizes, reduced_sizes

    if text:
        out: set[int] = set()
        for part in split_list(text, "--sizes", what="size"):
            lo, _, hi = part.partition("-")
            try:
                a, b = parse_size(lo), parse_size(hi or lo)
            except ValueError as e:
                raise UsageError(f"--sizes '{text}': {e}") from None
            need(1 <= a <= b, f"--sizes '{text}': allowed MIN-MAX with 1 B <= MIN <= MAX "
                              "(e.g. 8-4M)")
            out.update(grid_sizes(a, b))
        return sorted(out)
    return reduced_sizes() if reduced else grid_sizes(8, 4 << 20)


def machine_id() -> dict:
    model = ""
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                model = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    return {"hostname": os.uname().nodename, "cpu_model": model,
            "logical_cores": os.cpu_count() or 1}


def register(sub: argparse._SubParsersAction) -> None:
    from .search import STRATEGIES

    p = sub.add_parser("tune", help="find the best algorithm and segment size per operation, "
                                    "process count and size; write the tuning table")
    p.add_argument("--strategy", choices=sorted(STRATEGIES), default="model",
                   help="how to search the algorithms and segment sizes (default model)")
    p.add_argument("--ops", default=",".join(CLASSIC),
                   help="operations (default: the classic eight; 'all', or any of "
                        f"{', '.join(COLLS)})")
    p.add_argument("--forms", default="blocking",
                   help="call forms to tune, a comma list of blocking, nonblocking, persistent "
                        "(default blocking; table entries bcast, ibcast, bcast_init)")
    add_ranks(p, "process counts, e.g. 2-16 or 4,8,16 (default: 2 to the cores)",
              default=None)
    p.add_argument("--sizes", default=None,
                   help="sizes: a range MIN-MAX, the powers of two between, e.g. 8-4M, or a "
                        "comma list of sizes and ranges (K, M and G are binary: 4M = 4 MiB) "
                        "(default: 8-4M)")
    p.add_argument("--reduced", action="store_true",
                   help="the reduced primary grid (looked up between points at run time)")
    p.add_argument("--from-monitor", default=None, metavar="FILE",
                   help="tune only the (op, ranks, size) calls listed in a JSON file "
                        "([{'op':..,'ranks':..,'size_bytes':..}, ...]) from a monitored run")
    p.add_argument("--iters", type=positive_int, default=20,
                   help="timed iterations a candidate")
    p.add_argument("--top", type=positive_int, default=3,
                   help="model strategy: candidates measured")
    p.add_argument("--confirm", type=int, default=CONFIRM_ROUNDS,
                   help="a candidate that beat native is measured this many more times "
                        f"against it, alternately (default {CONFIRM_ROUNDS})")
    p.add_argument("--margin", type=float, default=NATIVE_MARGIN,
                   help="keep native unless a candidate measured this fraction faster "
                        f"(default {NATIVE_MARGIN}; 0: the plain minimum)")
    p.add_argument("--p2p", default="p2p.json", help="model strategy: the p2p costs")
    add_output(p, "the tuning table to write (default colltune-table.json); an existing "
                  "table this run would not just resume (another grid, strategy or MPI, or a "
                  "table `colltune verify` checked) is refused unless --force",
               default="colltune-table.json")
    p.add_argument("--export", default=None, help="also write ompi, ompi-json and/or mpich "
                                                   "rule files (comma list)")
    p.add_argument("--mpi", help="mpich, openmpi, intelmpi or system "
                                 "(default: $COLLTUNE_MPI or mpich)")
    p.add_argument("--no-record", action="store_true", help="do not record the run in the store")
    p.add_argument("--force", action="store_true",
                   help="run even when the buffers would not fit in the free memory, and "
                        "replace an existing table at --output")
    add_db(p)
    p.set_defaults(func=cmd_tune)


def replaced_table(path: str, points: list[tuple[str, int, int]], strategy: str,
                   build_name: str) -> str | None:
    """Why tuning `points` into `path` would lose what the file at `path` holds (None: no
    file, or a table of this strategy and MPI whose points are all among `points`, which the
    run resumes). A table verified by `colltune verify` (make run's colltune-table.json) or
    with entries outside the grid is never replaced silently: the user tuned or checked it."""
    if not Path(path).exists():
        return None
    try:
        old = tbl.load(path)
    except tbl.TableFileError:
        return "is not a colltune table"
    if old.get("verified"):
        return "is a table checked by `colltune verify`"
    if old.get("strategy") != strategy or old["mpi"].get("build") != build_name:
        return (f"was tuned with another strategy or MPI ({old.get('strategy')}, "
                f"{old['mpi'].get('build')})")
    wanted = set(points)
    lost = [e for e in old.get("entries", [])
            if (e["op"], e["ranks"], e["size_bytes"]) not in wanted]
    if lost:
        ops = sorted({e["op"] for e in lost})
        return f"holds {len(lost)} entries outside this grid ({', '.join(ops)})"
    return None


def load_previous(path: str, strategy: str, mpi: dict) -> dict:
    """The entries of an earlier run of the same strategy and MPI at `path`, to resume."""
    try:
        old = tbl.load(path)
    except tbl.TableFileError:
        return {}  # none, or not one to resume: tuned again from scratch
    if old.get("strategy") != strategy or old["mpi"].get("build") != mpi.get("build"):
        return {}
    return {(e["op"], e["ranks"], e["size_bytes"]): e for e in old.get("entries", [])}


def run_tuning(build: MPIBuild, registry: list[dict], points: list[tuple[str, int, int]],
               strategy_name: str, *, output: str, iters: int, predict_model=None,
               top: int = 3, margin: float = NATIVE_MARGIN,
               confirm: int = CONFIRM_ROUNDS, on_point=None,
               deadline: float | None = None) -> tuple[dict, int, float, str]:
    """Tunes every (op, ranks, size) point in the given order (op: the table's name, which
    says the form: bcast, ibcast, bcast_init), resuming what `output` already holds for the same
    strategy and MPI, writing the table after each point. A choice other than native is
    measured `confirm` more times alternately with native, and must beat native's median by
    `margin` (a fraction), else native is kept. `on_point(doc, done, total)`, if given, is
    called once the MPI is known and after every point. With a deadline (time.monotonic()),
    no point starts after it (status "budget"). (doc, measurements, seconds, status:
    complete, budget, interrupted or failed)."""
    from .search import STRATEGIES

    mpi = {"build": build.name, **describe_library(build_library(build))}
    mpi.pop("library", None)
    done = load_previous(output, strategy_name, mpi)
    doc = {"schema": tbl.SCHEMA, "schema_version": tbl.SCHEMA_VERSION,
           "colltune_version": _version(),
           "created_at": time.strftime("%Y-%m-%dT%H:%M:%S%z"), "machine": machine_id(),
           "mpi": mpi, "strategy": strategy_name, "entries": []}
    todo = [p for p in points if p not in done]
    doc["entries"] = [done[p] for p in points if p in done]
    if done:
        prev = tbl.load(output)
        doc["elapsed_s"], doc["measurements"] = prev.get("elapsed_s", 0), prev.get(
            "measurements", 0)
    if done:
        print(f"colltune tune: resuming {output}: {len(points) - len(todo)} of "
              f"{len(points)} points already tuned", file=sys.stderr)
    strategy = STRATEGIES[strategy_name]
    bar = ProgressBar(f"tune ({strategy_name})")
    started = time.monotonic()
    status, evaluations = "complete", 0
    servers: dict[tuple[str, int], Server] = {}
    proxies: dict[tuple[str, str], Server] = {}
    try:
        if on_point:
            on_point(doc, len(points) - len(todo), len(points))
        for i, (name, n, size) in enumerate(todo):
            if deadline is not None and time.monotonic() >= deadline:
                status = "budget"
                break
            op, form = tbl.split_op(name)
            key = (name, n)
            if key not in servers:
                for s in servers.values():
                    s.close()
                servers.clear()
                max_size = max(p[2] for p in todo if p[0] == name and p[1] == n)
                servers[key] = Server(build, op, n, max_size, form)
            server = servers[key]
            nodes = host_layout(build, n)  # None: every rank on one host
            methods = methods_for(registry, op, size, one_node=nodes is None, form=form)

            def evaluate(alg, seg, _size=size, _server=server):
                return _server.evaluate(alg, seg, _size, iters)

            opts = {}
            if predict_model is not None:
                opts["predict"] = (lambda alg, seg, _op=op, _size=size, _n=n, _nodes=nodes:
                                   float("inf") if alg == "native" else
                                   predict_model.predict(_op, alg, _size, _n, segsize=seg,
                                                         nodes=_nodes)["predicted_us"])
                opts["top"] = top
            if strategy_name == "pipeline":
                # The paper's pipeline trick: segment sizes from a chain along the tree's
                # longest edge on a few ranks (3 here), not from the whole tree.
                pkey = (name, "proxy")
                if pkey not in proxies:
                    proxies[pkey] = Server(build, op, min(n, 3), max(p[2] for p in todo
                                                                     if p[0] == name), form)
                has_chain = "chain" in methods

                def proxy_eval(alg, seg, _size=size, _proxy=proxies[pkey], _chain=has_chain):
                    return _proxy.evaluate("chain" if _chain and seg else alg, seg, _size,
                                           iters)

                opts["evaluate_pipeline"] = proxy_eval
            res = strategy(methods, evaluate, **opts)
            spent = res.evaluations
            native = res.evaluated.get(("native", 0))
            alg, seg, t = res.algorithm, res.segsize, res.time_us
            confidence = {}
            if alg != "native" and native is not None:
                alg, seg, t, native, confidence = confirm_choice(
                    evaluate, alg, seg, t, native, confirm, margin, seed=i)
                spent += 2 * confirm
            evaluations += spent
            doc["entries"].append({"op": name, "ranks": n, "size_bytes": size,
                                   "algorithm": alg, "segsize": seg,
                                   "time_us": round(t, 3),
                                   "native_us": None if native is None else round(native, 3),
                                   "evaluations": spent, **confidence})
            tbl.write_table(doc, output)
            bar.update(i + 1, len(todo))
            if on_point:
                on_point(doc, len(points) - len(todo) + i + 1, len(points))
    except Terminated:
        status = "terminated"
    except KeyboardInterrupt:
        status = "interrupted"
    except TuneError as e:
        status = "failed"
        print(f"\ncolltune tune: {e}", file=sys.stderr)
    finally:
        for s in (*servers.values(), *proxies.values()):
            s.close()
        bar.done()
    elapsed = time.monotonic() - started
    doc["elapsed_s"] = round(doc.get("elapsed_s", 0) + elapsed, 3)  # over resumed runs too
    doc["measurements"] = doc.get("measurements", 0) + evaluations
    tbl.write_table(doc, output)
    return doc, evaluations, elapsed, status


def tune_points(build: MPIBuild, points: list[dict], *, output: str,
                budget_s: float | None = None, strategy: str = "smgd", iters: int = 20,
                margin: float = NATIVE_MARGIN, confirm: int = CONFIRM_ROUNDS,
                on_point=None) -> tuple[dict, str]:
    """Tunes exactly the given points, in the given order, into the table `output` (resumed
    if it holds some of them from the same strategy and MPI): each point a dict
    {"op": "bcast", "form": "blocking" | "nonblocking" | "persistent", "comm_size": 2,
    "bytes": 1024}, the barrier's bytes taken as 0. No point starts once budget_s seconds
    have passed (None: no limit). Every choice other than native is confirmed against native
    as `colltune tune` does. Returns (the table document, status: complete, budget,
    interrupted or failed). Raises ValueError for a point that is not one of those."""
    from .search import STRATEGIES

    if strategy not in STRATEGIES or strategy == "model":
        raise ValueError(f"strategy {strategy!r}: one of "
                         f"{', '.join(sorted(set(STRATEGIES) - {'model'}))}")
    todo: list[tuple[str, int, int]] = []
    for i, p in enumerate(points):
        op, form = p.get("op"), p.get("form", "blocking")
        if op not in COLLS or form not in tbl.FORMS:
            raise ValueError(f"point {i}: op {op!r} form {form!r}: op one of "
                             f"{', '.join(COLLS)}, form one of {', '.join(tbl.FORMS)}")
        n, size = int(p["comm_size"]), 0 if op == "barrier" else int(p["bytes"])
        if n < 1 or size < 0:
            raise ValueError(f"point {i}: comm_size {n} and bytes {size}: need >= 1 and >= 0")
        todo.append((tbl.table_op(op, form), n, size))
    todo = list(dict.fromkeys(todo))  # a point named twice is tuned once
    deadline = None if budget_s is None else time.monotonic() + budget_s
    doc, _, _, status = run_tuning(build, build.registry(), todo, strategy, output=output,
                                   iters=iters, margin=margin, confirm=confirm,
                                   on_point=on_point, deadline=deadline)
    return doc, status


def cmd_tune(args: argparse.Namespace) -> int:

    if not 0 <= args.margin < 1:
        print(f"colltune tune: --margin {args.margin} is not a fraction in [0, 1)",
              file=sys.stderr)
        return 2
    if args.confirm < 0:
        print(f"colltune tune: --confirm {args.confirm} is negative", file=sys.stderr)
        return 2
    try:
        build = MPIBuild.select(args.mpi)
        registry = build.registry()
        ops = (list(COLLS) if args.ops.strip() == "all" else
               split_list(args.ops, "--ops", list(COLLS), "operation"))
        forms = split_list(args.forms, "--forms", list(tbl.FORMS), "form")
        names = [tbl.table_op(op, f) for f in forms for op in ops]
        if args.from_monitor:
            calls = json.loads(Path(args.from_monitor).read_text())
            points = sorted({(c["op"], int(c["ranks"]), int(c["size_bytes"])) for c in calls
                             if c["op"] in names})
        else:
            ranks = parse_ranks(args.ranks, os.cpu_count() or 1)
            sizes = parse_sizes(args.sizes, args.reduced)
            points = [(name, n, 0 if tbl.split_op(name)[0] == "barrier" else s)
                      for name in names for n in ranks
                      for s in (sizes if tbl.split_op(name)[0] != "barrier" else [0])]
            points = list(dict.fromkeys(points))
        if not points or min(p[1] for p in points) < 1:
            raise ValueError("nothing to tune")
        for op in ops:
            sized = [p for p in points if tbl.split_op(p[0])[0] == op]
            if sized:
                n = max(p[1] for p in sized)
                check_memory(bench_bytes_per_rank(op, max(p[2] for p in sized), n), n,
                             args.force, f"tuning {op} up to "
                             f"{human_size(max(p[2] for p in sized))} on {n} ranks")
    except (MPIError, ValueError, OSError, KeyError) as e:
        print(f"colltune tune: {e}", file=sys.stderr)
        return 2
    if not args.force:
        why = replaced_table(args.output, points, args.strategy, build.name)
        need(why is None, f"{args.output} exists and {why}: tuning would replace it; "
                          "give another -o FILE, or --force to replace it")
    store = run = None
    if not args.no_record:
        # The record exists from the start (a damaged store is refused before any tuning),
        # says how far the tuning got as it goes, and a rerun of the same command resumes it.
        from ..store.store import Store

        store = Store.open()
        argv = sys.argv[1:]
        resumed = store.resumable_run("tune", argv)
        run = (store.resume_run(resumed) if resumed else
               store.begin_run("tune", argv, ranks=max(p[1] for p in points), binding="core"))
    predict_model = None
    if args.strategy == "model":
        from ..model.model import Model, load_p2p

        try:
            if not Path(args.p2p).exists():
                from ..p2p.p2p import measure_p2p

                print(f"colltune tune: {args.p2p} not found: measuring it first (quick)",
                      file=sys.stderr)
                measure_p2p(build, quick=True, output=args.p2p)
            # across hosts the model needs the p2p file's between-hosts layer too
            across = any(host_layout(build, p[1]) is not None for p in points)
            predict_model = Model.from_p2p(build, load_p2p(args.p2p), hosts=across)
        except Exception as e:  # noqa: BLE001 - any failure here is the model's, said plainly
            print(f"colltune tune: the model strategy needs point-to-point costs: {e}",
                  file=sys.stderr)
            if run:
                run.finish("failed", f"the model strategy needs point-to-point costs: {e}")
            return 2
    started = time.monotonic()
    meta_set: list[bool] = []

    def on_point(doc: dict, done: int, total: int) -> None:
        if run:
            if not meta_set:
                run.set_meta(mpi={**doc["mpi"]})
                meta_set.append(True)
            last = doc["entries"][-1] if doc["entries"] else None
            where = (f"; last {last['op']} {last['ranks']} ranks {human_size(last['size_bytes'])}"
                     if last else "")
            run.progress(f"tuned {done} of {total} points into {args.output}{where} "
                         f"({time.monotonic() - started:.1f} s this session)")

    try:
        doc, evaluations, elapsed, status = run_tuning(
            build, registry, points, args.strategy, output=args.output, iters=args.iters,
            predict_model=predict_model, top=args.top, margin=args.margin,
            confirm=args.confirm, on_point=on_point)
    except BaseException as e:
        if run:
            run.finish("failed", f"{type(e).__name__}: {e}")
        raise
    print(summary(doc, evaluations, elapsed))
    if args.export and doc["entries"]:
        for fmt in args.export.split(","):
            path = export_table(doc, fmt.strip(), args.output)
            print(f"exported {fmt.strip()}: {path}")
    reasons = {"interrupted": "interrupted by SIGINT (Ctrl-C)",
               "terminated": "terminated by SIGTERM", "failed": "a measurement failed"}
    if run:
        run.add_bench(tune_bench(doc, evaluations, elapsed, args.output))
        where = f"{len(doc['entries'])} of {len(points)} points tuned"
        run.finish("complete" if status == "complete" else
                   "failed" if status == "failed" else "interrupted",
                   None if status == "complete" else f"{reasons[status]}; {where}; "
                   "run the same command again to resume")
        print(f"recorded as run {run.id} in {store.path}")
        store.close()
    print(f"table: {args.output}")
    if status in ("interrupted", "terminated"):
        print("colltune tune: interrupted; run the same command again to resume",
              file=sys.stderr)
    return {"complete": 0, "interrupted": 130, "terminated": 143}.get(status, 1)


def build_library(build: MPIBuild) -> str:
    """MPI_Get_library_version's first line, from a one-rank ct_bench run of nothing."""
    import tempfile

    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "b.jsonl"
        cmd = build.launch_command(1, [str(build.tool("ct_bench")), "--op", "barrier",
                                       "--iters", "1", "--json", str(out)], bind=False)
        subprocess.run(cmd, capture_output=True, text=True, timeout=120,
                       env={**os.environ, **build.launch_env(1)})
        try:
            return json.loads(out.read_text().splitlines()[0])["mpi"]["library"]
        except (OSError, ValueError, IndexError, KeyError):
            return ""


def _version() -> str:
    from .. import __version__

    return __version__


def export_table(doc: dict, fmt: str, output: str) -> str:
    from ..core.files import write_atomic
    from .export import FORMATS

    suffixes = {"ompi": ".ompi-rules.txt", "ompi-json": ".ompi-rules.json",
                "mpich": ".mpich-selection.json"}
    if fmt not in FORMATS:
        raise SystemExit(f"colltune tune: unknown export format {fmt} "
                         f"({', '.join(FORMATS)})")
    path = str(Path(output).with_suffix("")) + suffixes[fmt]
    write_atomic(path, FORMATS[fmt](doc))
    return path


def summary(doc: dict, evaluations: int, elapsed: float) -> str:
    entries = doc["entries"]
    wins = [e for e in entries if e["algorithm"] != "native" and e.get("native_us")]
    gains = [e["native_us"] / e["time_us"] for e in wins if e["time_us"] > 0]
    lines = [f"tuned {len(entries)} point(s) with {doc['strategy']} in {elapsed:.2f} s, "
             f"{evaluations} measurement(s) this run; colltune chosen at {len(wins)} point(s)"
             + (f", speed-up (native / colltune) {min(gains):.2f} to {max(gains):.2f} there"
                if gains else "")]
    for e in entries[:12]:
        seg = f" seg {human_size(e['segsize'])}" if e["segsize"] else ""
        # The confirmation's speed-up (native / the strategy's candidate) with its interval:
        # a verdict only where the interval excludes 1.
        conf = (f"; {e['candidate']} speed-up {e['speedup']:.2f} [{e['speedup_lo']:.2f}, "
                f"{e['speedup_hi']:.2f}], {stats.verdict_text(e['verdict'])}"
                if "speedup" in e else "")
        lines.append(f"  {e['op']:<10} {e['ranks']:>4} ranks {human_size(e['size_bytes']):>9}: "
                     f"{e['algorithm']}{seg} {e['time_us']:.1f} us{conf}")
    if len(entries) > 12:
        lines.append(f"  ... {len(entries) - 12} more in the table")
    return "\n".join(lines)


def tune_bench(doc: dict, evaluations: int, elapsed: float, output: str | None = None) -> dict:
    # `output`: where the table was written, absolute, so that the report can name the
    # table to use and the line that uses it.
    where = {"output": os.path.abspath(output)} if output else {}
    return {"schema": "colltune-bench/1", "op": "tune", "tune": {**doc, "evaluations":
                                                               evaluations, "elapsed_s": elapsed,
                                                               **where},
            "results": [{"algorithm": e["algorithm"], "size": e["size_bytes"],
                         "ranks_used": e["ranks"], "median_us": e["time_us"],
                         "native_us": e["native_us"], "op_tuned": e["op"]}
                        for e in doc["entries"]]}
