"""`colltune overlap`: the split-tree paper's overlap study on this machine (Denis et al.,
Euro-Par 2018, section 5).

A buffer (2 MiB by default) and a computation sized so that it lasts as long as the blocking
collective on all Nproc cores; then, for N from Nproc/2 to Nproc-1 ranks (one per core, the
other Nproc-N cores free for the progress threads) and the same global work, C(N) = C(Nproc)
Nproc / N per rank. For each N: colltune's non-blocking collective with S = 0..3 and with the
S the model picks, the MPI library's own (MPICH with MPIR_CVAR_ASYNC_PROGRESS off and on, Open
MPI), and the blocking collective followed by the computation; the total time (collective and
computation) and the overlap as osu_ibcast computes it. The model's prediction goes on the
same axes: T_overlapped(S, N) of docs/MODEL.md in units of one transfer of the buffer, the unit
being the blocking time at Nproc over its tree height.
"""

from __future__ import annotations

import argparse
import json
import os
import shlex
import subprocess
import sys
import time
from pathlib import Path

from ..core.files import write_atomic
from ..core.mpi import MPIBuild, MPIError, available_builds, stop_process_group

SCHEMA = "colltune-overlap"


class OverlapError(RuntimeError):
    pass


def run_tool(build: MPIBuild, n: int, args: list[str], env: dict | None = None,
             timeout: float = 600) -> list[dict]:
    program = [str(build.tool("ct_overlap")), *args]
    cmd = build.launch_command(n, program, bind=True, export=tuple((env or {}).keys()))
    e = {**os.environ, **build.launch_env(n), **(env or {})}
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            env=e, start_new_session=True)
    try:
        out, err = proc.communicate(timeout=timeout)
    except (subprocess.TimeoutExpired, KeyboardInterrupt):
        stop_process_group(proc, 5)
        raise
    if proc.returncode != 0:
        raise OverlapError(f"{shlex.join(cmd)} failed (exit {proc.returncode}): "
                           + err.strip()[-800:])
    return [json.loads(line) for line in out.splitlines() if line.startswith("{")]


def ns_of(text: str | None, nproc: int) -> list[int]:
    if not text:
        return list(range(max(2, nproc // 2), nproc))
    out = []
    for part in text.split(","):
        if "-" in part:
            a, b = part.split("-")
            out += range(int(a), int(b) + 1)
        else:
            out.append(int(part))
    return out


def study(build: MPIBuild, op: str, *, nproc: int, ns: list[int], nbytes: int, splits: list[int],
          alg: str, iters: int, peers: dict[str, MPIBuild], log=print) -> dict:
    """One operation's study: the reference, then every N; a JSON-ready document."""
    from ..model.splittree import SplitTree

    common = ["--op", op, "--bytes", str(nbytes), "--iters", str(iters), "--alg", alg]
    ref = run_tool(build, nproc, [*common, "--variants", "blocking"])[0]
    t_block = ref["pure_us"]
    model = SplitTree(build)
    h = model.height(nproc)
    unit = t_block / h if h > 0 else t_block
    rows = []
    variants = ["blocking", "native", *(f"S{s}" for s in splits), "Sauto"]
    for n in ns:
        c = t_block * nproc / n
        log(f"  {op}, N={n}: computation {c:.0f} us")
        recs = run_tool(build, n, [*common, "--compute-us", f"{c:.3f}", "--variants",
                                   ",".join(variants)])
        res = {r["variant"]: r for r in recs}
        flavor = build.flavor
        res[f"native {flavor}"] = res.pop("native")
        if flavor == "mpich":
            async_ = run_tool(build, n, [*common, "--compute-us", f"{c:.3f}", "--variants",
                                         "native"], env={"MPIR_CVAR_ASYNC_PROGRESS": "1"})
            res["native mpich async"] = async_[0]
        for name, peer in peers.items():
            res[f"native {name}"] = run_tool(peer, n, [*common, "--compute-us", f"{c:.3f}",
                                                       "--variants", "native"])[0]
        best_s = min((s for s in splits), key=lambda s: res[f"S{s}"]["total_us"])
        s_model, t_model = model.best_s(n, nproc - n, c / unit)
        rows.append({"n": n, "compute_us": c, "results": res, "measured_best_s": best_s,
                     "model_s": s_model, "predicted_total_us": t_model * unit,
                     "predicted_total_by_s_us": {
                         str(s): model.overlapped(n, nproc - n, s, c / unit) * unit
                         for s in splits}})
    return {"op": op, "bytes": nbytes, "nproc": nproc, "algorithm": alg,
            "blocking_nproc_us": t_block, "unit_us": unit, "rows": rows}


def table(doc: dict) -> str:
    lines = [f"{doc['op']}, {doc['bytes'] // 1024} KiB, Nproc {doc['nproc']}, "
             f"{doc['algorithm']}: total time (us) / overlap %; blocking at Nproc "
             f"{doc['blocking_nproc_us']:.0f} us"]
    if not doc["rows"]:
        return lines[0]
    names = list(doc["rows"][0]["results"])
    lines.append(f"{'N':>3} {'C':>8} " + " ".join(f"{n[:18]:>18}" for n in names)
                 + "  best S  model S")
    for row in doc["rows"]:
        cells = " ".join(f"{r['total_us']:>10.0f}/{r['overlap_pct']:>5.1f}%"
                         for r in row["results"].values())
        lines.append(f"{row['n']:>3} {row['compute_us']:>8.0f} {cells}"
                     f"  {row['measured_best_s']:>6}  {row['model_s']:>7}")
    return "\n".join(lines)


def plot(doc: dict, outdir: Path) -> list[str]:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    files = []
    ns = [r["n"] for r in doc["rows"]]
    names = list(doc["rows"][0]["results"]) if doc["rows"] else []
    for key, ylabel, fname in (("total_us", "total time (us)", "total"),
                               ("overlap_pct", "overlap (%)", "overlap")):
        fig, ax = plt.subplots(figsize=(7, 4))
        for i, name in enumerate(names):
            ax.plot(ns, [r["results"][name][key] for r in doc["rows"]], "o-", color=f"C{i % 10}",
                    label=name)
        if key == "total_us":
            ax.plot(ns, [r["predicted_total_us"] for r in doc["rows"]], "k--",
                    label="model (its S)")
        ax.set_xlabel("N (application ranks)")
        ax.set_ylabel(ylabel)
        ax.set_title(f"{doc['op']} {doc['bytes'] // 1024} KiB, {doc['nproc']} cores", fontsize=9)
        ax.legend(fontsize=6, ncol=2)
        fig.tight_layout()
        path = outdir / f"overlap-{doc['op']}-{fname}.png"
        fig.savefig(path, dpi=110)
        plt.close(fig)
        files.append(str(path))
    return files


def overlap_bench(doc: dict) -> dict:
    """The study as a colltune-bench/1 document for the store (op 'overlap')."""
    return {"schema": "colltune-bench/1", "op": "overlap", "overlap": doc,
            "results": [{"algorithm": name, "size": st["bytes"], "ranks_used": row["n"],
                         "median_us": r["total_us"], "overlap_pct": r["overlap_pct"]}
                        for st in doc["studies"] for row in st["rows"]
                        for name, r in row["results"].items()]}


def short_study(build: MPIBuild, nproc: int) -> dict:
    """`colltune run`'s step: bcast of 256 KiB at N = Nproc - 1 (Nproc on 2 cores, where no
    core is left for a progress thread), S = 0 and 1, few iterations, no peer MPI."""
    n = max(2, nproc - 1)
    st = study(build, "bcast", nproc=max(nproc, n), ns=[n], nbytes=256 << 10, splits=[0, 1],
               alg="binomial", iters=5, peers={}, log=lambda m: None)
    print(table(st))
    return {"schema": SCHEMA, "schema_version": 1, "created_at": time.strftime("%FT%T%z"),
            "mpi": build.name, "peers": [], "studies": [st], "complete": True}


def register(sub: argparse._SubParsersAction) -> None:
    from ..core.args import add_algs, add_db, add_output, add_ranks, byte_size, hidden

    p = sub.add_parser("overlap", help="non-blocking collectives and computation: colltune's "
                                       "split tree vs the MPI libraries (the split-tree paper)")
    p.add_argument("--ops", default="bcast,reduce",
                   help="comma-separated operations, bcast and/or reduce (default both)")
    p.add_argument("--sizes", dest="bytes", type=byte_size, default=byte_size("2M"),
                   metavar="SIZE", help="the message size (one; K, M and G are binary: "
                                        "4M = 4 MiB) (default 2M)")
    hidden(p, "--bytes", dest="bytes", type=byte_size)
    add_ranks(p, "Nproc: the ranks of every job, one a core (default: all cores)", type=int,
              default=os.cpu_count() or 1, old=("--nproc",), dest="nproc")
    p.add_argument("--app-ranks", dest="ns", default=None, metavar="N",
                   help="the application rank counts N, e.g. 8-15 or 4,6 "
                        "(default Nproc/2..Nproc-1)")
    hidden(p, "--ns", dest="ns")
    p.add_argument("--splits", default="0,1,2,3",
                   help="comma-separated split-tree S values to measure (default 0,1,2,3)")
    add_algs(p, "the algorithm of the blocking reference (one; default binomial)",
             dest="alg", default="binomial")
    p.add_argument("--iters", type=int, default=20, help="iterations a point (default 20)")
    p.add_argument("--peers", default=None,
                   help="other MPI builds whose native collective to measure, comma-separated "
                        "(default: openmpi, and intelmpi when Intel MPI is installed; none: '')")
    p.add_argument("--mpi", help="mpich, openmpi, intelmpi or system (default: $COLLTUNE_MPI "
                                 "or mpich)")
    add_output(p, "the JSON document of the study (default overlap.json)",
               default="overlap.json")
    p.add_argument("--plots", default="overlap-plots",
                   help="folder for the plots (default overlap-plots)")
    p.add_argument("--no-record", action="store_true", help="do not record the run")
    add_db(p)
    p.set_defaults(func=cmd_overlap)


def default_peers() -> list[str]:
    """Open MPI's native beside the build's, and Intel MPI's where it is installed
    (.mpi/intelmpi: scripts/setup.sh intelmpi), which is optional, so not asked for when
    absent."""
    return ["openmpi", *(["intelmpi"] if "intelmpi" in available_builds() else [])]


def cmd_overlap(args: argparse.Namespace) -> int:
    try:
        build = MPIBuild.select(args.mpi)
        peers = {}
        names = default_peers() if args.peers is None else args.peers.split(",")
        for name in filter(None, (x.strip() for x in names)):
            if name == build.name:
                continue
            try:
                peers[name] = MPIBuild.select(name)
            except MPIError as e:
                print(f"colltune overlap: peer {name} skipped: {e}", file=sys.stderr)
        ns = ns_of(args.ns, args.nproc)
        splits = [int(x) for x in args.splits.split(",")]
    except (MPIError, ValueError) as e:
        print(f"colltune overlap: {e}", file=sys.stderr)
        return 2
    if args.nproc < 2 or not ns or min(ns) < 2 or max(ns) >= args.nproc + 1:
        print("colltune overlap: needs 2 <= N <= Nproc", file=sys.stderr)
        return 2
    outdir = Path(args.plots)
    outdir.mkdir(parents=True, exist_ok=True)
    doc = {"schema": SCHEMA, "schema_version": 1, "created_at": time.strftime("%FT%T%z"),
           "mpi": build.name, "peers": list(peers), "studies": [], "complete": False}
    status = "complete"
    try:
        for op in (x.strip() for x in args.ops.split(",")):
            if op not in ("bcast", "reduce"):
                raise OverlapError(f"unknown operation {op} (bcast or reduce)")
            print(f"{op}: reference, then N = {ns[0]}..{ns[-1]}", file=sys.stderr)
            st = study(build, op, nproc=args.nproc, ns=ns, nbytes=args.bytes, splits=splits,
                       alg=args.alg, iters=args.iters, peers=peers,
                       log=lambda m: print(m, file=sys.stderr))
            st["plots"] = plot(st, outdir)
            doc["studies"].append(st)
            print(table(st))
        doc["complete"] = True
    except KeyboardInterrupt:
        status = "interrupted"
    except OverlapError as e:
        status = "failed"
        print(f"colltune overlap: {e}", file=sys.stderr)
    write_atomic(args.output, json.dumps(doc, indent=1))
    if not args.no_record:
        from ..store.store import Store

        with Store.open() as store:
            run = store.begin_run("overlap", sys.argv[1:], ranks=args.nproc, binding="core")
            run.add_bench(overlap_bench(doc))
            run.finish(status)
            print(f"recorded as run {run.id} in {store.path}")
    print(f"overlap study: {args.output}; plots in {outdir}/")
    return {"complete": 0, "interrupted": 130}.get(status, 1)
