"""Search strategies of the autotuner: which (algorithm, segment size) to measure at one point
of the primary grid, and which primary grid points to measure at all.

Vadhiyar, Fagg and Dongarra (IJHPCA 2004, section 3) split the tuning experiments in two.
The primary tests are a grid {operation, processes, message size}; the secondary tests, at
each primary point, look for the best {method, segment size}. An exhaustive secondary search
is what made their tuning take about 50 hours, and the cost is lopsided: one test at a small
segment size can take two to three orders of magnitude longer than one near the whole message
(their figure 2). So the strategies here try to measure few candidates, and few small ones:

- `exhaustive`: every candidate, the reference the others are judged against;
- `mgd`: the paper's modified gradient descent, per method from the largest segment size
  down, looking past the first minimum (figure 2 has several local minima);
- `smgd`: the scanning MGD, all methods advanced together, the most promising first, methods
  clearly worse than the best pruned (the paper's Table 2: fewer iterations than MGD);
- `model`: rank every candidate by the model (colltune.model) and measure only the few best;
- `pipeline`: the paper's third method (section 3.2, figure 4), the segment size chosen on a
  cheap proxy, a pipeline along the tree's longest edge on a few ranks.

A candidate is a pair (algorithm, segsize), segsize in bytes, 0 meaning unsegmented (or not
segmentable). Every strategy takes `methods` (algorithm -> ascending segment sizes; a
non-segmentable algorithm, and "native", have [0]) and `evaluate(alg, segsize) -> us`, the
expensive measurement, and returns a `Result`. Nothing here runs MPI or touches files: the
caller owns measuring, storing and resuming. A KeyboardInterrupt (or any exception) from
evaluate propagates unchanged; to resume, the caller passes what it has already measured as
`known=` and the strategy then reuses it without calling evaluate for it again (the answer is
the best over everything measured for the grid point, known or new).

All strategies share one signature, `(methods, evaluate, *, predict=None, **opts)`, and accept
(and ignore) each other's options, so a caller can hand one option set to any of them.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field

Candidate = tuple[str, int]
Evaluate = Callable[[str, int], float]

DEFAULT_LOOKAHEAD = 2
DEFAULT_THRESHOLD = 1.5
DEFAULT_TOP = 3
NATIVE = "native"


@dataclass
class Result:
    """The outcome of one secondary search: the best measured candidate and what it cost.

    `evaluations` counts distinct calls of the caller's evaluate (measurements passed in as
    `known` are in `evaluated` but not counted); `proxy_evaluations` those of the pipeline
    strategy's cheap proxy; `pruned` the methods SMGD dropped, in the order it dropped them.
    """

    algorithm: str
    segsize: int
    time_us: float
    evaluations: int
    evaluated: dict[Candidate, float]
    strategy: str
    proxy_evaluations: int = 0
    pruned: tuple[str, ...] = ()
    proxy_choice: dict[str, int] = field(default_factory=dict)

    @property
    def candidate(self) -> Candidate:
        return (self.algorithm, self.segsize)

    @property
    def spent_us(self) -> float:
        """Sum of the measured times: what the paper's Table 2 'time' columns grow with (each
        test repeats the collective), so small segment sizes weigh more than their count."""
        return sum(t for t in self.evaluated.values() if math.isfinite(t))


class _Memo:
    """evaluate, called at most once per candidate, with the calls counted.

    Tuning measurements are expensive (seconds to minutes each at small segment sizes), so no
    strategy may pay for one twice; `known` seeds the cache with a resumed run's measurements.
    """

    def __init__(self, evaluate: Evaluate, known: Mapping[Candidate, float] | None = None,
                 methods: Mapping[str, list[int]] | None = None):
        self._evaluate = evaluate
        self.times: dict[Candidate, float] = {}
        self.calls = 0
        for (alg, seg), t in (known or {}).items():
            if methods is None or int(seg) in methods.get(alg, ()):
                self.times[(alg, int(seg))] = _checked_time(alg, int(seg), t)

    def __call__(self, alg: str, seg: int) -> float:
        key = (alg, seg)
        if key not in self.times:
            t = self._evaluate(alg, seg)
            self.calls += 1
            self.times[key] = _checked_time(alg, seg, t)
        return self.times[key]


def _checked_time(alg: str, seg: int, t) -> float:
    """A time as a float; NaN refused, since it would silently poison every comparison (a
    failed measurement should come back as +inf, which simply never wins)."""
    t = float(t)
    if math.isnan(t):
        raise ValueError(f"evaluate({alg!r}, {seg}) returned NaN")
    return t


def _check_methods(methods: Mapping[str, Iterable[int]]) -> dict[str, list[int]]:
    """The methods as lists, refused when empty, unsorted or duplicated: a strategy's idea of
    'largest' and 'next smaller' relies on the ascending order the caller promised."""
    if not methods:
        raise ValueError("no methods to search")
    out = {}
    for alg, segs in methods.items():
        segs = [int(s) for s in segs]
        if not segs:
            raise ValueError(f"method {alg!r} has no segment size")
        if any(s < 0 for s in segs):
            raise ValueError(f"method {alg!r}: negative segment size")
        if any(b <= a for a, b in zip(segs, segs[1:], strict=False)):
            raise ValueError(f"method {alg!r}: segment sizes not strictly ascending: {segs}")
        out[alg] = segs
    return out


def descent_order(segs: list[int]) -> list[int]:
    """The order MGD walks a method's segment sizes: unsegmented (0) first when offered, then
    the largest down to the smallest. The paper starts at the largest because those tests are
    the cheapest and the unsegmented end is close to the optimum (figure 2)."""
    rest = sorted((s for s in segs if s != 0), reverse=True)
    return ([0] if 0 in segs else []) + rest


def unsegmented(segs: list[int]) -> int:
    """The candidate standing for 'no segmentation': 0 when offered, else the largest segment
    size (validate.segment_sizes ends at the whole message, which is one segment)."""
    return 0 if 0 in segs else max(segs)


def _result(strategy: str, memo: _Memo, methods: dict[str, list[int]], **extra) -> Result:
    """The best of what was measured. Ties go to the earlier method, then to the larger
    segment size, so that every strategy names the same winner on a tied surface."""
    if not memo.times:
        raise ValueError(f"{strategy}: nothing was measured")
    order = {alg: i for i, alg in enumerate(methods)}

    def key(item):
        (alg, seg), t = item
        return (t, order.get(alg, len(order)), -seg if seg else -math.inf)

    (alg, seg), t = min(memo.times.items(), key=key)
    return Result(algorithm=alg, segsize=seg, time_us=t, evaluations=memo.calls,
                  evaluated=dict(memo.times), strategy=strategy, **extra)


def exhaustive(methods, evaluate, *, predict=None, known=None, **opts) -> Result:
    """Every candidate measured: the paper's 'linear' search, the reference for the others."""
    methods = _check_methods(methods)
    memo = _Memo(evaluate, known, methods)
    for alg, segs in methods.items():
        for seg in segs:
            memo(alg, seg)
    return _result("exhaustive", memo, methods)


class _Descent:
    """One method's modified gradient descent, advanced one step at a time.

    The best so far is compared with each new point; a step that does not improve it is a
    miss. The first miss shows a local minimum; the descent goes on for `lookahead` further
    misses (a step that improves resets the count), then stops: so lookahead 0 is plain
    descent, stopping at the first local minimum, and lookahead k looks k steps past it.
    """

    def __init__(self, alg: str, segs: list[int], lookahead: int):
        self.alg = alg
        self.order = descent_order(segs)
        self.lookahead = lookahead
        self.pos = 0
        self.values: list[float] = []
        self.best = math.inf
        self.misses = 0
        self.done = False

    def step(self, memo: _Memo) -> float:
        t = memo(self.alg, self.order[self.pos])
        self.pos += 1
        self.values.append(t)
        if t < self.best:
            self.best, self.misses = t, 0
        else:
            self.misses += 1
        if self.pos >= len(self.order) or self.misses > self.lookahead:
            self.done = True
        return t

    @property
    def remaining(self) -> int:
        return len(self.order) - self.pos

    @property
    def gradient(self) -> float | None:
        """Change of time per step of the last step (steps are halvings of the segment size,
        so this is a slope in log segment size); None before the second point."""
        if len(self.values) < 2:
            return None
        last, prev = self.values[-1], self.values[-2]
        if not (math.isfinite(last) and math.isfinite(prev)):
            return None
        return last - prev

    @property
    def predicted(self) -> float:
        """The next value extrapolated from the last gradient (the best when unknown)."""
        g = self.gradient
        return self.best if g is None else self.values[-1] + g


def _check_lookahead(lookahead) -> int:
    lookahead = int(lookahead)
    if lookahead < 0:
        raise ValueError("lookahead must be >= 0")
    return lookahead


def mgd(methods, evaluate, *, predict=None, known=None, lookahead=DEFAULT_LOOKAHEAD,
        **opts) -> Result:
    """Modified gradient descent (paper section 3.2): per method, from the largest segment
    size toward smaller ones, in one direction only, past the first local minimum by
    `lookahead` non-improving steps (see _Descent); the best over all methods."""
    methods = _check_methods(methods)
    lookahead = _check_lookahead(lookahead)
    memo = _Memo(evaluate, known, methods)
    for alg, segs in methods.items():
        d = _Descent(alg, segs, lookahead)
        while not d.done:
            d.step(memo)
    return _result("mgd", memo, methods)


def smgd(methods, evaluate, *, predict=None, known=None, lookahead=DEFAULT_LOOKAHEAD,
         threshold=DEFAULT_THRESHOLD, **opts) -> Result:
    """Scanning modified gradient descent (paper section 3.2): the MGD of every method, run
    side by side so that the best methods are explored first and clearly worse ones are
    dropped before they cost their small (expensive) segment sizes.

    1. Scan: each method's first point (unsegmented or largest segment size) is measured.
    2. Step: of the methods still running, the one with the lowest key advances one MGD step;
       key = min(its best, its next value predicted from its last gradient), ties to the
       earlier method. The prediction lets a method that is falling fast go before one that
       is lower now but flat, which absolute values alone would miss.
    3. Stop each method like MGD (`lookahead` non-improving steps past its first minimum).
    4. Prune, after every measurement, a running method m when, with G the global best:
         best_m > threshold * G, and
         its last gradient g_m is known (at least two points) and either g_m >= 0 (not
         descending) or last_m + g_m * remaining_m > G (even falling at its current rate for
         all its remaining segment sizes, it would not reach G).
       A heuristic, but a cautious one: the linear extrapolation is optimistic (figure 2's
       curves flatten and then climb toward small segments), and a method on a bump (g >= 0)
       is pruned only when it is already threshold times worse. A method with one point only
       is never pruned, since nothing says yet how fast it falls.
    With threshold = inf nothing is pruned and SMGD measures exactly what MGD measures.
    """
    methods = _check_methods(methods)
    lookahead = _check_lookahead(lookahead)
    threshold = float(threshold)
    if not threshold >= 1.0:
        raise ValueError("threshold must be >= 1")
    memo = _Memo(evaluate, known, methods)
    running = [_Descent(alg, segs, lookahead) for alg, segs in methods.items()]
    pruned: list[str] = []

    def prune() -> None:
        g_best = min(memo.times.values())
        for d in running:
            if d.done or not d.best > threshold * g_best:
                continue
            g = d.gradient
            if g is None:
                continue
            if g >= 0 or d.values[-1] + g * d.remaining > g_best:
                d.done = True
                pruned.append(d.alg)

    for d in running:
        d.step(memo)
    prune()
    while True:
        active = [d for d in running if not d.done]
        if not active:
            break
        nxt = min(active, key=lambda x: min(x.best, x.predicted))
        nxt.step(memo)
        prune()
    return _result("smgd", memo, methods, pruned=tuple(pruned))


def model(methods, evaluate, *, predict=None, known=None, top=DEFAULT_TOP, **opts) -> Result:
    """Model-guided: every candidate ranked by `predict(alg, segsize)` (cheap), only the `top`
    best predicted measured (distinct algorithms first: see below), plus every "native"
    candidate, which the model cannot predict and which is the baseline a tuned choice has
    to beat. The answer is the best measured, so
    a misleading model costs quality, never a crash. Candidates the model refuses (it raises
    ValueError, as colltune.model.ModelError is) or predicts as NaN are left unranked."""
    if predict is None:
        raise ValueError("the model strategy needs predict(alg, segsize)")
    top = int(top)
    if top < 0:
        raise ValueError("top must be >= 0")
    methods = _check_methods(methods)
    ranked = []
    for i, (alg, segs) in enumerate(methods.items()):
        if alg == NATIVE:
            continue
        for seg in segs:
            try:
                p = float(predict(alg, seg))
            except ValueError:
                continue
            if not math.isnan(p):
                ranked.append((p, i, -seg, alg, seg))
    ranked.sort()
    # Each algorithm's best predicted segment size first, in rank order, then the rest: a
    # model wrong about one algorithm's cost is wrong at all its segment sizes alike, and
    # must not fill every slot with it (make run, 2 ranks: three `shm` segment sizes
    # ranked first for allgather 64 KiB, while `cma`, never measured, was 1.7x faster).
    seen: set[str] = set()
    firsts, rest = [], []
    for item in ranked:
        (rest if item[3] in seen else firsts).append(item)
        seen.add(item[3])
    memo = _Memo(evaluate, known, methods)
    for seg in methods.get(NATIVE, []):
        memo(NATIVE, seg)
    for *_, alg, seg in (firsts + rest)[:top]:
        memo(alg, seg)
    return _result("model", memo, methods)


def pipeline(methods, evaluate, *, predict=None, known=None, evaluate_pipeline=None,
             **opts) -> Result:
    """The paper's pipeline method (section 3.2, figure 4): a segmented tree collective's
    best segment size is close to that of a pipeline along the tree's longest edge, which
    runs on a few ranks (e.g. a chain of 3) and so costs far less to scan than the tree.

    `evaluate_pipeline(alg, segsize)` is that proxy, built by the caller for each method. Per
    segmentable method (more than one segment size offered), every offered segment size is
    run on the proxy and the fastest taken (ties to the larger); then the real evaluate
    measures only that segment size and the unsegmented candidate (0 if offered, else the
    largest), since segmentation may not pay at all. A non-segmentable method (and native)
    is measured once. Real measurements: at most 2 per method."""
    if evaluate_pipeline is None:
        raise ValueError("the pipeline strategy needs evaluate_pipeline(alg, segsize)")
    methods = _check_methods(methods)
    proxy = _Memo(evaluate_pipeline)
    memo = _Memo(evaluate, known, methods)
    choice: dict[str, int] = {}
    for alg, segs in methods.items():
        if len(segs) == 1:
            memo(alg, segs[0])
            continue
        scanned = [s for s in segs if s != 0]
        best = min(reversed(scanned), key=lambda s: proxy(alg, s))
        choice[alg] = best
        memo(alg, unsegmented(segs))
        memo(alg, best)
    return _result("pipeline", memo, methods, proxy_evaluations=proxy.calls,
                   proxy_choice=choice)


STRATEGIES: dict[str, Callable[..., Result]] = {
    "exhaustive": exhaustive,
    "mgd": mgd,
    "smgd": smgd,
    "model": model,
    "pipeline": pipeline,
}


def search(strategy: str, methods, evaluate, **opts) -> Result:
    """One secondary search by strategy name; an unknown name is a ValueError naming them."""
    try:
        fn = STRATEGIES[strategy]
    except KeyError:
        raise ValueError(f"unknown search strategy {strategy!r} "
                         f"(known: {', '.join(STRATEGIES)})") from None
    return fn(methods, evaluate, **opts)


# -- the primary grid --------------------------------------------------------------------------

def grid_sizes(lo: int = 8, hi: int = 4 << 20) -> list[int]:
    """The full primary grid of message sizes: every power of two from lo (rounded up to one)
    to hi, as the paper's exhaustive tuning (8 B to 1 MB there, to 4 MiB here)."""
    if lo <= 0 or hi < lo:
        raise ValueError(f"need 0 < lo <= hi (got {lo}, {hi})")
    s = 1 << (lo - 1).bit_length()
    out = []
    while s <= hi:
        out.append(s)
        s *= 2
    return out


def reduced_sizes(lo: int = 8, hi: int = 4 << 20, *, first: int = 1024,
                  factor: int = 8) -> list[int]:
    """The paper's reduced primary grid (section 3.1, technique 1): {8 B, 1024 B, 8192 B ...
    1 MB}, i.e. the smallest size, then `first` multiplied by `factor` each time, then the
    largest size. With the defaults: 8 B, 1 KiB, 8 KiB, 64 KiB, 512 KiB, 4 MiB, six points
    instead of grid_sizes' twenty, the sizes between served by interpolate_choice. Small
    messages are latency bound and behave alike (one point, lo, covers them); above `first`
    the choice changes with the size's order of magnitude, so a factor 8 step follows it."""
    if lo <= 0 or hi < lo:
        raise ValueError(f"need 0 < lo <= hi (got {lo}, {hi})")
    if first <= 0 or factor < 2:
        raise ValueError("need first > 0 and factor >= 2")
    out = [lo]
    s = first
    while s < hi:
        if s > lo:
            out.append(s)
        s *= factor
    if hi != out[-1]:
        out.append(hi)
    return out


def interpolate_choice(points, size: int):
    """The choice for a message size between reduced grid points: that of the grid point
    nearest in log2 of the size (performance changes with the size's order of magnitude, not
    its bytes). `points`: a mapping size -> choice, or (size, choice) pairs. Outside the grid
    the nearest end answers; exactly midway, the smaller point, whose segment size is then no
    larger than the message (a larger one would be unsegmented in effect, still valid)."""
    items = sorted((points.items() if isinstance(points, Mapping) else points),
                   key=lambda p: p[0])
    if not items:
        raise ValueError("no grid points to interpolate between")
    if size <= 0 or any(s <= 0 for s, _ in items):
        raise ValueError("sizes must be positive")
    x = math.log2(size)
    _, choice = min(items, key=lambda p: (abs(math.log2(p[0]) - x), p[0]))
    return choice
