#!/usr/bin/env python3
"""The tuning strategies side by side against the exhaustive grid (issue 21,
docs/BENCHMARKS.md section 17).

    bench/strategies_study.py --ranks 4 [--testbed ctbm --ppn 1] [--ops bcast,reduce,...] \
        [--sizes 8,1K,8K,64K,512K] [--iters 5] [--p2p p2p.json] \
        -o study.json [--markdown study.md]

At every (operation, size) point the exhaustive search measures every candidate (each
algorithm at each segment size colltune tune would try, native included) in one
`ct_bench --serve` job, and the wall seconds of each measurement are kept beside its median.
MGD, SMGD, model-guided and pipeline then run as colltune tune runs them, but with their
`evaluate` answered from the exhaustive measurements: each strategy's measurement seconds are
the seconds the candidates it asked for took in the exhaustive job, and its choice is judged
on the same measurements (within 5% of the exhaustive best or not). So the comparison costs
one exhaustive grid, and the strategies differ only by what they search, not by noise. The
pipeline strategy's proxy (a chain on min(ranks, 3) ranks) is measured live, once per
candidate it asks for, and its seconds are added to its cost. The model strategy predicts with
the p2p file and, across hosts, the job's placement (the ranks' hosts).

Not included for any strategy: colltune tune's confirmation rounds against native (the same
2 x 2 measurements for every strategy whose choice is not native).

The JSON is rewritten after every point and a second run with the same output skips the
points it holds (resumable). --markdown writes the per-strategy table and the per-point
choices.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path

from colltune.core.files import write_atomic
from colltune.core.mpi import MPIBuild
from colltune.core.units import human_size, parse_size
from colltune.tune.search import STRATEGIES
from colltune.tune.tune import Server, TuneError, methods_for

COMPARED = ("mgd", "smgd", "model", "pipeline")
WITHIN = 1.05
DEFAULT_OPS = "bcast,reduce,allreduce,scatter,gather,allgather,alltoall,barrier"


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--ranks", type=int, required=True)
    p.add_argument("--ops", default=DEFAULT_OPS, help="operations (default: all eight)")
    p.add_argument("--sizes", default="8,1K,8K,64K,512K",
                   help="message sizes, comma-separated (default 8,1K,8K,64K,512K)")
    p.add_argument("--iters", type=int, default=5, help="timed iterations a candidate")
    p.add_argument("--top", type=int, default=3, help="model strategy: candidates measured")
    p.add_argument("--p2p", default="p2p.json", help="the model strategy's p2p costs")
    p.add_argument("--mpi", default=None, help="mpich or openmpi (default: $COLLTUNE_MPI)")
    p.add_argument("--testbed", default=None, help="run across the test bed NAME's hosts")
    p.add_argument("--ppn", type=int, default=None, help="ranks per host on the test bed")
    p.add_argument("-o", "--output", required=True)
    p.add_argument("--markdown", default=None)
    args = p.parse_args(argv)
    if args.ranks < 2 or args.iters < 1 or args.top < 1:
        p.error("--ranks of at least 2, --iters and --top of at least 1")
    return args


def key(alg: str, seg: int) -> str:
    return f"{alg}/{seg}"


def model_predictor(build: MPIBuild, p2p_path: str, op: str, size: int, ranks: int):
    """predict(alg, seg) -> us for the model strategy, placed as the job is (None: no p2p)."""
    from colltune.model.model import Model, ModelError, load_p2p
    from colltune.model.validate import host_layout

    if not Path(p2p_path).exists():
        return None
    nodes = host_layout(build, ranks)
    model = Model.from_p2p(build, load_p2p(p2p_path), hosts=nodes is not None)

    def predict(alg: str, seg: int) -> float:
        if alg == "native":
            return float("inf")
        try:
            return model.predict(op, alg, size, ranks, segsize=seg, nodes=nodes)["predicted_us"]
        except ModelError:
            return float("inf")

    return predict


def timed(server: Server, alg: str, seg: int, size: int, iters: int) -> dict:
    """One measurement and its wall seconds; a candidate the job refuses (ok: false) is
    +inf, as colltune tune's strategies treat a failed measurement (it never wins)."""
    t0 = time.monotonic()
    try:
        us = server.evaluate(alg, seg, size, iters)
        err = None
    except TuneError as e:
        if server.proc.poll() is not None:
            raise  # the job itself ended: nothing more to measure with it
        us, err = float("inf"), str(e)
    out = {"us": us, "s": round(time.monotonic() - t0, 4)}
    if err:
        out["error"] = err
    return out


def study_point(build: MPIBuild, registry: list[dict], op: str, size: int, args,
                servers: dict) -> dict:
    """The exhaustive grid at one point, then every strategy replayed on it."""
    methods = methods_for(registry, op, size)
    if args.hosts > 1:  # the shared-memory algorithms run on one node only
        shm = {a["name"] for a in registry if a["coll"] == op and a.get("shared_memory")}
        methods = {a: segs for a, segs in methods.items() if a not in shm}
    if (op, "full") not in servers:
        for s in servers.values():
            s.close()
        servers.clear()
        servers[(op, "full")] = Server(build, op, args.ranks, max(args.size_list))
    full = servers[(op, "full")]
    grid = {key(a, s): timed(full, a, s, size, args.iters) for a, segs in methods.items()
            for s in segs}
    best_key = min(grid, key=lambda k: grid[k]["us"])
    best_us = grid[best_key]["us"]
    proxy_seen: dict[str, dict] = {}

    def proxy_eval(alg: str, seg: int) -> float:
        # the pipeline strategy's proxy, as colltune tune builds it: a chain on few ranks
        if (op, "proxy") not in servers:
            servers[(op, "proxy")] = Server(build, op, min(args.ranks, 3), max(args.size_list))
        name = "chain" if "chain" in methods and seg else alg
        k = key(name, seg)
        if k not in proxy_seen:
            proxy_seen[k] = timed(servers[(op, "proxy")], name, seg, size, args.iters)
        return proxy_seen[k]["us"]

    predict = model_predictor(build, args.p2p, op, size, args.ranks)
    out = {"op": op, "size_bytes": size, "candidates": grid, "best": best_key,
           "best_us": best_us, "strategies": {}}
    out["strategies"]["exhaustive"] = {"choice": best_key, "us": best_us, "ratio": 1.0,
                                       "measured": len(grid),
                                       "seconds": round(sum(g["s"] for g in grid.values()), 3)}
    for name in COMPARED:
        if name == "model" and predict is None:
            continue
        asked: list[str] = []

        def lookup(alg: str, seg: int, _asked=asked) -> float:
            _asked.append(key(alg, seg))
            return grid[key(alg, seg)]["us"]

        proxy_before = set(proxy_seen)
        res = STRATEGIES[name](methods, lookup, predict=predict, top=args.top,
                               evaluate_pipeline=proxy_eval)
        choice = key(res.algorithm, res.segsize)
        seconds = sum(grid[k]["s"] for k in set(asked))
        proxy_keys = set(proxy_seen) if name == "pipeline" else set()
        seconds += sum(proxy_seen[k]["s"] for k in proxy_keys)
        out["strategies"][name] = {
            "choice": choice, "us": grid[choice]["us"],
            "ratio": round(grid[choice]["us"] / best_us, 4), "measured": len(set(asked)),
            "proxy_measured": len(proxy_keys), "seconds": round(seconds, 3),
            "proxy_reused": sorted(proxy_before & proxy_keys)}
    return out


def summarize(points: list[dict]) -> dict:
    """Per strategy: measurement seconds, share of points within 5% of exhaustive's best,
    speed-up in measurement seconds over exhaustive."""
    names = ["exhaustive", *COMPARED]
    exh = sum(p["strategies"]["exhaustive"]["seconds"] for p in points)
    out = {}
    for name in names:
        mine = [p["strategies"][name] for p in points if name in p["strategies"]]
        if not mine:
            continue
        secs = sum(s["seconds"] for s in mine)
        within = sum(1 for s in mine if s["ratio"] <= WITHIN)
        out[name] = {"points": len(mine), "seconds": round(secs, 2),
                     "measured": sum(s["measured"] for s in mine),
                     "within_5pct": within, "share_within_5pct": round(within / len(mine), 4),
                     "worst_ratio": max(s["ratio"] for s in mine),
                     "speedup": round(exh / secs, 2) if secs > 0 else None}
    return out


def markdown(doc: dict) -> str:
    s = doc["summary"]
    lines = [f"{doc['where']}, {doc['ranks']} ranks, {doc['mpi']}, {len(doc['points'])} points "
             f"({', '.join(doc['ops'])} at {', '.join(human_size(x) for x in doc['sizes'])}), "
             f"{doc['iters']} iterations a candidate", "",
             "| strategy | measurement s | candidates measured | within 5% of exhaustive's best "
             "| worst ratio | speed-up over exhaustive |", "|---|---|---|---|---|---|"]
    for name, r in s.items():
        lines.append(f"| {name} | {r['seconds']:.1f} | {r['measured']} | {r['within_5pct']} of "
                     f"{r['points']} ({100 * r['share_within_5pct']:.0f}%) | "
                     f"{r['worst_ratio']:.2f} | {r['speedup']:.1f}x |")
    lines += ["", "| op | size | exhaustive's best (us) | " +
              " | ".join(COMPARED) + " |", "|---|---|---|" + "---|" * len(COMPARED)]
    for p in doc["points"]:
        cells = []
        for name in COMPARED:
            st = p["strategies"].get(name)
            cells.append("-" if st is None else f"{st['choice']} ({st['ratio']:.2f})")
        lines.append(f"| {p['op']} | {human_size(p['size_bytes'])} | {p['best']} "
                     f"{p['best_us']:.0f} | " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    if args.testbed:
        os.environ["COLLTUNE_TESTBED"] = args.testbed
        os.environ["COLLTUNE_PPN"] = str(args.ppn or 1)
    args.size_list = [parse_size(x.strip()) for x in args.sizes.split(",") if x.strip()]
    ops = [x.strip() for x in args.ops.split(",") if x.strip()]
    build = MPIBuild.select(args.mpi)
    registry = build.registry()
    args.hosts = len(set(build.placement.rank_hosts(args.ranks))) if build.placement else 1
    out = Path(args.output)
    doc = {"schema": "colltune-strategies-study", "schema_version": 1, "ranks": args.ranks,
           "ops": ops, "sizes": args.size_list, "iters": args.iters, "mpi": build.name,
           "where": (f"test bed {args.testbed}, {args.ppn or 1} rank(s) a host"
                     if args.testbed else "one node"),
           "command": " ".join(["bench/strategies_study.py", *(argv or sys.argv[1:])]),
           "points": []}
    if out.exists():
        old = json.loads(out.read_text())
        if old.get("ranks") == args.ranks and old.get("mpi") == build.name:
            doc["points"] = old.get("points", [])
            doc["started_at"] = old.get("started_at")
    doc.setdefault("started_at", None)
    doc["started_at"] = doc["started_at"] or time.strftime("%Y-%m-%dT%H:%M:%S%z")
    done = {(p["op"], p["size_bytes"]) for p in doc["points"]}
    servers: dict = {}
    try:
        for op in ops:
            for size in ([0] if op == "barrier" else args.size_list):
                if (op, size) in done:
                    continue
                t0 = time.monotonic()
                point = study_point(build, registry, op, size, args, servers)
                point["wall_s"] = round(time.monotonic() - t0, 2)
                doc["points"].append(point)
                doc["summary"] = summarize(doc["points"])
                write_atomic(out, json.dumps(doc, indent=1))
                st = point["strategies"]
                print(f"{op} {human_size(size)}: best {point['best']} {point['best_us']:.0f} us; "
                      + ", ".join(f"{n} {st[n]['choice']} x{st[n]['ratio']:.2f}"
                                  for n in COMPARED if n in st)
                      + f" ({point['wall_s']:.0f} s)", flush=True)
    finally:
        for s in servers.values():
            s.close()
    doc["summary"] = summarize(doc["points"])
    doc["finished_at"] = time.strftime("%Y-%m-%dT%H:%M:%S%z")
    write_atomic(out, json.dumps(doc, indent=1))
    if args.markdown:
        write_atomic(args.markdown, markdown(doc))
    print(markdown(doc))
    return 0


if __name__ == "__main__":
    sys.exit(main())
