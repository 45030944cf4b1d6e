"""Cache sizes from a traversal curve (Servet, section 2.1): pure functions, no measuring.

Input: the sizes of the traversed arrays and the nanoseconds per access at each size (the
`ct_probe traverse` curve). Output: one entry per cache level found.

- L1 is the first peak of the gradient C[k+1]/C[k] (virtually indexed: its size is the last
  size before the peak).
- Each further rise of the curve is a lower cache level. A rise confined to one step of
  the grid (the OS colours pages, or the cache is smaller than a page) is read like L1. A
  rise spread over several sizes is what a physically indexed cache shows when the OS puts
  pages anywhere: the size and associativity are those whose predicted miss curve (the
  binomial page-set model) diverges least from the measured one.

The model: with page size PS, a cache of size CS and associativity K has CS / (K * PS)
page-sets, the groups of cache sets a page can land in. An array of NP pages puts
X ~ B(NP, K * PS / CS) pages in a given page-set; a cyclic walk misses on every access to
a page-set holding more than K pages. The paper takes P(X > K), the chance that a given
page-set overflows, as the miss ratio; we take the share of *accesses* that miss, which is
what the timing sees: an access misses when its page shares its page-set with K or more of
the other NP - 1 pages, P(B(NP - 1, K * PS / CS) >= K) (exact for LRU and a cyclic walk).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

KiB = 1 << 10
MiB = 1 << 20

# Associativities tried by the estimator.
ASSOCIATIVITIES = (1, 2, 4, 8, 12, 16, 20, 24, 32)


def size_grid(lo: int, hi: int, steps_small: int = 2, steps_large: int = 2,
              large_from: int = 256 * KiB) -> list[int]:
    """Array sizes from lo to hi: `steps` sizes per octave (2**k * (1 + i/steps)), fewer
    below `large_from`. Every size is a multiple of 1 KiB (the traversal stride)."""
    sizes = set()
    octave = 1 * KiB
    while octave <= hi:
        steps = steps_small if octave < large_from else steps_large
        for i in range(steps):
            s = octave + octave * i // steps
            s -= s % KiB
            if lo <= s <= hi:
                sizes.add(s)
        octave *= 2
    return sorted(sizes)


def candidate_sizes(lo: float, hi: float) -> list[int]:
    """Cache sizes the estimator tries: 8 per octave (m * 2**k, m = 8..15), from lo to hi."""
    out = []
    k = 10
    while (8 << k) // 8 <= hi:
        for m in range(8, 16):
            s = m << (k - 3)
            if lo <= s <= hi:
                out.append(s)
        k += 1
    return out


def median3(values: list[float]) -> list[float]:
    """Median filter of width 3 (ends kept): removes one-point spikes, keeps steps."""
    if len(values) < 3:
        return list(values)
    out = [values[0]]
    out += [sorted(values[i - 1:i + 2])[1] for i in range(1, len(values) - 1)]
    out.append(values[-1])
    return out


def gradients(ns: list[float]) -> list[float]:
    return [ns[k + 1] / ns[k] if ns[k] > 0 else 1.0 for k in range(len(ns) - 1)]


@dataclass
class Rise:
    """A rise of the curve between indices `a` (last point below) and `b` (first above),
    whose steepest step starts at index `peak`."""

    a: int
    b: int
    peak: int
    factor: float

    @property
    def sharp(self) -> bool:
        return self.b == self.a + 1


def half_octave_gradients(sizes: list[int], ns: list[float]) -> list[float]:
    """Gradients scaled to a half-octave step (C[k+1]/C[k]) ** (0.5 / log2(S[k+1]/S[k])),
    so that the thresholds below mean the same on a fine grid as on a coarse one."""
    return [g ** (0.5 / math.log2(sizes[k + 1] / sizes[k])) if sizes[k + 1] > sizes[k] else g
            for k, g in enumerate(gradients(ns))]


def find_rises(ns: list[float], sizes: list[int] | None = None, *, peak: float = 1.25,
               extend: float = 1.08, split: float = 1.10, min_factor: float = 1.5) -> list[Rise]:
    """The rises of a (smoothed) curve. Each gradient peak above `peak` is a rise; two
    peaks are one rise unless the gradient between them falls below `split` somewhere;
    a rise spans the steps around its peak(s) whose gradient stays above `extend` (never
    past the lowest gradient between it and the next rise); it is kept when the curve rises
    by `min_factor` over it (smaller bumps are noise, or a TLB reaching its limit).
    With `sizes`, the gradients are scaled to half-octave steps first."""
    raw = gradients(ns)
    g = half_octave_gradients(sizes, ns) if sizes else raw
    n = len(g)
    peaks = [k for k in range(n) if g[k] >= peak and (k == 0 or g[k] >= g[k - 1])
             and (k == n - 1 or g[k] > g[k + 1])]
    # Merge peaks with no valley between them.
    groups: list[list[int]] = []
    for k in peaks:
        if groups and min(g[groups[-1][-1]:k + 1]) >= split:
            groups[-1].append(k)
        else:
            groups.append([k])
    rises = []
    for i, grp in enumerate(groups):
        # Bounds: the valleys (lowest gradients) between this group and its neighbours.
        left_limit = 0
        if i > 0:
            between = range(groups[i - 1][-1] + 1, grp[0])
            left_limit = min(between, key=lambda j: g[j]) + 1 if between else grp[0]
        right_limit = n - 1
        if i + 1 < len(groups):
            between = range(grp[-1] + 1, groups[i + 1][0])
            right_limit = min(between, key=lambda j: g[j]) - 1 if between else grp[-1]
        a = grp[0]
        while a - 1 >= left_limit and g[a - 1] >= extend:
            a -= 1
        b = grp[-1]
        while b + 1 <= right_limit and g[b + 1] >= extend:
            b += 1
        factor = math.prod(raw[a:b + 1])
        steepest = max(grp, key=lambda j: g[j])
        if factor >= min_factor:
            rises.append(Rise(a, b + 1, steepest, factor))
    return rises


# -- the binomial page-set model ---------------------------------------------------------


def binom_tail(n: int, p: float, k: int) -> float:
    """P(B(n, p) >= k)."""
    if k <= 0:
        return 1.0
    if n < k or p <= 0.0:
        return 0.0
    if p >= 1.0:
        return 1.0
    # 1 - P(X < k), summing the k lowest terms in log space (k is small: an associativity).
    log_p, log_q = math.log(p), math.log1p(-p)
    below = 0.0
    for i in range(k):
        below += math.exp(math.lgamma(n + 1) - math.lgamma(i + 1) - math.lgamma(n - i + 1)
                          + i * log_p + (n - i) * log_q)
    return min(1.0, max(0.0, 1.0 - below))


def miss_ratio(array_bytes: int, cache_bytes: int, ways: int, page_bytes: int) -> float:
    """Predicted share of accesses that miss a physically indexed cache of `cache_bytes` and
    `ways` ways, walking an array of `array_bytes` placed on random pages of `page_bytes`."""
    pages = max(1, math.ceil(array_bytes / page_bytes))
    page_sets = cache_bytes / (ways * page_bytes)
    if page_sets <= 1.0:
        # One page-set: behaves as a virtually indexed cache (fits or not).
        return 0.0 if array_bytes <= cache_bytes else 1.0
    return binom_tail(pages - 1, 1.0 / page_sets, ways)


@dataclass
class Fit:
    size_bytes: int
    associativity: int
    divergence: float
    # (cache size, ways, divergence) of the runners-up, best first
    others: list[tuple[int, int, float]] = field(default_factory=list)


def estimate_physical(sizes: list[int], ratios: list[float], page_bytes: int,
                      candidates: list[int] | None = None,
                      ways: tuple[int, ...] = ASSOCIATIVITIES) -> Fit | None:
    """Size and associativity whose predicted miss curve diverges least (sum of absolute
    differences) from the measured miss ratios (0 = all hits, 1 = all misses)."""
    if not sizes:
        return None
    if candidates is None:
        candidates = candidate_sizes(min(sizes) / 2, max(sizes))
    scored = []
    for cs in candidates:
        for k in ways:
            if cs % k or cs < k * page_bytes:
                continue
            div = sum(abs(r - miss_ratio(s, cs, k, page_bytes))
                      for s, r in zip(sizes, ratios, strict=True))
            scored.append((div, cs, k))
    if not scored:
        return None
    # Ties (several models predict the same curve): the smaller associativity, then size.
    scored.sort(key=lambda t: (round(t[0], 9), t[2], t[1]))
    div, cs, k = scored[0]
    return Fit(cs, k, div, [(c, w, d) for d, c, w in scored[1:6]])


# -- the whole curve -----------------------------------------------------------------------


def analyze_curve(sizes: list[int], ns: list[float], page_bytes: int,
                  huge: tuple[list[int], list[float]] | None = None) -> list[dict]:
    """Cache levels found in a traversal curve, L1 first. Each: level, size_bytes, method
    ('gradient-peak', 'probabilistic' or 'onset'), associativity (from the binomial fit),
    rise_bytes (the array sizes around the rise), ns_before/ns_after, divergence.

    `huge` is the same traversal on huge pages, (sizes, ns), when it could be made. Beyond
    L1 its rises are the levels: a base-page walk over more pages than the TLB maps adds a
    step of its own (12 MiB on the development machine) that huge pages do not have. Huge
    pages also decide what a spread rise means. The paper reads one as random page placement
    and fits the binomial model; but a cache whose replacement keeps part of a working set
    too large for it (adaptive insertion, most caches since ~2010) also rises gradually,
    from exactly its size, when pages are contiguous. Huge pages take placement out of the
    question for caches up to `ways` x the huge page size: if the base-page rise starts
    within one grid step of the huge-page one, placement did not matter and the size is
    where the huge-page rise starts ('onset'); otherwise the pages were scattered and the
    binomial estimate on the base-page curve stands ('probabilistic')."""
    if len(sizes) != len(ns) or len(sizes) < 3:
        raise ValueError("a traversal curve needs at least 3 points")
    smooth = median3(ns)
    rises = find_rises(smooth, sizes)
    if not rises:
        return []
    levels = [{"level": 1, "size_bytes": sizes[rises[0].peak], "method": "gradient-peak",
               **_rise_fields(sizes, smooth, rises[0])}]
    l1 = sizes[rises[0].b]
    base_rises = [r for r in rises[1:]]
    if huge and len(huge[0]) >= 3:
        hs, hsmooth = huge[0], median3(huge[1])
        for r in find_rises(hsmooth, hs):
            if hs[r.b] <= l1:
                continue
            entry = {"level": len(levels) + 1, **_rise_fields(hs, hsmooth, r),
                     "curve": "huge pages"}
            if r.sharp:
                entry.update(size_bytes=hs[r.peak], method="gradient-peak")
            else:
                onset = hs[_onset(hsmooth, r)]
                base = [b for b in base_rises
                        if grid_steps(sizes[_onset(smooth, b)], sizes, onset) in (0, 1)]
                fit = _binomial(sizes, smooth, rises, base[0] if base else None, page_bytes)
                if base or fit is None:
                    entry.update(size_bytes=onset, method="onset")
                else:
                    entry.update(size_bytes=fit.size_bytes, method="probabilistic")
                if fit is not None:
                    entry.update(probabilistic_bytes=fit.size_bytes,
                                 associativity=fit.associativity,
                                 divergence=round(fit.divergence, 4))
            levels.append(entry)
        return levels
    for rise in base_rises:
        entry = {"level": len(levels) + 1, **_rise_fields(sizes, smooth, rise),
                 "curve": "base pages"}
        fit = None if rise.sharp else _binomial(sizes, smooth, rises, rise, page_bytes)
        if fit is None:
            entry.update(size_bytes=sizes[rise.peak], method="gradient-peak")
        else:
            entry.update(size_bytes=fit.size_bytes, method="probabilistic",
                         associativity=fit.associativity, divergence=round(fit.divergence, 4))
        levels.append(entry)
    return levels


def _onset(smooth: list[float], rise: Rise, share: float = 0.1) -> int:
    """Where a rise starts: the last point of it still below `share` of its height (a
    noisy first step of a few percent is not yet the rise)."""
    lo, hi = smooth[rise.a], smooth[rise.b]
    j = rise.a
    while j + 1 < rise.b and smooth[j + 1] <= lo + share * (hi - lo):
        j += 1
    return j


def _rise_fields(sizes: list[int], smooth: list[float], rise: Rise) -> dict:
    return {"rise_bytes": [sizes[rise.a], sizes[rise.b]], "ns_before": round(smooth[rise.a], 4),
            "ns_after": round(smooth[rise.b], 4), "factor": round(rise.factor, 3)}


def _binomial(sizes: list[int], smooth: list[float], rises: list[Rise], rise: Rise | None,
              page_bytes: int) -> Fit | None:
    """The binomial estimate for `rise`, over the window from the plateau before it to the
    plateau after it; miss ratios normalised as the paper does, (C - min) / (max - min)
    over the window."""
    if rise is None or rise not in rises:
        return None
    i = rises.index(rise)
    lo = rises[i - 1].b if i > 0 else 0
    hi = rises[i + 1].a if i + 1 < len(rises) else len(sizes) - 1
    window = range(lo, hi + 1)
    hit, top = min(smooth[j] for j in window), max(smooth[j] for j in window)
    if top <= hit:
        return None
    ratios = [min(1.0, max(0.0, (smooth[j] - hit) / (top - hit))) for j in window]
    return estimate_physical([sizes[j] for j in window], ratios, page_bytes,
                             candidate_sizes(sizes[rise.a] * 0.75, sizes[rise.b]))


def grid_steps(size: int, grid: list[int], other: int) -> int | None:
    """How many steps of `grid` lie between `size` and `other` (0: same point, or both
    between the same two neighbours); None if `other` is outside the grid."""
    if not grid or other < grid[0] / 2 or other > grid[-1] * 2:
        return None

    def position(x):
        below = sum(1 for s in grid if s <= x)
        return below - (0 if x in grid else 0.5)

    return math.ceil(abs(position(size) - position(other)))
