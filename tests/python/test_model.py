"""The model from Python: `colltune predict` against closed forms on synthetic costs
(os 1, or 1, g 2, T 10 us at every size: tests/python/fixtures/p2p_synthetic.json), its
errors, and `colltune validate-model` end to end (structure, never timings)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from colltune.model.validate import (
    algorithms_of,
    apply_confirmation,
    confirmation_order,
    discordant_pairs,
    holds,
    points_to_confirm,
    segment_sizes,
    summarize,
)

SYNTHETIC = Path(__file__).parent / "fixtures" / "p2p_synthetic.json"
G, T = 2.0, 10.0


@pytest.fixture()
def env(tmp_path, child_env) -> dict:
    return child_env(COLLTUNE_DB=str(tmp_path / "ct.db"))


def colltune(*args, env, cwd=None, timeout=300):
    return subprocess.run([sys.executable, "-m", "colltune.cli", *args], env=env, cwd=cwd,
                          capture_output=True, text=True, timeout=timeout)


def predict(env, *args) -> dict:
    p = colltune("predict", "--p2p", str(SYNTHETIC), "--json", *args, env=env)
    assert p.returncode == 0, p.stderr
    return json.loads(p.stdout)


@pytest.mark.parametrize("n", [2, 3, 7, 16])
@pytest.mark.parametrize("k", [1, 4])
def test_predict_matches_closed_forms(env, n, k):
    seg = 1000
    flat = predict(env, "--op", "bcast", "--alg", "linear", "--size", str(k * seg),
                   "--segsize", str(seg), "--ranks", str(n))
    assert flat["predicted_us"] == pytest.approx((k * (n - 1) - 1) * G + T)
    chain = predict(env, "--op", "bcast", "--alg", "chain", "--size", str(k * seg),
                    "--segsize", str(seg), "--ranks", str(n))
    assert chain["predicted_us"] == pytest.approx((n - 1) * T + (k - 1) * G)
    assert len(chain["per_rank_us"]) == n and max(chain["per_rank_us"]) == chain["predicted_us"]


def test_predict_binomial_and_barrier(env):
    for d in range(1, 5):
        r = predict(env, "--op", "bcast", "--alg", "binomial", "--size", "64K",
                    "--segsize", "0", "--ranks", str(2 ** d))
        assert r["predicted_us"] == pytest.approx(d * T)
    # Dissemination: ceil(log2 N) rounds of one message each way.
    r = predict(env, "--op", "barrier", "--alg", "dissemination", "--ranks", "13")
    assert r["predicted_us"] == pytest.approx(4 * T)


def test_predict_errors_are_clear(env, tmp_path):
    p = colltune("predict", "--p2p", str(SYNTHETIC), "--op", "bcast", "--alg", "nope",
                 "--size", "8", "--ranks", "4", env=env)
    assert p.returncode == 2 and "unknown bcast algorithm 'nope'" in p.stderr
    assert "binomial" in p.stderr
    p = colltune("predict", "--p2p", str(tmp_path / "none.json"), "--op", "bcast", "--alg",
                 "linear", "--size", "8", "--ranks", "4", env=env)
    assert p.returncode == 2 and "not found" in p.stderr
    p = colltune("predict", "--p2p", str(SYNTHETIC), "--layer", "7", "--op", "bcast", "--alg",
                 "linear", "--size", "8", "--ranks", "4", env=env)
    assert p.returncode == 2 and "no layer 7" in p.stderr
    p = colltune("predict", "--p2p", str(SYNTHETIC), "--op", "scatter", "--alg", "linear",
                 "--ranks", "4", env=env)
    assert p.returncode == 2 and "--size" in p.stderr


def test_summary_ratio_and_ranking():
    rows = [{"algorithm": "a", "segsize": 1024, "measured_us": 10.0, "predicted_us": 5.0},
            {"algorithm": "a", "segsize": 2048, "measured_us": 8.0, "predicted_us": 6.0},
            {"algorithm": "b", "segsize": 1024, "measured_us": 4.0, "predicted_us": 9.0},
            {"algorithm": "b", "segsize": 2048, "measured_us": 5.0, "predicted_us": 3.0}]
    s = summarize(rows, ["a", "b"])
    assert s["algorithms"]["a"]["ratio"] == pytest.approx(10 / 8)
    assert s["algorithms"]["a"]["predicted_best_segsize"] == 1024
    assert s["algorithms"]["b"]["ratio"] == pytest.approx(5 / 4)
    assert s["measured_ranking"] == ["b", "a"] and s["predicted_ranking"] == ["b", "a"]
    assert s["same_ranking"]
    assert segment_sizes(128 * 1024) == [1024 << i for i in range(8)]
    assert segment_sizes(3000) == [1024, 2048, 3000]


def _alg(measured: float, predicted: float, ratio: float = 1.0) -> dict:
    return {"measured_best_us": measured, "predicted_best_us": predicted, "ratio": ratio}


def test_discordant_pairs_only_beyond_ten_percent():
    # a and b 5% apart and swapped by the model: noise, not a ranking error; c is 50%
    # slower than a as measured but predicted fastest: a ranking error against a and b
    per_alg = {"a": _alg(100, 20), "b": _alg(105, 10), "c": _alg(150, 5)}
    assert discordant_pairs(per_alg) == [["a", "c"], ["b", "c"]]
    s = {"algorithms": per_alg, "discordant": discordant_pairs(per_alg)}
    assert not holds(s)
    per_alg["c"]["predicted_best_us"] = 30
    s = {"algorithms": per_alg, "discordant": discordant_pairs(per_alg)}
    assert s["discordant"] == [] and holds(s)
    per_alg["b"]["ratio"] = 1.11  # the model's segment 11% off the best: fails the must-show
    assert not holds(s)
    rows = [{"algorithm": "x", "segsize": 1024, "measured_us": 10.0, "predicted_us": 5.0},
            {"algorithm": "y", "segsize": 1024, "measured_us": 20.0, "predicted_us": 4.0}]
    out = summarize(rows, ["x", "y"])
    assert out["discordant"] == [["x", "y"]] and out["worst_ratio"] == 1.0


def test_confirmation_takes_the_ratio_from_the_two_points_head_to_head():
    # chain: a flat curve with one lucky point in the sweep (8.0 at 64K) and the model's
    # pick at 8K (10.5): 1.31 from the sweep; measured again head to head, in a job that
    # runs colder than the sweep (both about 12), the pick is 12.2 and the lucky point 12.0
    k = 1024
    rows = [{"algorithm": "chain", "segsize": s * k, "measured_us": m, "predicted_us": p}
            for s, m, p in ((8, 10.5, 7.0), (16, 11.0, 7.1), (64, 8.0, 7.5), (256, 14.0, 9.0))]
    rows.append({"algorithm": "linear", "segsize": 256 * k, "measured_us": 30.0,
                 "predicted_us": 28.0})
    sweep = summarize(rows, ["chain", "linear"])
    assert sweep["algorithms"]["chain"]["ratio"] == pytest.approx(10.5 / 8.0, abs=1e-4)
    assert not holds(sweep)
    todo = points_to_confirm(sweep)
    assert todo == {"chain": [8 * k, 64 * k]}  # linear: one point, nothing to compare
    # one warm-up of the first point, then mirrored
    assert confirmation_order(todo["chain"], 2) == [8 * k, 8 * k, 64 * k, 64 * k, 8 * k]
    assert confirmation_order([1, 2], 3) == [1, 1, 2, 2, 1, 1, 2]
    # ct_bench's rows of the confirmation job, one per measurement: the warm-up (first,
    # slow), then the repeats; another algorithm's and a failed row are ignored
    results = [{"algorithm": "chain", "segsize": 8 * k, "median_us": 25.0},
               {"algorithm": "chain", "segsize": 8 * k, "median_us": 12.1},
               {"algorithm": "chain", "segsize": 64 * k, "median_us": 12.0},
               {"algorithm": "chain", "segsize": 64 * k, "median_us": 11.9},
               {"algorithm": "chain", "segsize": 8 * k, "median_us": 12.2},
               {"algorithm": "chain", "segsize": 8 * k, "median_us": 12.4},
               {"algorithm": "chain", "segsize": 64 * k, "median_us": 12.3},
               {"algorithm": "chain", "segsize": 16 * k, "median_us": None},
               {"algorithm": "linear", "segsize": 256 * k, "median_us": 1.0}]
    assert apply_confirmation(rows, "chain", results, 256 * k) == 2
    got = {r["segsize"]: r for r in rows if r["algorithm"] == "chain"}
    assert got[8 * k]["confirm_us"] == [12.1, 12.2, 12.4]  # the warm-up is not kept
    assert got[64 * k]["confirm_us"] == [12.0, 11.9, 12.3]
    assert got[8 * k]["measured_us"] == 10.5  # the sweep's values stay
    assert "confirm_us" not in got[16 * k] and "confirm_us" not in rows[-1]
    after = summarize(rows, ["chain", "linear"])
    chain = after["algorithms"]["chain"]
    assert chain["measured_best_segsize"] == 64 * k and chain["measured_best_us"] == 8.0
    assert chain["confirmed_us"] == [12.2, 12.0]
    assert chain["ratio"] == pytest.approx(12.2 / 12.0, abs=1e-4)
    assert chain["sweep_ratio"] == pytest.approx(10.5 / 8.0, abs=1e-4)
    assert holds(after)
    # the pick faster than the sweep's best once measured again: ratio 1
    got[8 * k]["confirm_us"] = [11.0, 11.0, 11.0]
    assert summarize(rows, ["chain", "linear"])["algorithms"]["chain"]["ratio"] == 1.0
    # and the other way: a sweep that flattered the model's pick fails once measured again
    rows2 = [{"algorithm": "a", "segsize": 1, "measured_us": 10.0, "predicted_us": 1.0},
             {"algorithm": "a", "segsize": 2, "measured_us": 10.5, "predicted_us": 2.0}]
    assert points_to_confirm(summarize(rows2, ["a"])) == {}  # the model picks the best
    rows2[1]["predicted_us"] = 0.5
    todo = points_to_confirm(summarize(rows2, ["a"]))
    assert todo == {"a": [2, 1]}
    apply_confirmation(rows2, "a", [{"algorithm": "a", "segsize": 2, "median_us": 99.0},
                                    {"algorithm": "a", "segsize": 2, "median_us": 12.0},
                                    {"algorithm": "a", "segsize": 1, "median_us": 10.0}], 2)
    out = summarize(rows2, ["a"])
    assert out["algorithms"]["a"]["ratio"] == pytest.approx(1.2) and not holds(out)


def test_confirm_case_measures_each_compared_pair_in_one_job():
    from types import SimpleNamespace

    from colltune.model.validate import confirm_case

    k = 1024
    rows = [{"algorithm": a, "segsize": s * k, "measured_us": m, "predicted_us": p}
            for a, s, m, p in (("chain", 8, 12.0, 5.0), ("chain", 16, 9.0, 6.0),
                               ("binary", 8, 20.0, 7.0), ("binary", 16, 21.0, 8.0))]
    case = {"op": "bcast", "size_bytes": 16 * k, "rows": rows,
            "summary": summarize(rows, ["chain", "binary"])}
    assert not holds(case["summary"])
    again = {8 * k: iter([30.0, 9.5, 9.7, 9.6]), 16 * k: iter([9.4, 9.6, 9.5])}
    jobs = []

    def fake_bench(build, op, args, algs, progress_label=""):
        jobs.append((op, algs, list(args.segsizes), args.iters))
        return {"results": [{"algorithm": algs, "segsize": seg, "median_us": next(again[seg])}
                            for seg in args.segsizes]}

    confirm_case(None, case, SimpleNamespace(segsizes=[8 * k, 16 * k], iters=21), fake_bench)
    # binary: the model picks its measured best (8K), nothing to compare
    assert jobs == [("bcast", "chain", [8 * k, 8 * k, 16 * k, 16 * k, 8 * k, 8 * k, 16 * k], 21)]
    assert case["confirmed"] == {"chain": [8 * k, 16 * k]}
    chain = case["summary"]["algorithms"]["chain"]
    assert chain["sweep_ratio"] == pytest.approx(12 / 9, abs=1e-4)
    assert chain["confirmed_us"] == [9.6, 9.5]
    assert chain["ratio"] == pytest.approx(9.6 / 9.5, abs=1e-4)
    assert holds(case["summary"])


def test_an_interrupted_confirmation_keeps_the_sweep(tmp_path, monkeypatch):
    """Ctrl-C while a case's points are measured again: the case is in the document with
    its sweep's verdict, the run ends 'interrupted' (exit 130)."""
    import argparse

    import colltune.bench.bench as bench_mod
    import colltune.model.validate as validate

    k = 1024

    class FakeBuild:
        placement = None

        def registry(self):
            return [{"coll": "bcast", "name": "chain", "native": False}]

    class FakeModel:
        layer = {"layer": 0}
        inter_layer = None

        def predict(self, op, alg, size, n, segsize=0, nodes=None):
            return {"predicted_us": {8 * k: 5.0, 16 * k: 6.0}[segsize or size]}

    calls = []

    def fake_bench(build, op, args, algs, progress_label="", sink=None):
        calls.append(list(args.segsizes))
        if len(calls) == 2:  # the confirmation
            raise bench_mod.BenchInterrupted({"results": []})
        return {"mpi": {"implementation": "fake"}, "binding": "none", "command": "x",
                "results": [{"algorithm": "chain", "segsize": 8 * k, "median_us": 12.0},
                            {"algorithm": "chain", "segsize": 16 * k, "median_us": 9.0}]}

    monkeypatch.setattr(validate.MPIBuild, "select", staticmethod(lambda mpi: FakeBuild()))
    monkeypatch.setattr(validate, "_ensure_p2p", lambda build, path: {"mpi": "fake"})
    monkeypatch.setattr(validate.Model, "from_p2p",
                        classmethod(lambda cls, *a, **kw: FakeModel()))
    monkeypatch.setattr(bench_mod, "run_bench", fake_bench)
    out = tmp_path / "v.json"
    args = argparse.Namespace(
        repredict=None, ranks="3", sizes=None, size=16 * k, ops="bcast", algs="chain",
        p2p="p2p.json", layer=None, plots=str(tmp_path / "plots"), output=str(out),
        smallest_segment=8 * k, iters=3, no_bind=True, no_record=True, no_confirm=False,
        mpi=None, testbed=None, hostfile=None, ppn=None)
    assert validate.cmd_validate(args) == 130
    assert calls == [[8 * k, 16 * k], [8 * k, 8 * k, 16 * k, 16 * k, 8 * k, 8 * k, 16 * k]]
    doc = json.loads(out.read_text())
    assert not doc["complete"] and len(doc["cases"]) == 1
    case = doc["cases"][0]
    assert case["summary"]["algorithms"]["chain"]["ratio"] == pytest.approx(12 / 9, abs=1e-4)
    assert case["holds"] is False and "confirmed" not in case


def test_link_bucket_is_read_off_the_ping_pong():
    from colltune.model.model import link_bucket

    def pts(rows):
        return [{"size_bytes": m, "oneway_us": t, "g_us": g} for m, t, g in rows]

    # G = 0.01 us a byte (the largest message's gap); 20000 B took 110 us where
    # 10 + 200 us at the rate: the bucket carried 10000 B
    bed = pts([(1, 10, 2), (10000, 10, 2), (20000, 110, 2), (1000000, 9910, 10000)])
    assert link_bucket(bed) == pytest.approx(10000)
    # a real link: every size pays the rate (T(1) is the base, so its own byte is left)
    wire = pts([(1, 10, 2), (10000, 110, 2), (20000, 210, 2), (1000000, 10010, 10000)])
    assert link_bucket(wire) == pytest.approx(1)
    # times that do not grow with the rate (a synthetic table): nothing to read
    flat = pts([(1, 100, 2), (1024, 100, 2), (1 << 20, 100, 2), (16 << 20, 100, 134217.728)])
    assert link_bucket(flat) == 0
    assert link_bucket(bed[:2]) == 0


def test_the_sustained_rate_comes_from_the_stream_when_measured():
    from colltune.model.model import link_bucket, sustained_per_byte

    # the largest message's gap reads fast (0.008 us a byte); a pair's stream shows the
    # wire at 0.01: G from it, and the bucket read with it (20000 B took 110 us where
    # 10 + 200 at the stream's rate: 10000 B ahead)
    bed = [{"size_bytes": m, "oneway_us": t, "g_us": g}
           for m, t, g in [(1, 10, 2), (10000, 10, 2), (20000, 110, 2), (1000000, 9910, 8000)]]
    stream = {"sizes_bytes": [1024, 262144], "pair_us": [12.0, 2621.44]}
    assert sustained_per_byte(bed) == pytest.approx(0.008)
    assert sustained_per_byte(bed, stream) == pytest.approx(0.01)
    assert link_bucket(bed, stream) == pytest.approx(10000)
    assert link_bucket(bed, {"sizes_bytes": [], "pair_us": []}) == link_bucket(bed)


def test_flow_head_is_read_off_the_fan_out():
    from colltune.model.model import flow_head

    def fanout(rows):
        m, first, second = zip(*rows, strict=True)
        return {"fanout": {"sizes_bytes": list(m), "first_us": list(first),
                           "second_us": list(second)}}

    # 1 MiB flows landing at 1.75 and 2 MiB of time: the first had 256 KiB to itself
    assert flow_head(fanout([(1 << 20, 1750.0, 2000.0)])) == pytest.approx(256 << 10)
    # the median of the sizes where the two shared; a first that lands after the second
    # shared from its first byte (0)
    assert flow_head(fanout([(1 << 18, 400.0, 500.0), (1 << 20, 2100.0, 2000.0),
                             (1 << 22, 7600.0, 8000.0)])) == pytest.approx(104857.6)
    # every first alone (half the second's time or less): at least the largest size
    assert flow_head(fanout([(1 << 18, 250.0, 500.0), (1 << 20, 900.0, 2000.0)])) == 1 << 20
    assert flow_head(None) == 0 and flow_head({"pair_us": [1.0]}) == 0


def test_allreduce_validates_its_own_algorithms():
    assert algorithms_of("allreduce", None) == ["reduce_bcast", "recursive_doubling", "ring",
                                                "rabenseifner"]
    assert algorithms_of("reduce", None) == ["linear", "chain", "binary", "binomial"]
    assert algorithms_of("bcast", ["chain"]) == ["chain"]


def test_validate_model_end_to_end(env, tmp_path):
    p = colltune("validate-model", "--p2p", str(SYNTHETIC), "--ranks", "3", "--size", "4K",
                 "--iters", "3", "--plots", str(tmp_path / "plots"), "-o",
                 str(tmp_path / "v.json"), env=env, cwd=tmp_path)
    assert p.returncode == 0, p.stderr
    doc = json.loads((tmp_path / "v.json").read_text())
    assert doc["complete"] and [c["op"] for c in doc["cases"]] == ["bcast", "scatter"]
    for case in doc["cases"]:
        algs = {r["algorithm"] for r in case["rows"]}
        assert algs == {"linear", "chain", "binary", "binomial"}
        assert {r["segsize"] for r in case["rows"]} == {1024, 2048, 4096}
        assert all(r["measured_us"] > 0 and r["predicted_us"] > 0 for r in case["rows"])
        assert set(case["summary"]["algorithms"]) == algs
        for path in case["plots"]:
            assert Path(path).stat().st_size > 1000
    assert "ratio" in p.stdout and "ranking measured" in p.stdout
    assert "recorded as run" in p.stdout
    run_id = p.stdout.split("recorded as run ")[1].split()[0]
    r = colltune("report", run_id, "-o", str(tmp_path / "r.html"), env=env, cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    html = (tmp_path / "r.html").read_text()
    assert "Model: measured vs predicted" in html and html.count("<figure") == 2
    assert "bcast, 4 KiB, 3 ranks" in html


# Two layers (tests/python/fixtures/p2p_two_layers.json): the synthetic costs inside a host
# (T = 10 us) and T = 100 us on layer 1, marked between_hosts; os, or, g as above.
TWO = Path(__file__).parent / "fixtures" / "p2p_two_layers.json"
T_INTER = 100.0


def predict_two(env, *args):
    p = colltune("predict", "--p2p", str(TWO), "--json", *args, env=env)
    assert p.returncode == 0, p.stderr
    return json.loads(p.stdout)


@pytest.mark.parametrize("hosts,ppn", [(1, 16), (2, 8), (4, 4), (8, 2), (16, 1)])
def test_predict_two_layers_closed_forms(env, hosts, ppn):
    """Hierarchical bcast, binomial at both levels (named, as the default),
    K = 2^a hosts of 2^b ranks: a T_inter + b T_intra; the flat chain crosses hosts K-1 times:
    (K-1) T_inter + (N-K) T_intra."""
    n = hosts * ppn
    a, b = hosts.bit_length() - 1, ppn.bit_length() - 1
    for placement in (["--hosts", str(hosts)], ["--ppn", str(ppn)]):
        r = predict_two(env, "--op", "bcast", "--alg", "hier", "--size", "4K", "--segsize", "0",
                        "--ranks", str(n), "--intra", "binomial", *placement)
        assert r["predicted_us"] == pytest.approx(a * T_INTER + b * T)
        assert r["hosts"] == hosts and r["inter_layer"] == 1 and r["layer"] == 0
        r = predict_two(env, "--op", "bcast", "--alg", "chain", "--size", "4K", "--segsize", "0",
                        "--ranks", str(n), *placement)
        assert r["predicted_us"] == pytest.approx((hosts - 1) * T_INTER + (n - hosts) * T)
    # On one host (no --hosts) the inter-host layer is never used.
    r = predict_two(env, "--op", "bcast", "--alg", "hier", "--size", "4K", "--segsize", "0",
                    "--ranks", str(n), "--intra", "binomial")
    assert r["predicted_us"] == pytest.approx((a + b) * T)
    # The shared segment inside hosts (named): no message inside hosts, so only the
    # leaders' a T_inter is left of the messages.
    r = predict_two(env, "--op", "bcast", "--alg", "hier", "--size", "4K", "--segsize", "0",
                    "--ranks", str(n), "--hosts", str(hosts), "--intra", "shm")
    assert r["predicted_us"] >= a * T_INTER
    if b:
        assert r["predicted_us"] != pytest.approx(a * T_INTER + b * T)


def test_predict_all_algorithms_and_parts(env):
    rows = predict_two(env, "--op", "allreduce", "--alg", "all", "--size", "64K",
                       "--ranks", "8", "--hosts", "2")
    names = [r["algorithm"] for r in rows]
    assert "hier" in names and "ring" in names and "native" not in names
    # The inter part named: a chain among 4 leaders, (K-1) T_inter, then each pair T_intra.
    r = predict_two(env, "--op", "bcast", "--alg", "hier", "--size", "4K", "--segsize", "0",
                    "--ranks", "8", "--hosts", "4", "--intra", "binomial", "--inter", "chain")
    assert r["predicted_us"] == pytest.approx(3 * T_INTER + T)
    assert r["parts"] == {"intra": "binomial", "inter": "chain"}
    p = colltune("predict", "--p2p", str(TWO), "--op", "bcast", "--alg", "hier", "--size", "8",
                 "--ranks", "8", "--hosts", "2", "--intra", "nope", env=env)
    assert p.returncode == 2 and "intra part 'nope'" in p.stderr


def test_predict_hosts_errors(env):
    p = colltune("predict", "--p2p", str(SYNTHETIC), "--op", "bcast", "--alg", "hier",
                 "--size", "8", "--ranks", "8", "--hosts", "2", env=env)
    assert p.returncode == 2 and "no inter-host layer" in p.stderr
    p = colltune("predict", "--p2p", str(TWO), "--op", "bcast", "--alg", "hier", "--size", "8",
                 "--ranks", "4", "--hosts", "5", env=env)
    assert p.returncode == 2 and "--hosts" in p.stderr


def test_node_layout_block_placement():
    from colltune.model.model import ModelError, node_layout

    assert node_layout(7, hosts=3) == [0, 0, 1, 1, 2, 2, 2]
    assert node_layout(7, ppn=3) == [0, 0, 0, 1, 1, 1, 2]
    assert node_layout(4, hosts=4) == [0, 1, 2, 3]
    with pytest.raises(ModelError):
        node_layout(3, ppn=0)


def test_between_hosts_flag_is_validated(tmp_path):
    from colltune.p2p.schema import validate

    doc = json.loads(TWO.read_text())
    assert validate(doc) == []
    doc["layers"][1]["between_hosts"] = "yes"
    errors = validate(doc)
    assert any("layers[1].between_hosts" in str(e) for e in errors)


# Contention (docs/MODEL.md, section Contention): a layer's concurrent_pairs and its points'
# oneway_concurrent_us go to the C model's nconc / conc_pairs / oneway_conc_us.
def _contention_doc(with_fields: bool) -> dict:
    """One host, T(m) = 5 + m/1000 us, os = or = 1, g = 2; with the fields, per-pair one-way
    times of k pairs at once k T (F(c) = c, measured at 1, 2, 4, 8 pairs)."""
    doc = json.loads(SYNTHETIC.read_text())
    layer = doc["layers"][0]
    for p in layer["points"]:
        p["oneway_us"] = 5 + p["size_bytes"] / 1000
        if with_fields:
            p["oneway_concurrent_us"] = [k * p["oneway_us"] for k in (1, 2, 4, 8)]
    if with_fields:
        layer["concurrent_pairs"] = [1, 2, 4, 8]
    return doc


def _build_or_skip():
    from colltune.core.mpi import MPIBuild, MPIError

    try:
        return MPIBuild.select()  # $COLLTUNE_MPI or mpich (never a sanitizer build)
    except MPIError as e:
        pytest.skip(str(e))


def test_contention_slows_a_linear_scatter_of_large_blocks():
    from colltune.model.model import Model
    from colltune.p2p.schema import validate

    build = _build_or_skip()
    with_doc, without_doc = _contention_doc(True), _contention_doc(False)
    assert validate(with_doc) == [] and validate(without_doc) == []
    slow = Model.from_p2p(build, with_doc)
    plain = Model.from_p2p(build, without_doc)
    assert slow.table.nconc == 4 and plain.table.nconc == 0
    # 1 MiB blocks to 16 ranks: the root's eager sends overlap, each sharing the node
    args = ("scatter", "linear", 1 << 20, 16)
    with_c = slow.predict(*args)["predicted_us"]
    without_c = plain.predict(*args)["predicted_us"]
    assert with_c > 2 * without_c
    # one pair at a time (a chain bcast, unsegmented) never overlaps: no contention charged
    chain = ("bcast", "chain", 1 << 20, 8)
    assert slow.predict(*chain, segsize=0) == plain.predict(*chain, segsize=0)


def test_files_without_contention_fields_predict_as_before(env):
    """The old synthetic file: the closed form of a flat bcast, unchanged (nconc 0)."""
    from colltune.model.model import Model

    build = _build_or_skip()
    m = Model.from_p2p(build, json.loads(SYNTHETIC.read_text()))
    assert m.table.nconc == 0
    r = m.predict("bcast", "linear", 4000, 7, segsize=1000)
    assert r["predicted_us"] == pytest.approx((4 * 6 - 1) * G + T)
    # a layer with concurrent_pairs but points missing the values: no contention either
    doc = json.loads(SYNTHETIC.read_text())
    doc["layers"][0]["concurrent_pairs"] = [1, 2]
    assert Model.from_p2p(build, doc).table.nconc == 0


# Host stacks (issue 21, docs/MODEL.md "Host stack"): the inter-host layer's `stream` (what
# `ct_p2p --stream` measured) goes to the C model; messages between hosts that arrive at one
# host together (fan-in), or meet the other direction there, are stretched by the measured
# gaps over one pair's.
def _two_layers_with_streams(fanin_factor: float, duplex_factor: float) -> dict:
    doc = json.loads(TWO.read_text())
    sizes = [1024, 65536, 1 << 20]
    pair = [10.0, 60.0, 800.0]
    doc["layers"][1]["stream"] = {
        "sizes_bytes": sizes, "pair_us": pair,
        "duplex_us": [duplex_factor * g for g in pair],
        "fanin_flows": [2, 3], "fanin_us": [[k * fanin_factor / 3 * g for g in pair]
                                            for k in (2, 3)]}
    return doc


def test_streams_charge_a_fan_in_across_hosts_and_not_a_fan_out():
    from colltune.model.model import Model, node_layout
    from colltune.p2p.schema import validate

    build = _build_or_skip()
    doc = _two_layers_with_streams(3.0, 1.6)
    assert validate(doc) == []
    plain = Model.from_p2p(build, json.loads(TWO.read_text()), hosts=True)
    stacks = Model.from_p2p(build, doc, hosts=True)
    assert stacks.inter_table.nstream_sizes == 3 and stacks.inter_table.nfanin == 2
    assert plain.inter_table.nstream_sizes == 0
    nodes = node_layout(4, hosts=4)  # one rank a host
    gather = ("gather", "linear", 64 << 10, 4)
    # the pair's stream alone sets the link's rate (model.h): the stacks' own charge is
    # what the fan-in and duplex streams add to that
    pair_doc = json.loads(TWO.read_text())
    pair_doc["layers"][1]["stream"] = {k: doc["layers"][1]["stream"][k]
                                       for k in ("sizes_bytes", "pair_us")}
    pair = Model.from_p2p(build, pair_doc, hosts=True)
    assert stacks.predict(*gather, segsize=0, nodes=nodes)["predicted_us"] > \
        1.5 * pair.predict(*gather, segsize=0, nodes=nodes)["predicted_us"]
    # the root's messages out only: its link spaces them, its stack is not charged
    scatter = ("scatter", "linear", 64 << 10, 4)
    assert stacks.predict(*scatter, segsize=0, nodes=nodes)["predicted_us"] == \
        pytest.approx(pair.predict(*scatter, segsize=0, nodes=nodes)["predicted_us"])
    # on one host nothing crosses a host's stack
    one = Model.from_p2p(build, doc)
    assert one.predict(*gather, segsize=0)["predicted_us"] == \
        pytest.approx(plain.predict(*gather, segsize=0)["predicted_us"])


def test_repredict_keeps_the_measurements_and_redoes_the_verdicts():
    from colltune.model.model import Model
    from colltune.model.validate import repredict

    build = _build_or_skip()
    doc = {"schema": "colltune-validation", "cases": [{
        "op": "gather", "size_bytes": 65536, "ranks": 4, "hosts": 4,
        "rows": [{"algorithm": a, "segsize": s, "measured_us": m, "predicted_us": 1.0}
                 for a, s, m in (("linear", 65536, 900.0), ("linear", 8192, 1500.0),
                                 ("binomial", 65536, 1200.0), ("binomial", 8192, 1300.0))]}]}
    model = Model.from_p2p(build, _two_layers_with_streams(3.0, 1.6), hosts=True)
    out = repredict(doc, model)
    case = out["cases"][0]
    assert [r["measured_us"] for r in case["rows"]] == [900.0, 1500.0, 1200.0, 1300.0]
    assert all(r["predicted_us"] > 1.0 for r in case["rows"])
    assert "summary" in case and isinstance(case["holds"], bool)
    assert out["repredicted_at"] and doc["cases"][0]["rows"][0]["predicted_us"] == 1.0
