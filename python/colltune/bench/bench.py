"""Collective benchmarks: the verbs `algorithms`, `preload` and `bench`, and the benchmark
loop (`run_bench`) that `run`, `validate-model` and the tuner use."""

from __future__ import annotations

import argparse
import json
import os
import shlex
import subprocess
import sys
import tempfile
import threading
from pathlib import Path

from ..core.args import (
    MAX_COUNT,
    JsonFlag,
    add_algs,
    add_db,
    add_ops,
    add_output,
    add_ranks,
    add_size_range,
    byte_size,
    check_memory,
    count_int,
    int_type,
    need,
    positive_int,
    split_list,
)
from ..core.colls import COLLS, MOVEMENT, REDUCTIONS, SIZE_MEANING
from ..core.files import Terminated, write_atomic
from ..core.mpi import MPIBuild, MPIError, describe_library, stop_process_group
from ..core.progress import ProgressBar
from ..core.stats import (
    cores,
    load_average,
    load_warning,
    sample_blocks,
    spread_warning,
    verdict_text,
    versus_native,
)
from ..core.units import human_size

# Interleaved rounds per size (issue 39): ten give a 95% order-statistic interval of the
# median that is not the whole range ([2nd, 9th] of ten), and spread the same iterations
# as one sequential pass, so a bench takes about as long as before.
ROUNDS = 10


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("algorithms", help="list the algorithm registry")
    add_ops(p, "only these operations' algorithms (comma-separated; default: all)")
    p.add_argument("--mpi", help="mpich, openmpi, intelmpi or system "
                                 "(default: $COLLTUNE_MPI or mpich)")
    p.add_argument("--json", action="store_true", help="print the registry as JSON")
    p.add_argument("--markdown", action="store_true",
                   help="print the registry as the table of docs/ALGORITHMS.md")
    p.set_defaults(func=cmd_algorithms)

    p = sub.add_parser("preload", help="print the path of the drop-in library (LD_PRELOAD)")
    p.add_argument("--mpi", help="mpich, openmpi, intelmpi or system "
                                 "(default: $COLLTUNE_MPI or mpich)")
    p.set_defaults(func=cmd_preload)

    p = sub.add_parser("bench", help="OSU-style latency benchmark of a collective")
    bench_arguments(p, max_size="4M", iters=0)
    add_ops(p, "the operation to benchmark (one; needed)", one=list(COLLS), dest="op")
    add_algs(p, "comma-separated algorithms, 'native' for MPI's own (default: all)",
             default="all")
    add_output(p, "also write the results (colltune-bench/1 JSON) to FILE")
    p.add_argument("--json", action=JsonFlag,
                   help="print the results as JSON on stdout instead of the table (with a "
                        "FILE: the older spelling of -o FILE)")
    p.set_defaults(func=cmd_bench)



def bench_arguments(p: argparse.ArgumentParser, max_size: str, iters: int) -> None:
    p.add_argument("--mpi", help="mpich, openmpi, intelmpi or system "
                                 "(default: $COLLTUNE_MPI or mpich)")
    add_ranks(p, "MPI ranks (default: all cores, one rank per core)", type=positive_int,
              default=os.cpu_count() or 1)
    add_size_range(p, "8", max_size, "the size of the message (bcast), the vector (reduce, "
                                     "allreduce) or one rank's block (scatter, gather, "
                                     "allgather, alltoall); the barrier has no size")
    p.add_argument("--iters", type=count_int, default=iters,
                   help="timed iterations per size (default: "
                        + (f"{iters})" if iters else "20 to 1000 by size)"))
    p.add_argument("--rounds", type=int_type(1, 1000), default=ROUNDS,
                   help=f"interleaved rounds per size (default {ROUNDS}): each round times "
                        "every algorithm once in a fresh shuffled order, the iterations "
                        "spread over the rounds; the 95%% intervals rest on the rounds' medians")
    p.add_argument("--warmup", type=count_int, default=0,
                   help="untimed iterations before each size (default 0: a tenth of --iters, "
                        "at least 2)")
    p.add_argument("--segsize", type=byte_size, default=None,
                   help="segment size for segmentable algorithms (default: theirs)")
    p.add_argument("--radix", type=int_type(0, 1024), default=0,
                   help="k-nomial radix, 2 or more (default 0: the algorithm's, 4)")
    p.add_argument("--root", type=count_int, default=0,
                   help="root of bcast, reduce, scatter and gather (default 0)")
    p.add_argument("--no-bind", action="store_true", help="do not pin ranks to cores")
    p.add_argument("--no-check", action="store_true",
                   help="skip the one-off comparison of each algorithm's result with native")
    p.add_argument("--no-record", action="store_true", help="do not record the run in the store")
    p.add_argument("--force", action="store_true",
                   help="run even when the buffers would not fit in the free memory")
    add_db(p)


def bench_bytes_per_rank(op: str, max_size: int, ranks: int) -> int:
    """About what one rank of a bench of `op` up to `max_size` allocates: ct_bench's send,
    receive and reference buffers (N blocks each for the data-movement operations) and up to
    two more of the same size inside the collectives."""
    if op == "barrier":
        return 0
    esize = 8 if op in REDUCTIONS else 1
    buffer = (max_size + esize) * (ranks if op in MOVEMENT else 1)
    return 5 * buffer


def check_bench_args(args: argparse.Namespace, ops: list[str], build: MPIBuild,
                     algs: str | None = None) -> None:
    """Everything about a bench or run that can be known wrong before launching it
    (UsageError): sizes in order and in range, the root inside the communicator, the
    algorithm names, the memory the buffers take."""
    need(args.min <= args.max,
         f"--min {human_size(args.min)} is larger than --max {human_size(args.max)}; "
         "allowed: --min <= --max")
    sized = [op for op in ops if op != "barrier"]
    if sized:
        limit = MAX_COUNT * (8 if set(sized) <= set(REDUCTIONS) else 1)
        need(args.max <= limit,
             f"--max {human_size(args.max)}: a message of more than {MAX_COUNT} elements "
             f"(2 GiB - 1 bytes) cannot be counted by MPI; allowed: up to {human_size(limit)}")
    if any(op in ("bcast", "reduce", "scatter", "gather") for op in ops):
        need(args.root < args.ranks,
             f"--root {args.root} is not a rank of {args.ranks}; allowed: 0 to {args.ranks - 1}")
    need(args.radix in (0,) or args.radix >= 2,
         f"--radix {args.radix}: allowed 0 (the algorithm's default) or 2 and more")
    if algs is not None:
        names = [a["name"] for a in build.registry() if a["coll"] == ops[0]]
        if algs != "all":
            items = [t.strip() for t in algs.split(",")]
            need(all(items), f"--algs '{algs}': an empty name in the list; give 'all' or "
                             f"comma-separated {ops[0]} algorithms: {', '.join(names)}")
            bad = [t for t in items if t not in names]
            need(not bad, f"--algs: unknown {ops[0]} algorithm '{bad[0] if bad else ''}'; "
                          f"allowed: all, {', '.join(names)}")
    per_rank = max(bench_bytes_per_rank(op, args.max, args.ranks) for op in ops)
    check_memory(per_rank, args.ranks, getattr(args, "force", False),
                 f"--max {human_size(args.max)} on {args.ranks} ranks")


def cmd_algorithms(args: argparse.Namespace) -> int:
    try:
        reg = MPIBuild.select(args.mpi).registry()
    except MPIError as e:
        print(f"colltune: {e}", file=sys.stderr)
        return 2
    if args.ops:
        ops = split_list(args.ops, "--ops", list(COLLS), "operation")
        reg = [a for a in reg if a["coll"] in ops]
    if args.json:
        print(json.dumps(reg, indent=2))
        return 0
    if args.markdown:
        print(registry_markdown(reg), end="")
        return 0
    print(registry_text(reg), end="")
    return 0


def registry_text(reg: list[dict]) -> str:
    """`colltune algorithms`' table: each column as wide as its longest cell, two spaces
    between columns, so that no two cells run together whatever the registry holds."""
    rows = [("collective", "algorithm", "properties", "summary")]
    for a in reg:
        props = [k for k in ("segmentable", "needs_commutative", "takes_radix", "native",
                             "hierarchical", "shared_memory") if a.get(k)]
        if a["default_segsize"]:
            props.append(f"segment {human_size(a['default_segsize'])}")
        rows.append((a["coll"], a["name"], ", ".join(props), a["summary"]))
    widths = [max(len(r[i]) for r in rows) for i in range(3)]
    return "".join("  ".join(c.ljust(w) for c, w in zip(r[:3], widths, strict=True))
                   + "  " + r[3] + "\n" for r in rows)


def cmd_preload(args: argparse.Namespace) -> int:
    try:
        print(MPIBuild.select(args.mpi).tool("libcolltune_pmpi.so"))
    except MPIError as e:
        print(f"colltune: {e}", file=sys.stderr)
        return 2
    return 0


def registry_markdown(reg: list[dict]) -> str:
    """docs/ALGORITHMS.md's table; a test keeps the file equal to this."""
    lines = ["| collective | algorithm | segmentable | default segment | commutative op only "
             "| radix | summary |", "|---|---|---|---|---|---|---|"]
    for a in reg:
        seg = human_size(a["default_segsize"]) if a["default_segsize"] else "-"
        lines.append(
            f"| {a['coll']} | `{a['name']}` | {'yes' if a['segmentable'] else 'no'} | {seg} "
            f"| {'yes' if a['needs_commutative'] else 'no'} "
            f"| {'yes' if a['takes_radix'] else '-'} | {a['summary']} |")
    return "\n".join(lines) + "\n"


def run_bench(build: MPIBuild, op: str, args: argparse.Namespace, algs: str = "all",
              progress_label: str = "", sink=None) -> dict:
    """Runs ct_bench under mpiexec; returns the benchmark document (colltune-bench/1).

    Results arrive as JSON Lines while the benchmark runs; `sink(header, results)`, if
    given, gets each new batch as a size finishes (header: the document without results),
    so a store can keep them even if this process is killed. Ctrl-C or SIGTERM raise
    BenchInterrupted and a dead rank or launcher BenchFailed, each with everything measured
    (the document, "complete": false).
    """
    with tempfile.TemporaryDirectory(prefix="colltune-bench-") as tmp:
        out = Path(tmp) / "bench.jsonl"
        program = [str(build.tool("ct_bench")), "--op", op, "--algs", algs,
                   "--min", str(args.min), "--max", str(args.max), "--iters", str(args.iters),
                   "--warmup", str(args.warmup), "--root", str(args.root),
                   "--radix", str(args.radix), "--progress", "--json", str(out),
                   "--rounds", str(getattr(args, "rounds", 1)),
                   "--binding", build.binding_label(args.ranks, not args.no_bind)]
        if args.segsize:
            program += ["--segsize", str(args.segsize)]
        if getattr(args, "segsizes", None):  # each segmentable algorithm once per size
            program += ["--segsizes", ",".join(str(s) for s in args.segsizes)]
        if not args.no_check:
            program.append("--check")
        cmd = build.launch_command(args.ranks, program, bind=not args.no_bind)
        if args.ranks > (os.cpu_count() or 1):
            print(f"colltune: {args.ranks} ranks on {os.cpu_count()} cores: oversubscribed, "
                  "the ranks are not pinned and the timings say little", file=sys.stderr)
        bar = ProgressBar(progress_label or f"bench {op}")
        tail = JsonlTail(out, op)
        load = {"before": load_average(), "during": [], "cores": cores()}
        if (early := load_warning(load["before"], load["cores"])) is not None:
            print(f"colltune: {early}", file=sys.stderr)  # said before the wait, not only after

        def feed() -> None:
            new = tail.read()
            if sink and tail.header is not None and (new or not tail.fed):
                sink(tail.header, new)
                tail.fed = True

        def partial() -> dict:
            feed()
            doc = tail.document()
            doc["complete"] = False
            doc["command"] = shlex.join(cmd)
            doc["load"] = load_summary(load, doc["results"])
            return doc

        stdout: list[str] = []
        errors: list[str] = []
        proc = None
        try:
            proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                    text=True, env={**os.environ, **build.launch_env(args.ranks)},
                                    start_new_session=True)
            t = threading.Thread(target=lambda: stdout.extend(proc.stdout), daemon=True)
            t.start()
            for line in proc.stderr:
                parts = line.split()
                if len(parts) == 3 and parts[0] == "progress":
                    load["during"].append(load_average())
                    feed()
                    bar.update(int(parts[1]), int(parts[2]))
                else:
                    errors.append(line)
            rc = proc.wait()
            t.join()
        except KeyboardInterrupt as e:
            if proc:
                stop_process_group(proc)
            bar.done()
            raise BenchInterrupted(partial(), isinstance(e, Terminated)) from None
        bar.done()
        if rc not in (0, 3):  # 3: ran to the end, some result differed from native
            doc = partial()
            text = "".join(stdout) + "".join(errors)
            why = rank_death(text, doc.get("rank_pids") or [])
            raise BenchFailed(doc, f"{why or f'benchmark failed (exit {rc})'}; kept "
                                   f"{len(doc['results'])} results measured before "
                                   f"(command: {shlex.join(cmd)})",
                              "".join(errors[-20:]))
        feed()
        doc = tail.document()
        doc["complete"] = True
        doc["command"] = shlex.join(cmd)
        doc["stdout"] = "".join(stdout)
        doc["load"] = load_summary(load, doc["results"])
        return doc


def load_summary(load: dict, results: list[dict]) -> dict:
    """The load average before the run and the highest seen during it: sampled here as
    each size finished and by ct_bench after each round (load_rounds)."""
    during = [x for x in load["during"] if x is not None]
    during += [x for r in results for x in r.get("load_rounds") or ()]
    return {"before": load["before"], "max_during": max(during, default=None),
            "samples": len(during), "cores": load["cores"]}


def result_samples(result: dict) -> list[float]:
    """The samples a result's interval rests on: its rounds' medians where it was
    measured in interleaved rounds, else blocks of its consecutive iterations (a bench
    recorded before rounds existed), else its one median."""
    rounds = result.get("round_medians_us") or []
    if len(rounds) >= 2:
        return [float(x) for x in rounds]
    if result.get("samples_us"):
        return sample_blocks(result["samples_us"])
    return [float(result["median_us"])] if result.get("median_us") is not None else []


def candidate_names(results: list[dict]) -> list[str]:
    """Each result's candidate: its algorithm, with the segment size where the bench
    measured the algorithm at several (--segsizes), so that no two candidates merge."""
    segs: dict[str, set] = {}
    for r in results:
        segs.setdefault(r["algorithm"], set()).add(r.get("segsize") or 0)
    return [f"{r['algorithm']}/{human_size(r.get('segsize') or 0)}"
            if len(segs[r["algorithm"]]) > 1 else r["algorithm"] for r in results]


def size_versus(doc: dict) -> list[tuple[int, object]]:
    """Per size of a bench document: its candidates against native (stats.Versus)."""
    by_size: dict[int, dict] = {}
    failed: dict[int, set] = {}
    results = doc.get("results", [])
    for r, name in zip(results, candidate_names(results), strict=True):
        by_size.setdefault(r["size"], {})[name] = result_samples(r)
        if r.get("check") == "FAILED":
            failed.setdefault(r["size"], set()).add(name)
    return [(s, versus_native(by_size[s], exclude=failed.get(s, ())))
            for s in sorted(by_size)]


def bench_warnings(doc: dict, limit: int = 6) -> list[str]:
    """The warning lines of a bench: the load above the cores (before or during), and
    candidates whose spread over the rounds exceeds stats.SPREAD_WARN."""
    out = []
    load = doc.get("load") or {}
    worst = max((x for x in (load.get("before"), load.get("max_during")) if x is not None),
                default=None)
    w = load_warning(worst, load.get("cores"))
    if w:
        out.append(w)
    spread = []
    results = doc.get("results", [])
    for r, name in zip(results, candidate_names(results), strict=True):
        xs = result_samples(r)
        where = f"{name} at {human_size(r['size'])}" if r["size"] else name
        if len(xs) >= 2 and (sw := spread_warning(where, xs)):
            spread.append(sw)
    out += spread[:limit]
    if len(spread) > limit:
        out.append(f"warning: ... and {len(spread) - limit} more noisy results")
    return out

def ratio_text(ratio: float) -> str:
    """A speed-up: two decimals, or two significant digits below 0.01 (never 0.00)."""
    return f"{ratio:.2f}" if ratio >= 0.01 else f"{ratio:.2g}"


class BenchInterrupted(KeyboardInterrupt):
    """Interrupted benchmark; .doc holds what it had measured, .terminated: by SIGTERM."""

    def __init__(self, doc: dict, terminated: bool = False):
        super().__init__("benchmark interrupted")
        self.doc = doc
        self.terminated = terminated


class BenchFailed(RuntimeError):
    """A benchmark whose job died (a rank killed, a crash); .doc holds what it measured."""

    def __init__(self, doc: dict, reason: str, details: str = ""):
        super().__init__(reason + (f"\n{details}" if details.strip() else ""))
        self.doc = doc
        self.reason = reason


class JsonlTail:
    """ct_bench's JSON Lines file read as it grows: the header line, then whole result lines
    (a line still being written is left for the next read)."""

    def __init__(self, path: Path, op: str):
        self.path = path
        self.op = op
        self.offset = 0
        self.header: dict | None = None
        self.results: list[dict] = []
        self.fed = False

    def read(self) -> list[dict]:
        try:
            with self.path.open("rb") as f:
                f.seek(self.offset)
                data = f.read()
        except OSError:
            return []
        end = data.rfind(b"\n") + 1
        self.offset += end
        new = []
        for line in data[:end].decode(errors="replace").splitlines():
            if not line.strip():
                continue
            try:
                obj = json.loads(line)
            except json.JSONDecodeError:
                continue
            if self.header is None:
                obj["mpi"] = describe_library(obj.get("mpi", {}).get("library", ""))
                self.header = obj
            else:
                new.append(obj)
        self.results += new
        return new

    def document(self) -> dict:
        head = self.header or {"schema": "colltune-bench/1", "op": self.op}
        return {**head, "results": list(self.results)}


def rank_death(text: str, pids: list[int]) -> str | None:
    """'rank R (pid P) killed by signal N (name)' from what the launcher said, or None."""
    import re

    m = re.search(r"process rank (\d+) with PID (\d+) on node (\S+) exited on signal (\d+)"
                  r"(?: \(([^)]*)\))?", text)
    if m:
        return (f"rank {m.group(1)} (pid {m.group(2)} on {m.group(3)}) killed by signal "
                f"{m.group(4)}" + (f" ({m.group(5)})" if m.group(5) else ""))
    m = re.search(r"PID (\d+) RUNNING AT (\S+)\s*=\s*(?:KILLED BY SIGNAL|EXIT CODE): (\d+)",
                  text)
    if m:
        pid, host, code = int(m.group(1)), m.group(2), m.group(3)
        sig = re.search(r"EXIT STRING: ([^\n(]*?)\s*\(signal (\d+)\)", text)
        rank = f"rank {pids.index(pid)}" if pid in pids else "a rank"
        if sig:
            return f"{rank} (pid {pid} on {host}) killed by signal {sig.group(2)} ({sig.group(1)})"
        return f"{rank} (pid {pid} on {host}) exited with code {code}"
    return None


SPEEDUP_LEGEND = ("speed-up = native time / colltune time (higher is better; 1: no "
                  "difference); [lo, hi]: 95% interval; a verdict only where the interval "
                  "excludes 1")


def _num(x: float) -> str:
    return f"{x:.3g}" if x < 1000 else f"{x:.0f}"


def comparison_table(doc: dict) -> str:
    """Per size (rows) and algorithm (columns): the median latency with its 95% interval;
    then the best colltune algorithm, its speed-up over native with the interval, and the
    verdict (a tie where the interval holds 1). Warnings (load, spread) below."""
    results = doc.get("results", [])
    algs = list(dict.fromkeys(candidate_names(results)))
    mpi = doc.get("mpi", {})
    op = doc.get("op", "?")
    meaning = SIZE_MEANING.get(op, "message")
    rounds = doc.get("rounds") or 1
    head = (f"{op}: {doc.get('ranks', '?')} ranks, {mpi.get('implementation')} "
            f"{mpi.get('version')}, binding {doc.get('binding')}; median latency (us) "
            f"[95% interval] over {rounds} interleaved round{'s' if rounds > 1 else ''}"
            + (f", by size of the {meaning}" if meaning else ""))
    table = []
    for size, vs in size_versus(doc):
        row = [human_size(size) if meaning else "-"]
        for a in algs:
            e = vs.estimates.get(a)
            row.append("-" if e is None else
                       f"{_num(e.value)} [{_num(e.lo)}, {_num(e.hi)}]")
        row += [vs.best or "-", vs.speedup_text(),
                verdict_text(vs.verdict) if vs.verdict else "-"]
        table.append(row)
    names = ["size", *algs, "best ct", "speed-up [95%]", "verdict"]
    widths = [max(len(names[i]), *(len(r[i]) for r in table)) if table else len(names[i])
              for i in range(len(names))]
    if 1 < rounds < 6:
        head += (f"; with {rounds} rounds an interval is the rounds' whole range, which "
                 "covers less than 95%")
    lines = [head, SPEEDUP_LEGEND,
             "  ".join(f"{n:>{w}}" for n, w in zip(names, widths, strict=True))]
    lines += ["  ".join(f"{c:>{w}}" for c, w in zip(r, widths, strict=True))
               for r in table]
    failed = sorted({r["algorithm"] for r in results if r.get("check") == "FAILED"})
    if failed:
        what = "RESULT DIFFERS FROM NATIVE" if meaning else "CHECK FAILED (a rank left early)"
        lines.append(f"{what} for: " + ", ".join(failed))
    load = doc.get("load") or {}
    if load.get("before") is not None:
        during = load.get("max_during")
        lines.append(f"load average: {load['before']:.2f} before, "
                     + (f"up to {during:.2f} during" if during is not None else "none seen during")
                     + f" the run, on {load.get('cores')} cores")
    lines += bench_warnings(doc)
    return "\n".join(lines)


def open_store():
    from ..store.store import Store

    return Store.open()


def cmd_bench(args: argparse.Namespace) -> int:
    need(args.op is not None, f"--ops is needed: the operation to benchmark, one of "
                              f"{', '.join(COLLS)}")
    try:
        build = MPIBuild.select(args.mpi)
        check_bench_args(args, [args.op], build, args.algs)
    except MPIError as e:
        print(f"colltune: {e}", file=sys.stderr)
        return 2
    store = None if args.no_record else open_store()
    run = None
    if store:
        run = store.begin_run("bench", sys.argv[1:], ranks=args.ranks,
                              binding=build.binding_label(args.ranks, not args.no_bind))
    stream = BenchStream(run)
    try:
        doc = run_bench(build, args.op, args, args.algs, sink=stream)
    except BenchInterrupted as e:
        stream.close(e.doc)
        how = "SIGTERM" if e.terminated else "SIGINT (Ctrl-C)"
        if run:
            run.finish("interrupted", f"interrupted by {how}; kept {len(e.doc['results'])} "
                                      "results")
        print(f"colltune: interrupted by {how}; kept {len(e.doc['results'])} results",
              file=sys.stderr)
        return 143 if e.terminated else 130
    except BenchFailed as e:
        stream.close(e.doc)
        if run:
            run.finish("failed", e.reason)
        print(f"colltune: {e}", file=sys.stderr)
        return 1
    except Exception as e:
        if run:
            run.finish("failed", str(e))
        print(f"colltune: {e}", file=sys.stderr)
        return 1
    stream.close(doc)
    if run:
        run.set_meta(mpi=doc["mpi"])
        run.finish("complete")
    if args.json:  # stdout is the document alone, for a pipe; the rest goes to stderr
        print(json.dumps(doc, indent=1))
    else:
        print(comparison_table(doc))
    if args.output:
        write_atomic(args.output, json.dumps(doc, indent=1))
    if run:
        print(f"recorded as run {run.id} in {store.path}",
              file=sys.stderr if args.json else sys.stdout)
    return 0 if all(r.get("check") != "FAILED" for r in doc["results"]) else 3


class BenchStream:
    """The sink of run_bench that records a bench in a run as its sizes finish; `close(doc)`
    adds the end of the document (whatever was not streamed, and how it ended)."""

    def __init__(self, run):
        self.run = run
        self.writer = None
        self.seen = 0

    def __call__(self, header: dict, results: list[dict]) -> None:
        if self.run is None:
            return
        if self.writer is None:
            self.writer = self.run.open_bench(header)
        self.writer.add_results(results)
        self.seen += len(results)

    def close(self, doc: dict) -> None:
        if self.run is None:
            return
        if self.writer is None:
            if not doc.get("results") and "ranks" not in doc:
                return  # stopped before ct_bench said anything: nothing to keep
            self.writer = self.run.open_bench({k: v for k, v in doc.items() if k != "results"})
        self.writer.add_results(doc["results"][self.seen:])
        self.seen = len(doc["results"])
        self.writer.update(**{k: doc[k] for k in ("complete", "command", "stdout", "mpi",
                                                  "load")
                              if k in doc})
