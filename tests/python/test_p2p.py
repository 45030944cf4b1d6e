"""`colltune p2p` and p2p.json: a quick run per MPI writes a valid file, records the run and
finds the eager-to-rendezvous switch (never a timing value: this machine is shared); the
validator rejects malformed files naming file, field and reason; ct_p2p refuses bad use."""

from __future__ import annotations

import copy
import json
import signal
import subprocess
import sys

import pytest
from colltune.core.mpi import MPIBuild, available_builds
from colltune.p2p.schema import P2PFileError, load, switches, validate
from colltune.store.store import Store


@pytest.fixture()
def env(tmp_path, child_env) -> dict:
    return child_env(COLLTUNE_DB=str(tmp_path / "ct.db"))


def colltune(*args, env, cwd, timeout=300):
    return subprocess.run([sys.executable, "-m", "colltune.cli", *args], env=env, cwd=cwd,
                          capture_output=True, text=True, timeout=timeout)


def _build(name: str) -> MPIBuild:
    if name not in available_builds():
        pytest.skip(f"no {name} build")
    return MPIBuild.select(name)


@pytest.mark.parametrize("mpi", ["mpich", "openmpi"])
def test_quick_run_writes_valid_file_records_and_finds_rendezvous(tmp_path, env, mpi):
    _build(mpi)
    out = tmp_path / "p2p.json"
    p = colltune("p2p", "--quick", "--mpi", mpi, "-o", str(out), env=env, cwd=tmp_path)
    assert p.returncode == 0, p.stdout + p.stderr
    assert "about" in p.stderr  # the forecast comes first
    doc = load(out)
    assert doc["complete"] and doc["mpi"]["build"] == mpi
    assert doc["mpi"]["implementation"] == {"mpich": "MPICH", "openmpi": "Open MPI"}[mpi]
    (layer,) = doc["layers"]
    sizes = [pt["size_bytes"] for pt in layer["points"]]
    assert sizes[0] == 1 and sizes[-1] == 16 << 20
    assert doc["local"]["sizes_bytes"] == sizes
    # the eager limit of both MPIs' shared memory is far below 16 MiB
    assert any(s["to"] == "rendezvous" for s in layer["switches"]), layer["switches"]
    assert layer["points"][-1]["mode"] == "rendezvous"
    assert "-> rendezvous at" in p.stdout
    with Store.open(env["COLLTUNE_DB"]) as st:
        (run,) = st.runs()
        assert run["verb"] == "p2p" and run["status"] == "complete" and run["ranks"] == 2
        (bench,) = st.run(run["id"])["benches"]
        assert bench["op"] == "p2p" and bench["p2p"]["schema"] == "colltune-p2p"


def test_machine_layers_choose_pairs_and_ctrl_c_keeps_what_was_measured(tmp_path, env):
    """Two layers from a machine file (both on cores 0-1 here), interrupted during the
    second: p2p.json holds the first layer with complete false, the run is interrupted."""
    _build("mpich")
    machine = tmp_path / "machine.json"
    machine.write_text(json.dumps({
        "schema": "colltune-machine/1", "schema_version": 1, "parts": {}, "caches": [],
        "memory": None, "comm_layers": [
            {"layer": 0, "latency_us": 0.4, "pairs": [[0, 1]], "representative": [0, 1]},
            {"layer": 1, "latency_us": 0.9, "pairs": [[1, 0]], "representative": [1, 0]}]}))
    out = tmp_path / "p2p.json"
    # A progress line at every step (off a terminal they are sparse): the cue to interrupt.
    env = {**env, "COLLTUNE_PROGRESS_INTERVAL": "0"}
    proc = subprocess.Popen([sys.executable, "-m", "colltune.cli", "p2p", "--machine",
                             str(machine), "--mpi", "mpich", "-o", str(out)], env=env,
                            cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True)
    for line in proc.stderr:
        if line.startswith("p2p layer 1"):  # the second job is under way
            proc.send_signal(signal.SIGINT)
            break
    rest = proc.communicate(timeout=120)
    assert proc.returncode == 130, rest
    doc = load(out)
    assert doc["complete"] is False
    assert doc["layers"][0]["pair"] == [0, 1] and doc["layers"][0]["latency_us"] == 0.4
    assert len(doc["layers"][0]["points"]) > 40
    assert all(la["layer"] == 1 for la in doc["layers"][1:])
    with Store.open(env["COLLTUNE_DB"]) as st:
        (run,) = st.runs()
        assert run["verb"] == "p2p" and run["status"] == "interrupted"


@pytest.mark.parametrize("mpi", ["mpich", "openmpi"])
def test_ct_p2p_refuses_three_ranks_and_bad_options(child_env, mpi):
    build = _build(mpi)
    tool = str(build.tool("ct_p2p"))
    run_env = {**child_env(), **build.launch_env(3)}
    p = subprocess.run(build.launch_command(3, [tool]), env=run_env, capture_output=True,
                       text=True, timeout=120)
    assert p.returncode != 0
    assert "needs exactly 2 ranks" in p.stderr and "got 3" in p.stderr
    run_env = {**child_env(), **build.launch_env(2)}
    for args, msg in ((["--sizes", "1,x"], "--sizes: not a list"),
                      (["--frobnicate"], "unknown option '--frobnicate'"),
                      (["--pending", "4,2"], "--pending: expected ascending")):
        p = subprocess.run(build.launch_command(2, [tool, *args]), env=run_env,
                           capture_output=True, text=True, timeout=120)
        assert p.returncode != 0 and msg in p.stderr, (args, p.stderr)


def test_no_build_and_bad_machine_file_are_clear(tmp_path, env):
    p = colltune("p2p", "--no-record", env={**env, "COLLTUNE_BUILD": str(tmp_path / "none")},
                 cwd=tmp_path)
    assert p.returncode == 2 and "no colltune build" in p.stderr
    bad = tmp_path / "m.json"
    bad.write_text("{")
    p = colltune("p2p", "--no-record", "--machine", str(bad), env=env, cwd=tmp_path)
    assert p.returncode == 2 and "m.json: not JSON" in p.stderr


# -- the schema, on synthetic documents --------------------------------------------------


def _point(size: int, mode: str) -> dict:
    return {"size_bytes": size, "os_us": 0.5, "or_us": 0.4, "g_us": 1.0, "oneway_us": 1.2,
            "mode": mode, "os_pending_us": [0.5, 0.6, 0.7], "g_pending_us": [1.0, 0.9, 0.8]}


GOOD = {
    "schema": "colltune-p2p", "schema_version": 1, "colltune_version": "0.1.0",
    "created_at": "2026-01-01T00:00:00+00:00", "host": {"hostname": "h"},
    "mpi": {"build": "mpich", "implementation": "MPICH", "version": "4.2", "library": "x"},
    "quick": True, "complete": True, "warnings": [], "pending_counts": [1, 2, 4],
    "layers": [{"layer": 0, "pair": [0, 1], "latency_us": 1.2,
                "points": [_point(1, "blocking"), _point(1024, "immediate"),
                           _point(65536, "rendezvous"), _point(1 << 20, "rendezvous")],
                "switches": [{"at_bytes": 65536, "from": "immediate", "to": "rendezvous"}]}],
    "local": {"sizes_bytes": [1, 1024], "copy_us": [0.01, 0.1], "reduce_us": [0.01, 0.2]},
}


def _write(tmp_path, doc) -> str:
    path = tmp_path / "p2p.json"
    path.write_text(doc if isinstance(doc, str) else json.dumps(doc))
    return str(path)


def test_good_document_passes(tmp_path):
    assert validate(GOOD) == []
    assert load(_write(tmp_path, GOOD))["layers"][0]["pair"] == [0, 1]
    unpinned = copy.deepcopy(GOOD)
    unpinned["layers"][0].update(pair=None, latency_us=None)
    assert validate(unpinned) == []


def _broken(change):
    doc = copy.deepcopy(GOOD)
    change(doc)
    return doc


@pytest.mark.parametrize("change, field, reason", [
    (lambda d: d["layers"][0]["points"][3].pop("os_us"), "layers[0].points[3].os_us",
     "missing"),
    (lambda d: d["layers"][0]["points"][1].update(g_us="fast"), "layers[0].points[1].g_us",
     "not a number"),
    (lambda d: d["layers"][0]["points"][2].update(or_us=-1.0), "layers[0].points[2].or_us",
     "negative"),
    (lambda d: d["layers"][0]["points"][2].update(size_bytes=8),
     "layers[0].points[2].size_bytes", "not ascending"),
    (lambda d: d["layers"][0]["points"][0].update(mode="eager"), "layers[0].points[0].mode",
     "unknown mode 'eager'"),
    (lambda d: d["layers"][0]["points"][1]["g_pending_us"].pop(),
     "layers[0].points[1].g_pending_us", "2 values for 3 pending_counts"),
    (lambda d: d.update(schema_version=2), "schema_version",
     "schema_version 2 is not supported (this colltune reads 1)"),
    (lambda d: d.update(schema="colltune-machine/1"), "schema", "expected 'colltune-p2p'"),
    (lambda d: d.pop("pending_counts"), "pending_counts", "missing"),
    (lambda d: d["layers"][0].update(pair=[0]), "layers[0].pair", "[core, core]"),
    (lambda d: d["layers"][0]["switches"][0].update(to="fast"), "layers[0].switches[0].to",
     "unknown mode"),
    (lambda d: d["local"]["copy_us"].pop(), "local.copy_us", "1 values for 2 sizes"),
    (lambda d: d.update(complete="yes"), "complete", "not a boolean"),
])
def test_malformed_documents_are_rejected_naming_file_field_reason(tmp_path, change, field,
                                                                   reason):
    path = _write(tmp_path, _broken(change))
    with pytest.raises(P2PFileError) as err:
        load(path)
    msg = str(err.value)
    assert f"{path}: {field}: " in msg and reason in msg, msg


def test_not_json_and_not_an_object(tmp_path):
    path = _write(tmp_path, '{"schema": "colltune-p2p",')
    with pytest.raises(P2PFileError, match=r"p2p\.json: not JSON"):
        load(path)
    with pytest.raises(P2PFileError, match=r"\(top\): not a JSON object"):
        load(_write(tmp_path, "[1, 2]"))
    with pytest.raises(P2PFileError, match="cannot read"):
        load(tmp_path / "missing.json")


def test_switch_rule_ignores_single_point_blips():
    def pts(modes):
        return [{"size_bytes": 2 ** i, "mode": m} for i, m in enumerate(modes)]

    b, i, r = "blocking", "immediate", "rendezvous"
    assert switches(pts([b, b, r, r, r])) == [{"at_bytes": 4, "from": b, "to": r}]
    assert switches(pts([b, i, b, b, r, b, r, r])) == [{"at_bytes": 64, "from": b, "to": r}]
    assert switches(pts([b, b, b, r])) == []  # a change at the last point only: not held
    assert switches(pts([i, i, b, b, r, r])) == [
        {"at_bytes": 4, "from": i, "to": b}, {"at_bytes": 16, "from": b, "to": r}]
    assert switches([]) == []
