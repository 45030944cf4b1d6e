"""The probe's analysis on synthetic inputs (no measuring): the binomial cache estimator,
the curve reader, layer clustering, bandwidth grouping, sharing groups, the schema."""

from __future__ import annotations

import random

import pytest
from colltune.probe.caches import (
    analyze_curve,
    candidate_sizes,
    estimate_physical,
    grid_steps,
    miss_ratio,
    size_grid,
)
from colltune.probe.cluster import (
    bandwidth_groups,
    cluster_values,
    comm_layers,
    parse_cpu_list,
    sharing_groups,
)
from colltune.probe.schema import validate

KiB, MiB = 1 << 10, 1 << 20


@pytest.mark.parametrize("cache, ways, page", [
    (256 * KiB, 4, 4 * KiB), (1 * MiB, 8, 4 * KiB), (1280 * KiB, 20, 4 * KiB),
    (2 * MiB, 16, 4 * KiB), (12 * MiB, 16, 4 * KiB), (3 * MiB, 12, 4 * KiB),
    (8 * MiB, 8, 16 * KiB), (32 * MiB, 16, 64 * KiB), (512 * KiB, 2, 16 * KiB),
])
def test_estimator_recovers_its_own_model(cache, ways, page):
    sizes = [s for s in size_grid(cache // 8, cache * 4, steps_large=8) if s >= page]
    ratios = [miss_ratio(s, cache, ways, page) for s in sizes]
    fit = estimate_physical(sizes, ratios, page, candidate_sizes(cache / 4, cache * 4))
    assert (fit.size_bytes, fit.associativity) == (cache, ways)
    assert fit.divergence == pytest.approx(0.0, abs=1e-9)


def test_estimator_tolerates_noise():
    rng = random.Random(5)
    cache, ways, page = 2 * MiB, 16, 4 * KiB
    sizes = size_grid(256 * KiB, 8 * MiB, steps_large=8)
    ratios = [min(1, max(0, miss_ratio(s, cache, ways, page) + rng.gauss(0, 0.02)))
              for s in sizes]
    fit = estimate_physical(sizes, ratios, page, candidate_sizes(512 * KiB, 8 * MiB))
    assert fit.size_bytes == cache


def test_miss_ratio_model():
    # fits when every page-set holds its pages: none can overflow with fewer pages than ways
    assert miss_ratio(8 * 4096, MiB, 8, 4096) == 0.0
    assert miss_ratio(64 * MiB, MiB, 8, 4096) == pytest.approx(1.0)
    # grows with the array
    values = [miss_ratio(s, MiB, 8, 4096) for s in (512 * KiB, MiB, 2 * MiB)]
    assert values == sorted(values) and 0 < values[1] < 1
    # a cache with a single page-set behaves as virtually indexed: a cliff at its size
    assert miss_ratio(MiB, MiB, 16, 2 * MiB) == 0.0 and miss_ratio(2 * MiB, MiB, 16, 2 * MiB) == 1


def _curve(sizes, l1=32 * KiB, l2=(1 * MiB, 8), l3=16 * MiB, page=4096):
    """ns per access of a machine with a sharp L1, a physically indexed L2 and a sharp L3."""
    out = []
    for s in sizes:
        ns = 1.0 if s <= l1 else 4.0
        ns += 10.0 * miss_ratio(s, l2[0], l2[1], page) if s > l1 else 0
        ns = 100.0 if s > l3 else ns
        out.append(ns)
    return out


def test_curve_levels_from_peaks_and_binomial():
    sizes = size_grid(4 * KiB, 64 * MiB, steps_large=4)
    levels = analyze_curve(sizes, _curve(sizes), 4096)
    assert [lv["level"] for lv in levels] == [1, 2, 3]
    assert levels[0]["size_bytes"] == 32 * KiB and levels[0]["method"] == "gradient-peak"
    assert (levels[1]["size_bytes"], levels[1]["associativity"]) == (MiB, 8)
    assert levels[1]["method"] == "probabilistic"
    assert levels[2]["size_bytes"] == 16 * MiB and levels[2]["method"] == "gradient-peak"


def test_curve_with_huge_pages_reads_onsets():
    """Contiguous pages with a thrash-resistant L2: the rise starts at the size on both page
    sizes, so the onset is taken, not the binomial fit."""
    sizes = size_grid(4 * KiB, 64 * MiB, steps_large=4)

    def gradual(s):
        ns = 1.0 if s <= 32 * KiB else 4.0
        if s > MiB:
            ns += 10.0 * min(1.0, 1 - MiB / s) * 1.5
        return 100.0 if s > 24 * MiB else ns

    ns = [gradual(s) for s in sizes]
    huge = [z for z in sizes if z >= 64 * KiB]
    levels = analyze_curve(sizes, ns, 4096, (huge, [gradual(z) for z in huge]))
    assert [(lv["level"], lv["size_bytes"]) for lv in levels] == [
        (1, 32 * KiB), (2, MiB), (3, 24 * MiB)]
    assert levels[1]["method"] == "onset"


def test_curve_ignores_single_spikes():
    sizes = size_grid(4 * KiB, 64 * MiB, steps_large=4)
    ns = _curve(sizes)
    ns[sizes.index(128 * KiB)] *= 8  # one disturbed point inside a plateau
    ns[sizes.index(8 * KiB)] *= 3
    assert [lv["size_bytes"] for lv in analyze_curve(sizes, ns, 4096)][0] == 32 * KiB


def test_size_grid_and_steps():
    grid = size_grid(4 * KiB, 64 * MiB, steps_small=2, steps_large=2)
    assert all(s % KiB == 0 for s in grid) and grid == sorted(set(grid))
    assert {32 * KiB, 48 * KiB, MiB, 24 * MiB, 32 * MiB} <= set(grid)
    assert grid_steps(32 * MiB, grid, 32 * MiB) == 0
    assert grid_steps(24 * MiB, grid, 32 * MiB) == 1
    assert grid_steps(16 * MiB, grid, 32 * MiB) == 2


def _noisy_matrix(groups_of, rng, noise=0.05):
    """Latency between cores: 0.3 us in a group of 4, 0.6 in a socket of 8, 1.5 across."""
    lat = {}
    for a in range(16):
        for b in range(a + 1, 16):
            base = 0.3 if a // 4 == b // 4 else 0.6 if a // 8 == b // 8 else 1.5
            lat[(a, b)] = base * (1 + rng.uniform(-noise, noise))
    return lat


def test_layers_recover_known_groups():
    rng = random.Random(1)
    layers = comm_layers(_noisy_matrix(None, rng))
    assert len(layers) == 3
    expect = [
        {(a, b) for a in range(16) for b in range(a + 1, 16) if a // 4 == b // 4},
        {(a, b) for a in range(16) for b in range(a + 1, 16) if a // 4 != b // 4
         and a // 8 == b // 8},
        {(a, b) for a in range(16) for b in range(a + 1, 16) if a // 8 != b // 8},
    ]
    for layer, pairs in zip(layers, expect, strict=True):
        assert {tuple(p) for p in layer["pairs"]} == pairs
        assert tuple(layer["representative"]) in pairs
    assert [round(layer["latency_us"], 1) for layer in layers] == [0.3, 0.6, 1.5]


def test_pair_bandwidth_groups():
    rng = random.Random(2)
    pairs = {}
    for a in range(8):
        for b in range(a + 1, 8):
            base = 4.0 if a // 4 == b // 4 else 7.5  # same bus: contention
            pairs[(a, b)] = base * (1 + rng.uniform(-0.04, 0.04))
    groups = bandwidth_groups(pairs, reference_gbps=8.0)
    assert len(groups) == 2
    free, bus = groups
    assert not free["contention"] and bus["contention"]
    assert {tuple(p) for p in bus["pairs"]} == {(a, b) for (a, b) in pairs if a // 4 == b // 4}
    assert bus["cores"] == list(range(8))
    assert bus["ratio"] == pytest.approx(0.5, abs=0.03)


def test_cluster_values_and_sharing_groups():
    assert cluster_values([1.0, 1.05, 2.0, 2.1, 0.98]) == [0, 0, 1, 1, 0]
    assert cluster_values([]) == []
    assert sharing_groups([0, 1, 2, 3], [(0, 1), (2, 3)]) == [[0, 1], [2, 3]]
    assert sharing_groups([0, 1, 2], []) == [[0], [1], [2]]
    assert sharing_groups([0, 1, 2], [(0, 2), (2, 1)]) == [[0, 1, 2]]
    assert parse_cpu_list("0-3,8") == [0, 1, 2, 3, 8]


def test_schema_names_the_field():
    doc = {"schema": "colltune-machine/1", "schema_version": 1, "parts": {}, "caches": [
        {"level": 1, "type": "Data", "size_bytes": 32768, "os_size_bytes": None,
         "shared_by": [[0], [1]]}], "memory": None,
           "comm_layers": [{"latency_us": 1.0, "pairs": [[0, 1]]}]}
    assert validate(doc) == []
    doc["caches"][0]["size_bytes"] = "32K"
    doc["schema_version"] = 2
    errors = validate(doc, "m.json")
    assert any("caches[0].size_bytes" in e for e in errors)
    assert any(e.startswith("m.json: schema_version") for e in errors)
