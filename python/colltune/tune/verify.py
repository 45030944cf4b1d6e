"""`colltune verify TABLE`: an independent check of a tuning table through the drop-in.

The times a table holds come from the job that tuned it (tune.py measures candidates and
native in one `ct_bench --serve` job, through colltune's own algorithm selection). Here the
table is measured as a user meets it: ct_osu, a plain OSU-style program that calls MPI_Bcast,
MPI_Reduce, ... by their names, runs once with the drop-in preloaded (LD_PRELOAD of
libcolltune_pmpi, COLLTUNE_TABLE=TABLE: tuned) and once without it (native), in separate
jobs, the order alternating from round to round, at every point of the table and at the
geometric midpoints between its sizes (where the nearest-size lookup decides on its own).

Points where the table loses beyond noise are re-measured and the table corrected (to
native, or to the next candidate the entry records when that measures better), the changed
points measured again to confirm, and the corrected table written with a `verified` record
(docs/TABLE.md, "Verifying a table"). The decisions (`classify`, `verify_table`) are pure:
measurements come in through a function, so that tests can inject them.
"""

from __future__ import annotations

import argparse
import copy
import json
import math
import os
import shlex
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from ..core import stats
from ..core.args import add_db, add_output, add_table, check_writable, positive_int
from ..core.colls import REDUCTIONS
from ..core.mpi import (
    MPIBuild,
    MPIError,
    add_host_arguments,
    apply_host_arguments,
    stop_process_group,
)
from ..core.units import human_size
from . import table as tbl

# A point loses when tuned/native (medians over rounds) is above 1 + MARGIN: the goal of
# issue 8 and 21 (a table never makes a program more than 5% slower).
MARGIN = 0.05
ROUNDS = 3
ITERS = 50
# Beyond noise: the tuned run was the slower one in at least this share of the rounds (each
# round measures both back to back, so a loaded machine slows both of a round alike, while a
# real loss shows in nearly every round).
SLOWER_SHARE = 0.8
JOB_TIMEOUT_S = 600
# What ct_osu times: the eight classic blocking operations (the v-variants, reduce-scatters
# and scans of issue 22 are not in it yet, and are listed as not verified).
OSU_OPS = ("bcast", "reduce", "allreduce", "scatter", "gather", "allgather", "alltoall",
           "barrier")

Key = tuple[str, int, int]  # (op, ranks, size in bytes as the table counts them)
Samples = dict[str, list[float]]  # {"tuned": [median per round], "native": [...]}
Measure = Callable[[dict, list[dict], int], dict[Key, Samples]]


class VerifyError(RuntimeError):
    pass


# -- the points -------------------------------------------------------------------------


def element_bytes(op: str) -> int:
    """The unit of a size: reductions sum MPI_DOUBLE, the rest move bytes."""
    return 8 if op in REDUCTIONS else 1


def midpoints(sizes: list[int], op: str) -> list[int]:
    """The geometric midpoint between each two neighbouring sizes, in whole elements of op,
    kept when strictly between them (8 and 16 B of a reduction have none). The lookup sends a
    midpoint to the smaller neighbour on a tie, so these are the sizes furthest from either
    measured point that still take one of them."""
    if op == "barrier":
        return []
    unit = element_bytes(op)
    out = []
    keys = sorted(set(sizes))
    for a, b in zip(keys, keys[1:], strict=False):
        m = math.isqrt(a * b) // unit * unit
        if a < m < b:
            out.append(m)
    return out


def point_key(p: dict) -> Key:
    return (p["op"], p["ranks"], p["size"])


def verify_points(doc: dict) -> list[dict]:
    """Every (op, ranks, size) of the table (kind 'table') and the midpoints between the
    sizes of each (op, ranks) (kind 'midpoint'), in table order. The operations ct_osu
    times only (OSU_OPS): a non-blocking entry (ibcast, ...) is chosen for its overlap with
    computation, which a latency benchmark does not measure."""
    by_comm: dict[tuple[str, int], list[int]] = {}
    for e in doc["entries"]:
        if e["op"] not in OSU_OPS:
            continue
        by_comm.setdefault((e["op"], e["ranks"]), []).append(e["size_bytes"])
    points = []
    for (op, n), sizes in by_comm.items():
        mids = midpoints(sizes, op)
        for s in sorted(set(sizes) | set(mids)):
            points.append({"op": op, "ranks": n, "size": s,
                           "kind": "midpoint" if s in mids else "table"})
    return points


# -- the decisions (pure) -----------------------------------------------------------------


def ratio(s: Samples) -> float:
    """tuned / native, medians over the rounds."""
    n = statistics.median(s["native"])
    return statistics.median(s["tuned"]) / n if n > 0 else math.inf


def classify(s: Samples, margin: float = MARGIN) -> str:
    """'ok' (ratio <= 1 + margin), 'loses' (above, and tuned slower than native in at least
    SLOWER_SHARE of the rounds, pairing each round's two runs) or 'noise' (above, but the
    rounds disagree)."""
    if ratio(s) <= 1 + margin:
        return "ok"
    pairs = list(zip(s["tuned"], s["native"], strict=False))
    slower = sum(t > n for t, n in pairs)
    return "loses" if slower >= math.ceil(SLOWER_SHARE * len(pairs)) else "noise"


def pooled(a: Samples, b: Samples) -> Samples:
    return {"tuned": [*a["tuned"], *b["tuned"]], "native": [*a["native"], *b["native"]]}


def next_candidate(entry: dict) -> dict | None:
    """The entry's runner-up, if the table records one: `candidates` (optional, best first,
    each {"algorithm", "segsize", ...}) minus the entry's own choice and native."""
    for c in entry.get("candidates") or []:
        if not isinstance(c, dict) or c.get("algorithm") in (None, "native"):
            continue
        if (c["algorithm"], c.get("segsize", 0)) != (entry["algorithm"], entry["segsize"]):
            return {"algorithm": c["algorithm"], "segsize": int(c.get("segsize", 0))}
    return None


def _entry_at(doc: dict, key: Key) -> dict | None:
    return next((e for e in doc["entries"] if (e["op"], e["ranks"], e["size_bytes"]) == key),
                None)


def _choice(doc: dict, key: Key) -> tuple[str, int]:
    e = tbl.lookup(doc, *key)
    return ("native", 0) if e is None else (e["algorithm"], e["segsize"])


def _median(v: list[float]) -> float:
    return round(statistics.median(v), 3)


def _spread(s: Samples, prefix: str = "") -> dict:
    """min and max over the rounds of each side (each round: one job's median)."""
    return {f"{prefix}{side}_{f.__name__}_us": round(f(s[side]), 3)
            for side in ("tuned", "native") for f in (min, max)}


def speedup_fields(s: Samples) -> dict:
    """The point's speed-up native / tuned (higher is better, issue 39's one convention)
    with its 95% bootstrap interval over the rounds, and the verdict it allows: 'faster'
    or 'slower' only where the interval excludes 1, else 'tie'. The correction decision
    (classify) keeps its own rule: a margin and the share of rounds lost."""
    est = stats.speedup(s["native"], s["tuned"])
    return {"speedup": round(est.value, 4), "speedup_lo": round(est.lo, 4),
            "speedup_hi": round(est.hi, 4), "speedup_verdict": stats.verdict(est)}


def speedup_text(row: dict) -> str:
    if "speedup" not in row:  # a record from before the speed-ups: invert its ratio
        return f"{1 / row['ratio']:.2f}" if row.get("ratio") else "-"
    return f"{row['speedup']:.2f} [{row['speedup_lo']:.2f}, {row['speedup_hi']:.2f}]"


def verify_table(doc: dict, measure: Measure, *, rounds: int = ROUNDS,
                 margin: float = MARGIN, log=None) -> tuple[dict, dict]:
    """Measures every point of `doc` (verify_points) `rounds` times through
    `measure(table_doc, points, rounds) -> {key: {"tuned": [...], "native": [...]}}`,
    re-measures points above 1 + margin 2 x rounds more times, corrects the points that
    lose beyond noise (classify) and measures the points whose choice changed once more.
    Returns (corrected table, verified record); `doc` is not changed."""
    say = log or (lambda text: None)
    points = verify_points(doc)
    samples = measure(doc, points, rounds)
    suspects = [p for p in points if ratio(samples[point_key(p)]) > 1 + margin]
    if suspects:
        say(f"{len(suspects)} point(s) with a speed-up below {1 / (1 + margin):.2f}: "
            f"measured {2 * rounds} more "
            "round(s)")
        more = measure(doc, suspects, 2 * rounds)
        for p in suspects:
            samples[point_key(p)] = pooled(samples[point_key(p)], more[point_key(p)])
    fixed = copy.deepcopy(doc)
    fixed.pop("verified", None)
    corrections = []
    rows = []
    for p in points:
        key = point_key(p)
        s = samples[key]
        alg, seg = _choice(doc, key)
        row = {**p, "algorithm": alg, "segsize": seg, "tuned_us": _median(s["tuned"]),
               "native_us": _median(s["native"]), **_spread(s), "ratio": round(ratio(s), 4),
               "rounds": len(s["tuned"]), "verdict": classify(s, margin),
               **speedup_fields(s)}
        rows.append(row)
        if row["verdict"] != "loses":
            continue
        if alg == "native":
            row["note"] = "the table already says native here: nothing to correct"
            continue
        to, why = {"algorithm": "native", "segsize": 0}, "loses to native beyond noise"
        to_us = row["native_us"]
        entry = _entry_at(fixed, key)
        cand = next_candidate(entry) if entry else None
        if cand:
            trial = copy.deepcopy(fixed)
            _entry_at(trial, key).update(cand)
            c = measure(trial, [p], rounds)[key]
            if statistics.median(c["tuned"]) * (1 + margin) <= statistics.median(c["native"]):
                to, to_us = cand, _median(c["tuned"])
                why += f"; next candidate measured speed-up {1 / ratio(c):.2f}"
            else:
                why += (f"; next candidate {cand['algorithm']} measured speed-up "
                        f"{1 / ratio(c):.2f}")
        if entry:
            entry.update(to, time_us=to_us, native_us=row["native_us"])
        else:  # a midpoint: its own entry, so that the sizes around it go native
            fixed["entries"].append({"op": key[0], "ranks": key[1], "size_bytes": key[2],
                                     **to, "time_us": to_us, "native_us": row["native_us"],
                                     "evaluations": 0})
        corrections.append({"op": key[0], "ranks": key[1], "size": key[2], "kind": p["kind"],
                            "from": {"algorithm": alg, "segsize": seg}, "to": to,
                            "ratio": row["ratio"], "reason": why,
                            "added_entry": entry is None})
    # new entries beside their neighbours, the operations in the table's own order
    first = {}
    for i, e in enumerate(doc["entries"]):
        first.setdefault(e["op"], i)
    fixed["entries"].sort(key=lambda e: (first[e["op"]], e["ranks"], e["size_bytes"]))
    # What the corrections changed (midpoints between a corrected point and its neighbour
    # too) is measured again, once, with the corrected table.
    changed = [p for p in points if _choice(fixed, point_key(p)) != _choice(doc, point_key(p))]
    if changed:
        say(f"{len(corrections)} correction(s): measured {len(changed)} changed point(s) again")
        after = measure(fixed, changed, rounds)
        for p, row in zip(points, rows, strict=True):
            if p in changed:
                s = after[point_key(p)]
                row.update(after_algorithm=_choice(fixed, point_key(p))[0],
                           after_tuned_us=_median(s["tuned"]),
                           after_native_us=_median(s["native"]), **_spread(s, "after_"),
                           after_ratio=round(ratio(s), 4), after_verdict=classify(s, margin))
    still = []
    for row in rows:
        final = row.get("after_ratio", row["ratio"])
        if final <= 1 + margin:
            continue
        verdict = row.get("after_verdict", row["verdict"])
        now = _choice(fixed, point_key(row))[0]
        if now == "native":
            reason = ("the table says native here: both runs make the same MPI call; what is "
                      "left is the drop-in's own cost (its lookup and the monitor's hooks; "
                      "MPI_THREAD_MULTIPLE where a progress thread may start) or noise")
        elif verdict == "noise":
            reason = (f"within noise: tuned slower in fewer than {SLOWER_SHARE:.0%} of the "
                      f"{row['rounds']} rounds")
        else:
            reason = "still slower beyond noise after the correction"
        still.append({"op": row["op"], "ranks": row["ranks"], "size": row["size"],
                      "kind": row["kind"], "algorithm": now, "ratio": final,
                      "reason": reason})
    record = {"verified_at": time.strftime("%Y-%m-%dT%H:%M:%S%z"), "margin": margin,
              "not_verified": sorted({e["op"] for e in doc["entries"]
                                      if e["op"] not in OSU_OPS}),
              "rounds": rounds, "slower_share": SLOWER_SHARE, "points": rows,
              "corrections": corrections, "still_slower": still}
    fixed["verified"] = record
    return fixed, record


# -- measuring through the drop-in -----------------------------------------------------------


def osu_program(build: MPIBuild, points: list[dict], iters: int) -> list[str]:
    """ct_osu's command line for the points (one communicator size)."""
    by_op: dict[str, list[int]] = {}
    for p in points:
        by_op.setdefault(p["op"], []).append(p["size"])
    args = [str(build.tool("ct_osu")), "--iters", str(iters)]
    for op, sizes in by_op.items():
        args += ["--op", op, "--sizes", ",".join(str(s) for s in sorted(set(sizes)))]
    return args


def run_osu(build: MPIBuild, n: int, program: list[str], *, preload: dict | None,
            timeout: float = JOB_TIMEOUT_S) -> dict[Key, float]:
    """One ct_osu job of n ranks; preload: {"LD_PRELOAD": lib, "COLLTUNE_TABLE": path} for
    the tuned run, None for native. The variables go through `env` in front of the program,
    so that they reach the ranks and not mpiexec, whatever the launcher passes on."""
    wrapped = ["env", *(f"{k}={v}" for k, v in (preload or {}).items()), *program]
    cmd = build.launch_command(n, wrapped, bind=True)
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            env={**os.environ, **build.launch_env(n)}, start_new_session=True)
    try:
        out, err = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        stop_process_group(proc, 5)
        raise VerifyError(f"ct_osu ran past {timeout:.0f} s: {shlex.join(cmd)}") from None
    except BaseException:
        stop_process_group(proc, 5)
        raise
    if proc.returncode != 0:
        tail = "; ".join(err.strip().splitlines()[-5:]) or "no message"
        raise VerifyError(f"ct_osu exited with status {proc.returncode}: {tail} "
                          f"(command: {shlex.join(cmd)})")
    if preload and "COLLTUNE_TABLE not used" in err:
        line = next(x for x in err.splitlines() if "COLLTUNE_TABLE not used" in x)
        raise VerifyError(f"the drop-in refused the table, so nothing was tuned: {line}")
    found = {}
    for line in out.splitlines():
        try:
            r = json.loads(line)
        except json.JSONDecodeError:
            continue
        found[(r["op"], r["ranks"], r["size"])] = float(r["median_us"])
    return found


def drop_in_measure(build: MPIBuild, iters: int, workdir: str, log=None,
                    tuned_env: dict | None = None) -> Measure:
    """measure(doc, points, rounds) over real jobs: per round and communicator size, one
    tuned and one native ct_osu job, which first alternating (tuned first in even rounds);
    the table goes to a file in workdir for COLLTUNE_TABLE; tuned_env: more variables for
    the tuned runs (e.g. COLLTUNE_PROGRESS=off)."""
    lib = str(build.tool("libcolltune_pmpi.so"))
    say = log or (lambda text: None)
    count = [0]

    def measure(doc: dict, points: list[dict], rounds: int) -> dict[Key, Samples]:
        count[0] += 1
        path = Path(workdir) / f"table-{count[0]}.json"
        tbl.write_table({k: v for k, v in doc.items() if k != "verified"}, path)
        out: dict[Key, Samples] = {point_key(p): {"tuned": [], "native": []} for p in points}
        comms = sorted({p["ranks"] for p in points})
        for r in range(rounds):
            for n in comms:
                mine = [p for p in points if p["ranks"] == n]
                program = osu_program(build, mine, iters)
                order = ("tuned", "native") if r % 2 == 0 else ("native", "tuned")
                for mode in order:
                    pre = ({"LD_PRELOAD": lib, "COLLTUNE_TABLE": str(path.resolve()),
                            **(tuned_env or {})} if mode == "tuned" else None)
                    got = run_osu(build, n, program, preload=pre)
                    for p in mine:
                        k = point_key(p)
                        if k not in got:
                            raise VerifyError(f"ct_osu gave no result for {k[0]} {k[1]} "
                                              f"ranks {k[2]} B")
                        out[k][mode].append(got[k])
            say(f"round {r + 1} of {rounds}: {len(points)} point(s)")
        return out

    return measure


# -- output -----------------------------------------------------------------------------


def text_tables(record: dict) -> str:
    """OSU-style: per operation and communicator size, one line a point."""
    lines = []
    groups: dict[tuple[str, int], list[dict]] = {}
    for row in record["points"]:
        groups.setdefault((row["op"], row["ranks"]), []).append(row)
    for (op, n), rows in groups.items():
        lines.append(f"# colltune verify: {op}, {n} ranks (tuned = through the drop-in, "
                     "medians over rounds)")
        lines.append(f"{'# Size':<10}{'Tuned(us)':>12}{'Native(us)':>12}"
                     f"{'Speed-up [95%]':>22}  {'Verdict':<27} {'Decision':<8} "
                     f"{'Choice':<24} After")
        for row in rows:
            size = "-" if op == "barrier" else human_size(row["size"])
            mark = "*" if row["kind"] == "midpoint" else ""
            seg = f"/{human_size(row['segsize'])}" if row["segsize"] else ""
            after = (f"{row['after_algorithm']} speed-up {1 / row['after_ratio']:.2f}"
                     if row.get("after_ratio") else "")
            verdict = stats.verdict_text(row.get("speedup_verdict", stats.TIE))
            lines.append(f"{size + mark:<10}{row['tuned_us']:>12.2f}{row['native_us']:>12.2f}"
                         f"{speedup_text(row):>22}  {verdict:<27} {row['verdict']:<8} "
                         f"{row['algorithm'] + seg:<24} {after}")
        lines.append("")
    lines.append("* midpoint between two sizes of the table; speed-up = native / tuned "
                 "(higher is better), [95% interval] over the rounds; verdict: faster or "
                 "slower only where the interval excludes 1; decision: the correction rule "
                 "(loses: tuned/native above 1 + margin in most rounds)")
    if record.get("not_verified"):
        lines.append(f"not verified: {', '.join(record['not_verified'])} (ct_osu does not "
                     "time them; non-blocking entries are chosen for overlap)")
    for c in record["corrections"]:
        lines.append(f"corrected {c['op']} {c['ranks']} ranks {human_size(c['size'])}: "
                     f"{c['from']['algorithm']} -> {c['to']['algorithm']} ({c['reason']}"
                     + ("; new entry" if c["added_entry"] else "") + ")")
    for s in record["still_slower"]:
        lines.append(f"STILL SLOWER {s['op']} {s['ranks']} ranks {human_size(s['size'])}: "
                     f"speed-up {1 / s['ratio']:.2f}: {s['reason']}")
    return "\n".join(lines)


def summary(record: dict) -> str:
    rows = record["points"]
    finals = [r.get("after_ratio", r["ratio"]) for r in rows]
    worst = max(finals, default=1.0)
    return (f"verified {len(rows)} point(s): {sum(r['kind'] == 'midpoint' for r in rows)} "
            f"midpoint(s), {len(record['corrections'])} correction(s), lowest speed-up "
            f"(native / tuned) after correction {1 / worst:.2f}, "
            f"{len(record['still_slower'])} still below {1 / (1 + record['margin']):.2f}")


def verify_bench(record: dict, table: str, output: str, command: str) -> dict:
    """The verification as a colltune-bench/1 document for the store (op 'verify')."""
    results = [{"algorithm": r["algorithm"], "segsize": r["segsize"], "size": r["size"],
                "median_us": r["tuned_us"], "native_us": r["native_us"], "ratio": r["ratio"],
                "ranks_used": r["ranks"], "op_verified": r["op"], "kind": r["kind"]}
               for r in record["points"]]
    return {"schema": "colltune-bench/1", "op": "verify", "command": command,
            "verify": {**record, "table": table, "output": output}, "results": results}


def default_output(table: str) -> str:
    p = Path(table)
    stem = p.name[:-5] if p.name.endswith(".json") else p.name
    return str(p.with_name(stem + ".verified.json"))


def run_verify(build: MPIBuild, table_path: str, output: str, *, rounds: int = ROUNDS,
               iters: int = ITERS, margin: float = MARGIN, log=None,
               tuned_env: dict | None = None) -> tuple[dict, dict]:
    """Verifies the table at table_path through the drop-in of `build` and writes the
    corrected table to output (atomically). (corrected table, record)."""
    doc = tbl.load(table_path)
    built = doc["mpi"].get("build")
    if built and built != build.name:
        raise VerifyError(f"{table_path} was tuned with MPI '{built}', not '{build.name}': "
                          f"verify with --mpi {built}")
    with tempfile.TemporaryDirectory(prefix="colltune-verify-") as work:
        measure = drop_in_measure(build, iters, work, log, tuned_env)
        fixed, record = verify_table(doc, measure, rounds=rounds, margin=margin, log=log)
    record.update(iters=iters, table=str(table_path), mpi=doc["mpi"],
                  tuned_env=dict(tuned_env or {}),
                  placement=build.placement.source if build.placement else "this machine")
    # Validated (the record rides along; the entries stay a table) and written atomically.
    tbl.write_table(fixed, output)
    return fixed, record


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("verify", help="benchmark a tuning table through the drop-in against "
                                      "native (separate jobs) and correct where it loses")
    add_table(p, "the tuning table (colltune tune's output; needed)", positional=True)
    p.add_argument("--mpi", help="mpich, openmpi, intelmpi or system (default: the table's)")
    add_host_arguments(p)
    p.add_argument("--rounds", type=positive_int, default=ROUNDS,
                   help=f"tuned and native jobs per point (default {ROUNDS}); a point above "
                        "the margin gets twice as many more")
    p.add_argument("--iters", type=positive_int, default=ITERS,
                   help=f"timed iterations a point and job (default {ITERS})")
    p.add_argument("--margin", type=float, default=MARGIN,
                   help=f"tuned/native above 1 + MARGIN loses (default {MARGIN})")
    p.add_argument("--env", action="append", default=[], metavar="NAME=VALUE",
                   help="an environment variable for the tuned runs only (repeatable), e.g. "
                        "COLLTUNE_PROGRESS=off to leave MPI's thread level alone")
    add_output(p, "the corrected table (default: TABLE with suffix .verified.json)")
    p.add_argument("--no-record", action="store_true", help="do not record the run")
    add_db(p)
    p.set_defaults(func=cmd_verify)


def cmd_verify(args: argparse.Namespace) -> int:
    if not 0 <= args.margin < 1:
        print(f"colltune verify: --margin {args.margin} is not a fraction in [0, 1)",
              file=sys.stderr)
        return 2
    tuned_env = {}
    for item in args.env:
        name, eq, value = item.partition("=")
        if not eq or not name.isidentifier():
            print(f"colltune verify: --env {item!r} is not NAME=VALUE", file=sys.stderr)
            return 2
        tuned_env[name] = value
    try:
        doc = tbl.load(args.table)
    except tbl.TableFileError as e:
        print(f"colltune verify: {e}", file=sys.stderr)
        return 2
    if not verify_points(doc):
        print(f"colltune verify: {args.table} has no entry of an operation ct_osu times "
              f"({', '.join(OSU_OPS)})", file=sys.stderr)
        return 2
    try:
        apply_host_arguments(args)
        build = MPIBuild.select(args.mpi or doc["mpi"].get("build"))
        build.tool("ct_osu")
    except MPIError as e:
        print(f"colltune verify: {e}", file=sys.stderr)
        return 2
    output = args.output or default_output(args.table)
    check_writable(output)  # the default beside the table too, before any job runs
    store = run = None
    command = shlex.join(["colltune", *sys.argv[1:]])
    if not args.no_record:
        from ..store.store import Store

        store = Store.open()
        run = store.begin_run("verify", sys.argv[1:], mpi=doc["mpi"],
                              ranks=max(e["ranks"] for e in doc["entries"]), binding="core")
    npoints = len(verify_points(doc))
    print(f"colltune verify: {args.table}: {npoints} point(s), {args.rounds} round(s) of "
          f"{args.iters} iterations, MPI {build.name}"
          + (f", {build.placement.source}" if build.placement else ""), flush=True)
    started = time.monotonic()

    def log(text: str) -> None:
        print(f"  {text} ({time.monotonic() - started:.0f} s)", flush=True)
        if run:
            run.progress(text)

    try:
        fixed, record = run_verify(build, args.table, output, rounds=args.rounds,
                                   iters=args.iters, margin=args.margin, log=log,
                                   tuned_env=tuned_env)
    except (VerifyError, MPIError, OSError, tbl.TableFileError) as e:
        print(f"colltune verify: {e}", file=sys.stderr)
        if run:
            run.finish("failed", str(e))
        return 1
    except KeyboardInterrupt:
        if run:
            run.finish("interrupted", "interrupted; nothing was corrected")
        raise
    print(text_tables(record))
    print(summary(record))
    print(f"corrected table: {output}")
    if run:
        run.add_bench(verify_bench(record, args.table, output, command))
        run.finish("complete")
        print(f"recorded as run {run.id} in {store.path}")
        store.close()
    return 0
