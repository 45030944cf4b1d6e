"""`colltune tune-nbc`: the choice of a non-blocking entry from injected measurements (the
thread's best with the best without it beside, native kept within the margin), the table's
check of the new fields, and one real run at 2 ranks whose table the drop-in follows."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest
from colltune.core.mpi import MPIBuild, MPIError
from colltune.nbc import tune_nbc
from colltune.tune import table as tbl

sys.path.insert(0, os.path.dirname(__file__))
from test_dropin import launch, nbc_routed, ok  # noqa: E402


def row(variant, alg, total, progress, seg=0):
    return {"variant": variant, "algorithm": alg, "segsize": seg, "total_us": total,
            "progress": progress, "compute_us": 100.0}


NATIVE = row("native", "native", 200.0, "none")


def test_the_thread_wins_and_the_best_without_it_is_kept():
    rows = [NATIVE, row("S0", "binomial", 150.0, "none"), row("S0", "chain", 170.0, "none"),
            row("S1", "binomial", 120.0, "thread"), row("Sauto", "binomial", 110.0, "thread"),
            row("S0", "pipeline", 130.0, "thread", seg=8192)]
    e = tune_nbc.choose_entry("ibcast", 8, 1 << 20, rows)
    assert (e["algorithm"], e["split"], e["progress"], e["time_us"]) == ("binomial", "model",
                                                                       "thread", 110.0)
    assert e["no_thread"] == {"algorithm": "binomial", "segsize": 0, "split": 0}
    assert e["native_us"] == 200.0 and e["evaluations"] == 6


def test_without_a_thread_better_no_thread_field():
    rows = [NATIVE, row("S0", "binomial", 100.0, "none"), row("S2", "chain", 150.0, "thread")]
    e = tune_nbc.choose_entry("ireduce", 4, 4096, rows)
    assert (e["algorithm"], e["progress"], e["split"]) == ("binomial", "none", 0)
    assert "no_thread" not in e


def test_native_is_kept_within_the_margin():
    rows = [NATIVE, row("S0", "binomial", 195.0, "none"), row("S1", "binomial", 191.0, "thread")]
    e = tune_nbc.choose_entry("ibcast", 4, 4096, rows, margin=0.05)
    assert (e["algorithm"], e["progress"], e["time_us"]) == ("native", "none", 200.0)
    e = tune_nbc.choose_entry("ibcast", 4, 4096, rows, margin=0.0)
    assert (e["algorithm"], e["progress"], e["split"]) == ("binomial", "thread", 1)


def test_a_thread_winner_whose_fallback_loses_to_native_falls_back_to_native():
    rows = [NATIVE, row("S0", "binomial", 199.0, "none"), row("S1", "binomial", 50.0, "thread")]
    e = tune_nbc.choose_entry("ibcast", 4, 4096, rows)
    assert e["progress"] == "thread" and e["no_thread"]["algorithm"] == "native"


def test_no_native_measurement_is_an_error():
    with pytest.raises(ValueError, match="no measurement of native"):
        tune_nbc.choose_entry("ibcast", 4, 8, [row("S0", "binomial", 1.0, "none")])


def test_threads_fit_only_beside_the_ranks():
    assert tune_nbc.threads_fit(15, 16) and not tune_nbc.threads_fit(16, 16)
    assert not tune_nbc.threads_fit(2, 2)


REGISTRY = [
    {"coll": "bcast", "name": "native", "native": True, "hierarchical": False,
     "shared_memory": False, "segmentable": False, "default_segsize": 0},
    {"coll": "bcast", "name": "binomial", "native": False, "hierarchical": False,
     "shared_memory": False, "segmentable": False, "default_segsize": 0},
    {"coll": "bcast", "name": "pipeline", "native": False, "hierarchical": False,
     "shared_memory": False, "segmentable": True, "default_segsize": 8192},
    {"coll": "bcast", "name": "hier", "native": False, "hierarchical": True,
     "shared_memory": False, "segmentable": False, "default_segsize": 0},
    {"coll": "bcast", "name": "shm", "native": False, "hierarchical": False,
     "shared_memory": True, "segmentable": False, "default_segsize": 0},
    {"coll": "reduce", "name": "binomial", "native": False, "hierarchical": False,
     "shared_memory": False, "segmentable": True, "default_segsize": 8192},
]


def test_candidates_leave_out_native_hierarchical_and_shared_memory():
    assert tune_nbc.candidates(REGISTRY, "ibcast", 1 << 20) == [
        ("binomial", 0), ("pipeline", 0), ("pipeline", 8192)]
    # no segment size at or above the message
    assert tune_nbc.candidates(REGISTRY, "ibcast", 4096) == [("binomial", 0), ("pipeline", 0)]


def base_table(entries) -> dict:
    return {"schema": "colltune-table", "schema_version": 1, "colltune_version": "0.1.0",
            "created_at": "2026-11-25T00:00:00+0000", "strategy": "model",
            "machine": {"hostname": "h", "cpu_model": "cpu", "logical_cores": 2},
            "mpi": {"build": "mpich", "implementation": "MPICH", "version": "5.0.2"},
            "entries": entries}


BLOCKING = {"op": "bcast", "ranks": 2, "size_bytes": 4096, "algorithm": "native", "segsize": 0,
            "time_us": 1.0, "native_us": 1.0, "evaluations": 1}


def test_merge_replaces_the_same_point_and_keeps_the_rest():
    rows = [NATIVE, row("S0", "binomial", 100.0, "none")]
    old = tune_nbc.choose_entry("ibcast", 2, 4096, [NATIVE, row("S0", "chain", 1.0, "none")])
    new = tune_nbc.choose_entry("ibcast", 2, 4096, rows)
    doc = tune_nbc.merge(base_table([BLOCKING, old]), [new])
    assert doc["entries"] == [BLOCKING, new]
    assert tbl.validate(doc) == []
    assert tune_nbc.default_points(doc, ["ibcast", "ireduce"]) == [("ibcast", 2, 4096)]


@pytest.mark.parametrize(("change", "said"), [
    ({"split": 64}, 'entries[1].split: not a level from 0 to 63 or "model"'),
    ({"split": "deep"}, 'entries[1].split: not a level from 0 to 63 or "model"'),
    ({"progress": "sometimes"}, 'entries[1].progress: not "thread" or "none"'),
    ({"no_thread": {"algorithm": "chain", "segsize": 0}},
     "entries[1].no_thread: given for an entry measured without the thread"),
    ({"progress": "thread", "no_thread": {"algorithm": "chain"}},
     "entries[1].no_thread.segsize: missing or not a non-negative integer"),
    ({"op": "ialltoallw"}, "entries[1].op: unknown operation 'ialltoallw'"),
])
def test_the_table_checks_the_non_blocking_fields(change, said):
    entry = {**BLOCKING, "op": "ibcast", "split": 1, "progress": "none", **change}
    errors = tbl.validate(base_table([BLOCKING, entry]))
    assert any(said in e for e in errors), errors


@pytest.fixture(scope="module")
def build() -> MPIBuild:
    try:
        return MPIBuild.select()
    except MPIError as e:
        pytest.skip(str(e))


def test_a_real_run_writes_entries_the_drop_in_follows(build, tmp_path):
    from colltune.tune.tune import machine_id

    lib, version = ("MPICH", "5.0.2") if build.flavor == "mpich" else ("Open MPI", "5.0.11")
    doc = base_table([{**BLOCKING, "size_bytes": 65536}])
    doc.update(machine=machine_id(),
               mpi={"build": build.name, "implementation": lib, "version": version})
    path = tmp_path / "t.json"
    path.write_text(json.dumps(doc))
    env = {**os.environ, "COLLTUNE_PROGRESS_INTERVAL": "0"}
    p = subprocess.run([sys.executable, "-m", "colltune.cli", "tune-nbc", str(path), "--ops",
                        "ibcast", "--iters", "2", "--margin", "0", "--mpi", build.name],
                       env=env, capture_output=True, text=True, timeout=300)
    assert p.returncode == 0, p.stderr[-2000:]
    out = tbl.load(path)
    [entry] = [e for e in out["entries"] if e["op"] == "ibcast"]
    assert entry["ranks"] == 2 and entry["size_bytes"] == 65536
    assert entry["progress"] == ("thread" if tune_nbc.threads_fit(2) else "none")
    # The drop-in runs what the entry says (its no-thread choice where no core is free).
    ran = entry["algorithm"] if entry["progress"] == "none" else entry["no_thread"]["algorithm"]
    p = launch(build, "65536", "", "60", program="plain_ibcast_progress", nranks=2,
               COLLTUNE_TABLE=str(path), COLLTUNE_LOG="debug")
    ok(p, "tuned non-blocking table")
    assert nbc_routed(p.stderr) == {"Ibcast": {ran: 2}}, p.stderr[-2000:]
