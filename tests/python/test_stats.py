"""colltune.core.stats: the intervals and verdicts every report rests on."""

import random

import pytest
from colltune.core import stats


def test_median_interval_covers_and_is_order_statistics():
    xs = list(range(1, 21))  # n = 20: the 95% interval is [x_6, x_15]
    e = stats.median_ci(xs)
    assert e.value == 10.5
    assert (e.lo, e.hi) == (6, 15)
    assert e.exact and e.coverage >= 0.95


def test_median_interval_too_few_samples_says_so():
    e = stats.median_ci([3.0, 1.0, 2.0])
    assert not e.exact and e.coverage < 0.95
    assert (e.lo, e.value, e.hi) == (1.0, 2.0, 3.0)


def test_median_interval_coverage_by_simulation():
    rng = random.Random(1)
    hits = 0
    for _ in range(400):
        xs = [rng.expovariate(1.0) for _ in range(15)]
        e = stats.median_ci(xs)
        hits += e.lo <= 0.6931 <= e.hi  # the exponential's true median, ln 2
    assert hits / 400 >= 0.93


def test_speedup_verdicts():
    rng = random.Random(2)
    native = [10 + rng.random() for _ in range(20)]
    fast = [5 + rng.random() for _ in range(20)]
    same = [10 + rng.random() for _ in range(20)]
    s = stats.speedup(native, fast)
    assert 1.7 < s.value < 2.3 and stats.verdict(s) == stats.FASTER
    assert stats.verdict(stats.speedup(fast, native)) == stats.SLOWER
    assert stats.verdict(stats.speedup(native, same)) == stats.TIE
    assert stats.verdict_text(stats.TIE) == "no difference within noise"


def test_sequential_measurement_picks_the_wrong_winner_interleaved_does_not():
    """Two equal candidates; the machine's load grows steadily through the run (time
    1 at the start, 2 at the end). Measured one after the other, the second candidate
    takes all the slow samples and loses clearly; measured in interleaved rounds, both
    see the load alike: a tie."""
    rng = random.Random(3)

    def time_at(step, total):
        return (1.0 + step / total) * (1 + 0.02 * rng.random())

    n = 20
    seq = {"a": [time_at(i, 2 * n) for i in range(n)],
           "b": [time_at(n + i, 2 * n) for i in range(n)]}
    _, others = stats.pick_best(seq)
    assert others["b"][1] == stats.SLOWER  # sequential: "a" wins, wrongly

    inter = {"a": [], "b": []}
    step = 0
    for order in stats.interleaved_rounds(["a", "b"], n, seed=4):
        for name in order:
            inter[name].append(time_at(step, 2 * n))
            step += 1
    best, others = stats.pick_best(inter)
    other = "b" if best == "a" else "a"
    assert others[other][1] == stats.TIE


def test_spread_and_load_warnings():
    assert stats.relative_spread([5.0] * 10) == 0.0
    assert stats.spread_warning("x", [1, 1, 1, 1, 3, 3, 3, 3]) is not None
    assert stats.spread_warning("x", [1.0, 1.01, 0.99, 1.0]) is None
    assert stats.load_warning(5.0, 2) is not None
    assert stats.load_warning(1.0, 2) is None
    assert stats.load_warning(None) is None


def test_no_samples_is_an_error():
    with pytest.raises(ValueError):
        stats.median([])
