"""The split-tree model (src/model/splittree.h) from Python, and `colltune splittree`.

Denis et al. (Euro-Par 2018) split a binomial-tree collective: its upper H(N) - S levels run
on the Nproc - N communication cores, overlapped with computation, its last S levels on the
N application cores. The C library computes the model's times (in units of one
point-to-point transfer of the buffer); this module tabulates them over N in the paper's
setting, computation C(N) = (Nproc / N) * H(Nproc), for choosing N and S (docs/MODEL.md).
"""

from __future__ import annotations

import argparse
import ctypes
import json
import math
import sys

from ..core.args import add_ranks, hidden, need
from ..core.mpi import MPIBuild, MPIError


class SplitTree:
    """The C split-tree functions of one build's libcolltune.so."""

    def __init__(self, build: MPIBuild):
        lib = ctypes.CDLL(str(build.tool("libcolltune.so")))
        i, d = ctypes.c_int, ctypes.c_double
        sigs = {
            "ct_split_height": (i, [i]),
            "ct_split_overlapped": (d, [i, i, i, d]),
            "ct_split_nonblocking": (d, [i, i, i]),
            "ct_split_blocking": (d, [i]),
            "ct_split_best_s": (i, [i, i, d, ctypes.POINTER(d)]),
            "ct_split_paper_compute": (d, [i, i]),
        }
        for name, (res, args) in sigs.items():
            fn = getattr(lib, name)
            fn.restype, fn.argtypes = res, args
        self._lib = lib

    def height(self, n: int) -> int:
        return self._lib.ct_split_height(n)

    def best_s(self, n: int, p: int, c: float) -> tuple[int, float]:
        """(best S, its time) for n ranks, p communication cores, computation c (negative:
        none); the smallest S on ties, S = H when p <= 0."""
        t = ctypes.c_double()
        s = self._lib.ct_split_best_s(n, p, c, ctypes.byref(t))
        if s < 0:
            raise ValueError(f"no split-tree prediction for N={n}, P={p}, C={c}")
        return s, t.value

    def overlapped(self, n: int, p: int, s: int, c: float) -> float:
        """The model's time of split S for n ranks, p communication cores, computation c."""
        return self._lib.ct_split_overlapped(n, p, s, c)

    def paper_row(self, nproc: int, n: int) -> dict:
        """Every time the model gives for n of nproc cores in the paper's setting."""
        lib = self._lib
        h, p = self.height(n), nproc - n
        c = lib.ct_split_paper_compute(nproc, n)
        best, t_best = self.best_s(n, p, c)
        blocking = lib.ct_split_blocking(n)
        return {
            "n": n, "h": h, "p": p, "c": c, "best_s": best, "t_best": t_best,
            "t_overlapped": {str(s): lib.ct_split_overlapped(n, p, s, c) for s in range(h + 1)},
            "t_nonblocking": {str(s): lib.ct_split_nonblocking(n, p, s) for s in range(h + 1)},
            "t_blocking": blocking,
            "t_blocking_total": blocking + c,
        }


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "splittree",
        help="the split-tree model (Denis et al. 2018): best S for N of Nproc cores",
        description="Predicted times of the split-tree collective for N application cores "
                    "out of Nproc (P = Nproc - N communication cores), computation "
                    "C(N) = (Nproc/N) * H(Nproc), in units of one point-to-point transfer "
                    "of the buffer; for each N the S (levels on the application cores) that "
                    "minimises the overlapped time, then the best N overall. No MPI run.")
    add_ranks(p, "Nproc: the ranks, one a core (at least 3; needed)", type=int, default=None,
              old=("--nproc",), dest="nproc")
    p.add_argument("--app-ranks", dest="n", type=int, default=None, metavar="N",
                   help="only this number N of application ranks (2 to Nproc-1)")
    hidden(p, "--n", dest="n", type=int)
    p.add_argument("--mpi", help="the build whose libcolltune.so computes it "
                                 "(default: $COLLTUNE_MPI or mpich)")
    p.add_argument("--json", action="store_true",
                   help="print only a JSON list, one object per N (n, h, p, c, best_s, "
                        "t_best, t_overlapped and t_nonblocking by S, t_blocking, "
                        "t_blocking_total); the best overall is the entry of least t_best, "
                        "left to the consumer")
    p.set_defaults(func=cmd_splittree)


def _fmt(t: float) -> str:
    return "inf" if math.isinf(t) else f"{t:.2f}"


def cmd_splittree(args: argparse.Namespace) -> int:
    need(args.nproc is not None, "-n/--ranks is needed: Nproc, the ranks (at least 3)")
    if args.nproc < 3:
        print(f"colltune splittree: -n/--ranks must be at least 3 (got {args.nproc}): N runs "
              "from 2 to nproc-1", file=sys.stderr)
        return 2
    if args.n is not None and not 2 <= args.n <= args.nproc - 1:
        print(f"colltune splittree: --app-ranks must be between 2 and {args.nproc - 1} "
              f"(got {args.n})", file=sys.stderr)
        return 2
    try:
        model = SplitTree(MPIBuild.select(args.mpi))
    except (MPIError, OSError, AttributeError) as e:
        print(f"colltune splittree: {e}", file=sys.stderr)
        return 2
    ns = [args.n] if args.n is not None else range(2, args.nproc)
    rows = [model.paper_row(args.nproc, n) for n in ns]
    if args.json:
        print(json.dumps(rows))
        return 0
    hmax = max(r["h"] for r in rows)
    print(f"split tree, Nproc={args.nproc}: N application cores, P=Nproc-N communication "
          f"cores, C(N)=(Nproc/N)*H(Nproc); times in point-to-point transfers")
    print("T_overlapped by S (levels on the application cores); blocking = C(N) + H(N)")
    head = f"{'N':>4} {'P':>3} {'H':>2} {'C(N)':>6} " + " ".join(
        f"{'S=' + str(s):>6}" for s in range(hmax + 1))
    print(head + f" {'blocking':>8} {'best S':>6}")
    for r in rows:
        cells = " ".join(f"{_fmt(r['t_overlapped'][str(s)]) if s <= r['h'] else '-':>6}"
                         for s in range(hmax + 1))
        print(f"{r['n']:>4} {r['p']:>3} {r['h']:>2} {r['c']:>6.2f} {cells} "
              f"{r['t_blocking_total']:>8.2f} {r['best_s']:>6}")
    best = min(rows, key=lambda r: r["t_best"])  # the first, smallest N, on ties
    which = "best overall" if args.n is None else "best"
    print(f"{which}: N={best['n']}, S={best['best_s']}, T={best['t_best']:.2f}")
    return 0
