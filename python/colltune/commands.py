"""The verbs that measure: `algorithms`, `bench` and `run` (the main job)."""

from __future__ import annotations

import argparse
import json
import os
import shlex
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

from .args import MAX_COUNT, check_memory, count_int, int_type, need, positive_int, size_type
from .mpi import MPIBuild, MPIError, describe_library, stop_process_group
from .progress import ProgressBar
from .store import Terminated, write_atomic

# Every operation, in the order of the C enum ct_coll.
COLLS = ("bcast", "reduce", "allreduce", "scatter", "gather", "allgather", "alltoall", "barrier")
# Which sizes mean what, for the tables.
SIZE_MEANING = {"bcast": "message", "reduce": "vector", "allreduce": "vector",
                "scatter": "block per rank", "gather": "block per rank",
                "allgather": "block per rank", "alltoall": "block per rank", "barrier": None}
# `colltune run` on a small machine: every operation, every algorithm, in a few minutes.
RUN_MAX = "1M"
RUN_ITERS = 10


# Sizes on the command line: one parser for every verb (colltune.args).
_size = size_type(1)


def human_size(n: int) -> str:
    for unit, div in (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if n >= div and n % div == 0:
            return f"{n // div} {unit}"
    return f"{n} B"


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("algorithms", help="list the algorithm registry")
    p.add_argument("--op", choices=COLLS)
    p.add_argument("--mpi", help="mpich, openmpi or system (default: $COLLTUNE_MPI or mpich)")
    p.add_argument("--json", action="store_true", help="print the registry as JSON")
    p.add_argument("--markdown", action="store_true",
                   help="print the registry as the table of docs/ALGORITHMS.md")
    p.set_defaults(func=cmd_algorithms)

    p = sub.add_parser("preload", help="print the path of the drop-in library (LD_PRELOAD)")
    p.add_argument("--mpi", help="mpich, openmpi or system (default: $COLLTUNE_MPI or mpich)")
    p.set_defaults(func=cmd_preload)

    p = sub.add_parser("bench", help="OSU-style latency benchmark of a collective")
    _bench_arguments(p, max_size="4M", iters=0)
    p.add_argument("--op", choices=COLLS, required=True)
    p.add_argument("--algs", default="all",
                   help="comma-separated algorithms, 'native' for MPI's own (default: all)")
    p.add_argument("--json", metavar="FILE", help="also write the results as JSON")
    p.set_defaults(func=cmd_bench)

    p = sub.add_parser("run", help="the main job: benchmark every operation, record, report")
    _bench_arguments(p, max_size=RUN_MAX, iters=RUN_ITERS)
    p.add_argument("-o", "--output", default=None,
                   help="report file (default: colltune-report.html in the current directory)")
    p.set_defaults(func=cmd_run)


def _bench_arguments(p: argparse.ArgumentParser, max_size: str, iters: int) -> None:
    p.add_argument("--mpi", help="mpich, openmpi or system (default: $COLLTUNE_MPI or mpich)")
    p.add_argument("-n", "--ranks", type=positive_int, default=os.cpu_count() or 1,
                   help="MPI ranks (default: all cores, one rank per core)")
    p.add_argument("--min", type=_size, default=_size("8"),
                   help="smallest size in bytes (default 8): of the message (bcast), the vector "
                        "(reduce, allreduce) or one rank's block (scatter, gather, allgather, "
                        "alltoall); the barrier has no size")
    p.add_argument("--max", type=_size, default=_size(max_size),
                   help=f"largest size (default {max_size})")
    p.add_argument("--iters", type=count_int, default=iters,
                   help="timed iterations per size (default: "
                        + (f"{iters})" if iters else "20 to 1000 by size)"))
    p.add_argument("--warmup", type=count_int, default=0,
                   help="untimed iterations before each size (default 0: a tenth of --iters, "
                        "at least 2)")
    p.add_argument("--segsize", type=_size, default=None,
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


MOVEMENT = ("scatter", "gather", "allgather", "alltoall")
REDUCTIONS = ("reduce", "allreduce")


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
    if args.op:
        reg = [a for a in reg if a["coll"] == args.op]
    if args.json:
        print(json.dumps(reg, indent=2))
        return 0
    if args.markdown:
        print(registry_markdown(reg), end="")
        return 0
    print(f"{'collective':<11}{'algorithm':<20}{'properties':<40}summary")
    for a in reg:
        props = [k for k in ("segmentable", "needs_commutative", "takes_radix", "native",
                             "hierarchical", "shared_memory") if a.get(k)]
        if a["default_segsize"]:
            props.append(f"segment {human_size(a['default_segsize'])}")
        print(f"{a['coll']:<11}{a['name']:<20}{', '.join(props):<40}{a['summary']}")
    return 0


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
        return doc


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


def comparison_table(doc: dict) -> str:
    """Median latency per size (rows) and algorithm (columns), with best colltune / best
    native: below 1 means colltune is faster."""
    results = doc.get("results", [])
    algs = list(dict.fromkeys(r["algorithm"] for r in results))
    sizes = sorted({r["size"] for r in results})
    cell = {(r["algorithm"], r["size"]): r for r in results}
    width = max(9, *(len(a) + 1 for a in algs)) if algs else 9
    mpi = doc.get("mpi", {})
    op = doc.get("op", "?")
    meaning = SIZE_MEANING.get(op, "message")
    head = (f"{op}: {doc.get('ranks', '?')} ranks, {mpi.get('implementation')} "
            f"{mpi.get('version')}, binding {doc.get('binding')}; median latency (us)"
            + (f" by size of the {meaning}" if meaning else ""))
    lines = [head, f"{'size':>9} " + "".join(f"{a:>{width}}" for a in algs)
             + f"{'best ct':>20}{'ct/native':>10}"]
    for s in sizes:
        row = f"{human_size(s) if meaning else '-':>9} "
        best_ct = best_native = None
        for a in algs:
            r = cell.get((a, s))
            if r is None:
                row += f"{'-':>{width}}"
                continue
            v = r["median_us"]
            row += f"{v:>{width}.1f}"
            if a == "native":
                best_native = v
            elif r.get("check") != "FAILED" and (best_ct is None or v < best_ct[1]):
                best_ct = (a, v)
        if best_ct:
            row += f"{best_ct[0]:>20}"
            row += f"{ratio_text(best_ct[1] / best_native):>10}" if best_native else f"{'-':>10}"
        lines.append(row)
    failed = sorted({r["algorithm"] for r in results if r.get("check") == "FAILED"})
    if failed:
        what = "RESULT DIFFERS FROM NATIVE" if meaning else "CHECK FAILED (a rank left early)"
        lines.append(f"{what} for: " + ", ".join(failed))
    return "\n".join(lines)



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
    from .units import fmt_size

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
                     + (f", latency {la['latency_us']:.2f} us" if la.get("latency_us")
                        is not None else "") for la in layers)
    return (text or "no layer measured") + ("" if doc.get("complete", True) else ", INCOMPLETE")


def best_rows(doc: dict) -> list[tuple[int, str, float, float | None]]:
    """Per size: (size, best colltune algorithm, its median, native's median or None)."""
    cell: dict[int, dict[str, float]] = {}
    for r in doc.get("results", []):
        if r.get("check") != "FAILED" or r["algorithm"] == "native":
            cell.setdefault(r["size"], {})[r["algorithm"]] = r["median_us"]
    rows = []
    for size in sorted(cell):
        ct = {a: v for a, v in cell[size].items() if a != "native"}
        if ct:
            best = min(ct, key=ct.get)
            rows.append((size, best, ct[best], cell[size].get("native")))
    return rows


def ratio_text(ratio: float) -> str:
    """ct/native: two decimals, or two significant digits below 0.01 (never 0.00)."""
    return f"{ratio:.2f}" if ratio >= 0.01 else f"{ratio:.2g}"


def bench_result(doc: dict) -> str:
    results = doc.get("results", [])
    rows = [r for r in best_rows(doc) if r[3]]
    faster = [r for r in rows if r[2] < r[3]]
    text = f"{len(results)} results"
    if rows:
        best = min(rows, key=lambda r: r[2] / r[3])
        where = "" if doc.get("op") == "barrier" else f" at {human_size(best[0])}"
        text += (f"; colltune faster than native at {len(faster)} of {len(rows)} size(s), best "
                 f"{best[1]}{where} at {ratio_text(best[2] / best[3])} x native")
    failed = sorted({r["algorithm"] for r in results if r.get("check") == "FAILED"})
    if failed:
        text += "; RESULT DIFFERS FROM NATIVE for " + ", ".join(failed)
    return text


def overlap_result(doc: dict) -> str:
    parts = []
    for st in doc.get("studies", []):
        for row in st.get("rows", []):
            pct = max((r["overlap_pct"] for r in row["results"].values()), default=0.0)
            parts.append(f"N = {row['n']}: best S {row['measured_best_s']}, model S "
                         f"{row['model_s']}, overlap up to {pct:.1f}%")
    return "; ".join(parts) or "no row measured"


def suite_result(doc: dict) -> str:
    benches = sorted({c["bench"] for c in doc.get("configs", [])})
    text = (f"{len(doc.get('configs', []))} configuration(s) measured"
            + (f" ({', '.join(benches)})" if benches else ""))
    warnings = doc.get("warnings", [])
    return text + (f"; {len(warnings)} warning(s): {warnings[0]}" if warnings else "")


def _open_store():
    from .store import Store

    return Store.open()


def cmd_bench(args: argparse.Namespace) -> int:
    try:
        build = MPIBuild.select(args.mpi)
        check_bench_args(args, [args.op], build, args.algs)
    except MPIError as e:
        print(f"colltune: {e}", file=sys.stderr)
        return 2
    store = None if args.no_record else _open_store()
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
    print(comparison_table(doc))
    if args.json:
        write_atomic(args.json, json.dumps(doc, indent=1))
    if run:
        print(f"recorded as run {run.id} in {store.path}")
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
        self.writer.update(**{k: doc[k] for k in ("complete", "command", "stdout", "mpi")
                              if k in doc})


def cmd_run(args: argparse.Namespace) -> int:
    """The main job on this machine: a quick probe of the machine (machine.json), then every
    algorithm of every operation and native on all cores (sizes up to 1 MiB, 10 iterations
    each by default, so that it takes minutes on a small machine; `colltune bench` does the
    full sweep), recorded in the store, with a table per operation, then the report."""
    from .report import write_report

    try:
        build = MPIBuild.select(args.mpi)
        check_bench_args(args, list(COLLS), build)
    except MPIError as e:
        print(f"colltune: {e}", file=sys.stderr)
        return 2
    store = _open_store()
    started = time.monotonic()
    print(f"colltune run: {args.ranks} ranks, MPI {build.name}, "
          f"binding {build.binding_label(args.ranks, not args.no_bind)}, "
          f"{len(COLLS)} operations, sizes {human_size(args.min)} to {human_size(args.max)}, "
          f"{args.iters or 'adaptive'} iterations; store {store.path}")
    run = store.begin_run("run", sys.argv[1:], ranks=args.ranks,
                          binding=build.binding_label(args.ranks, not args.no_bind))
    stages = Stages(["probe", "p2p", *(f"bench {op}" for op in COLLS), "tune", "overlap",
                     "suite"])
    try:
        # The machine first: caches, sharing, memory and communication layers, quickly.
        from .probe import quick_probe

        stages.start("quick probe of the machine (colltune probe --quick) -> machine.json")
        mdoc = quick_probe(run, build=build, output="machine.json")
        if mdoc is None:
            stages.failed("nothing measured (see above)")
        else:
            stages.done(probe_result(mdoc))
        stages.start("point-to-point costs (colltune p2p --quick) -> p2p.json")
        from .p2p import P2PError, measure_p2p, p2p_bench

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
        from .tune import TuneError, run_tuning, summary, tune_bench

        try:
            from .model import Model, load_p2p
            from .search import reduced_sizes

            predict = Model.from_p2p(build, load_p2p("p2p.json"))
            points = [(op, args.ranks, 0 if op == "barrier" else s) for op in COLLS
                      for s in (reduced_sizes(8, args.max) if op != "barrier" else [0])]
            tdoc, evals, secs, _ = run_tuning(build, build.registry(), points, "model",
                                              output="colltune-table.json", iters=5,
                                              predict_model=predict)
            first, *rest = summary(tdoc, evals, secs).splitlines()
            print("\n".join(rest))
            run.add_bench(tune_bench(tdoc, evals, secs))
            stages.done(first)
        except (TuneError, ValueError, OSError, MPIError) as e:
            stages.failed(e)
        stages.start("a short overlap study (colltune overlap: 256 KiB bcast, N = Nproc-1)")
        from .overlap import OverlapError, overlap_bench, short_study

        try:
            ov = short_study(build, args.ranks)
            run.add_bench(overlap_bench(ov))
            stages.done(overlap_result(ov))
        except OverlapError as e:  # the rest of the run stands without it
            stages.failed(e)
        stages.start("the monitoring paper's benchmarks, quick (colltune suite --quick)")
        from .suite import SuiteError, run_suite, suite_bench

        try:
            machine = "machine.json" if Path("machine.json").exists() else None
            if machine:
                from .machine_schema import load as load_machine

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
