"""Telling noise from structure (issue 23): pure functions over recorded samples, no measuring.

A loaded machine makes single traversal passes slow at random sizes. Taken at face value
those spikes move a cache's size, add a level that does not exist, or flip a sharing
answer. Three rules keep the probe's answer the same from run to run:

- repeat, don't guess: a size is *settled* when its two fastest samples agree within
  `SETTLE_TOLERANCE` (noise only ever adds time, so agreeing minima are the machine's own
  speed); the probe re-measures the unsettled sizes until they settle or its budget is
  spent (`unsettled`);
- check against the OS: every measured rise is matched with the cache the OS reports at
  that size (`decide_levels`). A rise whose span holds the OS's size *agrees* and the level
  takes the OS's size (the traversal grid cannot place it better); a rise with no OS cache
  in it is not made a level but reported as an uncertain rise, with the evidence; an OS
  cache no rise matches is kept at the OS's size, flagged uncertain, with the evidence;
- say when pairs disagree: a pair of cores shares a cache when every pass slows it by more
  than the threshold, and does not when none does; passes on both sides of it
  (`decide_pair`) make the answer "uncertain", with the ratios, instead of a coin toss.
"""

from __future__ import annotations

import math
import statistics

from ..core.units import fmt_size
from .caches import grid_steps

SETTLE_TOLERANCE = 0.05   # the two fastest samples of a size within 5 %
SHARED_RATIO = 1.5        # the paper's threshold
SHARING_BAND = 0.10       # a pass counts as clear when 10 % off the threshold


# -- repeated samples ------------------------------------------------------------------------


def spread(samples: list[float]) -> float:
    """Relative gap between the two fastest samples (inf with fewer than two)."""
    if len(samples) < 2:
        return float("inf")
    a, b = sorted(samples)[:2]
    return (b - a) / a if a > 0 else float("inf")


def unsettled(samples: dict[int, list[float]], tolerance: float = SETTLE_TOLERANCE) -> list[int]:
    """The sizes whose two fastest samples still differ by more than `tolerance`."""
    return sorted(s for s, v in samples.items() if spread(v) > tolerance)


def floor_curve(samples: dict[int, list[float]]) -> tuple[list[int], list[float]]:
    """(sizes, fastest sample of each): the curve the levels are read from."""
    sizes = sorted(samples)
    return sizes, [min(samples[s]) for s in sizes]


# -- levels against the OS -----------------------------------------------------------------


def _contains(rise: list[int], size: int, grid: list[int]) -> bool:
    """Whether `size` lies in the rise's span, give or take one step of the grid."""
    lo, hi = rise
    if lo <= size <= hi:
        return True
    for edge in (lo, hi):
        steps = grid_steps(edge, grid, size)
        if steps is not None and steps <= 1:
            return True
    return False


def _octaves(a: int, b: int) -> float:
    return abs(math.log2(a / b))


def decide_levels(levels: list[dict], os_caches: list[dict], grid: list[int],
                  noisy: list[int] | None = None) -> tuple[list[dict], list[dict]]:
    """Measured levels (analyze_curve's) against the OS's caches.

    Returns (levels, uncertain_rises). Each level: level, size_bytes, status ('agrees' with
    the OS, 'uncertain', or 'measured' when the OS reports no caches), measured (the
    analyze_curve entry it comes from, or None) and evidence (sentences). Rises no OS cache
    explains are not levels: they come back in uncertain_rises with their evidence.
    `noisy`: sizes still unsettled when the probe stopped repeating (named in the evidence
    of the levels whose rise they fall in)."""
    noisy = sorted(noisy or [])
    known = [c for c in os_caches if c.get("size_bytes")]
    if not known:
        return ([{"level": lv["level"], "size_bytes": lv["size_bytes"], "status": "measured",
                  "measured": lv, "evidence": ["the OS reports no cache sizes to check against"]
                  + _noise(lv, noisy)} for lv in levels], [])
    known = sorted(known, key=lambda c: c["level"])
    # Each OS cache takes the rise that holds its size, the nearest one if several do.
    claimed: dict[int, int] = {}
    for i, c in enumerate(known):
        cands = [j for j, lv in enumerate(levels)
                 if _contains(lv.get("rise_bytes") or [lv["size_bytes"]] * 2, c["size_bytes"],
                              grid)]
        # An L1 rise explains no lower level and no lower level's rise explains L1.
        cands = [j for j in cands if (levels[j]["level"] == 1) == (c["level"] == 1)]
        if cands:
            claimed[i] = min(cands, key=lambda j: (j in claimed.values(),
                                                   _octaves(levels[j]["size_bytes"],
                                                            c["size_bytes"])))
    out = []
    for i, c in enumerate(known):
        name, os_size = f"L{c['level']}", c["size_bytes"]
        j = claimed.get(i)
        if j is None:
            seen = ", ".join(f"{fmt_size(lv['size_bytes'])} (rise {_span(lv)})" for lv in levels)
            out.append({"level": c["level"], "size_bytes": os_size, "status": "uncertain",
                        "measured": None,
                        "evidence": [f"no rise of the curve around the OS's {name} of "
                                     f"{fmt_size(os_size)}; rises seen: {seen or 'none'}; "
                                     f"size taken from the OS"]})
            continue
        lv = levels[j]
        shared_rise = [k for k, jj in claimed.items() if jj == j and k != i]
        if shared_rise and min([i, *shared_rise], key=lambda k: _octaves(
                lv["size_bytes"], known[k]["size_bytes"])) != i:
            out.append({"level": c["level"], "size_bytes": os_size, "status": "uncertain",
                        "measured": None,
                        "evidence": [f"one rise ({_span(lv)}) spans the OS's {name} and "
                                     f"another level: no separate rise; size taken from "
                                     f"the OS"]})
            continue
        evidence = [f"rise {_span(lv)} holds the OS's {fmt_size(os_size)} (measured "
                    f"{fmt_size(lv['size_bytes'])}, {lv.get('method')})"] + _noise(lv, noisy)
        out.append({"level": c["level"], "size_bytes": os_size, "status": "agrees",
                    "measured": lv, "evidence": evidence})
    used = set(claimed.values())
    phantoms = []
    for j, lv in enumerate(levels):
        if j in used:
            continue
        ev = [f"rise {_span(lv)} (x{lv.get('factor', '?')}) holds none of the OS's caches "
              f"({', '.join(fmt_size(c['size_bytes']) for c in known)}): not a level"]
        phantoms.append({"size_bytes": lv["size_bytes"], "rise_bytes": lv.get("rise_bytes"),
                         "method": lv.get("method"), "factor": lv.get("factor"),
                         "status": "uncertain", "evidence": ev + _noise(lv, noisy)})
    return out, phantoms


def _span(lv: dict) -> str:
    r = lv.get("rise_bytes")
    return f"{fmt_size(r[0])}..{fmt_size(r[1])}" if r else fmt_size(lv["size_bytes"])


def _noise(lv: dict, noisy: list[int]) -> list[str]:
    r = lv.get("rise_bytes")
    if not r:
        return []
    inside = [s for s in noisy if r[0] <= s <= r[1]]
    if not inside:
        return []
    return [f"unsettled sizes in the rise (samples still apart after the repeats): "
            f"{', '.join(fmt_size(s) for s in inside)}"]


# -- sharing ----------------------------------------------------------------------------------


def pass_ratio(together_ns: list[float], alone_ns: list[float]) -> float:
    """One pass's slowdown of a pair: the worse of its two cores, each over itself alone."""
    return max(t / a for t, a in zip(together_ns, alone_ns, strict=True))


def decide_pair(ratios: list[float], threshold: float = SHARED_RATIO,
                band: float = SHARING_BAND) -> str:
    """'shared', 'private' or 'uncertain' from the per-pass slowdowns of one pair.

    A pass is clear when its ratio is more than `band` (relative) off the threshold. The pair
    is shared (private) when its clear passes all say so and they are the majority of the
    passes; anything else, passes on both sides or mostly close to the threshold, is
    uncertain."""
    if not ratios:
        return "uncertain"
    hi, lo = threshold * (1 + band), threshold / (1 + band)
    above = sum(r > hi for r in ratios)
    below = sum(r < lo for r in ratios)
    if above and below:
        return "uncertain"
    if above * 2 > len(ratios):
        return "shared"
    if below * 2 > len(ratios):
        return "private"
    return "uncertain"


STRONG_PASSES = 4   # clear passes, all one side, that outweigh the OS's word


def pair_settled(ratios: list[float], threshold: float = SHARED_RATIO,
                 band: float = SHARING_BAND, min_passes: int = 2,
                 os_shared: bool | None = None) -> bool:
    """Whether more passes would not change the answer: enough passes, all clear, one side.
    An answer against the OS's (`os_shared`) needs STRONG_PASSES of them."""
    if os_shared is not None and (decide_pair(ratios, threshold, band) == "shared") != os_shared:
        # Against the OS: more passes, each twice as far off the threshold (a co-runner
        # time-sharing the cores slows pairs by 1.6 to 2 on their own).
        min_passes = max(min_passes, STRONG_PASSES)
        band *= 2
    if len(ratios) < min_passes:
        return False
    hi, lo = threshold * (1 + band), threshold / (1 + band)
    return all(r > hi for r in ratios) or all(r < lo for r in ratios)


ALONE_TOLERANCE = 1.5   # a core alone slower than 1.5 x the traversal curve: cache not its own


def alone_fits(alone_ns: float, curve_ns: float | None,
               tolerance: float = ALONE_TOLERANCE) -> bool:
    """Whether a core alone ran at the speed the single-core traversal curve shows for the
    array (None: no curve to compare with, assume it did). A core alone much slower than
    that did not have the cache to itself (another job was using it): a slowdown measured
    against it says nothing about sharing."""
    return curve_ns is None or curve_ns <= 0 or alone_ns <= tolerance * curve_ns


RESIDENT_FRACTION = 0.5  # alone, a cache-resident array runs at most half memory's latency


def resident(alone_ns: float, memory_ns: float | None,
             fraction: float = RESIDENT_FRACTION) -> bool:
    """Whether a core alone found the array in its cache: well below the latency of memory
    (the traversal curve's largest size; None: unknown, assume so). At memory's latency the
    pass compares memory with memory, which says nothing about who shares the cache."""
    return memory_ns is None or memory_ns <= 0 or alone_ns <= fraction * memory_ns


def decide_sharing(pairs: dict[tuple[int, int], list[float]], threshold: float = SHARED_RATIO,
                   band: float = SHARING_BAND,
                   discarded: dict[tuple[int, int], list[str]] | None = None,
                   os_shared: set[tuple[int, int]] | None = None) -> dict:
    """The answer for one level from each pair's per-pass ratios: status ('decided' or
    'uncertain'), shared (pairs decided shared), uncertain (pairs with their ratios) and
    evidence sentences. `discarded`: per pair, why passes were left out (alone_fits); a pair
    left with no pass is uncertain. `os_shared`: the pairs the OS says share the level; a
    verdict against the OS stands only on STRONG_PASSES clear passes all on its side
    (pair_settled). Where the OS answers, a pair the passes cannot decide (inconclusive, or
    against the OS on too few passes) keeps the OS's answer, said in the evidence, and the
    status is 'os' (the measurement neither confirmed nor refuted it); without the OS such a
    pair is uncertain. So repeated probes give one answer however loaded the machine is:
    the measured one where it is clear, else the OS's, never a coin toss."""
    shared, unsure, evidence, kept = [], [], [], []

    def keep_os(pair, why):
        kept.append(pair)
        if pair in os_shared:
            shared.append(pair)
        evidence.append(f"cores {pair[0]},{pair[1]}: {why}; the OS's answer "
                        f"({'shared' if pair in os_shared else 'private'}) stands")

    discarded = discarded or {}
    for pair, reasons in sorted(discarded.items()):
        if reasons:
            evidence.append(f"cores {pair[0]},{pair[1]}: {len(reasons)} pass(es) left out: "
                            + "; ".join(reasons[:3]))
    for pair, ratios in sorted(pairs.items()):
        verdict = decide_pair(ratios, threshold, band)
        if (os_shared is not None and verdict != "uncertain"
                and (verdict == "shared") != (pair in os_shared)
                and not pair_settled(ratios, threshold, band, os_shared=pair in os_shared)):
            keep_os(pair, f"measured {verdict} (slowdowns "
                          f"{', '.join(f'{r:.2f}' for r in ratios)}) against the OS "
                          f"({'shared' if pair in os_shared else 'private'}) on fewer than "
                          f"{STRONG_PASSES} clear passes")
            continue
        if verdict == "uncertain" and os_shared is not None:
            keep_os(pair, "no usable pass" if not ratios else
                    f"slowdowns {', '.join(f'{r:.2f}' for r in ratios)} per pass, "
                    f"inconclusive around the threshold {threshold}")
            continue
        if verdict == "shared":
            shared.append(pair)
        elif verdict == "uncertain":
            unsure.append(pair)
            if not ratios:
                evidence.append(f"cores {pair[0]},{pair[1]}: no usable pass")
                continue
            evidence.append(f"cores {pair[0]},{pair[1]}: slowdowns "
                            f"{', '.join(f'{r:.2f}' for r in ratios)} per pass, around the "
                            f"threshold {threshold} (clear below {threshold / (1 + band):.2f} "
                            f"or above {threshold * (1 + band):.2f})")
    return {"status": "uncertain" if unsure else "os" if kept else "decided", "shared": shared,
            "uncertain": [list(p) for p in unsure], "evidence": evidence,
            "median_ratio": {f"{a}-{b}": round(statistics.median(r), 3)
                             for (a, b), r in sorted(pairs.items()) if r}}
