"""`colltune verify`: the points (table sizes and the midpoints between them), the decisions
with injected measurements (a loss beyond noise corrected to native, a noise-level one left,
a losing midpoint given its own entry, the next candidate taken when it measures better, a
point still slower after correction named with its reason), and one real run at 2 ranks under
MPICH whose record lands in the store and whose corrected table the drop-in follows.
Results are asserted, never timings: the real run checks what was recorded and what the
drop-in chose, not which side was faster."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys

import pytest
from colltune.tune import table as tbl
from colltune.tune.verify import (
    SLOWER_SHARE,
    classify,
    midpoints,
    next_candidate,
    verify_points,
    verify_table,
)

# -- the points -------------------------------------------------------------------------


def test_midpoints_are_geometric_and_strictly_between():
    assert midpoints([8, 1024, 8192], "bcast") == [90, 2896]
    # reductions count whole doubles: 8 and 16 B have nothing between them
    assert midpoints([8, 16, 2048], "allreduce") == [176]
    assert midpoints([8, 9], "scatter") == []
    assert midpoints([0], "barrier") == []
    # unsorted and repeated sizes give the same
    assert midpoints([8192, 8, 1024, 8], "gather") == [90, 2896]


def entry(op, size, alg="native", seg=0, ranks=2, **extra):
    return {"op": op, "ranks": ranks, "size_bytes": size, "algorithm": alg, "segsize": seg,
            "time_us": 1.0, "native_us": 1.0, "evaluations": 1, **extra}


def table(*entries) -> dict:
    doc = {"schema": tbl.SCHEMA, "schema_version": tbl.SCHEMA_VERSION,
           "colltune_version": "0.1.0", "created_at": "2026-11-25T15:00:00+0000",
           "machine": {"hostname": "h", "cpu_model": "cpu", "logical_cores": 2},
           "mpi": {"build": "mpich", "implementation": "MPICH", "version": "5.0.2"},
           "strategy": "model", "entries": list(entries)}
    assert tbl.validate(doc) == []
    return doc


def test_points_cover_the_table_and_the_midpoints():
    doc = table(entry("bcast", 8, "binomial"), entry("bcast", 1024), entry("bcast", 8192),
                entry("bcast", 1024, ranks=4), entry("barrier", 0))
    pts = {(p["op"], p["ranks"], p["size"]): p["kind"] for p in verify_points(doc)}
    assert pts == {("bcast", 2, 8): "table", ("bcast", 2, 90): "midpoint",
                   ("bcast", 2, 1024): "table", ("bcast", 2, 2896): "midpoint",
                   ("bcast", 2, 8192): "table", ("bcast", 4, 1024): "table",
                   ("barrier", 2, 0): "table"}
    # a non-blocking entry (chosen for overlap, not latency) and one ct_osu does not time
    doc["entries"] += [entry("ibcast", 1024, "chain"), entry("scan", 64, "linear")]
    assert {p["op"] for p in verify_points(doc)} == {"bcast", "barrier"}


# -- the decisions, measurements injected ----------------------------------------------


def test_classify():
    assert classify({"tuned": [10.4] * 3, "native": [10] * 3}) == "ok"
    assert classify({"tuned": [12] * 3, "native": [10] * 3}) == "loses"
    # above the margin in the median, but not slower in (nearly) every round: noise
    assert classify({"tuned": [12, 9, 12], "native": [10] * 3}) == "noise"
    # one round of ten the other way is still a loss
    n = 10
    slower = int(SLOWER_SHARE * n)
    assert classify({"tuned": [12] * slower + [9] * (n - slower), "native": [10] * n}) == "loses"


class Fake:
    """measure(doc, points, rounds): native's samples per point, and per (point, algorithm,
    segsize) the tuned samples of that choice (default: native's, as the same MPI call);
    samples repeat to `rounds`. The choice is what the table given looks up, as the drop-in
    would. Calls are kept."""

    def __init__(self, native: dict, tuned: dict | None = None):
        self.native, self.tuned, self.calls = native, tuned or {}, []

    def __call__(self, doc, points, rounds):
        self.calls.append(([(p["op"], p["ranks"], p["size"]) for p in points], rounds))
        out = {}
        for p in points:
            key = (p["op"], p["ranks"], p["size"])
            e = tbl.lookup(doc, *key)
            choice = (e["algorithm"], e["segsize"]) if e else ("native", 0)
            t = self.tuned.get((key, *choice), self.native[key])
            out[key] = {"tuned": [t[i % len(t)] for i in range(rounds)],
                        "native": [self.native[key][i % len(self.native[key])]
                                   for i in range(rounds)]}
        return out


def flat(doc: dict, value=10.0) -> dict:
    return {(p["op"], p["ranks"], p["size"]): [value] for p in verify_points(doc)}


def test_a_loss_beyond_noise_is_corrected_to_native():
    doc = table(entry("bcast", 1024, "binomial"), entry("bcast", 8192, "native"))
    b1k = ("bcast", 2, 1024)
    fake = Fake(flat(doc), {(b1k, "binomial", 0): [12.0]})
    fixed, record = verify_table(doc, fake, rounds=3)
    assert tbl.lookup(fixed, "bcast", 2, 1024)["algorithm"] == "native"
    assert [(c["op"], c["size"], c["from"]["algorithm"], c["to"]["algorithm"])
            for c in record["corrections"]] == [("bcast", 1024, "binomial", "native")]
    row = next(r for r in record["points"] if r["size"] == 1024)
    assert row["verdict"] == "loses" and row["ratio"] == 1.2 and row["rounds"] == 9
    assert (row["tuned_min_us"], row["tuned_max_us"], row["native_min_us"]) == (12, 12, 10)
    # re-measured 6 more rounds, corrected, then the changed points once more (the midpoint
    # 2896 looked up 1024's binomial before; native now)
    assert fake.calls[1] == ([b1k], 6)
    assert set(fake.calls[2][0]) == {b1k, ("bcast", 2, 2896)}
    assert row["after_algorithm"] == "native" and row["after_ratio"] == 1.0
    assert record["still_slower"] == []
    assert fixed["verified"] is record and doc.get("verified") is None
    assert doc["entries"][0]["algorithm"] == "binomial"  # the input is left alone
    assert tbl.validate(fixed) == []


def test_a_noise_level_loss_is_not_corrected_but_named():
    doc = table(entry("allreduce", 64, "recursive_doubling"), entry("allreduce", 4096, "ring"))
    key = ("allreduce", 2, 4096)
    ok = ("allreduce", 2, 64)
    fake = Fake(flat(doc), {(key, "ring", 0): [11.0, 9.0, 12.0],
                            (ok, "recursive_doubling", 0): [10.3]})
    fixed, record = verify_table(doc, fake, rounds=3)
    assert record["corrections"] == []
    assert tbl.lookup(fixed, *key)["algorithm"] == "ring"
    row = next(r for r in record["points"] if r["size"] == 4096)
    assert row["verdict"] == "noise" and row["rounds"] == 9
    assert fake.calls[1] == ([key], 6)  # only the suspect was measured again, not 64 B
    assert [(s["size"], s["reason"].split(":")[0]) for s in record["still_slower"]] == [
        (4096, "within noise")]


def test_a_losing_midpoint_gets_its_own_native_entry():
    doc = table(entry("bcast", 1024, "binomial"), entry("bcast", 8192, "binomial"))
    mid = ("bcast", 2, 2896)
    fake = Fake(flat(doc), {(mid, "binomial", 0): [15.0]})
    fixed, record = verify_table(doc, fake, rounds=3)
    assert [e["size_bytes"] for e in fixed["entries"]] == [1024, 2896, 8192]  # in its place
    new = tbl.lookup(fixed, *mid)
    assert (new["size_bytes"], new["algorithm"], new["evaluations"]) == (2896, "native", 0)
    assert tbl.lookup(fixed, "bcast", 2, 1024)["algorithm"] == "binomial"
    assert tbl.lookup(fixed, "bcast", 2, 8192)["algorithm"] == "binomial"
    assert [(c["kind"], c["added_entry"]) for c in record["corrections"]] == [
        ("midpoint", True)]
    assert tbl.validate(fixed) == []


@pytest.mark.parametrize("candidate_us, expect", [(8.0, "chain"), (9.8, "native")])
def test_the_next_candidate_is_taken_when_it_measures_better(candidate_us, expect):
    cands = [{"algorithm": "binomial", "segsize": 0, "time_us": 5.0},
             {"algorithm": "native", "segsize": 0, "time_us": 6.0},
             {"algorithm": "chain", "segsize": 1024, "time_us": 7.0}]
    doc = table(entry("bcast", 65536, "binomial", candidates=cands))
    assert next_candidate(doc["entries"][0]) == {"algorithm": "chain", "segsize": 1024}
    key = ("bcast", 2, 65536)
    fake = Fake(flat(doc), {(key, "binomial", 0): [13.0], (key, "chain", 1024): [candidate_us]})
    fixed, record = verify_table(doc, fake, rounds=3)
    got = tbl.lookup(fixed, *key)
    assert got["algorithm"] == expect
    assert got["segsize"] == (1024 if expect == "chain" else 0)
    assert record["corrections"][0]["to"]["algorithm"] == expect
    assert "next candidate" in record["corrections"][0]["reason"]


def test_a_point_still_slower_after_correction_is_named_with_its_reason():
    # The drop-in itself costs time here: even native through it is 30% slower.
    doc = table(entry("bcast", 8, "native"), entry("bcast", 1024, "binomial"))
    b8, b1k = ("bcast", 2, 8), ("bcast", 2, 1024)
    fake = Fake(flat(doc), {(b8, "native", 0): [13.0], (b1k, "binomial", 0): [15.0],
                            (b1k, "native", 0): [13.0], (("bcast", 2, 90), "native", 0): [13.0]})
    fixed, record = verify_table(doc, fake, rounds=3)
    assert tbl.lookup(fixed, *b1k)["algorithm"] == "native"
    row8 = next(r for r in record["points"] if r["size"] == 8)
    assert "already says native" in row8["note"]
    still = {s["size"]: s for s in record["still_slower"]}
    assert set(still) == {8, 90, 1024}
    assert still[1024]["ratio"] == 1.3 and still[1024]["algorithm"] == "native"
    assert all("table says native here" in s["reason"] for s in still.values())


def test_the_report_shows_the_record_escaped(tmp_path, record, evil):
    from colltune.report.report import render_report
    from colltune.store.store import Store
    from colltune.tune.verify import text_tables, verify_bench

    doc = table(entry("bcast", 8, "native"), entry("bcast", 1024, "binomial"))
    b1k = ("bcast", 2, 1024)
    fixed, rec = verify_table(doc, Fake(flat(doc), {(b1k, "binomial", 0): [15.0]}), rounds=3)
    text = text_tables(rec)
    assert "corrected bcast 2 ranks 1 KiB: binomial -> native" in text
    assert "STILL SLOWER" not in text
    rec.update(iters=5, placement=evil)
    with Store.open(tmp_path / "c.db") as store:
        html = render_report(store, [record(store, [verify_bench(rec, evil, "out.json", "x")])])
    assert "<section id='verify'>" in html and "Verifying the tuning table" in html
    assert evil not in html and "&lt;script&gt;" in html
    assert "No point with a speed-up below 0.95 after the correction." in html


# -- one real run ------------------------------------------------------------------------


LOG = re.compile(r"colltune: rank \d+/2 MPI_(Bcast|Allreduce) (\d+) bytes -> ([a-z_]+)")


def test_verify_end_to_end_at_two_ranks(tmp_path, child_env):
    from colltune.core.mpi import MPIBuild, describe_library
    from colltune.store.store import Store
    from colltune.tune.tune import build_library, machine_id

    try:
        build = MPIBuild.select("mpich")
        build.tool("ct_osu")
    except Exception as e:  # noqa: BLE001
        pytest.skip(f"no MPICH build with ct_osu: {e}")
    mpi = {"build": "mpich", **describe_library(build_library(build))}
    mpi.pop("library")
    doc = table(entry("bcast", 1024, "binomial"), entry("bcast", 65536, "chain", 8192),
                entry("allreduce", 64, "native"), entry("allreduce", 4096, "ring"))
    doc.update(machine=machine_id(), mpi=mpi)
    path = tmp_path / "t.json"
    tbl.write_table(doc, path)
    env = child_env(COLLTUNE_DB=str(tmp_path / "ct.db"), **build.launch_env(4))
    p = subprocess.run([sys.executable, "-m", "colltune.cli", "verify", str(path),
                        "--rounds", "1", "--iters", "5"], env=env, cwd=tmp_path,
                       capture_output=True, text=True, timeout=120)
    assert p.returncode == 0, p.stdout + p.stderr
    assert "# colltune verify: bcast, 2 ranks" in p.stdout
    fixed_path = tmp_path / "t.verified.json"
    fixed = tbl.load(fixed_path)
    rec = fixed["verified"]
    # 2 sizes of each op plus one midpoint each (8192 for bcast, 512 for allreduce)
    assert sorted((r["op"], r["size"], r["kind"]) for r in rec["points"]) == [
        ("allreduce", 64, "table"), ("allreduce", 512, "midpoint"),
        ("allreduce", 4096, "table"), ("bcast", 1024, "table"), ("bcast", 8192, "midpoint"),
        ("bcast", 65536, "table")]
    for r in rec["points"]:
        assert r["tuned_us"] > 0 and r["native_us"] > 0 and r["rounds"] >= 1
        assert r["verdict"] in ("ok", "noise", "loses")
    # every correction is in the table, and anything left above the margin is named
    for c in rec["corrections"]:
        assert tbl.lookup(fixed, c["op"], 2, c["size"])["algorithm"] == c["to"]["algorithm"]
    above = {(r["op"], r["size"]) for r in rec["points"]
             if r.get("after_ratio", r["ratio"]) > 1.05}
    assert above == {(s["op"], s["size"]) for s in rec["still_slower"]}
    # the store holds the run and its record
    with Store.open(tmp_path / "ct.db") as store:
        runs = store.runs(verb="verify")
        assert [r["status"] for r in runs] == ["complete"]
        bench = store.run(runs[0]["id"])["benches"][0]
        assert bench["op"] == "verify"
        assert len(bench["verify"]["points"]) == len(rec["points"])
        assert bench["verify"]["output"] == str(fixed_path)
    # the drop-in loads the corrected table and follows it at every point
    e = {k: v for k, v in os.environ.items() if not k.startswith("COLLTUNE_")}
    e.update(build.launch_env(2), COLLTUNE_TABLE=str(fixed_path), COLLTUNE_LOG="debug",
             LD_PRELOAD=str(build.tool("libcolltune_pmpi.so")))
    cmd = build.launch_command(2, [str(build.tool("ct_osu")), "--iters", "1", "--warmup", "0",
                                   "--op", "bcast", "--sizes", "1024,8192,65536",
                                   "--op", "allreduce", "--sizes", "64,512,4096"], bind=False,
                               export=("COLLTUNE_TABLE", "COLLTUNE_LOG", "LD_PRELOAD"))
    run = subprocess.run(cmd, env=e, capture_output=True, text=True, timeout=60)
    assert run.returncode == 0, run.stderr
    assert "COLLTUNE_TABLE not used" not in run.stderr
    seen = {(m[0].lower(), int(m[1])): m[2] for m in LOG.findall(run.stderr)}
    assert len(seen) == 6, run.stderr
    for (op, size), ran in seen.items():
        assert ran == tbl.lookup(fixed, op, 2, size)["algorithm"], (op, size, ran)
    assert json.loads(run.stdout.splitlines()[0])["op"] == "bcast"
