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


# -- contention: the concurrent-pairs fields and the merge of ct_p2p --concurrent ------------


def _with_concurrent(doc: dict) -> dict:
    doc = copy.deepcopy(doc)
    layer = doc["layers"][0]
    layer["concurrent_pairs"] = [1, 2, 4]
    for p in layer["points"]:
        p["oneway_concurrent_us"] = [p["oneway_us"], 1.5 * p["oneway_us"], 3 * p["oneway_us"]]
    return doc


def test_concurrent_fields_are_accepted():
    assert validate(_with_concurrent(GOOD)) == []


@pytest.mark.parametrize("change, field, reason", [
    (lambda layer: layer.update(concurrent_pairs=[2, 1, 4]), "concurrent_pairs",
     "ascending integers >= 1"),
    (lambda layer: layer.update(concurrent_pairs=[0, 1, 2]), "concurrent_pairs",
     "ascending integers >= 1"),
    (lambda layer: layer.update(concurrent_pairs=[1, 2.5, 4]), "concurrent_pairs",
     "ascending integers >= 1"),
    (lambda layer: layer["points"][2].pop("oneway_concurrent_us"),
     "points[2].oneway_concurrent_us", "missing"),
    (lambda layer: layer["points"][1]["oneway_concurrent_us"].pop(),
     "points[1].oneway_concurrent_us", "2 values for 3 concurrent_pairs"),
    (lambda layer: layer["points"][0]["oneway_concurrent_us"].__setitem__(1, -2.0),
     "points[0].oneway_concurrent_us[1]", "negative"),
    (lambda layer: layer["points"][0]["oneway_concurrent_us"].__setitem__(0, "x"),
     "points[0].oneway_concurrent_us[0]", "not a number"),
    (lambda layer: layer.pop("concurrent_pairs"), "points[0].oneway_concurrent_us",
     "without the layer's concurrent_pairs"),
])
def test_bad_concurrent_fields_are_rejected(change, field, reason):
    doc = _with_concurrent(GOOD)
    change(doc["layers"][0])
    errors = [str(e) for e in validate(doc)]
    assert any(f"layers[0].{field}: " in e and reason in e for e in errors), errors


# what `ct_p2p --concurrent 1,2,4` prints on 8 ranks (tools/p2p/ct_p2p.c), sizes of GOOD
CONCURRENT_OUTPUT = [
    {"ranks": [{"rank": r, "core": r, "cpus": str(r), "bound": True} for r in range(8)],
     "binder": "hwloc", "library": "MPICH", "sizes": [1, 1024, 65536, 1 << 20],
     "concurrent": [1, 2, 4], "pairs": [[0, 4], [1, 5], [2, 6], [3, 7]]},
    {"size_bytes": 1, "iterations": 30, "oneway_concurrent_us": [1.2, 1.3, 1.5]},
    {"size_bytes": 1024, "iterations": 30, "oneway_concurrent_us": [1.5, 1.7, 2.0]},
    {"size_bytes": 65536, "iterations": 30, "oneway_concurrent_us": [9.0, 12.0, 20.0]},
    {"size_bytes": 1 << 20, "iterations": 5, "oneway_concurrent_us": [100.0, 160.0, 300.0]},
]


def test_merge_concurrent_output_into_a_layer():
    from colltune.p2p.p2p import merge_concurrent

    doc = copy.deepcopy(GOOD)
    assert merge_concurrent(doc["layers"][0], CONCURRENT_OUTPUT)
    layer = doc["layers"][0]
    assert layer["concurrent_pairs"] == [1, 2, 4]
    assert layer["points"][3]["oneway_concurrent_us"] == [100.0, 160.0, 300.0]
    assert layer["points"][0]["oneway_concurrent_us"] == [1.2, 1.3, 1.5]
    assert validate(doc) == []
    # an interrupted job (a size missing) or no header: the layer is left as it was
    doc = copy.deepcopy(GOOD)
    assert not merge_concurrent(doc["layers"][0], CONCURRENT_OUTPUT[:-1])
    assert not merge_concurrent(doc["layers"][0], CONCURRENT_OUTPUT[1:])
    assert "concurrent_pairs" not in doc["layers"][0]
    assert all("oneway_concurrent_us" not in p for p in doc["layers"][0]["points"])


def test_concurrent_job_plan_command_and_estimate(monkeypatch):
    """The job of a layer (with a fake topology of 16 bindable cores, then 2): 8 pairs on the
    first 16 cores inside a host, 8 ranks a host between hosts; none when P < 2."""
    from colltune.p2p import p2p

    build = _build("mpich")
    run = p2p.P2PRun(build, True, progress=False, log=lambda msg: None, max_bytes=1024)
    monkeypatch.setattr(run, "_cores", lambda: list(range(16)))
    plan = [{"layer": 0, "hosts": ["a", "a"], "between_hosts": False, "pair": [0, 1],
             "latency_us": None},
            {"layer": 1, "hosts": ["a", "b"], "between_hosts": True, "pair": [0, 1],
             "latency_us": None}]
    jobs = run.concurrent_plan(plan)
    intra, inter = jobs[id(plan[0])], jobs[id(plan[1])]
    assert intra == {"pairs": 8, "cores": list(range(16)), "hosts": ["a"] * 16}
    assert inter == {"pairs": 8, "cores": list(range(8)) * 2, "hosts": ["a"] * 8 + ["b"] * 8}
    assert p2p.pair_counts(8) == [1, 2, 4, 8] and p2p.pair_counts(3) == [1, 2, 3]
    cmd = run.concurrent_command({"pairs": 8, "cores": list(range(16)), "hosts": None})
    i = cmd.index("--concurrent")
    assert cmd[i + 1] == "1,2,4,8" and "--cores" in cmd and "--quick" in cmd
    assert cmd[cmd.index("--cores") + 1] == ",".join(map(str, range(16)))
    plain = p2p.estimate_seconds(run.sizes, 30, 2)
    assert p2p.estimate_seconds(run.sizes, 30, 2, [[1, 2, 4, 8]]) > plain + 1.5
    monkeypatch.setattr(run, "_cores", lambda: [0, 1])  # 2 cores: P = 1, no job
    assert run.concurrent_plan(plan) == {}


def test_concurrent_job_runs_and_merges():
    """The real tool: 2 pairs (4 ranks, unpinned: on a 2-core machine colltune p2p itself
    skips the job), sizes to 1 KiB, merged into a layer of those sizes."""
    from colltune.p2p import p2p

    build = _build("mpich")
    run = p2p.P2PRun(build, True, progress=False, log=lambda msg: None, max_bytes=1024)
    layer = {"layer": 0, "points": [{"size_bytes": s} for s in run.sizes]}
    run.run_concurrent({"layer": 0}, {"pairs": 2, "cores": None, "hosts": None}, layer)
    assert run.doc["warnings"] == [] and "--concurrent 1,2" in run.commands[0]
    assert layer["concurrent_pairs"] == [1, 2]
    assert all(len(p["oneway_concurrent_us"]) == 2 and min(p["oneway_concurrent_us"]) > 0
               for p in layer["points"])


# Host stacks (issue 21, docs/MODEL.md "Host stack"): `ct_p2p --stream` across the hosts of a
# placement, merged into the inter-host layer's `stream`.
def test_stream_scenarios_by_host_count():
    from colltune.p2p.p2p import stream_scenarios

    assert stream_scenarios(1) == []
    two = stream_scenarios(2)
    assert [(k, n) for k, n, _ in two] == [("pair", 1), ("duplex", 2)]  # no fan-in of one
    four = stream_scenarios(4)
    assert [(k, n) for k, n, _ in four] == [("pair", 1), ("duplex", 2), ("fanin", 2),
                                           ("fanin", 3)]
    assert four[3][2] == [(1, 0), (2, 0), (3, 0)]
    ten = [n for k, n, _ in stream_scenarios(10) if k == "fanin"]
    assert ten == [2, 3, 8]


def _stream_output(scenarios, sizes, gap) -> list[dict]:
    """What `ct_p2p --stream` prints (tools/p2p/ct_p2p.c): a header, then a line per size
    and scenario with the flows' gaps; gap(kind, n, m) gives the slowest flow's."""
    out = [{"ranks": [], "sizes": sizes, "stream": [f for _, _, f in scenarios]}]
    for m in sizes:
        for j, (kind, n, flows) in enumerate(scenarios):
            g = gap(kind, n, m)
            out.append({"size_bytes": m, "scenario": j, "flows": [list(f) for f in flows],
                        "messages": 16, "iterations": 5, "gap_us": [g] * len(flows),
                        "max_gap_us": g})
    return out


def _stream_gap(kind, n, m):
    pair = 10 + m / 100
    return pair * (1 if kind == "pair" else 1.5 if kind == "duplex" else n)


def test_merge_stream_output_into_the_inter_host_layer():
    from colltune.p2p.p2p import merge_stream, stream_scenarios

    scen = stream_scenarios(4)
    sizes = [1024, 8192, 65536]
    doc = copy.deepcopy(GOOD)
    layer = doc["layers"][0]
    assert merge_stream(layer, _stream_output(scen, sizes, _stream_gap), scen)
    st = layer["stream"]
    assert st["sizes_bytes"] == sizes and st["fanin_flows"] == [2, 3]
    assert st["pair_us"] == [_stream_gap("pair", 1, m) for m in sizes]
    assert st["duplex_us"] == [_stream_gap("duplex", 2, m) for m in sizes]
    assert st["fanin_us"][1] == [_stream_gap("fanin", 3, m) for m in sizes]
    assert st["scenarios"]["fanin 3"] == [[1, 0], [2, 0], [3, 0]]
    assert validate(doc) == []
    # a scenario missing at one size (an interrupted job): the layer is left without it
    doc = copy.deepcopy(GOOD)
    cut = _stream_output(scen, sizes, _stream_gap)[:-1]
    assert not merge_stream(doc["layers"][0], cut, scen)
    assert "stream" not in doc["layers"][0]


@pytest.mark.parametrize("change, field, reason", [
    (lambda st: st.update(sizes_bytes=[8192, 1024, 65536]), "stream.sizes_bytes",
     "ascending positive integers"),
    (lambda st: st["pair_us"].pop(), "stream.pair_us", "one value per size"),
    (lambda st: st["duplex_us"].__setitem__(0, 0.0), "stream.duplex_us[0]", "not positive"),
    (lambda st: st.update(fanin_flows=[1, 3]), "stream.fanin_flows", "integers >= 2"),
    (lambda st: st["fanin_us"].pop(), "stream.fanin_us", "one row per fan-in count"),
    (lambda st: st["fanin_us"][0].__setitem__(2, "x"), "stream.fanin_us[0][2]",
     "not a number"),
])
def test_bad_stream_fields_are_rejected(change, field, reason):
    from colltune.p2p.p2p import merge_stream, stream_scenarios

    scen = stream_scenarios(4)
    doc = copy.deepcopy(GOOD)
    assert merge_stream(doc["layers"][0], _stream_output(scen, [1024, 8192, 65536],
                                                         _stream_gap), scen)
    change(doc["layers"][0]["stream"])
    errors = [str(e) for e in validate(doc)]
    assert any(f"layers[0].{field}: " in e and reason in e for e in errors), errors


def test_fanout_job_output_merges_and_validates():
    """The fan-out job's tool line (`ct_p2p --stream 0>1,0>2 --messages 1`), here on 3 ranks
    of this machine at two small sizes: one time a flow and size, merged into a layer with
    its streams; none into a layer without, nor from an incomplete job."""
    from colltune.core.mpi import run_json_lines
    from colltune.p2p import p2p

    build = _build("mpich")
    spec = ",".join(f"{a}>{b}" for a, b in p2p.FANOUT_FLOWS)
    args = [str(build.tool("ct_p2p")), "--stream", spec, "--messages", "1", "--sizes",
            "1024,65536", "--iters", "2"]
    records = run_json_lines(build.launch_command(3, args, bind=False), "fan-out",
                             env=build.launch_env(3), progress=False)
    doc = copy.deepcopy(GOOD)
    layer = doc["layers"][0]
    assert not p2p.merge_fanout(layer, records)  # no streams to add it to
    scen = p2p.stream_scenarios(3)
    assert p2p.merge_stream(layer, _stream_output(scen, [1024, 8192], _stream_gap), scen)
    assert not p2p.merge_fanout(layer, [r for r in records if r.get("size_bytes") != 65536
                                        or "gap_us" not in r][:1])
    assert p2p.merge_fanout(layer, records)
    fo = layer["stream"]["fanout"]
    assert fo["sizes_bytes"] == [1024, 65536]
    assert all(t > 0 for t in fo["first_us"] + fo["second_us"])
    assert validate(doc) == []
    fo["second_us"].pop()
    assert any("stream.fanout.second_us" in str(e) for e in validate(doc))


def test_fanout_command_goes_to_three_hosts(monkeypatch):
    from colltune.p2p import p2p

    build = _build("mpich")
    run = p2p.P2PRun(build, True, progress=False, log=lambda msg: None)
    seen = {}

    def launch(nranks, program, bind=True, export=(), hosts=None):
        seen.update(nranks=nranks, program=program, hosts=hosts)
        return ["mpiexec"] + program

    monkeypatch.setattr(build, "placement", type("P", (), {"hosts": ["h0", "h1", "h2", "h3"]}))
    monkeypatch.setattr(build, "launch_command", launch)
    cmd = run.fanout_command()
    assert seen["nranks"] == 3 and seen["hosts"] == ["h0", "h1", "h2"]
    i = cmd.index("--stream")
    assert cmd[i + 1] == "0>1,0>2" and cmd[cmd.index("--messages") + 1] == "1"
    assert cmd[cmd.index("--sizes") + 1] == ",".join(map(str, p2p.FANOUT_SIZES))
