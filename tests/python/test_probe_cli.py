"""`colltune probe` end to end on this machine: a schema-valid machine.json and a recorded
run (never the values: timings are not tested), and the bad situations: binding refused,
fewer cores than asked, a part that fails while the others run."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from colltune.core.mpi import MPIBuild
from colltune.probe.probe import Probe
from colltune.probe.schema import validate
from colltune.store.store import Store


@pytest.fixture()
def env(tmp_path, child_env) -> dict:
    return child_env(COLLTUNE_DB=str(tmp_path / "ct.db"))


def colltune(*args, env, cwd, timeout=300):
    return subprocess.run([sys.executable, "-m", "colltune.cli", *args], env=env, cwd=cwd,
                          capture_output=True, text=True, timeout=timeout)


def test_quick_probe_writes_machine_json_and_records(tmp_path, env):
    out = tmp_path / "m.json"
    p = colltune("probe", "--quick", "-o", str(out), env=env, cwd=tmp_path)
    assert p.returncode == 0, p.stdout + p.stderr
    doc = json.loads(out.read_text())
    assert validate(doc) == []
    assert all(part["status"] == "ok" for part in doc["parts"].values()), doc["parts"]
    assert [c["level"] for c in doc["caches"]][:1] == [1]
    assert doc["comm_layers"] and doc["memory"]["groups"] is not None
    assert "machine probe (quick)" in p.stdout and "L1" in p.stdout
    xml = Path(doc["hwloc_xml"]["path"])
    assert xml.is_file() and "colltune MPI latency" in xml.read_text()
    with Store.open(env["COLLTUNE_DB"]) as st:
        (run,) = st.runs()
        assert run["verb"] == "probe" and run["status"] == "complete"
        (bench,) = st.run(run["id"])["benches"]
        assert bench["op"] == "probe" and bench["probe"]["schema"] == doc["schema"]
    # the report shows the machine section
    report = tmp_path / "r.html"
    p = colltune("report", str(run["id"]), "-o", str(report), env=env, cwd=tmp_path)
    assert p.returncode == 0, p.stderr
    assert "Machine (measured)" in report.read_text()


def test_binding_refused_and_fewer_cores_than_asked(tmp_path, env):
    """hwloc told the machine has 4 cores: binding to the two that do not exist is refused;
    asking for 6 cores probes the 4 there are. Both are said, and the parts still run."""
    env = {**env, "HWLOC_SYNTHETIC": "package:1 core:4 pu:1", "HWLOC_THISSYSTEM": "1"}
    out = tmp_path / "m.json"
    p = colltune("probe", "--quick", "--parts", "memory", "--cores", "0-5", "-o",
                 str(out), "--no-record", env=env, cwd=tmp_path)
    doc = json.loads(out.read_text())
    assert validate(doc) == []
    assert doc["cores"] == [0, 1, 2, 3]
    assert any("asked for 6 cores" in w for w in doc["warnings"]), doc["warnings"]
    assert any("refused" in r for r in doc["binding"]["refused"])
    assert "refused" in p.stderr and "asked for 6 cores" in p.stderr
    assert doc["parts"]["caches"]["status"] == "skipped"
    assert doc["parts"]["memory"]["status"] == "ok"


def test_failed_part_says_why_and_others_run(tmp_path, monkeypatch):
    """An MPI whose launcher fails: the comm part fails with the reason, the others run."""
    build = MPIBuild.select()
    build.mpiexec = "/bin/false"
    monkeypatch.setattr(type(build), "flavor", property(lambda self: "unknown"))
    probe = Probe(build, quick=True, log=lambda msg: None)
    doc = probe.run(["memory", "comm"])
    assert doc["parts"]["memory"]["status"] == "ok"
    assert doc["parts"]["comm"]["status"] == "failed"
    assert "false" in doc["parts"]["comm"]["error"]
    assert doc["comm_layers"] == [] and validate(doc) == []


def test_no_build_is_a_clear_message(tmp_path, env):
    env = {**env, "COLLTUNE_BUILD": str(tmp_path / "nowhere")}
    p = colltune("probe", "--quick", "--no-record", env=env, cwd=tmp_path)
    assert p.returncode == 2 and "no colltune build" in p.stderr
    p = colltune("probe", "--parts", "caches,nonsense", env=env, cwd=tmp_path)
    assert p.returncode == 2 and "unknown part(s) nonsense" in p.stderr


def test_quick_probe_for_colltune_run(tmp_path):
    from colltune.probe.probe import quick_probe

    with Store.open(tmp_path / "ct.db") as st:
        run = st.begin_run("run", ["run"])
        doc = quick_probe(run, output=str(tmp_path / "machine.json"))
        run.finish("complete")
        assert doc is not None and validate(doc) == []
        (bench,) = st.run(run.id)["benches"]
        assert bench["op"] == "probe"
    assert (tmp_path / "machine.json").is_file()
    assert os.path.isfile(tmp_path / "machine.xml")


def test_every_set_is_measured_however_many(child_env):
    """A 16-core machine has 120 pairs: the probe programs once measured only the first 64."""
    tool = MPIBuild.select(None).tool("ct_probe")
    sets = ";".join(f"{i % 2},{(i + 1) % 2}" for i in range(130))
    p = subprocess.run([str(tool), "copy", "--sets", sets, "--bytes", "8192", "--reps", "1"],
                       capture_output=True, text=True, timeout=120, env=child_env())
    assert p.returncode == 0, p.stderr
    records = [json.loads(line) for line in p.stdout.splitlines()]
    assert len(records) == 130 and records[-1]["cpus"] == [1, 0]
