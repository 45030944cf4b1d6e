"""The drop-in's collective profile, timeline and MPI_T performance variables (issues 38 and 39)
on tests/c/plain_profile.c, a plain MPI program with a known mix (30 MPI_Allreduce of 8 B,
5 MPI_Bcast of 1 MiB served by colltune's shared-memory broadcast (its segment bytes are
the shm_bytes pvar's), 7 MPI_Iallreduce completed by
MPI_Wait, MPI_Waitall and MPI_Test, 2 persistent MPI_Allgather_init started 3 times each,
4 MPI_Scan, 3 MPI_Barrier on a duplicate of MPI_COMM_WORLD), under both MPI wheels, one run
each: the profile's points in the monitor's file exactly; the program's own reading of
colltune's pvars through MPI_T_pvar_* (MPI_T started before MPI_Init) equal to the profile's
values; the Chrome trace loads with json.load with one X event per call, rank and operation.
`colltune monitor --profile` shows the table from the same kind of record."""

from __future__ import annotations

import collections
import json
import re
import subprocess
import sys

import pytest
from colltune.core.mpi import MPIBuild, available_builds
from colltune.monitor.monitor import profile_rows, summary
from conftest import run_plain

NRANKS = 2
BCAST = "shm"  # colltune's, forced: 1 MiB written at the root and read at every other rank
EXPORT = ("LD_PRELOAD", "COLLTUNE_PROFILE", "COLLTUNE_TRACE", "COLLTUNE_MONITOR_OUT",
          "COLLTUNE_BCAST_ALGORITHM")
# (op, form, comm_size, bytes, algorithm, segsize) -> (calls, bytes_total over the ranks,
# inits): the program's mix on NRANKS ranks.
EXPECTED = {
    ("allreduce", "blocking", NRANKS, 8, "native", 0): (30, 30 * 8 * NRANKS, None),
    ("bcast", "blocking", NRANKS, 1 << 20, BCAST, 0): (5, 5 * NRANKS << 20, None),
    ("allreduce", "nonblocking", NRANKS, 8, "native", 0): (7, 7 * 8 * NRANKS, None),
    ("allgather", "persistent", NRANKS, 16, "native", 0): (6, 6 * 16 * NRANKS, 2),
    ("scan", "blocking", NRANKS, 4, "native", 0): (4, 4 * 4 * NRANKS, None),
    ("barrier", "blocking", NRANKS, 0, "native", 0): (3, 0, None),
}
PVAR = re.compile(r"pvar (\d+) (colltune_\w+) (\S+)")


@pytest.fixture(scope="module", params=["mpich", "openmpi"])
def run(request, tmp_path_factory):
    name = request.param
    if name not in available_builds():
        pytest.skip(f"no {name} build")
    build = MPIBuild.select(name)
    tmp = tmp_path_factory.mktemp(f"profile-{name}")
    p = run_plain(build, "plain_profile", NRANKS, export=EXPORT, timeout=120,
                  COLLTUNE_PROFILE="on", COLLTUNE_TRACE=str(tmp / "trace.json"),
                  COLLTUNE_MONITOR_OUT=str(tmp / "monitor.json"),
                  COLLTUNE_BCAST_ALGORITHM=BCAST)
    assert p.returncode == 0, p.stdout + p.stderr
    return {"p": p, "doc": json.loads((tmp / "monitor.json").read_text()),
            "trace": json.loads((tmp / "trace.json").read_text()), "build": build}


def test_profile_counts_every_form_exactly(run):
    doc = run["doc"]
    assert doc["level"] == "off" and "per_rank" not in doc  # the profile alone
    prof = doc["profile"]
    assert prof["schema"] == "colltune-profile/1" and prof["ranks"] == NRANKS
    got = {}
    for pt in prof["points"]:
        key = (pt["op"], pt["form"], pt["comm_size"], pt["bytes"], pt["algorithm"],
               pt["segsize"])
        assert key not in got, key
        got[key] = (pt["calls"], pt["bytes_total"], pt.get("inits"))
        assert pt["rank_calls"] == pt["calls"] * NRANKS
        assert pt["bytes_min"] == pt["bytes_max"] == pt["bytes"]
        assert pt["time_total_s"] > 0 and 0 < pt["time_median_s"] <= pt["time_total_s"]
    assert got == EXPECTED
    # the table `colltune monitor` prints and the report shows
    rows = profile_rows(doc)
    assert len(rows) == len(EXPECTED) and "collective profile" in summary(doc)


def test_pvars_equal_the_profile(run):
    text = run["p"].stdout
    assert len(re.findall(r"rank \d+ pvars 80 of \d+, \d+ before MPI_Init", text)) == NRANKS
    values: dict[str, float] = collections.defaultdict(float)
    for _rank, name, v in PVAR.findall(text):
        values[name] += float(v)
    points = run["doc"]["profile"]["points"]
    for op in {pt["op"] for pt in points} | {"alltoall", "gatherv"}:
        mine = [pt for pt in points if pt["op"] == op]
        assert values[f"colltune_{op}_calls_colltune"] == sum(
            pt["rank_calls"] for pt in mine if pt["algorithm"] != "native"), op
        assert values[f"colltune_{op}_calls_native"] == sum(
            pt["rank_calls"] for pt in mine if pt["algorithm"] == "native"), op
        assert values[f"colltune_{op}_bytes"] == sum(pt["bytes_total"] for pt in mine), op
        # the same tick counts, converted at the read and at MPI_Finalize
        assert values[f"colltune_{op}_time"] == pytest.approx(
            sum(pt["time_total_s"] for pt in mine), rel=1e-3, abs=1e-12), op
        # the segment's bytes: only the shared-memory broadcast has any
        assert values[f"colltune_{op}_shm_bytes"] == (5 * NRANKS << 20 if op == "bcast" else 0)
    assert values["colltune_bcast_calls_colltune"] == 5 * NRANKS


def test_trace_loads_with_one_event_per_call(run):
    trace = run["trace"]
    assert trace["otherData"]["dropped"] == [0] * NRANKS
    events = [e for e in trace["traceEvents"] if e["ph"] == "X"]
    assert all(e["ts"] >= 0 and e["dur"] >= 0 for e in events)
    count = collections.Counter((e["pid"], e["name"], e["args"]["form"]) for e in events)
    want = {(r, op, form): calls for (op, form, *_), (calls, _, _) in EXPECTED.items()
            for r in range(NRANKS)}
    assert dict(count) == want
    bcast = [e for e in events if e["name"] == "bcast"]
    assert {e["args"]["algorithm"] for e in bcast} == {BCAST}
    # the barriers ran on the duplicate: another row (tid) than MPI_COMM_WORLD's 0
    assert {e["tid"] for e in events if e["name"] == "barrier"} != {0}
    assert {e["tid"] for e in events if e["name"] != "barrier"} == {0}


def test_a_bad_setting_is_one_error_line(run, tmp_path):
    if run["build"].flavor != "mpich":
        pytest.skip("once is enough")
    p = run_plain(run["build"], "plain_profile", NRANKS, export=EXPORT, timeout=120,
                  COLLTUNE_PROFILE="yes", COLLTUNE_MONITOR_OUT=str(tmp_path / "m.json"))
    assert p.returncode == 0, p.stdout + p.stderr
    lines = [ln for ln in p.stderr.splitlines() if "COLLTUNE_PROFILE" in ln]
    assert len(lines) == 1 and "'yes' is neither on nor off" in lines[0], p.stderr
    assert not (tmp_path / "m.json").exists()


def test_monitor_command_shows_and_records_the_profile(run, tmp_path, child_env):
    """`colltune monitor --profile` with the monitor on too: one file, both records; the
    table printed, stored and in the report's monitor section."""
    build = run["build"]
    if build.flavor != "mpich":
        pytest.skip("the command is the same under both MPIs")
    env = child_env(COLLTUNE_DB=str(tmp_path / "ct.db"), COLLTUNE_BCAST_ALGORITHM=BCAST)
    env.update(build.launch_env(NRANKS))
    cmd = build.launch_command(NRANKS, [str(build.tool("tests/c/plain_profile"))], bind=False,
                               export=("COLLTUNE_BCAST_ALGORITHM",))
    p = subprocess.run([sys.executable, "-m", "colltune.cli", "monitor", "--profile",
                        "--level", "count", "-o", str(tmp_path / "m.json"), "--", *cmd],
                       env=env, cwd=tmp_path, capture_output=True, text=True, timeout=300)
    assert p.returncode == 0, p.stderr
    assert "collective profile (2 ranks" in p.stdout
    assert re.search(rf"bcast\s+blocking\s+2\s+1048576\s+{BCAST}\s+5\s+10\s", p.stdout), p.stdout
    doc = json.loads((tmp_path / "m.json").read_text())
    assert doc["level"] == "count" and len(doc["per_rank"]) == NRANKS
    assert len(doc["profile"]["points"]) == len(EXPECTED)
    run_id = p.stdout.split("recorded as run ")[1].split()[0]
    r = subprocess.run([sys.executable, "-m", "colltune.cli", "report", run_id, "-o",
                        str(tmp_path / "r.html")], env=env, cwd=tmp_path, capture_output=True,
                       text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    html = (tmp_path / "r.html").read_text()
    assert "Collective profile (COLLTUNE_PROFILE=on)" in html and f"<td>{BCAST}</td>" in html
