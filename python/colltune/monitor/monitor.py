"""`colltune monitor -- <mpiexec command>`: runs any MPI program under the drop-in's message
monitor (src/monitor/monitor.h; COLLTUNE_MONITOR levels counters, count, peers, sizes), reads
the record rank 0 writes at MPI_Finalize and keeps it in the store: the N x N matrices
`messages` and `bytes` (row = sender) of the application's point-to-point traffic and
`coll_messages` / `coll_bytes` of colltune's collectives, the receive side `recv_messages` /
`recv_bytes` (row = receiver, column = source: the transpose of the send matrices when every
message sent was received) and `coll_recv_*`, per-peer log2 size histograms, native collective
calls, time in MPI, hardware counters and energy (or why they are unavailable), and the
send/receive consistency check per layer (`consistency`).

With `--profile` the drop-in's collective profile is on too (COLLTUNE_PROFILE=on, issue 38):
the record then has a top-level "profile" (schema colltune-profile/1: per operation, call form,
communicator size, log2 message size, algorithm and segment size, the calls, bytes, total and
median time), which `summary` prints as a table and the report shows; `--trace FILE` adds the
per-call timeline (COLLTUNE_TRACE, Chrome trace JSON). `--level off` keeps the profile
alone."""

from __future__ import annotations

import argparse
import json
import os
import shlex
import subprocess
import sys
import tempfile
from pathlib import Path

from ..core.args import add_db, add_output, writes
from ..core.mpi import MPIBuild, MPIError

LEVELS = ("off", "counters", "count", "peers", "sizes")
PASSED = ("LD_PRELOAD", "COLLTUNE_MONITOR", "COLLTUNE_MONITOR_OUT", "COLLTUNE_PROFILE",
          "COLLTUNE_TRACE")
PROFILE_SCHEMA = "colltune-profile/1"


def with_exports(cmd: list[str]) -> list[str]:
    """Open MPI's launcher passes only the variables it is told: add -x for ours."""
    # Debian's side-by-side launchers are mpiexec.openmpi, mpirun.mpich, ...
    if not cmd or Path(cmd[0]).name.split(".")[0] not in ("mpiexec", "mpirun"):
        return cmd
    try:
        version = subprocess.run([cmd[0], "--version"], capture_output=True, text=True,
                                 timeout=30).stdout
    except (OSError, subprocess.TimeoutExpired):
        return cmd
    if "Open MPI" not in version and "OpenRTE" not in version and "prte" not in version:
        return cmd
    extra = [a for v in PASSED for a in ("-x", v)]
    return [cmd[0], *extra, *cmd[1:]]


def run_monitored(build: MPIBuild, cmd: list[str], level: str, out: Path,
                  env: dict | None = None, timeout: float | None = None,
                  profile: bool = False, trace: Path | None = None) -> dict:
    e = {**os.environ, **(env or {})}
    lib = str(build.tool("libcolltune_pmpi.so"))
    e["LD_PRELOAD"] = ":".join(filter(None, [lib, e.get("LD_PRELOAD")]))
    e["COLLTUNE_MONITOR"] = level
    e["COLLTUNE_MONITOR_OUT"] = str(out.resolve())
    if profile or trace:
        e["COLLTUNE_PROFILE"] = "on"
    if trace:
        e["COLLTUNE_TRACE"] = str(trace.resolve())
    out.unlink(missing_ok=True)
    p = subprocess.run(with_exports(cmd), env=e, timeout=timeout)
    if not out.exists():
        raise MPIError(f"the program wrote no monitor record (exit {p.returncode}): did it call "
                       "MPI_Finalize?")
    doc = json.loads(out.read_text())
    doc["command"] = shlex.join(cmd)
    doc["exit_code"] = p.returncode
    if doc.get("per_rank"):
        doc["consistency"] = consistency(doc)
    from ..core.files import write_atomic

    write_atomic(out, json.dumps(doc) + "\n")  # with the command and the check
    return doc


LAYERS = {"application": ("messages", "bytes", "recv_messages", "recv_bytes",
                          "app_messages", "app_bytes"),
          "collective": ("coll_messages", "coll_bytes", "coll_recv_messages", "coll_recv_bytes",
                         "coll_messages", "coll_bytes")}


def consistency(doc: dict) -> dict | None:
    """Per layer (application point-to-point, colltune's collectives): whether every rank's
    sends to j equal j's receives from it, in messages and bytes (`peers` and `sizes`), or
    the totals over all ranks (`count`); None at `counters`, which counts no message."""
    ranks = doc.get("per_rank") or []
    if doc.get("level") == "counters" or not ranks or "recv_messages" not in ranks[0]:
        return None
    untracked = sum(r.get("untracked_receives", 0) for r in ranks)
    out: dict = {"untracked_receives": untracked}
    for layer, (sm, sb, rm, rb, tm, tb) in LAYERS.items():
        mismatches = []
        if sm in doc and rm in doc:
            n = len(doc[sm])
            for i in range(n):
                for j in range(n):
                    if doc[sm][i][j] != doc[rm][j][i] or doc[sb][i][j] != doc[rb][j][i]:
                        mismatches.append({"sender": i, "receiver": j,
                                           "sent": [doc[sm][i][j], doc[sb][i][j]],
                                           "received": [doc[rm][j][i], doc[rb][j][i]]})
            scope = "pairs"
        else:
            sent = [sum(r[tm] for r in ranks), sum(r[tb] for r in ranks)]
            recv_m = "recv_messages" if layer == "application" else "coll_recv_messages"
            recv_b = "recv_bytes" if layer == "application" else "coll_recv_bytes"
            got = [sum(r[recv_m] for r in ranks), sum(r[recv_b] for r in ranks)]
            if sent != got:
                mismatches.append({"sender": None, "receiver": None, "sent": sent,
                                   "received": got})
            scope = "totals"
        out[layer] = {"consistent": not mismatches, "scope": scope,
                      "mismatches": mismatches[:50], "mismatch_count": len(mismatches)}
    return out


def consistency_line(check: dict | None) -> str:
    if check is None:
        return "send/receive consistency: not checked at level counters (no message counted)"
    parts = []
    for layer in LAYERS:
        c = check[layer]
        parts.append(f"{layer} {'consistent' if c['consistent'] else 'INCONSISTENT'}"
                     + ("" if c["consistent"] else f" ({c['mismatch_count']} {c['scope']})"))
    extra = (f"; {check['untracked_receives']} non-blocking receives not tracked"
             if check["untracked_receives"] else "")
    return "send/receive consistency (sends to j = j's receives): " + ", ".join(parts) + extra


def profile_points(doc: dict) -> list[dict]:
    """The profile's points (empty without one), the most time first."""
    prof = doc.get("profile") or {}
    if prof and prof.get("schema") != PROFILE_SCHEMA:
        raise ValueError(f"profile schema {prof.get('schema')!r}, expected {PROFILE_SCHEMA}")
    return sorted(prof.get("points") or [], key=lambda p: -p["time_total_s"])


PROFILE_COLUMNS = ["operation", "form", "ranks", "bytes", "algorithm", "segment", "calls",
                   "rank calls", "bytes (all ranks)", "time (s, all ranks)",
                   "median (us)"]


def profile_rows(doc: dict) -> list[list]:
    """One row per profile point (PROFILE_COLUMNS), the most time first; persistent calls
    say their inits."""
    return [[p["op"], p["form"] + (f" ({p['inits']} inits)" if "inits" in p else ""),
             p["comm_size"], p["bytes"] if p["bytes_min"] == p["bytes_max"]
             else f"{p['bytes_min']}-{p['bytes_max']}", p["algorithm"], p["segsize"] or "",
             p["calls"], p["rank_calls"], p["bytes_total"], round(p["time_total_s"], 6),
             round(p["time_median_s"] * 1e6, 2)] for p in profile_points(doc)]


def profile_summary(doc: dict) -> list[str]:
    rows = profile_rows(doc)
    if not rows:
        return []
    widths = [max(len(str(x)) for x in col) for col in zip(PROFILE_COLUMNS, *rows, strict=True)]
    fmt = "  ".join(f"{{:>{w}}}" for w in widths)
    return ([f"collective profile ({doc['profile']['ranks']} ranks; the most time first):",
             "  " + fmt.format(*PROFILE_COLUMNS)]
            + ["  " + fmt.format(*map(str, r)) for r in rows])


def summary(doc: dict) -> str:
    if not doc.get("per_rank"):  # the profile alone (--level off)
        return "\n".join(profile_summary(doc) or ["monitor: nothing recorded"])
    ranks = doc["per_rank"]
    app = sum(r["app_messages"] for r in ranks)
    coll = sum(r["coll_messages"] for r in ranks)
    lines = [f"monitor ({doc['level']}): {doc['ranks']} ranks; application messages {app} "
             f"({sum(r['app_bytes'] for r in ranks):.0f} B), colltune collective messages "
             f"{coll} ({sum(r['coll_bytes'] for r in ranks):.0f} B); time in MPI "
             f"{max(r['mpi_s'] for r in ranks):.3f} s of {max(r['wall_s'] for r in ranks):.3f}"]
    if "consistency" in doc:
        lines.append(consistency_line(doc["consistency"]))
    native: dict[str, int] = {}
    for r in ranks:
        for op, v in r["native"].items():
            native[op] = native.get(op, 0) + int(v["calls"])
    if native:
        lines.append("native collective calls: " + ", ".join(f"{k} {v}"
                                                               for k, v in native.items()))
    lines.append("hardware counters: " + (doc["counters_unavailable"] and
                                          f"unavailable: {doc['counters_unavailable']}" or
                                          "instructions, cycles, cache misses per rank"))
    lines.append("energy: " + (doc["energy_unavailable"] and
                               f"unavailable: {doc['energy_unavailable']}" or "RAPL package"))
    if "messages" in doc and doc["ranks"] <= 16:
        lines.append("messages (row: sender):")
        lines += ["  " + " ".join(f"{v:>6}" for v in row) for row in doc["messages"]]
    return "\n".join(lines + profile_summary(doc))


def monitor_bench(doc: dict) -> dict:
    return {"schema": "colltune-bench/1", "op": "monitor", "ranks": doc["ranks"],
            "command": doc.get("command", ""), "monitor": doc,
            "results": [{"algorithm": f"rank {r['rank']}", "size": 0,
                         "median_us": r["mpi_s"] * 1e6, "app_messages": r["app_messages"],
                         "coll_messages": r["coll_messages"]}
                        for r in doc.get("per_rank") or []]
            + [{"algorithm": p["algorithm"], "size": p["bytes"], "profile_op": p["op"],
                "form": p["form"], "comm_size": p["comm_size"], "calls": p["calls"],
                "median_us": p["time_median_s"] * 1e6,
                "total_us": p["time_total_s"] * 1e6} for p in profile_points(doc)]}


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("monitor", help="run an MPI program under the message monitor: "
                                       "colltune monitor [--level L] -- mpiexec -n 4 ./app")
    p.add_argument("--level", choices=LEVELS, default="sizes",
                   help="how much the monitor records, least to most (default sizes; off: "
                        "the profile alone, with --profile)")
    p.add_argument("--profile", action="store_true",
                   help="the collective profile too (COLLTUNE_PROFILE=on): calls, bytes and "
                        "time per operation, form, size and algorithm")
    p.add_argument("--trace", metavar="FILE",
                   help="the per-call timeline as Chrome trace JSON (COLLTUNE_TRACE; implies "
                        "--profile): open it in ui.perfetto.dev or chrome://tracing")
    writes(p, "trace")
    add_output(p, "the JSON document of the matrices (default colltune-monitor.json)",
               default="colltune-monitor.json")
    p.add_argument("--mpi", help="mpich, openmpi, intelmpi or system "
                                 "(default: $COLLTUNE_MPI or mpich)")
    p.add_argument("--no-record", action="store_true", help="do not record the run")
    add_db(p)
    p.add_argument("command", nargs=argparse.REMAINDER, help="-- then the mpiexec command")
    p.set_defaults(func=cmd_monitor)


def cmd_monitor(args: argparse.Namespace) -> int:
    cmd = args.command[1:] if args.command[:1] == ["--"] else args.command
    if not cmd:
        print("colltune monitor: give the command after --, e.g. colltune monitor -- "
              "mpiexec -n 4 ./app", file=sys.stderr)
        return 2
    if args.level == "off" and not (args.profile or args.trace):
        print("colltune monitor: --level off records nothing without --profile or --trace",
              file=sys.stderr)
        return 2
    try:
        build = MPIBuild.select(args.mpi)
        with tempfile.TemporaryDirectory():
            doc = run_monitored(build, cmd, args.level, Path(args.output),
                                profile=args.profile,
                                trace=Path(args.trace) if args.trace else None)
    except (MPIError, OSError, ValueError) as e:
        print(f"colltune monitor: {e}", file=sys.stderr)
        return 1
    print(summary(doc))
    if not args.no_record:
        from ..store.store import Store

        with Store.open() as store:
            run = store.begin_run("monitor", sys.argv[1:], ranks=doc["ranks"], binding=None)
            run.add_bench(monitor_bench(doc))
            run.finish("complete" if doc["exit_code"] == 0 else "failed",
                       None if doc["exit_code"] == 0 else f"exit {doc['exit_code']}")
            print(f"recorded as run {run.id} in {store.path}")
    print(f"monitor record: {args.output}")
    if args.trace:
        print(f"timeline: {args.trace} (ui.perfetto.dev or chrome://tracing)")
    return 0 if doc["exit_code"] == 0 else 1
