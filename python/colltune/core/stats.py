"""The statistics every verdict of colltune rests on: medians with distribution-free
confidence intervals, ratios of medians with bootstrap intervals, the verdict an
interval allows, interleaved measurement orders, and the machine's load.

One convention for ratios everywhere (issue 39): the **speed-up** = native time /
colltune time, higher is better; 1 means no difference. A verdict is given only where
the interval excludes 1; otherwise the answer is a tie ("no difference within noise").

Pure Python on purpose: no numpy on the measuring path, and the same code serves the
benchmark tables, the tuner, `verify`, `colltune app` and the report.
"""

from __future__ import annotations

import math
import os
import random
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

CONFIDENCE = 0.95
RESAMPLES = 2000
# A sample whose interquartile range exceeds this share of its median is called noisy.
SPREAD_WARN = 0.25

FASTER, SLOWER, TIE = "faster", "slower", "tie"
TIE_TEXT = "no difference within noise"


@dataclass(frozen=True)
class Estimate:
    """A point estimate with its confidence interval [lo, hi] from n samples.
    `exact` is False where too few samples allow the requested confidence (then
    [lo, hi] is the sample's range, and `coverage` says what it covers)."""

    value: float
    lo: float
    hi: float
    n: int
    coverage: float = CONFIDENCE
    exact: bool = True

    def as_dict(self) -> dict:
        return {"value": self.value, "lo": self.lo, "hi": self.hi, "n": self.n,
                "coverage": round(self.coverage, 4), "exact": self.exact}

    def text(self, fmt: str = "{:.3g}") -> str:
        return f"{fmt.format(self.value)} [{fmt.format(self.lo)}, {fmt.format(self.hi)}]"


def _clean(xs: Iterable[float]) -> list[float]:
    out = sorted(float(x) for x in xs if x is not None and math.isfinite(float(x)))
    if not out:
        raise ValueError("no finite samples")
    return out


def median(xs: Iterable[float]) -> float:
    s = _clean(xs)
    n = len(s)
    return s[n // 2] if n % 2 else (s[n // 2 - 1] + s[n // 2]) / 2


def _binom_cdf(k: int, n: int) -> float:
    """P(B(n, 1/2) <= k)."""
    if k < 0:
        return 0.0
    if k >= n:
        return 1.0
    return sum(math.comb(n, i) for i in range(k + 1)) / 2.0**n


def median_ci(xs: Iterable[float], confidence: float = CONFIDENCE) -> Estimate:
    """The median with its distribution-free interval from order statistics: the
    j-th and k-th smallest samples such that the true median lies between them with
    at least `confidence` (the number of samples below it is Binomial(n, 1/2)).
    Needs n >= 6 for 95%; below, the whole range with the coverage it has."""
    s = _clean(xs)
    n = len(s)
    m = median(s)
    alpha = 1.0 - confidence
    # Largest j (1-based) with P(B <= j-1) <= alpha/2: [s_j, s_{n+1-j}] covers >= conf.
    j = 0
    for cand in range(1, n // 2 + 1):
        if _binom_cdf(cand - 1, n) <= alpha / 2:
            j = cand
        else:
            break
    if j == 0:
        coverage = 1.0 - 2 * _binom_cdf(0, n) if n > 1 else 0.0
        return Estimate(m, s[0], s[-1], n, coverage, exact=False)
    coverage = 1.0 - 2 * _binom_cdf(j - 1, n)
    return Estimate(m, s[j - 1], s[n - j], n, coverage, exact=True)


def ratio_ci(num: Sequence[float], den: Sequence[float], confidence: float = CONFIDENCE,
             resamples: int = RESAMPLES, seed: int = 0) -> Estimate:
    """median(num) / median(den) with a percentile bootstrap interval (both samples
    resampled independently; a fixed seed so that a report reproduces its figures)."""
    a, b = _clean(num), _clean(den)
    if median(b) <= 0:
        raise ValueError("the denominator's median is not positive")
    point = median(a) / median(b)
    if len(a) < 2 or len(b) < 2:
        return Estimate(point, point, point, min(len(a), len(b)), 0.0, exact=False)
    rng = random.Random(seed)
    ratios = []
    # The resamples are of clean samples already: a plain sort-and-pick median, without
    # median()'s checks, makes the bootstrap several times faster (a report computes one
    # per operation and size); the same draws, so the same interval.
    na, nb = len(a), len(b)

    def med(xs: list[float], n: int) -> float:
        xs.sort()
        return xs[n // 2] if n % 2 else (xs[n // 2 - 1] + xs[n // 2]) / 2

    for _ in range(resamples):
        ma = med(rng.choices(a, k=na), na)
        mb = med(rng.choices(b, k=nb), nb)
        if mb > 0:
            ratios.append(ma / mb)
    ratios.sort()
    lo_i = int(math.floor((1 - confidence) / 2 * (len(ratios) - 1)))
    hi_i = int(math.ceil((1 + confidence) / 2 * (len(ratios) - 1)))
    # Too few samples to resolve the tails give an interval that is not what it says.
    exact = min(len(a), len(b)) >= 6
    return Estimate(point, ratios[lo_i], ratios[hi_i], min(len(a), len(b)), confidence,
                    exact)


def speedup(native: Sequence[float], colltune: Sequence[float], **kw) -> Estimate:
    """The speed-up native / colltune (higher is better) with its interval."""
    return ratio_ci(native, colltune, **kw)


def verdict(ci: Estimate, higher_is_better: bool = True) -> str:
    """FASTER or SLOWER only where the interval of a speed-up (or, with
    higher_is_better False, of a time ratio) excludes 1; else TIE."""
    if ci.lo > 1.0:
        return FASTER if higher_is_better else SLOWER
    if ci.hi < 1.0:
        return SLOWER if higher_is_better else FASTER
    return TIE


def verdict_text(v: str) -> str:
    return TIE_TEXT if v == TIE else v


def relative_spread(xs: Iterable[float]) -> float:
    """The interquartile range over the median (0 for a constant sample)."""
    s = _clean(xs)
    m = median(s)
    if len(s) < 4 or m == 0:
        return 0.0 if m == 0 or len(s) < 2 else (s[-1] - s[0]) / abs(m)
    q1 = s[(len(s) - 1) // 4]
    q3 = s[(3 * (len(s) - 1) + 3) // 4]
    return (q3 - q1) / abs(m)


def noisy(xs: Iterable[float], threshold: float = SPREAD_WARN) -> bool:
    return relative_spread(xs) > threshold


def interleaved_rounds(candidates: Sequence, rounds: int, seed: int = 0) -> list[list]:
    """`rounds` orders of the candidates, each a fresh shuffle: every round times each
    candidate once, so a load change during the measurement falls on all of them rather
    than deciding between two measured one after the other."""
    rng = random.Random(seed)
    out = []
    for _ in range(rounds):
        order = list(candidates)
        rng.shuffle(order)
        out.append(order)
    return out


def pick_best(samples: dict, confidence: float = CONFIDENCE) -> tuple[object, dict]:
    """The candidate with the lowest median time and, per other candidate, whether it
    is distinguishable from that best one: {name: (its speed-up over the best, i.e.
    best time / its time, at most about 1; the verdict of that speed-up: SLOWER where
    the interval excludes 1, else TIE)}.
    A best that no interval separates from the second is still returned: callers that
    must choose choose it, callers that report say "tie"."""
    if not samples:
        raise ValueError("no candidates")
    best = min(samples, key=lambda k: median(samples[k]))
    out = {}
    for name, xs in samples.items():
        if name == best:
            continue
        est = ratio_ci(samples[best], xs, confidence=confidence)
        out[name] = (est, verdict(est))
    return best, out


# ---- the machine's load -----------------------------------------------------------

def load_average() -> float | None:
    """The one-minute load average, or None where the system does not say."""
    try:
        return os.getloadavg()[0]
    except (OSError, AttributeError):
        return None


def cores() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        return os.cpu_count() or 1


def load_warning(load: float | None, ncores: int | None = None) -> str | None:
    """A one-line warning when the load exceeds the cores (measurements then share
    them with other work), else None."""
    if load is None:
        return None
    ncores = ncores or cores()
    if load > ncores:
        return (f"warning: the machine's load ({load:.1f}) exceeds its {ncores} cores: "
                "timings share the cores with other work; intervals are wide and "
                "verdicts may be ties")
    return None


def spread_warning(name: str, xs: Iterable[float], threshold: float = SPREAD_WARN) -> str | None:
    r = relative_spread(xs)
    if r > threshold:
        return (f"warning: {name}: spread (interquartile range / median) {r:.0%} exceeds "
                f"{threshold:.0%}")
    return None


# ---- candidates against native ------------------------------------------------------

def sample_blocks(samples: Sequence[float], blocks: int = 10) -> list[float]:
    """The medians of `blocks` runs of consecutive samples: for measurements taken
    before interleaved rounds (one sequential pass per candidate), a bounded sample
    whose spread still shows drift during the pass (the intervals then rest on
    blocks, not on rounds, and say less about load changes between candidates)."""
    xs = [float(x) for x in samples]
    if len(xs) <= blocks:
        return xs
    step = len(xs) / blocks
    return [median(xs[int(i * step):int((i + 1) * step)]) for i in range(blocks)]


@dataclass(frozen=True)
class Versus:
    """One size's candidates: each one's median time with its interval, the fastest
    non-native one (`best`), its speed-up over native (native / best, higher is better)
    with the interval, the verdict that interval allows (None where a side has a single
    sample: no interval), and the noisy candidates."""

    estimates: dict
    best: str | None
    speedup: Estimate | None
    verdict: str | None
    noisy: list

    def speedup_text(self, fmt: str = "{:.2f}") -> str:
        return "-" if self.speedup is None else self.speedup.text(fmt)


def versus_native(samples: dict, native: str = "native", exclude: Iterable = (),
                  threshold: float = SPREAD_WARN) -> Versus:
    """Compares the candidates of one size (name -> samples of times, lower is better).
    `exclude`: candidates that may not win (a failed check). The best candidate is
    chosen by its median; its interval is not widened for having been chosen among
    several, so a marginal "faster" among many candidates deserves a second run."""
    skip = set(exclude)
    estimates = {name: median_ci(xs) for name, xs in samples.items() if xs}
    ours = [n for n in estimates if n != native and n not in skip]
    best = min(ours, key=lambda n: estimates[n].value, default=None)
    sp = v = None
    if best is not None and native in estimates and estimates[best].value > 0:
        sp = speedup(samples[native], samples[best])
        # One sample a side has no interval: a point speed-up, and no verdict at all.
        v = verdict(sp) if sp.n >= 2 else None
    noisy = [n for n, xs in samples.items() if xs and relative_spread(xs) > threshold]
    return Versus(estimates, best, sp, v, noisy)
