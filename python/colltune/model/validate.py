"""`colltune validate-model`: the seed paper's validation (figures 7 to 10) on this machine.

For bcast and scatter with the flat (linear), chain, binary and binomial trees, one message
size (128 KiB by default; scatter: each rank's block) and segment sizes from 1 KiB to the
whole message, at 8 and 16 ranks: the time measured by ct_bench next to the time the model
predicts from p2p.json. Per algorithm it prints the measured time at the segment size the
model picks divided by the best measured time (the paper: 1.12 flat, 1.09 binary, 1.01
binomial), and whether the model ranks the algorithms as the measurements do. Plots: one per
algorithm (measured and predicted against the segment size) and one comparing the
algorithms, as PNG files; the run is recorded for the report.
"""

from __future__ import annotations

import argparse
import json
import shlex
import sys
import time
from pathlib import Path
from types import SimpleNamespace

from ..core.files import write_atomic
from ..core.mpi import MPIBuild, MPIError
from .model import Model, ModelError, load_p2p

SCHEMA = "colltune-validation"
SCHEMA_VERSION = 1
DEFAULT_ALGS = ("linear", "chain", "binary", "binomial")
PAPER_NAMES = {"linear": "flat"}


def segment_sizes(size: int, smallest: int = 1024) -> list[int]:
    """1 KiB, 2 KiB, ... up to the whole message (which is the last, even off the doubling)."""
    out, s = [], smallest
    while s < size:
        out.append(s)
        s *= 2
    return out + [size]


def summarize(rows: list[dict], algs: list[str]) -> dict:
    """Per algorithm: best measured and predicted segment sizes, the ratio (measured at the
    predicted best / measured best), and the rankings of the algorithms."""
    per_alg = {}
    for alg in algs:
        mine = [r for r in rows if r["algorithm"] == alg and r.get("measured_us") is not None]
        if not mine:
            continue
        best_m = min(mine, key=lambda r: r["measured_us"])
        best_p = min(mine, key=lambda r: r["predicted_us"])
        per_alg[alg] = {"measured_best_us": best_m["measured_us"],
                        "measured_best_segsize": best_m["segsize"],
                        "predicted_best_us": best_p["predicted_us"],
                        "predicted_best_segsize": best_p["segsize"],
                        "measured_at_predicted_us": best_p["measured_us"],
                        "ratio": round(best_p["measured_us"] / best_m["measured_us"], 4)}
    measured_rank = sorted(per_alg, key=lambda a: per_alg[a]["measured_best_us"])
    predicted_rank = sorted(per_alg, key=lambda a: per_alg[a]["predicted_best_us"])
    return {"algorithms": per_alg, "measured_ranking": measured_rank,
            "predicted_ranking": predicted_rank,
            "same_ranking": measured_rank == predicted_rank}


def plot_case(case: dict, outdir: Path) -> list[str]:
    """PNG files for one (op, ranks) case: one per algorithm, one comparing them."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    files = []
    op, n = case["op"], case["ranks"]
    algs = list(case["summary"]["algorithms"])
    for alg in algs:
        rows = [r for r in case["rows"] if r["algorithm"] == alg]
        fig, ax = plt.subplots(figsize=(5.5, 3.6))
        segs = [r["segsize"] / 1024 for r in rows]
        ax.plot(segs, [r["measured_us"] for r in rows], "o-", label="measured")
        ax.plot(segs, [r["predicted_us"] for r in rows], "s--", label="predicted")
        ax.set_xscale("log", base=2)
        ax.set_xlabel("segment size (KiB)")
        ax.set_ylabel("time (us)")
        ratio = case["summary"]["algorithms"][alg]["ratio"]
        ax.set_title(f"{op} {PAPER_NAMES.get(alg, alg)}, {case['size_bytes'] // 1024} KiB, "
                     f"{n} ranks (ratio {ratio:.2f})", fontsize=9)
        ax.legend(fontsize=8)
        fig.tight_layout()
        path = outdir / f"{op}-{n}-{alg}.png"
        fig.savefig(path, dpi=110)
        plt.close(fig)
        files.append(str(path))
    fig, ax = plt.subplots(figsize=(5.5, 3.6))
    for i, alg in enumerate(algs):
        rows = [r for r in case["rows"] if r["algorithm"] == alg]
        segs = [r["segsize"] / 1024 for r in rows]
        color = f"C{i}"
        ax.plot(segs, [r["measured_us"] for r in rows], "o-", color=color,
                label=f"{PAPER_NAMES.get(alg, alg)} measured")
        ax.plot(segs, [r["predicted_us"] for r in rows], "--", color=color,
                label=f"{PAPER_NAMES.get(alg, alg)} predicted")
    ax.set_xscale("log", base=2)
    ax.set_yscale("log")
    ax.set_xlabel("segment size (KiB)")
    ax.set_ylabel("time (us)")
    ax.set_title(f"{op}: the algorithms, {n} ranks", fontsize=9)
    ax.legend(fontsize=6, ncol=2)
    fig.tight_layout()
    path = outdir / f"{op}-{n}-algorithms.png"
    fig.savefig(path, dpi=110)
    plt.close(fig)
    files.append(str(path))
    return files


def validation_bench(doc: dict, command: str) -> dict:
    """The validation as a colltune-bench/1 document for the store (op 'validate-model')."""
    results = [{"algorithm": f"{c['op']} {r['algorithm']} {c['ranks']} ranks",
                "size": c["size_bytes"], "segsize": r["segsize"],
                "median_us": r["measured_us"], "predicted_us": r["predicted_us"]}
               for c in doc["cases"] for r in c["rows"]]
    return {"schema": "colltune-bench/1", "op": "validate-model", "command": command,
            "validation": doc, "results": results}


def register(sub: argparse._SubParsersAction) -> None:
    from ..core.args import byte_size

    p = sub.add_parser("validate-model",
                       help="measured vs predicted bcast and scatter over segment sizes "
                            "(the model paper's figures 7 to 10)")
    p.add_argument("--p2p", default="p2p.json",
                   help="point-to-point costs (default p2p.json; measured first when missing)")
    p.add_argument("--ranks", default="8,16", help="rank counts (default 8,16)")
    p.add_argument("--size", type=byte_size, default=byte_size("128K"), help="message size (128K)")
    p.add_argument("--ops", default="bcast,scatter",
                   help="comma-separated operations (default bcast,scatter)")
    p.add_argument("--algs", default=",".join(DEFAULT_ALGS),
                   help=f"comma-separated algorithms (default {','.join(DEFAULT_ALGS)})")
    p.add_argument("--iters", type=int, default=0, help="iterations a point (default: ct_bench's)")
    p.add_argument("--plots", default="validate-model", help="folder for the PNG plots")
    p.add_argument("-o", "--output", default="validate-model.json",
                   help="the JSON document of the comparison (default validate-model.json)")
    p.add_argument("--layer", type=int, default=None, help="p2p layer (default: the first)")
    p.add_argument("--mpi", help="mpich, openmpi or system (default: $COLLTUNE_MPI or mpich)")
    p.add_argument("--no-bind", action="store_true", help="do not pin ranks to cores")
    p.add_argument("--no-record", action="store_true", help="do not record the run")
    p.set_defaults(func=cmd_validate)


def _ensure_p2p(build: MPIBuild, path: str) -> dict:
    if Path(path).exists():
        return load_p2p(path)
    from ..p2p.p2p import measure_p2p

    print(f"colltune validate-model: {path} not found: measuring the point-to-point costs "
          "first (quick)", file=sys.stderr)
    return measure_p2p(build, quick=True, output=path)


def cmd_validate(args: argparse.Namespace) -> int:
    from ..bench.bench import BenchInterrupted, run_bench

    try:
        ranks = [int(x) for x in args.ranks.split(",") if x.strip()]
        ops = [x.strip() for x in args.ops.split(",") if x.strip()]
        algs = [x.strip() for x in args.algs.split(",") if x.strip()]
    except ValueError:
        print("colltune validate-model: --ranks takes numbers, e.g. 8,16", file=sys.stderr)
        return 2
    bad = [o for o in ops if o not in ("bcast", "scatter", "gather", "reduce")]
    if bad or not ops or not ranks or min(ranks) < 2:
        print("colltune validate-model: --ops from bcast, scatter, gather, reduce; "
              "--ranks of at least 2", file=sys.stderr)
        return 2
    try:
        build = MPIBuild.select(args.mpi)
        reg = build.registry()
        for op in ops:
            known = {a["name"] for a in reg if a["coll"] == op and not a["native"]}
            unknown = [a for a in algs if a not in known]
            if unknown:
                raise ModelError(f"unknown {op} algorithm(s) {', '.join(unknown)} (one of: "
                                 f"{', '.join(sorted(known))})")
        p2p = _ensure_p2p(build, args.p2p)
        model = Model.from_p2p(build, p2p, args.layer)
    except (MPIError, ModelError, ValueError, OSError) as e:
        print(f"colltune validate-model: {e}", file=sys.stderr)
        return 2
    segs = segment_sizes(args.size)
    outdir = Path(args.plots)
    outdir.mkdir(parents=True, exist_ok=True)
    doc = {"schema": SCHEMA, "schema_version": SCHEMA_VERSION, "size_bytes": args.size,
           "segsizes": segs, "p2p": str(args.p2p), "layer": model.layer.get("layer"),
           "p2p_mpi": p2p.get("mpi"), "created_at": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
           "cases": [], "complete": False}
    store = run = None
    if not args.no_record:
        from ..store.store import Store

        store = Store.open()
        run = store.begin_run("validate-model", sys.argv[1:], ranks=max(ranks),
                              binding=build.binding_label(max(ranks), not args.no_bind))
    status = "complete"
    try:
        for op in ops:
            for n in ranks:
                bargs = SimpleNamespace(min=args.size, max=args.size, iters=args.iters,
                                        warmup=0, root=0, radix=0, segsize=None,
                                        segsizes=segs, no_check=True, ranks=n,
                                        no_bind=args.no_bind)
                bench = run_bench(build, op, bargs, ",".join(algs),
                                  progress_label=f"{op}, {n} ranks")
                doc["mpi"] = bench.get("mpi")
                rows = []
                for r in bench["results"]:
                    pred = model.predict(op, r["algorithm"], args.size, n,
                                         segsize=r["segsize"] or 0)
                    rows.append({"algorithm": r["algorithm"], "segsize": r["segsize"] or args.size,
                                 "measured_us": r["median_us"],
                                 "predicted_us": pred["predicted_us"]})
                case = {"op": op, "ranks": n, "size_bytes": args.size, "rows": rows,
                        "binding": bench.get("binding"), "command": bench.get("command")}
                case["summary"] = summarize(rows, algs)
                case["plots"] = plot_case(case, outdir)
                doc["cases"].append(case)
                print(case_text(case))
        doc["complete"] = True
    except (KeyboardInterrupt, BenchInterrupted):
        status = "interrupted"
        print("colltune validate-model: interrupted; keeping the finished cases",
              file=sys.stderr)
    except (RuntimeError, ModelError) as e:
        status = "failed"
        print(f"colltune validate-model: {e}", file=sys.stderr)
    write_atomic(args.output, json.dumps(doc, indent=1))
    if run:
        run.add_bench(validation_bench(doc, shlex.join(["colltune", *sys.argv[1:]])))
        run.finish(status)
        print(f"recorded as run {run.id} in {store.path}")
        store.close()
    print(f"validation: {args.output}; plots in {outdir}/")
    return {"complete": 0, "interrupted": 130}.get(status, 1)


def case_text(case: dict) -> str:
    s = case["summary"]
    lines = [f"{case['op']}, {case['size_bytes'] // 1024} KiB, {case['ranks']} ranks "
             f"({case.get('binding')}): measured vs predicted (us) by segment size"]
    for alg, a in s["algorithms"].items():
        rows = [r for r in case["rows"] if r["algorithm"] == alg]
        cells = "  ".join(f"{r['segsize'] // 1024}K {r['measured_us']:.0f}/"
                          f"{r['predicted_us']:.0f}" for r in rows)
        lines.append(f"  {PAPER_NAMES.get(alg, alg):<9} {cells}")
        lines.append(f"  {'':<9} best measured {a['measured_best_us']:.1f} us at "
                     f"{a['measured_best_segsize'] // 1024}K, model picks "
                     f"{a['predicted_best_segsize'] // 1024}K -> "
                     f"{a['measured_at_predicted_us']:.1f} us: ratio {a['ratio']:.2f}")
    lines.append(f"  ranking measured: {', '.join(s['measured_ranking'])}; predicted: "
                 f"{', '.join(s['predicted_ranking'])}"
                 f" ({'same' if s['same_ranking'] else 'DIFFERENT'})")
    return "\n".join(lines)
