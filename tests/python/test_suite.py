"""colltune suite on a tiny plan: every benchmark recorded with the structure the report
reads, sane values (positive times, the messages each benchmark's rank 0 sends per
iteration), the overhead study's levels with the monitor's message totals exactly the shifts
it ran; the report shows the section. No timing is asserted."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest
from colltune.core.mpi import MPIBuild
from colltune.report.suite import BENCHES, plan


@pytest.fixture(scope="module")
def build():
    return MPIBuild.select()


def test_plan_views_from_layers_and_core_distance():
    cores = list(range(8))
    by_distance = plan(cores, True, quick=True)
    dists = [c["distance"] for c in by_distance if c["view"] == "distance"]
    assert dists == [1, 2, 4, 7]
    assert [c["cores"] for c in by_distance if c["view"] == "distance"][-1] == [0, 7]
    assert [c["active"] for c in by_distance
            if c["bench"] == "pingpong" and c["view"] == "pairs"] == [1, 2, 4]
    assert [c["ranks"] for c in by_distance if c["bench"] == "bcast"] == [2, 4, 8]
    assert {c["bench"] for c in by_distance} == set(BENCHES)
    machine = {"comm_layers": [{"layer": 0, "representative": [0, 1]},
                               {"layer": 1, "representative": [0, 4]}]}
    layered = plan(cores, True, quick=True, machine=machine)
    assert [(c["distance"], c["cores"]) for c in layered if c["view"] == "distance"] == \
        [(0, [0, 1]), (1, [0, 4])]
    unpinned = plan([0], False, quick=True)
    assert all(c["cores"] is None and c["ranks"] == 2 for c in unpinned)


def test_suite_records_every_benchmark(build, tmp_path, child_env):
    env = child_env(COLLTUNE_DB=str(tmp_path / "ct.db"))
    p = subprocess.run([sys.executable, "-m", "colltune.cli", "suite", "--quick",
                        "--max-ranks", "2", "-o", str(tmp_path / "s.json")], env=env,
                       cwd=tmp_path, capture_output=True, text=True, timeout=300)
    assert p.returncode == 0, p.stdout + p.stderr
    doc = json.loads((tmp_path / "s.json").read_text())
    assert doc["schema"] == "colltune-suite" and doc["complete"]
    assert {c["bench"] for c in doc["configs"]} == set(BENCHES)
    per_iter = {"pingpong": 1, "shift": 1, "stencil": 8, "share": 0}
    for c in doc["configs"]:
        assert len(c["time_us"]) == 3 and all(t > 0 for t in c["time_us"])
        assert c["min_us"] <= c["median_us"] <= c["max_us"]
        want = per_iter.get(c["bench"], c["ranks"] - 1)
        if c["bench"] == "share" or (c["bench"] == "pingpong" and c["active"] == 0):
            want = 0
        assert c["messages_per_iter"] == want
        assert (c["instructions"] is None) == (c["counters_unavailable"] is not None)
    assert doc["mpi"]["implementation"] in ("MPICH", "Open MPI")
    run_id = p.stdout.split("recorded as run ")[1].split()[0]
    r = subprocess.run([sys.executable, "-m", "colltune.cli", "report", run_id, "-o",
                        str(tmp_path / "r.html")], env=env, cwd=tmp_path, capture_output=True,
                       text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    html = (tmp_path / "r.html").read_text()
    assert "<section id='suite'>" in html and "stencil" in html


def test_overhead_levels_count_the_shifts(build, tmp_path, child_env):
    env = child_env(COLLTUNE_DB=str(tmp_path / "ct.db"))
    p = subprocess.run([sys.executable, "-m", "colltune.cli", "suite", "--overhead", "--ranks",
                        "2", "--reps", "2", "--iters", "50", "--no-record", "-o",
                        str(tmp_path / "o.json")], env=env, cwd=tmp_path, capture_output=True,
                       text=True, timeout=300)
    assert p.returncode == 0, p.stdout + p.stderr
    ov = json.loads((tmp_path / "o.json").read_text())["overhead"]
    assert ov["levels"] == ["none", "off", "counters", "count", "peers", "sizes"]
    shifts = ov["shifts_per_job"]
    assert shifts == 50 * 3 + 10
    for level, msgs in ov["app_messages"].items():
        assert len(ov["times_us"][level]) == 2
        want = {"none": None, "off": None, "counters": 0}.get(level, 2 * shifts)
        assert msgs == [want, want], level
    assert ov["ratios"]["off"]["median"] == 1.0
    assert set(ov["ratios"]) == set(ov["levels"])


def test_overhead_on_a_real_application_counts_its_messages(build, tmp_path, child_env):
    from colltune.core.mpi import MPIError

    try:
        build.tool("ct_cholesky")
    except MPIError as e:
        pytest.skip(f"ct_cholesky not built (OpenBLAS/LAPACKE missing?): {e}")
    env = child_env(COLLTUNE_DB=str(tmp_path / "ct.db"))
    p = subprocess.run([sys.executable, "-m", "colltune.cli", "suite", "--overhead", "--app",
                        "cholesky:480:96", "--ranks", "2", "--reps", "1", "--iters", "2",
                        "--no-record", "-o", str(tmp_path / "o.json")], env=env, cwd=tmp_path,
                       capture_output=True, text=True, timeout=300)
    assert p.returncode == 0, p.stdout + p.stderr
    assert "monitor overhead, cholesky N 480 NB 96 on 2 ranks" in p.stdout
    ov = json.loads((tmp_path / "o.json").read_text())["overhead"]
    assert ov["bench"] == "cholesky" and ov["app"] == {"name": "cholesky", "n": 480, "nb": 96}
    # 5 x 5 tiles on a 1 x 2 grid, tile (i, j) on rank j % 2: a factorisation sends each
    # final L(i,k), i > k, once to every other rank that reads it. L(k,k) is read by the
    # TRSMs of column k only, on its own rank; L(i,k) by SYRK (i,i) and the GEMMs (i,n),
    # k < n < i, and (m,i), m > i: the ranks of columns k+1 .. i
    nt, sends = 5, 0
    for k in range(nt):
        owner = k % 2
        for i in range(k + 1, nt):
            readers = {j % 2 for j in range(k + 1, i + 1)}
            sends += len(readers - {owner})
    jobs = 2 + 1  # --iters factorisations and the one not counted
    for level, msgs in ov["app_messages"].items():
        want = {"none": None, "off": None, "counters": 0}.get(level, sends * jobs)
        assert msgs == [want], (level, msgs, sends)
    with pytest.raises(SystemExit):
        from colltune.cli import main

        main(["suite", "--overhead", "--app", "stencil"])
