"""`colltune app` (issue 38, must-show 1): from a program to a verdict.

The pure parts on documents (tests/python/fixtures/app-profile.json: the monitor record of
tests/c/plain_app_mix.c at 2 ranks, with the colltune-profile/1 key): the points and their
order, the shares per operation, the alternating order, the checks of a run, the verdict.

Then `colltune app` itself on plain_app_mix (1,000 MPI_Allreduce of 8 B, 100 MPI_Bcast of
1 MiB, 50 MPI_Iallreduce, 10 persistent MPI_Allgather_init started 5 times each, 20 MPI_Scan,
one MPI_Allreduce of an int; it checks its results and prints "passed") at 2 ranks with tiny
budgets and --repeat 2: the profile's counts per operation, form and size (needs a drop-in
that writes the profile: skipped, with the reason, while the monitor record has no
"profile" key), table entries for exactly the points tuned and a reason for every other,
the comparison's runs alternating with the requested repetitions (from the store), and a
program that fails or does not print what --expect asks stops the study with one line and
no verdict recorded.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest
from colltune.app import app, profile
from colltune.core.mpi import MPIBuild, MPIError
from colltune.store.store import Store
from conftest import FIXTURES, subprocess_env

NRANKS = 2
# The program's mix, (op, form, bytes) -> calls per communicator (inits for persistent).
MIX = {("allreduce", "blocking", 8): 1000, ("allreduce", "blocking", 4): 1,
       ("bcast", "blocking", 1 << 20): 100, ("allreduce", "nonblocking", 8): 50,
       ("allgather", "persistent", 8): 50, ("scan", "blocking", 8): 20}
INITS = {("allgather", "persistent", 8): 10}
NO_PROFILE = ("this drop-in writes no collective profile (the monitor record has no 'profile' "
              "key: needs the profile branch's COLLTUNE_PROFILE=on)")


def fixture() -> dict:
    return json.loads((FIXTURES / "app-profile.json").read_text())


# -- the pure parts ------------------------------------------------------------------------


def test_profile_points_and_order():
    points, source = profile.profile_points(fixture())
    assert source == profile.SOURCE_PROFILE
    merged = {(p["op"], p["form"], p["bytes"]): p["calls"]
              for p in profile.merge_algorithms(points)}
    assert merged == MIX
    order = profile.tune_order(points)
    # the most time first: the bcast (0.08 s over the ranks), then the 8 B allreduces
    assert [(p["op"], p["form"], p["bytes"]) for p in order[:2]] == [
        ("bcast", "blocking", 1 << 20), ("allreduce", "blocking", 8)]
    assert len(order) == len(MIX)
    assert {profile.table_op(p["op"], p["form"]) for p in order} == {
        "allreduce", "bcast", "iallreduce", "allgather_init", "scan"}


def test_profile_split_by_algorithm_is_merged():
    doc = fixture()
    pts = doc["profile"]["points"]
    first = pts[0]
    pts.append({**first, "algorithm": "recursive_doubling", "calls": 500,
                "rank_calls": 1000, "time_total_s": 0.001})
    first.update(calls=500, rank_calls=1000)
    merged = {(p["op"], p["form"], p["bytes"]): p["calls"]
              for p in profile.merge_algorithms(pts)}
    assert merged[("allreduce", "blocking", 8)] == 1000
    served = [a for a in profile.algorithms_served(pts) if a["op"] == "allreduce"
              and a["bytes"] == 8]
    assert {a["algorithm"]: a["calls"] for a in served} == {"native": 500,
                                                             "recursive_doubling": 500}


def test_shares_per_operation():
    doc = fixture()
    points, _ = profile.profile_points(doc)
    ops = profile.per_operation(points, 2, profile.run_wall(doc))
    # bcast: 0.08 s summed over 2 ranks = 0.04 s a rank, of a 0.5 s run
    assert ops["bcast"]["time_s"] == pytest.approx(0.04)
    assert ops["bcast"]["share"] == pytest.approx(0.08)
    assert ops["allgather_init"]["calls"] == 50
    total, share = profile.collective_total(ops)
    assert total == pytest.approx((0.004 + 0.00001 + 0.08 + 0.0004 + 0.0003 + 0.0001) / 2)
    assert share == pytest.approx(total / 0.5)


def test_points_without_profile_are_approximate():
    doc = fixture()
    del doc["profile"]
    points, source = profile.profile_points(doc)
    assert source == profile.SOURCE_COUNTERS
    assert [(p["op"], p["bytes"], p["calls"]) for p in points] == [("allreduce", 8, 1051)]
    assert all(p["approximate"] for p in points)


def test_comparison_alternates():
    order = app.comparison_order(3)
    assert order[:2] == [(0, "native"), (0, "tuned")]  # the warm-up pair
    measured = order[2:]
    assert [v for _, v in measured].count("native") == 3
    assert [v for _, v in measured].count("tuned") == 3
    # each round has one of each, and the first of a round alternates
    for r in (1, 2, 3):
        assert sorted(v for q, v in measured if q == r) == ["native", "tuned"]
    firsts = [next(v for q, v in measured if q == r) for r in (1, 2, 3)]
    assert firsts == ["native", "tuned", "native"]


def run(exit_code=0, out="passed\nmix: 123.5 calls/s\n", err=""):
    return {"exit": exit_code, "stdout": out, "stderr": err, "wall_s": 1.0}


def test_check_run():
    assert app.check_run(run(), "r", "^passed$", None) is None
    assert app.check_run(run(), "r", None, r"mix: ([\d.]+) calls/s") == 123.5
    with pytest.raises(app.AppError, match="exited with status 1 .boom"):
        app.check_run(run(1, err="boom\n"), "r", None, None)
    with pytest.raises(app.AppError, match="does not match --expect"):
        app.check_run(run(out="FAILED\n"), "r", "^passed$", None)
    with pytest.raises(app.AppError, match="does not match --metric"):
        app.check_run(run(out="passed\n"), "r", None, r"rate (\d+)")
    with pytest.raises(app.AppError, match="refused the table"):
        app.check_run(run(err="colltune: COLLTUNE_TABLE not used: other MPI\n"), "r", None,
                      None)


def test_analyse_time_and_metric():
    rows = [{"variant": v, "warmup": w, "value": x} for v, w, x in (
        ("native", True, 100.0), ("tuned", True, 100.0),
        *(("native", False, 2.0 + i * 0.01) for i in range(8)),
        *(("tuned", False, 1.0 + i * 0.01) for i in range(8)))]
    a = app.analyse(rows, higher_better=False, metric=False)
    assert a["variants"]["native"]["n"] == 8  # the warm-up pair left out
    assert a["speedup"]["value"] == pytest.approx(2.035 / 1.035)
    assert a["verdict"] == "faster" and a["speedup_means"] == "native / tuned"
    # the same numbers as a rate, higher better: tuned has the lower rate, so slower
    b = app.analyse(rows, higher_better=True, metric=True)
    assert b["speedup_means"] == "tuned / native" and b["verdict"] == "slower"
    same = [{"variant": v, "warmup": False, "value": 1.0 + (i % 3) * 0.1}
            for i in range(6) for v in ("native", "tuned")]
    c = app.analyse(same, higher_better=False, metric=False)
    assert c["verdict_text"] == "no difference within noise"


# -- colltune app on the program --------------------------------------------------------------


@pytest.fixture(scope="module")
def build() -> MPIBuild:
    try:
        b = MPIBuild.select()
        b.tool("tests/c/plain_app_mix")
        b.tool("libcolltune_pmpi.so")
    except MPIError as e:
        pytest.skip(str(e))
    return b


def colltune_app(tmp: Path, *args: str, program_args: tuple[str, ...] = ()):
    prog = str(MPIBuild.select().tool("tests/c/plain_app_mix"))
    cmd = [sys.executable, "-m", "colltune.cli", "app", "-n", str(NRANKS), "--db",
           str(tmp / "db.sqlite"), "-o", str(tmp / "study"), *args, "--", prog, *program_args]
    env = subprocess_env()
    # the caller's drop-in settings left out; which build runs (as select() above) kept
    env = {k: v for k, v in env.items() if not k.startswith("COLLTUNE_")
           or k in ("COLLTUNE_BUILD", "COLLTUNE_MPI")}
    return subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=600)


def app_benches(db: Path) -> tuple[dict, dict]:
    with Store.open(db, create=False) as store:
        run_id = store.runs(verb="app")[0]["id"]
        r = store.run(run_id)
    return r, {b["stage"]: b for b in r["benches"] if b["op"] == "app"}


@pytest.fixture(scope="module")
def study(build, tmp_path_factory):
    tmp = tmp_path_factory.mktemp("app")
    p = colltune_app(tmp, "--budget", "60", "--repeat", "2", "--iters", "3",
                     "--verify-rounds", "1", "--expect", "^passed$",
                     "--metric", r"mix: ([\d.]+) calls/s", "--metric-higher-better")
    assert p.returncode == 0, p.stderr[-3000:]
    return tmp, p


def test_study_profile_counts(study):
    tmp, _ = study
    rec = json.loads((tmp / "study" / "profile-native.monitor.json").read_text())
    if not profile.has_profile(rec):
        pytest.skip(NO_PROFILE)
    points, _ = profile.profile_points(rec)
    merged = profile.merge_algorithms(points)
    assert {(p["op"], p["form"], p["bytes"]): p["calls"] for p in merged} == MIX
    assert all(p["comm_size"] == NRANKS for p in merged)
    assert {(p["op"], p["form"], p["bytes"]): p["inits"] for p in merged
            if p["inits"]} == INITS
    assert {(p["op"], p["form"], p["bytes"]): p["rank_calls"] for p in merged} == {
        k: v * NRANKS for k, v in MIX.items()}


def test_study_table_has_exactly_the_points(study):
    tmp, _ = study
    _, stages = app_benches(tmp / "db.sqlite")
    prof_doc = stages["profile"]["app"]
    wanted = {tuple(profile.point_key(p)) for p in profile.merge_algorithms(prof_doc["points"])}
    tuning = stages["tune"]["app"]
    tuned = {tuple(k) for k in tuning["tuned"]}
    skipped = {tuple(k["point"]) for k in tuning["skipped"]}
    # every point either tuned or left out with its reason, none twice, none else
    assert tuned | skipped == wanted and not tuned & skipped
    assert all(k["reason"] for k in tuning["skipped"])
    table = json.loads((tmp / "study" / "table.json").read_text())
    entries = {(e["op"], e["ranks"], e["size_bytes"]) for e in table["entries"]}
    assert entries == {(profile.table_op(op, form), n, b) for op, form, n, b in tuned}
    # the budget was generous: nothing left out for it; what is left out is a form this
    # tuner does not have
    assert not [k for k in tuning["skipped"] if "budget" in k["reason"]]
    assert tuned >= {k for k in wanted if k[1] == "blocking"}


def test_study_forms_all_tuned(study):
    tmp, _ = study
    _, stages = app_benches(tmp / "db.sqlite")
    if stages["profile"]["app"]["source"] != profile.SOURCE_PROFILE:
        pytest.skip(NO_PROFILE)
    left = [k for k in stages["tune"]["app"]["skipped"] if "form" in k["reason"]]
    if left:
        pytest.skip("this colltune's tuner has no non-blocking or persistent forms (needs the "
                    f"summary branch's tuner): {left[0]['reason']}")
    table = json.loads((tmp / "study" / "table.json").read_text())
    ops = {e["op"] for e in table["entries"]}
    assert {"iallreduce", "allgather_init", "scan"} <= ops


def test_study_alternates_with_repetitions(study):
    tmp, p = study
    r, stages = app_benches(tmp / "db.sqlite")
    assert r["status"] == "complete"
    runs = stages["runs"]["results"]
    assert [(x["round"], x["variant"]) for x in runs] == app.comparison_order(2)
    assert [x["warmup"] for x in runs] == [True, True, False, False, False, False]
    assert all(x["exit"] == 0 and x["metric"] > 0 for x in runs)
    verdict = stages["verdict"]["app"]
    assert verdict["variants"]["native"]["n"] == verdict["variants"]["tuned"]["n"] == 2
    assert verdict["speedup_means"] == "tuned / native"
    assert verdict["verdict_text"] in ("faster", "slower", "no difference within noise")
    assert re.search(r"speed-up \(tuned / native\): [\d.]+ \[[\d.]+, [\d.]+\]: ", p.stdout)
    assert "load during the runs" in p.stdout


@pytest.mark.parametrize("how", ["fails", "no-match"])
def test_failing_program_stops_the_study(build, tmp_path, how):
    """`fails`: the program exits 1 under the tuned variant only, so the study gets as far as
    the warm-up pair's tuned run; `no-match`: it never prints "passed", so the profile run
    stops it."""
    extra = ("--fail-tuned",) if how == "fails" else ("--quiet",)
    # a budget spent before the first point: an empty table, nothing to verify (cheap)
    p = colltune_app(tmp_path, "--budget", "0.001", "--repeat", "2", "--iters", "2",
                     "--verify-rounds", "1", "--expect", "^passed$", program_args=extra)
    assert p.returncode == 1
    # the one line that says why (progress lines end with the seconds spent)
    lines = [x for x in p.stderr.splitlines()
             if re.match(r"colltune app: (profile )?run", x)
             and not re.search(r" \(\d+ s\)$", x)]
    assert len(lines) == 1, p.stderr[-2000:]
    if how == "fails":
        assert lines[0].startswith("colltune app: run 2 of 6 (tuned, warm-up): the program "
                                   "exited with status 1")
    else:
        assert lines[0].startswith("colltune app: profile run: the output does not match "
                                   "--expect '^passed$'")
    r, stages = app_benches(tmp_path / "db.sqlite")
    assert r["status"] == "failed" and "no verdict" in r["reason"]
    assert "verdict" not in stages
    kept = stages["runs"]["results"] if "runs" in stages else []
    assert [(x["round"], x["variant"]) for x in kept] == ([(0, "native")] if how == "fails"
                                                          else [])


def test_study_in_the_report(study):
    from colltune.report.report import render_report

    tmp, _ = study
    with Store.open(tmp / "db.sqlite", create=False) as store:
        run_id = store.runs(verb="app")[0]["id"]
        html = render_report(store, [run_id])
    assert "Applications: native against tuned" in html
    assert re.search(r"Speed-up \(tuned / native\): [\d.]+ \[[\d.]+, [\d.]+\]: ", html)


def test_text_and_html_with_a_profile():
    """The parts a profile fills (time and share per operation, algorithms per call), on the
    fixture: what the study prints once the drop-in writes the profile."""
    from colltune.app.report import app_section
    from colltune.report.report import ReportData

    rec = fixture()
    points, _ = profile.profile_points(rec)
    ops = profile.per_operation(points, 2, profile.run_wall(rec))
    rows = [{"variant": v, "warmup": False, "value": 1.0 + i * 0.01, "index": i}
            for i in range(6) for v in ("native", "tuned")]
    doc = {"command": "./prog", "ranks": 2, "mpi": {"build": "mpich"}, "placement": "here",
           "repeat": 6, "metric": None, "runs": rows,
           **app.analyse(rows, higher_better=False, metric=False),
           "collectives": {"native": ops, "tuned": ops,
                           "native_total": profile.collective_total(ops),
                           "tuned_total": profile.collective_total(ops)},
           "program_wall": {"native": 0.5, "tuned": 0.5, "native_run_s": 0.9,
                            "tuned_run_s": 0.9},
           "algorithms": profile.algorithms_served(points),
           "tuning": {"tuned": 4, "points": 6, "skipped": [], "table": "t.json",
                      "verified_table": "v.json", "corrections": 0},
           "load": {"min": 0.5, "max": 0.7, "cores": 2, "warning": None}}
    text = app.text_report(doc)
    assert re.search(r"bcast\s+100\s+40 ms \(8%\)\s+40 ms \(8%\)", text)
    assert "allgather_init" in text and "no difference within noise" in text
    run = {"id": 1, "status": "complete", "benches": [
        {"op": "app", "stage": "verdict", "command": "./prog", "app": doc}]}
    html = app_section(ReportData([run], [], "db")).body
    assert "40 ms (8%)" in html and "allgather_init" in html


def test_points_the_tuner_leaves_out(tmp_path):
    """A 0-byte point is left out before any measurement (no MPI job: the build is not
    needed), with its reason."""
    from colltune.app.tuning import tune_points

    points = [{"op": "bcast", "form": "blocking", "comm_size": 2, "bytes": 0}]
    out = tune_points(None, points, budget_s=10, output=tmp_path / "t.json")
    assert out["tuned"] == [] and out["table"] is None
    assert [k["reason"] for k in out["skipped"]] == ["0-byte calls: nothing to tune"]
