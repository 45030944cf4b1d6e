"""The autotuner's search strategies (colltune.tune.search) on synthetic cost surfaces shaped like
the seed paper's figure 2 (IJHPCA 2004): per method, time against segment size falls as an
exponential slope from the smallest segments onto a plateau with small local minima, and
rises a little toward the unsegmented end, which is close to the optimum but not at it.

What is asserted: exhaustive finds the global minimum; MGD and SMGD find it where they
should, with fewer measurements (the counts are pinned in EXPECTED, so a change of strategy
shows up here); lookahead matters; SMGD prunes a clearly worse method; the model strategy
measures at most top + 1 candidates and survives a misleading model; the pipeline strategy
measures at most 2 per method; no candidate is ever measured twice; a KeyboardInterrupt
propagates and a resumed search (known=) finishes what the first one started.
"""

from __future__ import annotations

import math
import random

import pytest
from colltune.model.validate import segment_sizes
from colltune.tune.search import (
    STRATEGIES,
    Result,
    descent_order,
    exhaustive,
    grid_sizes,
    interpolate_choice,
    mgd,
    model,
    pipeline,
    reduced_sizes,
    search,
    smgd,
    unsegmented,
)

SEGS = segment_sizes(1 << 20)  # 1 KiB ... 1 MiB, 11 sizes, the last the whole message
N = len(SEGS)
ALGS = ("linear", "chain", "binary", "binomial")


def fig2(base: float, seed: int | None = None, *, steep: float = 30.0, rate: float = 1.1,
         tail: float = 0.25, noise: float = 0.04, bumps: dict[int, float] | None = None):
    """One method's curve over SEGS: base * (1 + steep e^(-rate i) + tail (i / (N-1))^3),
    i the index of the segment size, times a uniform noise of +-noise (seeded: local minima
    on the plateau), times bumps {segsize: factor}."""
    rng = random.Random(seed)
    out = {}
    for i, seg in enumerate(SEGS):
        t = base * (1 + steep * math.exp(-rate * i) + tail * (i / (N - 1)) ** 3)
        out[seg] = t * (1 + (rng.uniform(-noise, noise) if seed is not None else 0.0))
    for seg, factor in (bumps or {}).items():
        out[seg] *= factor
    return out


class Surface:
    """A grid point's measurements: methods (as the caller hands them) and their times."""

    def __init__(self, name: str, curves: dict[str, dict[int, float]],
                 native: float | None = None):
        self.name = name
        self.methods = {alg: sorted(c) for alg, c in curves.items()}
        self.times = {(alg, seg): t for alg, c in curves.items() for seg, t in c.items()}
        if native is not None:
            self.methods["native"] = [0]
            self.times[("native", 0)] = native

    @property
    def best(self) -> tuple[str, int]:
        return min(self.times, key=self.times.get)


def seeded(seed: int) -> Surface:
    """Four methods of close bases (binomial best, linear worst), noisy, plus native."""
    bases = {"linear": 130.0, "chain": 100.0, "binary": 105.0, "binomial": 98.0}
    return Surface(f"seed{seed}", {alg: fig2(b, seed * 10 + j)
                                   for j, (alg, b) in enumerate(bases.items())}, native=112.0)


def lookahead_surface() -> Surface:
    """Chain has a bump at 256 KiB: descending from 1 MiB it falls, rises at the bump (a
    local minimum at 512 KiB), then falls to its global minimum at 64 KiB. Binary is smooth
    but worse than chain's global minimum, though better than its local one."""
    return Surface("lookahead", {
        "chain": fig2(100.0, bumps={256 << 10: 1.12}),
        "binary": fig2(103.0, steep=25.0),
    })


def prune_surface() -> Surface:
    """Linear is three times worse everywhere and falls only slowly: clearly out of the race.
    (Binomial a little worse than chain; chain's optimum is the global one.)"""
    return Surface("prune", {
        "chain": fig2(100.0, 3),
        "binomial": fig2(104.0, 4),
        "linear": fig2(300.0, 5, steep=40.0, rate=0.6, tail=0.4),
    })


def native_surface() -> Surface:
    """The vendor's collective beats every tuned method at this point."""
    return Surface("native", {alg: fig2(100.0 + 5 * j, 20 + j) for j, alg in enumerate(ALGS)},
                   native=95.0)


SEEDED = ("seed1", "seed5", "seed6")
SURFACES = {s.name: s for s in (seeded(1), seeded(5), seeded(6), lookahead_surface(),
                                prune_surface(), native_surface())}


class Spy:
    """evaluate for a surface that fails the test on a second call for one candidate, and can
    raise KeyboardInterrupt at its n-th call (an operator's ^C during a measurement)."""

    def __init__(self, surface: Surface, interrupt_at: int | None = None):
        self.surface = surface
        self.calls: list[tuple[str, int]] = []
        self.interrupt_at = interrupt_at

    def __call__(self, alg: str, seg: int) -> float:
        assert (alg, seg) not in self.calls, f"{(alg, seg)} measured twice"
        if self.interrupt_at is not None and len(self.calls) + 1 == self.interrupt_at:
            raise KeyboardInterrupt
        self.calls.append((alg, seg))
        return self.surface.times[(alg, seg)]

    @property
    def measured(self) -> dict[tuple[str, int], float]:
        return {c: self.surface.times[c] for c in self.calls}


def oracle(surface: Surface):
    """A model that ranks exactly as the measurements do (0.8x of them, plus a constant)."""
    return lambda alg, seg: 0.8 * surface.times[(alg, seg)] + 7.0


def proxy_of(surface: Surface):
    """A pipeline proxy on 3 ranks: a third of the tree's time plus a constant, so each
    method's best segment size is the tree's (the relation the paper's figure 4 relies on)."""
    return lambda alg, seg: surface.times[(alg, seg)] / 3.0 + 0.5


def run(strategy: str, surface: Surface, **opts) -> tuple[Result, Spy]:
    spy = Spy(surface)
    if strategy == "model":
        opts.setdefault("predict", oracle(surface))
    if strategy == "pipeline":
        opts.setdefault("evaluate_pipeline", proxy_of(surface))
    return STRATEGIES[strategy](surface.methods, spy, **opts), spy


# Evaluations (distinct calls of evaluate) per surface and strategy, all of which find the
# global minimum. Exhaustive is the candidate count. Pinned: a change of a strategy's rules
# shows up here, and the report quotes these numbers.
EXPECTED = {
    "seed1": {"exhaustive": 45, "mgd": 32, "smgd": 32, "model": 4, "pipeline": 9},
    "seed5": {"exhaustive": 45, "mgd": 31, "smgd": 31, "model": 4, "pipeline": 9},
    "seed6": {"exhaustive": 45, "mgd": 31, "smgd": 26, "model": 4, "pipeline": 9},
    "lookahead": {"exhaustive": 22, "mgd": 16, "smgd": 16, "model": 3, "pipeline": 4},
    "prune": {"exhaustive": 33, "mgd": 20, "smgd": 17, "model": 3, "pipeline": 6},
    "native": {"exhaustive": 45, "mgd": 30, "smgd": 30, "model": 4, "pipeline": 9},
}


def test_surfaces_have_the_paper_shape():
    """Every curve: slope at the small end far above the plateau; the unsegmented end within
    25 % of the method's optimum but not the optimum; local minima somewhere on the way."""
    for surface in SURFACES.values():
        for alg, segs in surface.methods.items():
            if alg == "native":
                continue
            ts = [surface.times[(alg, s)] for s in segs]
            low = min(ts)
            assert ts[0] > 10 * low
            assert low < ts[-1] < 1.25 * low
            assert ts.index(low) not in (0, len(ts) - 1)
    # the noisy ones: local minima in every method, more than one in some
    most = 0
    for name in SEEDED:
        s = SURFACES[name]
        for alg in ALGS:
            ts = [s.times[(alg, seg)] for seg in SEGS]
            minima = sum(1 for i in range(1, N - 1) if ts[i] < min(ts[i - 1], ts[i + 1]))
            assert minima >= 1, (name, alg)
            most = max(most, minima)
    assert most >= 2


@pytest.mark.parametrize("name", list(SURFACES))
def test_exhaustive_finds_the_global_minimum(name):
    s = SURFACES[name]
    res, spy = run("exhaustive", s)
    assert res.candidate == s.best
    assert res.time_us == s.times[s.best]
    assert res.evaluations == len(s.times) == len(spy.calls) == EXPECTED[name]["exhaustive"]
    assert res.evaluated == s.times
    assert res.strategy == "exhaustive"


@pytest.mark.parametrize("name", list(SURFACES))
@pytest.mark.parametrize("strategy", ["mgd", "smgd", "model", "pipeline"])
def test_strategy_finds_it_with_fewer_evaluations(name, strategy):
    s = SURFACES[name]
    ex, _ = run("exhaustive", s)
    res, spy = run(strategy, s)
    assert res.candidate == s.best == ex.candidate
    assert res.evaluations < ex.evaluations
    assert res.evaluations == len(spy.calls) == len(res.evaluated) == EXPECTED[name][strategy]
    assert res.evaluated == spy.measured
    assert res.strategy == strategy
    # the measurements skipped are the expensive ones: far less time spent than exhaustive
    assert res.spent_us < ex.spent_us / 2


def test_mgd_walks_from_the_largest_segment_size_down():
    s = SURFACES["seed1"]
    _, spy = run("mgd", s)
    for alg in ALGS:
        segs = [seg for a, seg in spy.calls if a == alg]
        assert segs == sorted(segs, reverse=True)
        assert segs[0] == SEGS[-1]
        assert segs == SEGS[::-1][:len(segs)]  # one direction, no skipping


def test_lookahead_gets_past_a_local_minimum():
    s = SURFACES["lookahead"]
    assert s.best == ("chain", 64 << 10)
    plain, spy = run("mgd", s, lookahead=0)
    # chain: 1 MiB, 512 KiB, 256 KiB (the bump: the first miss) and stop at the local minimum
    assert [c for c in spy.calls if c[0] == "chain"] == [("chain", 1 << 20), ("chain", 512 << 10),
                                                         ("chain", 256 << 10)]
    assert plain.candidate != s.best
    assert plain.time_us > s.times[s.best]
    looking, _ = run("mgd", s)  # lookahead 2 by default
    assert looking.candidate == s.best
    assert plain.evaluations < looking.evaluations < EXPECTED["lookahead"]["exhaustive"]
    for strategy in ("mgd", "smgd"):
        assert run(strategy, s, lookahead=1)[0].candidate == s.best
        assert run(strategy, s, lookahead=0)[0].candidate == plain.candidate


def test_lookahead_stops_after_that_many_misses():
    """On a smooth curve, MGD measures its minimum plus lookahead + 1 points past it."""
    curve = fig2(100.0)
    s = Surface("smooth", {"chain": curve})
    best_index = SEGS[::-1].index(min(curve, key=curve.get))
    for lookahead in range(4):
        res, spy = run("mgd", s, lookahead=lookahead)
        assert res.candidate == s.best
        assert res.evaluations == min(N, best_index + 1 + lookahead + 1)


def test_smgd_prunes_the_clearly_worse_method():
    s = SURFACES["prune"]
    by_mgd, mgd_spy = run("mgd", s)
    res, spy = run("smgd", s)
    assert res.candidate == by_mgd.candidate == s.best
    assert res.pruned == ("linear",)
    assert res.evaluations < by_mgd.evaluations
    # linear cost SMGD its first point and one more (to know its gradient), MGD far more
    assert [c for c in spy.calls if c[0] == "linear"] == [("linear", 1 << 20),
                                                          ("linear", 512 << 10)]
    assert len([c for c in mgd_spy.calls if c[0] == "linear"]) > 2
    # the methods kept are searched exactly as MGD searches them
    assert {c for c in spy.calls if c[0] != "linear"} == {c for c in mgd_spy.calls
                                                          if c[0] != "linear"}
    # no threshold, no pruning: SMGD measures what MGD measures
    free, _ = run("smgd", s, threshold=math.inf)
    assert free.pruned == () and set(free.evaluated) == set(by_mgd.evaluated)


def test_smgd_does_not_prune_a_method_falling_fast_enough():
    """A method 2x worse at its large end but falling steeply must stay: by its gradient it
    can still catch up, and it does (its optimum is the global one)."""
    falling = {seg: 100.0 * (1 + 30 * math.exp(-1.1 * i)) for i, seg in enumerate(SEGS)}
    for i, seg in enumerate(SEGS[-4:]):
        falling[seg] = 120.0 + 60.0 * i  # 1 MiB ... 128 KiB: 300, 240, 180, 120 (falling)
    falling[64 << 10] = 90.0  # and below everything else
    s = Surface("falling", {"chain": fig2(100.0), "binary": falling})
    assert s.best == ("binary", 64 << 10)
    res, _ = run("smgd", s)
    assert res.pruned == ()
    assert res.candidate == s.best


def test_smgd_steps_the_most_promising_method_first():
    s = SURFACES["seed1"]
    _, spy = run("smgd", s)
    # the scan: every method's largest segment size (native's only candidate) first
    assert spy.calls[:5] == [(alg, SEGS[-1]) for alg in ALGS] + [("native", 0)]
    # the next step goes to the method with the lowest current best (nobody has a gradient)
    firsts = {alg: s.times[(alg, SEGS[-1])] for alg in ALGS}
    assert spy.calls[5] == (min(firsts, key=firsts.get), SEGS[-2])


def test_native_wins_where_it_is_best():
    s = SURFACES["native"]
    assert s.best == ("native", 0)
    for strategy in STRATEGIES:
        res, spy = run(strategy, s)
        assert (res.algorithm, res.segsize) == ("native", 0), strategy
        assert spy.calls.count(("native", 0)) == 1


def test_model_with_a_correct_ranking_measures_top_plus_native():
    for s in SURFACES.values():
        for top in (1, 3, 5):
            res, spy = run("model", s, top=top)
            assert res.candidate == s.best
            assert res.evaluations <= top + 1
            assert res.evaluations == top + ("native" in s.methods)
            if "native" in s.methods:
                assert ("native", 0) in spy.calls
    # native is measured, never predicted (the model knows no "native")
    s = SURFACES["native"]
    asked = []

    def predict(alg, seg):
        asked.append(alg)
        return oracle(s)(alg, seg)

    run("model", s, predict=predict)
    assert "native" not in asked and len(asked) == len(s.times) - 1


def test_model_with_a_misleading_ranking_returns_the_best_it_measured():
    s = SURFACES["seed5"]
    wrong = lambda alg, seg: -s.times[(alg, seg)]  # noqa: E731 - ranks the worst first
    res, spy = run("model", s, predict=wrong, top=3)
    assert res.evaluations == 4
    assert res.candidate != s.best
    assert res.time_us == min(spy.measured.values())
    # here native (112 us) beats the three worst candidates the model sent it to
    assert res.candidate == ("native", 0)


def test_model_skips_candidates_the_model_refuses():
    s = SURFACES["lookahead"]

    def partial(alg, seg):
        if alg == "chain":
            raise ValueError("unknown algorithm")  # as colltune.model.model.ModelError
        return math.nan if seg == 1 << 20 else s.times[(alg, seg)]

    res, spy = run("model", s, predict=partial, top=2)
    assert all(alg == "binary" and seg != 1 << 20 for alg, seg in spy.calls)
    assert res.candidate == min(spy.measured, key=spy.measured.get)
    with pytest.raises(ValueError, match="predict"):
        model(s.methods, Spy(s))
    with pytest.raises(ValueError, match="nothing was measured"):
        model(s.methods, Spy(s), predict=lambda a, g: math.nan)


def test_pipeline_measures_the_proxys_choice_and_unsegmented():
    s = SURFACES["seed6"]
    res, spy = run("pipeline", s)
    assert res.candidate == s.best
    assert res.proxy_evaluations == len(ALGS) * N
    for alg in ALGS:
        seg = res.proxy_choice[alg]
        assert seg == min(SEGS, key=lambda g, a=alg: s.times[(a, g)])
        assert {c for c in spy.calls if c[0] == alg} == {(alg, seg), (alg, SEGS[-1])}
    assert "native" not in res.proxy_choice
    with pytest.raises(ValueError, match="evaluate_pipeline"):
        pipeline(s.methods, Spy(s))


def test_pipeline_with_a_misleading_proxy_still_has_unsegmented():
    s = SURFACES["seed1"]
    res, spy = run("pipeline", s, evaluate_pipeline=lambda alg, seg: seg)  # smallest "wins"
    assert all(res.proxy_choice[alg] == SEGS[0] for alg in ALGS)
    assert res.evaluations == 2 * len(ALGS) + 1
    assert res.time_us == min(spy.measured.values())
    assert res.segsize in (SEGS[-1], 0)


@pytest.mark.parametrize("strategy", list(STRATEGIES))
def test_never_the_same_candidate_twice(strategy):
    """Strategies revisit candidates (SMGD's scan, pipeline's unsegmented = largest): the
    memo answers. Spy itself fails the test on a second call."""
    for s in SURFACES.values():
        res, spy = run(strategy, s)
        assert len(spy.calls) == len(set(spy.calls)) == res.evaluations


@pytest.mark.parametrize("strategy", list(STRATEGIES))
def test_keyboard_interrupt_propagates_and_the_caller_resumes(strategy):
    s = SURFACES["prune"]
    whole, _ = run(strategy, s)
    opts = {"predict": oracle(s)} if strategy == "model" else {}
    if strategy == "pipeline":
        opts["evaluate_pipeline"] = proxy_of(s)
    spy = Spy(s, interrupt_at=3)
    with pytest.raises(KeyboardInterrupt):
        STRATEGIES[strategy](s.methods, spy, **opts)
    assert len(spy.calls) == 2
    # resumed with what was measured: the same answer, nothing measured twice in all
    again = Spy(s)
    res = STRATEGIES[strategy](s.methods, again, known=spy.measured, **opts)
    assert not set(again.calls) & set(spy.calls)
    assert res.candidate == whole.candidate
    assert res.evaluations + len(spy.calls) == whole.evaluations
    assert res.evaluated == whole.evaluated


def test_known_measurements_of_other_candidates_are_ignored():
    s = SURFACES["lookahead"]
    res = exhaustive(s.methods, Spy(s), known={("chain", 3000): 1.0, ("ring", 0): 1.0})
    assert res.candidate == s.best


def test_search_by_name_and_bad_arguments():
    s = SURFACES["seed1"]
    assert search("mgd", s.methods, Spy(s)).candidate == s.best
    with pytest.raises(ValueError, match="known: exhaustive, mgd, smgd, model, pipeline"):
        search("annealing", s.methods, Spy(s))
    with pytest.raises(ValueError, match="no methods"):
        exhaustive({}, Spy(s))
    with pytest.raises(ValueError, match="no segment size"):
        mgd({"chain": []}, Spy(s))
    with pytest.raises(ValueError, match="ascending"):
        mgd({"chain": [2048, 1024]}, Spy(s))
    with pytest.raises(ValueError, match="lookahead"):
        mgd(s.methods, Spy(s), lookahead=-1)
    with pytest.raises(ValueError, match="threshold"):
        smgd(s.methods, Spy(s), threshold=0.5)
    with pytest.raises(ValueError, match="NaN"):
        exhaustive({"chain": [1024]}, lambda a, g: math.nan)
    # a failed measurement as +inf simply never wins
    res = mgd({"chain": [1024, 2048], "native": [0]},
              lambda a, g: math.inf if a == "chain" else 5.0)
    assert res.candidate == ("native", 0)


def test_unsegmented_zero_is_the_large_end():
    """A method may offer 0 (unsegmented) beside its segment sizes: MGD starts there."""
    assert descent_order([0, 1024, 2048, 4096]) == [0, 4096, 2048, 1024]
    assert descent_order([1024, 2048]) == [2048, 1024]
    assert unsegmented([0, 1024]) == 0 and unsegmented([1024, 2048]) == 2048
    times = {0: 10.0, 4096: 9.0, 2048: 8.5, 1024: 30.0}
    calls = []

    def evaluate(alg, seg):
        calls.append(seg)
        return times[seg]

    res = mgd({"chain": [0, 1024, 2048, 4096]}, evaluate, lookahead=0)
    assert calls == [0, 4096, 2048, 1024] and res.segsize == 2048


def test_grid_sizes():
    g = grid_sizes()
    assert g[0] == 8 and g[-1] == 4 << 20 and len(g) == 20
    assert all(b == 2 * a for a, b in zip(g, g[1:], strict=False))
    assert grid_sizes(5, 40) == [8, 16, 32]
    assert grid_sizes(1, 1) == [1]
    with pytest.raises(ValueError):
        grid_sizes(0, 8)
    with pytest.raises(ValueError):
        grid_sizes(16, 8)


def test_reduced_sizes_are_the_papers_grid():
    assert reduced_sizes() == [8, 1 << 10, 8 << 10, 64 << 10, 512 << 10, 4 << 20]
    # the paper's own: {8 B, 1024 B, 8192 B ... 1 MB}
    assert reduced_sizes(8, 1 << 20) == [8, 1024, 8192, 65536, 524288, 1 << 20]
    assert set(reduced_sizes()) <= set(grid_sizes())
    assert reduced_sizes(2048, 8192) == [2048, 8192]
    assert reduced_sizes(8, 8) == [8]
    assert reduced_sizes(8, 100 << 10, first=1024, factor=4) == [8, 1024, 4096, 16384, 65536,
                                                                 100 << 10]
    with pytest.raises(ValueError):
        reduced_sizes(8, 1 << 20, factor=1)


def test_interpolate_choice_nearest_in_log():
    points = {8: "a", 1024: "b", 8192: "c", 65536: "d"}
    assert interpolate_choice(points, 8) == "a"
    assert interpolate_choice(points, 64) == "a"  # log2 64 = 6: 3 from 8, 4 from 1024
    assert interpolate_choice(points, 128) == "b"  # 4 from 8, 3 from 1024 (bytes say 8)
    assert interpolate_choice(points, 2048) == "b"
    assert interpolate_choice(points, 4096) == "c"
    assert interpolate_choice(points, 3000) == "c"  # log2 3000 = 11.55: nearer 13 than 10
    assert interpolate_choice(points, 1) == "a"
    assert interpolate_choice(points, 1 << 30) == "d"
    # exactly midway in log (2048 between 1024 and 4096): the smaller point
    assert interpolate_choice({1024: "b", 4096: "c"}, 2048) == "b"
    assert interpolate_choice([(4096, "c"), (1024, "b")], 2048) == "b"
    # choices are anything: here the results of a search at each reduced size
    chosen = {size: ("chain", min(size, 8192)) for size in reduced_sizes()}
    assert interpolate_choice(chosen, 200 << 10) == ("chain", 8192)
    with pytest.raises(ValueError):
        interpolate_choice({}, 8)
    with pytest.raises(ValueError):
        interpolate_choice(points, 0)


def test_report_counts(capsys):
    """The evaluation counts per strategy and surface (shown with pytest -s)."""
    lines = [f"{'surface':10}" + "".join(f"{k:>11}" for k in STRATEGIES)]
    for name, s in SURFACES.items():
        counts = {k: run(k, s)[0].evaluations for k in STRATEGIES}
        assert counts == EXPECTED[name]
        lines.append(f"{name:10}" + "".join(f"{counts[k]:>11}" for k in STRATEGIES))
    print("\n".join(lines))


def test_model_measures_distinct_algorithms_before_more_segment_sizes():
    # The model ranks three segment sizes of "shm" first; "cma", ranked fourth, is the
    # fastest measured. With top 3 the slots go to each algorithm's best predicted size
    # first, so "cma" is measured and chosen.
    methods = {"native": [0], "shm": [0, 2048, 4096, 8192], "cma": [0], "ring": [0]}
    predicted = {("shm", 4096): 5.0, ("shm", 2048): 6.0, ("shm", 8192): 7.0, ("shm", 0): 8.0,
                 ("cma", 0): 8.1, ("ring", 0): 9.0}
    measured = {("native", 0): 17.0, ("shm", 4096): 14.0, ("shm", 2048): 15.0,
                ("shm", 8192): 14.5, ("shm", 0): 16.0, ("cma", 0): 9.6, ("ring", 0): 16.5}
    calls = []

    def evaluate(alg, seg):
        calls.append((alg, seg))
        return measured[(alg, seg)]

    res = model(methods, evaluate, predict=lambda a, g: predicted[(a, g)], top=3)
    assert sorted(calls) == sorted([("native", 0), ("shm", 4096), ("cma", 0), ("ring", 0)])
    assert (res.algorithm, res.segsize) == ("cma", 0)
    # more slots than algorithms: the next best predicted segment sizes fill them
    calls.clear()
    model(methods, evaluate, predict=lambda a, g: predicted[(a, g)], top=5)
    assert ("shm", 2048) in calls and ("shm", 8192) in calls and len(calls) == 6
