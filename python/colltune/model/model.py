"""The schedule model (src/model/model.h) from Python, and `colltune predict`.

The C library replays every rank's schedule with the point-to-point costs of a p2p.json
(docs/P2P.md); this module hands it those costs through ctypes and names the call the way
the rest of colltune does: an operation, an algorithm, a message size in bytes (per rank's
block for the data-movement operations, as `colltune bench` counts), a rank count and a
segment size. Across hosts (a node layout: `node_layout`), a message between ranks of
different hosts costs the inter-host layer's (the layer marked `between_hosts`), every other
message the intra-host layer's.
"""

from __future__ import annotations

import argparse
import ctypes
import json
import statistics
import sys
from pathlib import Path

from ..core.mpi import MPIBuild, MPIError

MODES = {"immediate": 0, "blocking": 1, "rendezvous": 2}
# Operations that reduce run on MPI_DOUBLE, the others on bytes (as ct_bench does).
REDUCING = ("reduce", "allreduce")

_D = ctypes.POINTER(ctypes.c_double)


class _CostTable(ctypes.Structure):
    _fields_ = [("npoints", ctypes.c_int), ("size_bytes", _D), ("os_us", _D), ("or_us", _D),
                ("g_us", _D), ("oneway_us", _D), ("mode", ctypes.POINTER(ctypes.c_int)),
                ("npending", ctypes.c_int), ("pending_counts", _D), ("os_pending_us", _D),
                ("g_pending_us", _D), ("nlocal", ctypes.c_int), ("local_bytes", _D),
                ("copy_us", _D), ("reduce_us", _D),
                # contention (optional; nconc 0: none, the model without it exactly)
                ("nconc", ctypes.c_int), ("conc_pairs", _D), ("oneway_conc_us", _D),
                # host stacks (optional, inter-host layer; nstream 0: none)
                ("nstream_sizes", ctypes.c_int), ("stream_bytes", _D), ("stream_pair_us", _D),
                ("stream_duplex_us", _D), ("nfanin", ctypes.c_int), ("fanin_flows", _D),
                ("stream_fanin_us", _D),
                # link bucket (optional, inter-host layer; 0: none)
                ("link_bucket_bytes", ctypes.c_double),
                # sends of one round: a flow's turn on the link (inter-host layer; 0: none)
                ("flow_head_bytes", ctypes.c_double)]


def sustained_per_byte(points: list[dict], stream: dict | None = None) -> float:
    """G, the sustained cost of a byte on a link, as the C model takes it
    (ct_link_occupancy): the gap a byte of the largest stream of a pair (the layer's
    `stream`, what the wire takes) when there is one, else the largest message's gap a
    byte."""
    if stream and stream.get("sizes_bytes") and stream.get("pair_us"):
        return stream["pair_us"][-1] / stream["sizes_bytes"][-1]
    last = points[-1]
    return last["g_us"] / last["size_bytes"] if last["size_bytes"] > 0 else 0.0


def link_bucket(points: list[dict], stream: dict | None = None) -> float:
    """The bytes a rate-limited link sends ahead of its rate after an idle spell (a token
    bucket, model.h "Link bucket"), read off a layer's points: a one-way time T(m) below
    T(smallest) + m G, where G is the sustained cost of a byte (sustained_per_byte,
    from `stream` when given),
    was carried by the bucket by (that difference) / G bytes; the bucket is
    the most any size shows. 0 unless the largest message itself pays the rate (T within
    90% of m G): a layer whose times do not grow with the rate has no bucket to read."""
    if len(points) < 3:
        return 0.0
    per_byte = sustained_per_byte(points, stream)
    if per_byte <= 0:
        return 0.0
    last = points[-1]
    base = points[0]["oneway_us"]
    if last["oneway_us"] - base < 0.9 * last["size_bytes"] * per_byte:
        return 0.0
    ahead = max((p["size_bytes"] * per_byte - (p["oneway_us"] - base)) / per_byte
                for p in points[:-1])
    return max(ahead, 0.0)


def flow_head(stream: dict | None) -> float:
    """The bytes of a flow that a link takes before the next flow's turn (model.h, sends of
    one round), read off the fan-out of a layer's `stream`: two messages of m bytes posted
    one after the other land at (2m - Q) G and 2m G when they share past a head start of
    Q, so Q = 2m (1 - first / second); Q >= m where the first lands alone, by m G (half the
    second's time or less). The median over the sizes where the two shared, else the
    largest size (the flows went in turn at every size: Q at least that). 0 without a
    fan-out (the flows share from their first byte)."""
    fo = (stream or {}).get("fanout")
    if not fo or not fo.get("sizes_bytes"):
        return 0.0
    shared = []
    for m, first, second in zip(fo["sizes_bytes"], fo["first_us"], fo["second_us"],
                                strict=True):
        q = 2 * m * (1 - first / second)
        if q < m:
            shared.append(max(q, 0.0))
    return statistics.median(shared) if shared else float(max(fo["sizes_bytes"]))


class ModelError(ValueError):
    """A call the model cannot predict (unknown algorithm, bad arguments, bad costs)."""


def _doubles(values) -> ctypes.Array:
    return (ctypes.c_double * len(values))(*[float(v) for v in values])


def call_shape(op: str, size_bytes: int) -> tuple[int, int]:
    """(count, type size) of a call of `size_bytes`, as colltune bench makes it."""
    if op == "barrier":
        return 0, 1
    if op in REDUCING:
        return max(1, size_bytes // 8), 8
    return size_bytes, 1


def node_layout(ranks: int, hosts: int | None = None, ppn: int | None = None) -> list[int]:
    """Host of each rank in block placement: `hosts` hosts of ranks*h//hosts .. (sizes
    differ by at most one), or `ppn` ranks per host (the last may have fewer)."""
    if ranks < 1:
        raise ModelError("need at least one rank")
    if ppn is not None:
        if ppn < 1:
            raise ModelError("--ppn must be at least 1")
        return [r // ppn for r in range(ranks)]
    if hosts is None or hosts < 1 or hosts > ranks:
        raise ModelError(f"--hosts must be between 1 and the rank count ({ranks})")
    out, h = [], 0
    for r in range(ranks):
        while (h + 1) * ranks // hosts <= r:
            h += 1
        out.append(h)
    return out


def pick_layers(doc: dict, layer: int | None = None,
                inter_layer: int | None = None) -> tuple[dict, dict | None]:
    """(intra-host layer, inter-host layer or None) of a p2p.json: `layer` or the first layer
    not marked between_hosts; `inter_layer` or the layer marked between_hosts."""
    layers = doc.get("layers") or []
    if not layers:
        raise ModelError("the p2p file has no layer")

    def by_number(n):
        x = next((x for x in layers if x.get("layer") == n), None)
        if x is None:
            raise ModelError(f"no layer {n} in the p2p file (it has "
                             f"{', '.join(str(x.get('layer')) for x in layers)})")
        return x

    if layer is not None:
        intra = by_number(layer)
    else:
        intra = next((x for x in layers if not x.get("between_hosts")), layers[0])
    if inter_layer is not None:
        inter = by_number(inter_layer)
    else:
        inter = next((x for x in layers if x.get("between_hosts")), None)
    return intra, inter


class Model:
    """The costs of one p2p layer (and optionally of the inter-host one), ready for the C
    model."""

    def __init__(self, build: MPIBuild, layer: dict, *, pending_counts: list | None = None,
                 local: dict | None = None, inter: dict | None = None):
        self.layer = layer
        self.inter_layer = inter
        self._keep = []  # the arrays must outlive every call
        self.table = self._table(layer, pending_counts, local)
        self.inter_table = self._table(inter, pending_counts, None) if inter else None
        lib = ctypes.CDLL(str(build.tool("libcolltune.so")))
        # reads the whole table, contention included (nconc 0: ct_model_predict_nodes_named)
        fn = lib.ct_model_predict_contention_named
        fn.restype = ctypes.c_int
        fn.argtypes = [ctypes.POINTER(_CostTable), ctypes.POINTER(_CostTable),
                       ctypes.POINTER(ctypes.c_int), ctypes.c_char_p, ctypes.c_char_p,
                       ctypes.c_char_p, ctypes.c_char_p, ctypes.c_int, ctypes.c_int,
                       ctypes.c_longlong, ctypes.c_int, ctypes.c_longlong, ctypes.c_int, _D, _D,
                       ctypes.c_char_p, ctypes.c_int]
        self._fn = fn

    def _table(self, layer: dict, pending_counts: list | None, local: dict | None):
        points = layer["points"]
        if not points:
            raise ModelError("the p2p layer has no points")

        def arr(values):
            a = _doubles(values)
            self._keep.append(a)
            return a

        t = _CostTable()
        t.npoints = len(points)
        t.size_bytes = arr([p["size_bytes"] for p in points])
        t.os_us = arr([p["os_us"] for p in points])
        t.or_us = arr([p["or_us"] for p in points])
        t.g_us = arr([p["g_us"] for p in points])
        t.oneway_us = arr([p["oneway_us"] for p in points])
        modes = (ctypes.c_int * len(points))(*[MODES[p["mode"]] for p in points])
        self._keep.append(modes)
        t.mode = modes
        if pending_counts and all("os_pending_us" in p for p in points):
            k = len(pending_counts)
            t.npending = k
            t.pending_counts = arr(pending_counts)
            t.os_pending_us = arr([p["os_pending_us"][j] for j in range(k) for p in points])
            t.g_pending_us = arr([p["g_pending_us"][j] for j in range(k) for p in points])
        if local and local.get("sizes_bytes"):
            t.nlocal = len(local["sizes_bytes"])
            t.local_bytes = arr(local["sizes_bytes"])
            t.copy_us = arr(local["copy_us"])
            t.reduce_us = arr(local["reduce_us"])
        conc = layer.get("concurrent_pairs")
        if conc and all("oneway_concurrent_us" in p for p in points):
            # row-major: row k = the per-pair one-way times with conc[k] pairs at once
            t.nconc = len(conc)
            t.conc_pairs = arr(conc)
            t.oneway_conc_us = arr([p["oneway_concurrent_us"][k] for k in range(len(conc))
                                    for p in points])
        stream = layer.get("stream")
        if stream and stream.get("sizes_bytes") and stream.get("pair_us"):
            t.nstream_sizes = len(stream["sizes_bytes"])
            t.stream_bytes = arr(stream["sizes_bytes"])
            t.stream_pair_us = arr(stream["pair_us"])
            if stream.get("duplex_us"):
                t.stream_duplex_us = arr(stream["duplex_us"])
            if stream.get("fanin_flows"):
                # row-major: row j = the gaps with fanin_flows[j] hosts sending to one
                t.nfanin = len(stream["fanin_flows"])
                t.fanin_flows = arr(stream["fanin_flows"])
                t.stream_fanin_us = arr([g for row in stream["fanin_us"] for g in row])
        if layer.get("between_hosts"):
            t.link_bucket_bytes = link_bucket(points, layer.get("stream"))
            t.flow_head_bytes = flow_head(layer.get("stream"))
        return t

    @classmethod
    def from_p2p(cls, build: MPIBuild, doc: dict, layer: int | None = None, *,
                 inter_layer: int | None = None, hosts: bool = False) -> Model:
        """The model of a p2p.json document: the intra-host layer (`layer`, default the first
        not marked between_hosts) and, with hosts, the inter-host one (`inter_layer`, default
        the one marked between_hosts: ModelError if there is none)."""
        intra, inter = pick_layers(doc, layer, inter_layer)
        if hosts and inter is None:
            raise ModelError("the p2p file has no inter-host layer (none marked "
                             "\"between_hosts\": true; measure across hosts, or name one with "
                             "--inter-layer)")
        return cls(build, intra, pending_counts=doc.get("pending_counts"),
                   local=doc.get("local"), inter=inter if hosts else None)

    def predict(self, op: str, alg: str, size_bytes: int, ranks: int, *, segsize: int = -1,
                root: int = 0, radix: int = 0, nodes: list[int] | None = None,
                intra: str | None = None, inter: str | None = None) -> dict:
        """Predicted completion (us) of one call, and each rank's finish. segsize -1: the
        algorithm's default; 0: unsegmented. nodes: the host of each rank (node_layout; None:
        one host); intra / inter: the parts of a hierarchical algorithm (None: defaults)."""
        count, tsize = call_shape(op, size_bytes)
        total = ctypes.c_double()
        per_rank = (ctypes.c_double * max(1, ranks))()
        err = ctypes.create_string_buffer(200)
        layout = None
        if nodes is not None:
            if len(nodes) != ranks:
                raise ModelError(f"node layout of {len(nodes)} ranks for {ranks}")
            layout = (ctypes.c_int * ranks)(*nodes)
        rc = self._fn(ctypes.byref(self.table),
                      ctypes.byref(self.inter_table) if self.inter_table else None, layout,
                      op.encode(), alg.encode(), intra.encode() if intra else None,
                      inter.encode() if inter else None, ranks, root, count, tsize, segsize,
                      radix, ctypes.byref(total), per_rank, err, len(err))
        if rc != 0:
            raise ModelError(err.value.decode() or "the model failed")
        out = {"op": op, "algorithm": alg, "size_bytes": size_bytes, "ranks": ranks,
               "segsize": segsize, "root": root, "predicted_us": round(total.value, 4),
               "per_rank_us": [round(x, 4) for x in per_rank[:ranks]]}
        if nodes is not None:
            out["hosts"] = max(nodes) + 1
        if intra or inter:
            out["parts"] = {"intra": intra, "inter": inter}
        return out


def load_p2p(path: str | Path) -> dict:
    """A p2p.json, validated: P2PFileError (a ValueError) names the file, field and reason."""
    from ..p2p.schema import load

    return load(path)


def register(sub: argparse._SubParsersAction) -> None:
    from ..core.args import add_algs, add_ops, add_ranks, byte_size, hidden
    from ..core.colls import COLLS

    p = sub.add_parser("predict", help="predict a collective's time from p2p.json (no MPI run)")
    add_ops(p, "the operation to predict (one; needed)", one=list(COLLS), dest="op")
    add_algs(p, "comma-separated algorithm names (`colltune algorithms`), or all: every one "
                "of the operation (needed)", dest="alg")
    p.add_argument("--sizes", dest="size", type=byte_size, default=None, metavar="SIZE",
                   help="the message size (one), e.g. 128K (K, M and G are binary: 4M = 4 MiB; "
                        "per rank's block for scatter, gather, allgather, alltoall); not for "
                        "barrier")
    hidden(p, "--size", dest="size", type=byte_size)
    add_ranks(p, "number of ranks (needed)", type=int, default=None)
    p.add_argument("--segsize", default=None,
                   help="segment size, e.g. 8K; 0: unsegmented (default: the algorithm's)")
    p.add_argument("--root", type=int, default=0, help="root rank (default 0)")
    p.add_argument("--radix", type=int, default=0, help="k-nomial radix (default 4)")
    p.add_argument("--p2p", default="p2p.json", help="point-to-point costs (p2p.json)")
    p.add_argument("--layer", type=int, default=None,
                   help="p2p layer inside a host (default: the first not between hosts)")
    p.add_argument("--hosts", type=int, default=None,
                   help="spread the ranks over K hosts in block placement: messages between "
                        "hosts cost the inter-host layer's")
    p.add_argument("--ppn", type=int, default=None,
                   help="or R ranks per host (block placement)")
    p.add_argument("--inter-layer", type=int, default=None,
                   help="p2p layer between hosts (default: the one marked between_hosts)")
    p.add_argument("--intra", default=None,
                   help="hierarchical algorithms: the intra-host part (default: theirs)")
    p.add_argument("--inter", default=None,
                   help="hierarchical algorithms: the inter-host part (default: theirs)")
    p.add_argument("--mpi", help="mpich, openmpi, intelmpi or system "
                                 "(default: $COLLTUNE_MPI or mpich)")
    p.add_argument("--json", action="store_true", help="print the prediction as JSON")
    p.set_defaults(func=cmd_predict)


def cmd_predict(args: argparse.Namespace) -> int:
    from ..core.args import UsageError, byte_size, need, split_list
    from ..core.units import human_size

    need(args.op is not None, "--ops is needed: the operation to predict")
    need(args.alg is not None, "--algs is needed: algorithm names, or all")
    need(args.ranks is not None, "-n/--ranks is needed: the number of ranks")
    if args.op != "barrier" and args.size is None:
        print("colltune predict: --sizes is needed for " + args.op, file=sys.stderr)
        return 2
    if args.ranks < 1:
        print("colltune predict: --ranks must be at least 1", file=sys.stderr)
        return 2
    seg = -1
    if args.segsize is not None:
        try:
            seg = 0 if args.segsize.strip() == "0" else byte_size(args.segsize)
        except (ValueError, argparse.ArgumentTypeError) as e:
            print(f"colltune predict: bad --segsize: {e}", file=sys.stderr)
            return 2
    if not Path(args.p2p).exists():
        print(f"colltune predict: {args.p2p} not found (measure it with `colltune p2p`)",
              file=sys.stderr)
        return 2
    across = args.hosts is not None or args.ppn is not None
    try:
        if args.hosts is not None and args.ppn is not None:
            raise ModelError("give --hosts or --ppn, not both")
        nodes = node_layout(args.ranks, args.hosts, args.ppn) if across else None
        build = MPIBuild.select(args.mpi)
        doc = load_p2p(args.p2p)
        model = Model.from_p2p(build, doc, args.layer, inter_layer=args.inter_layer,
                               hosts=across)
        reg = [a for a in build.registry() if a["coll"] == args.op and not a["native"]]
        algs = {a["name"] for a in reg}
        try:
            named = split_list(args.alg, "--algs", what="algorithm")
        except UsageError as e:
            raise ModelError(str(e)) from None
        bad = [a for a in named if a != "all" and a not in algs]
        if bad:
            raise ModelError(f"unknown {args.op} algorithm '{bad[0]}' (one of: "
                             f"{', '.join(sorted(algs))}, or all)")
        chosen = [a["name"] for a in reg] if "all" in named else named
        hier = {a["name"] for a in reg if a.get("hierarchical")}
        rows = [model.predict(args.op, alg, args.size or 0, args.ranks, segsize=seg,
                              root=args.root, radix=args.radix, nodes=nodes,
                              intra=args.intra if alg in hier else None,
                              inter=args.inter if alg in hier else None) for alg in chosen]
    except (MPIError, ModelError, ValueError) as e:
        print(f"colltune predict: {e}", file=sys.stderr)
        return 2
    for r in rows:
        r["p2p"] = str(args.p2p)
        r["layer"] = model.layer.get("layer")
        if across:
            r["inter_layer"] = model.inter_layer.get("layer")
    if args.json:
        print(json.dumps(rows[0] if len(rows) == 1 else rows))
        return 0
    seg_text = {-1: "default segments", 0: "unsegmented"}.get(seg, f"{human_size(seg)} segments")
    size_text = human_size(args.size) if args.size else "no data"
    where = f" on {max(nodes) + 1} hosts" if nodes else ""
    for r in rows:
        print(f"{args.op} {r['algorithm']}, {size_text}, {args.ranks} ranks{where}, "
              f"{seg_text}: {r['predicted_us']:.2f} us predicted (ranks finish between "
              f"{min(r['per_rank_us']):.2f} and {max(r['per_rank_us']):.2f})")
    return 0
