"""The tiled Cholesky over colltune's task runtime (issue 10, must-show 2): the residual
||A - L L^T||_F / ||A||_F below 1e-12 (double) or 1e-4 (single) for several sizes, tile sizes
(dividing N or not) and grids, square and not, with dynamic broadcasts on and off, and the
transfer counts that the runtime and the dyn layer report. One MPI job per rank count runs
all its cases (about 10 s in all on 2 cores); nothing here is timed."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest
from colltune.core.mpi import MPIBuild, MPIError
from colltune.dyn.cholesky import (
    CholeskyUsage,
    check_sizes,
    default_grid,
    parse_grid,
    run_cases,
    summarize,
)

TOL = {"d": 1e-12, "s": 1e-4}
# Per rank count: (N, NB, grid, precision); every case runs with the three back ends.
SHAPES = {
    2: [(96, 32, "2x1", "d"), (100, 24, "1x2", "d"), (200, 64, "2x1", "s")],
    3: [(150, 32, "3x1", "d"), (129, 16, "1x3", "d"), (96, 96, "3x1", "d"),
        (160, 40, "3x1", "s")],
    4: [(256, 32, "2x2", "d"), (130, 16, "4x1", "d"), (101, 20, "1x4", "d"),
        (192, 48, "2x2", "s")],
    6: [(240, 32, "2x3", "d"), (200, 24, "3x2", "d"), (180, 30, "6x1", "s")],
}
COMMS = ("mpi", "dyn", "dyn-plain")


def destinations(nt: int, p: int, q: int) -> list[int]:
    """For every tile version the factorisation sends, how many ranks need it (derived here
    from the algorithm, independently of the runtime): L_kk goes to the owners of the
    TRSMs below it, L_mk to the owners of SYRK(m), GEMM(m, n) for k < n < m and GEMM(i, m)
    for i > m; the owner itself excluded."""
    def owner(i, j):
        return (i % p) * q + j % q

    counts = []
    for k in range(nt):
        counts.append(len({owner(m, k) for m in range(k + 1, nt)} - {owner(k, k)}))
        for m in range(k + 1, nt):
            readers = {owner(m, m)} | {owner(m, n) for n in range(k + 1, m)} | {
                owner(i, m) for i in range(m + 1, nt)}
            counts.append(len(readers - {owner(m, k)}))
    return [c for c in counts if c]


def _build() -> MPIBuild:
    try:
        build = MPIBuild.select()
        build.tool("ct_cholesky")
    except MPIError as e:
        pytest.skip(f"ct_cholesky not built (OpenBLAS/LAPACKE missing?): {e}")
    return build


def test_grids_and_sizes():
    assert default_grid(6) == (2, 3) and default_grid(7) == (1, 7) and default_grid(16) == (4, 4)
    assert parse_grid("3x1", 3) == (3, 1) and parse_grid(None, 4) == (2, 2)
    for bad, ranks in (("2x2", 3), ("3", 3), ("0x3", 0), ("axb", 4)):
        with pytest.raises(CholeskyUsage):
            parse_grid(bad, ranks)
    for n, nb in ((0, 4), (8, 0), (8, 16)):
        with pytest.raises(CholeskyUsage):
            check_sizes(n, nb, 2)


def test_grid_across_hosts_and_bytes_per_host():
    from colltune.dyn.cholesky import grid_hosts, host_bytes, hosts_grid

    assert hosts_grid(4, 1) == (2, 2) and hosts_grid(8, 2) == (2, 4) and hosts_grid(6, 3) == (2, 3)
    assert hosts_grid(8, 4) == (2, 4) and hosts_grid(4, 4) == (1, 4)
    for ranks, ppn in ((4, 1), (8, 2), (12, 2), (16, 4), (6, 3)):
        g = hosts_grid(ranks, ppn)
        hosts = [f"h{r // ppn}" for r in range(ranks)]
        assert grid_hosts(g, hosts)["panel_crosses_hosts"], (ranks, ppn, g)
    assert not grid_hosts((2, 2), ["a", "b", "a", "b"])[
        "panel_crosses_hosts"]
    with pytest.raises(CholeskyUsage):
        hosts_grid(6, 4)
    rec = {"per_rank": [{"app_bytes": 10, "coll_bytes": 1}, {"app_bytes": 20, "coll_bytes": 0},
                        {"app_bytes": 5, "coll_bytes": 0}],
           "bytes": [[0, 4, 6], [20, 0, 0], [0, 5, 0]],
           "coll_bytes": [[0, 1, 0], [0, 0, 0], [0, 0, 0]]}
    out = host_bytes(rec, ["a", "a", "b"])
    assert out["a"] == {"app_bytes": 30, "coll_bytes": 1, "bytes": 31, "off_host_bytes": 6}
    assert out["b"] == {"app_bytes": 5, "coll_bytes": 0, "bytes": 5, "off_host_bytes": 5}


def test_summary_median_and_last_residual():
    recs = [{"n": 1000, "seconds": s, "residual": None} for s in (9.0, 1.0, 3.0, 2.0)]
    recs[-1]["residual"] = 1e-17
    out = summarize(recs, warmup=1)
    assert out["samples_s"] == [1.0, 3.0, 2.0] and out["seconds"] == 2.0
    assert (out["seconds_min"], out["seconds_max"], out["residual"]) == (1.0, 3.0, 1e-17)
    assert out["gflops"] == pytest.approx(1000 ** 3 / 3 / 2.0 * 1e-9)


@pytest.mark.parametrize("ranks", sorted(SHAPES))
def test_residuals_on_and_off(ranks):
    build = _build()
    cases = [f"{n}:{nb}:{g}:{p}:{c}" for (n, nb, g, p) in SHAPES[ranks] for c in COMMS]
    recs = run_cases(build, ranks, cases, workers=2, timeout=300)
    assert len(recs) == len(cases)
    by_case: dict[tuple, dict] = {}
    for rec, case in zip(recs, cases, strict=True):
        n, nb, grid, prec, comm = case.split(":")
        assert (rec["n"], rec["nb"], rec["grid"], rec["precision"], rec["comm"]) == (
            int(n), int(nb), grid, prec, comm)
        assert rec["residual"] is not None and rec["residual"] < TOL[prec], case
        nt = -(-rec["n"] // rec["nb"])
        assert rec["tasks"] == nt * (nt + 1) * (nt + 2) // 6  # POTRF+TRSM+SYRK+GEMM
        # every version sent once to each rank that reads it, and received there once
        p, q = (int(x) for x in grid.split("x"))
        dests = destinations(nt, p, q)
        assert rec["sends"] == rec["recvs"] == sum(dests)
        if comm != "mpi":
            dyn = rec["dyn"]
            # each destination receives exactly one message, from the origin or a forwarder
            assert dyn["messages_sent"] == rec["sends"]
            from_origin = dyn["messages_sent"] - dyn["forwarded"]
            if comm == "dyn-plain":
                assert dyn["broadcasts"] == dyn["forwarded"] == 0
                assert dyn["plain_sends"] == from_origin == rec["sends"]
            else:
                # a binomial tree over k destinations costs its root ceil(log2(k + 1))
                # messages; sends posted after the tile was ready go out one by one
                best = sum(k.bit_length() for k in dests)
                assert best <= from_origin <= rec["sends"]
        by_case.setdefault((n, nb, grid, prec), {})[comm] = rec
    for key, runs in by_case.items():
        # the same tasks on the same data in the same order: the same factor
        assert runs["dyn"]["residual"] == pytest.approx(runs["mpi"]["residual"], rel=1e-9), key
        assert runs["dyn"]["sends"] == runs["mpi"]["sends"]


def test_dynamic_broadcasts_forward_on_a_column_grid():
    """On a P x 1 grid with P >= 4 a panel tile goes to up to P-1 ranks: the grouped sends
    become binomial broadcasts, and some ranks forward."""
    build = _build()
    (rec,) = run_cases(build, 4, ["160:16:4x1:d:dyn"], workers=1, timeout=300)
    dyn = rec["dyn"]
    assert dyn["broadcasts"] > 0 and dyn["forwarded"] > 0
    assert dyn["messages_sent"] == rec["sends"]


def _colltune(*args, env, cwd):
    return subprocess.run([sys.executable, "-m", "colltune.cli", *args], env=env, cwd=cwd,
                          capture_output=True, text=True, timeout=600)


def test_cli_json_records_and_refuses(tmp_path, child_env):
    _build()
    env = child_env(COLLTUNE_DB=str(tmp_path / "ct.db"))
    p = _colltune("cholesky", "--n", "120", "--nb", "32", "--ranks", "3", "--grid", "3x1",
                  "--dynbcast", "both", "--iters", "2", "--warmup", "0", "--json",
                  env=env, cwd=tmp_path)
    assert p.returncode == 0, p.stderr
    doc = json.loads(p.stdout)
    assert doc["grid"] == "3x1" and doc["residual"] < 1e-12
    assert doc["seconds"] > 0 and doc["gflops"] == pytest.approx(120 ** 3 / 3 / doc["seconds"]
                                                                 * 1e-9)
    assert [r["dynbcast"] for r in doc["results"]] == ["on", "off"]
    assert all(r["iterations"] == 2 and r["residual"] < 1e-12 for r in doc["results"])
    from colltune.store.store import Store

    with Store.open(tmp_path / "ct.db") as store:
        run = store.run(doc["run_id"])
    assert run["status"] == "complete" and run["benches"][0]["op"] == "cholesky"
    p = _colltune("cholesky", "--n", "64", "--nb", "16", "--ranks", "4", "--grid", "3x1",
                  "--no-record", env=env, cwd=tmp_path)
    assert p.returncode == 2 and "grid 3x1 has 3 ranks but --ranks is 4" in p.stderr
    p = _colltune("cholesky", "--n", "16", "--nb", "32", "--ranks", "2", "--no-record",
                  env=env, cwd=tmp_path)
    assert p.returncode == 2 and "--nb 32 is larger than --order 16" in p.stderr


def _doc(n: int, on: float, off: float) -> dict:
    res = {"residual": 1e-16, "iterations": 3, "samples_s": []}
    results = [{"variant": f"colltune dynbcast={m}", "runtime": "colltune", "dynbcast": m,
                "seconds": t, "seconds_min": t * 0.9, "seconds_max": t * 1.1,
                "gflops": n ** 3 / 3 / t * 1e-9, **res} for m, t in (("on", on), ("off", off))]
    results.append({"variant": "starpu coop_sends=1 <b>", "runtime": "starpu", "seconds": 2 * off,
                    "seconds_min": off, "seconds_max": 3 * off, "gflops": 1.0,
                    **res, "residual": None})
    return {"n": n, "nb": 64, "ranks": 4, "grid": "2x2", "precision": "s", "workers": 1,
            "binding": "core", "library": {"implementation": "MPICH", "version": "5"},
            "results": results}


def test_report_section(tmp_path):
    from colltune.dyn.cholesky import bench_document
    from colltune.report.report import render_report
    from colltune.store.store import Store

    with Store.open(tmp_path / "ct.db") as store:
        ids = []
        for n, on, off in ((512, 0.5, 0.6), (1024, 2.0, 2.0)):
            run = store.begin_run("cholesky", ["cholesky"])
            run.add_bench(bench_document(_doc(n, on, off), ["cholesky"]))
            run.finish()
            ids.append(run.id)
        html = render_report(store, ids)
    assert "Tiled Cholesky: dynamic broadcasts on and off" in html
    assert "+20.0%" in html and "+0.0%" in html  # off/on - 1 per size
    assert "starpu coop_sends=1 &lt;b&gt;" in html and "coop_sends=1 <b>" not in html
    assert html.count("<figure") >= 1  # GFlop/s by N: two sizes


def _study_case(k: int, link: str, n: int, secs: dict) -> dict:
    results = []
    for variant, t in secs.items():
        hosts = [f"ctbs-h{i}" for i in range(k)]
        r = {"variant": variant, "nb": n // 12, "grid": "2x2", "seconds": t,
             "seconds_min": t * 0.9, "seconds_max": t * 1.2, "gflops": n ** 3 / 3 / t * 1e-9,
             "residual": None if variant.startswith("starpu") else 1e-7,
             "samples_s": [t] * 3,
             "link_tx_bytes": {h: (7 if i == 0 else 5 + i) * 10 ** 6
                               for i, h in enumerate(hosts)}}
        if not variant.startswith("starpu"):
            r["hosts"] = {h: {"bytes": (3 + i) * 10 ** 6} for i, h in enumerate(hosts)}
        results.append(r)
    return {"hosts": k, "link": link, "n": n, "results": results}


def test_study_report_section(tmp_path):
    """bench/cholesky_study.py's JSON recorded in the store: the section shows every
    variant, the gains of on (time X / time on - 1), the owner's and the others' bytes, the
    figures; StarPU's absence is said with its reason."""
    from colltune.dyn.report import host_split, study_bench_document
    from colltune.report.report import render_report
    from colltune.store.store import Store

    doc = {"precision": "s", "starpu": {"absent": "not installed <here>"}, "cases": [
        _study_case(4, "100mbit", 1920, {"on": 1.0, "off": 1.25, "plain": 1.5}),
        _study_case(4, "100mbit", 3840, {"on": 4.0, "off": 3.0, "plain": 4.0,
                                         "starpu1": 8.0, "starpu0": 6.0})]}
    r = doc["cases"][0]["results"][0]
    assert host_split(r, "monitor") == (3e6, 6e6)  # ctbs-h0, then the largest other host
    assert host_split(r, "eth0") == (7e6, 8e6)
    with Store.open(tmp_path / "ct.db") as store:
        run = store.begin_run("cholesky-study", ["x"])
        bench = study_bench_document(doc, ["bench/cholesky_study.py"])
        assert len(bench["results"]) == 8 and bench["datatype"] == "float"
        run.add_bench(bench)
        run.finish()
        html = render_report(store, [run.id])
    assert "Cholesky across emulated hosts" in html
    assert "+25.0%" in html and "+50.0%" in html  # N=1920: off, plain against on
    assert "-25.0%" in html and "+100.0%" in html and "+0.0%" in html  # N=3840
    assert "StarPU coop sends off" in html and "3.0 / 6.0" in html and "7.0 / 8.0" in html
    assert "not installed &lt;here&gt;" in html
    assert html.count("<figure") >= 2


def test_starpu_launch_across_the_bed():
    """StarPU's example goes through Debian's Open MPI 4.1 (ORTE): its agent option is
    plm_rsh_agent and its shared-memory BTL vader, and mpiexec runs inside the first host."""
    from colltune.core.mpi import Placement
    from colltune.dyn.cholesky import starpu_bed_command

    place = Placement(hosts=["ctbs-h0", "ctbs-h1", "ctbs-h2"], ppn=2, rsh="/x/rsh.sh",
                      iface="eth0", prefix=["nsenter", "--net=/run/netns/ctbs-h0", "--"],
                      same_machine=True)
    cmd = starpu_bed_command({"mpiexec": "/usr/bin/mpiexec.openmpi"}, place, 5,
                             ["STARPU_NCPU"])
    assert cmd[:4] == ["nsenter", "--net=/run/netns/ctbs-h0", "--", "/usr/bin/mpiexec.openmpi"]
    text = " ".join(cmd)
    assert "--host ctbs-h0:2,ctbs-h1:2,ctbs-h2:1 -n 5" in text
    assert "--mca plm_rsh_agent /x/rsh.sh" in text and "prtemca" not in text
    assert "--mca btl_tcp_if_include eth0" in text and "self,vader,tcp" in text
    assert cmd[-2:] == ["-x", "STARPU_NCPU"]


# -- across the test bed (docs/CHOLESKY.md, "Across hosts") ------------------------------------

BED = "ctbc"  # this module's bed, used nowhere else
BED_HOSTS = 4
_bed_why = None
try:
    from colltune.core import testbed as _testbed

    _bed_why = _testbed.unavailable_reason(rate=True)
except ImportError as e:  # pragma: no cover
    _bed_why = str(e)


@pytest.fixture(scope="module")
def chol_bed():
    if _bed_why is not None:
        pytest.skip(f"no test bed here: {_bed_why}")
    _testbed.down(BED)  # a bed left by an earlier, killed run
    _testbed.up(BED_HOSTS, 10**9, BED)  # 1 Gbit/s links
    try:
        yield [_testbed.host_name(BED, i) for i in range(BED_HOSTS)]
    finally:
        _testbed.down(BED)
        assert _testbed.leftovers(BED) == []


def _bed_run(tmp_path, child_env, mode: str) -> dict:
    env = child_env(COLLTUNE_TESTBED=BED, COLLTUNE_PPN="1")
    p = _colltune("cholesky", "--n", "960", "--nb", "80", "--grid", "4x1", "--dynbcast", mode,
                  "--iters", "1", "--warmup", "0", "--json", "--no-record", "--monitor-dir",
                  str(tmp_path / mode), env=env, cwd=tmp_path)
    assert p.returncode == 0, p.stderr[-3000:]
    return json.loads(p.stdout)


def test_across_hosts_residual_and_panel_owner_bytes(chol_bed, tmp_path, child_env):
    """4 hosts, one rank a host, grid 4x1 (every panel crosses the 4 hosts), dynbcast on and
    off under the monitor (level peers): the residual is small and the panel owner's host
    (ctbc-h0, owner of the first panel's diagonal tile) sends fewer bytes with dynbcast on.
    Bytes, not time."""
    _build()
    docs = {m: _bed_run(tmp_path, child_env, m) for m in ("on", "off")}
    owner = chol_bed[0]
    res = {}
    for mode, doc in docs.items():
        assert doc["placement"]["rank_hosts"] == chol_bed
        assert doc["placement"]["panel_crosses_hosts"]
        (r,) = doc["results"]
        assert r["residual"] is not None and r["residual"] < 1e-12, mode
        assert set(r["hosts"]) == set(chol_bed)
        assert all(tx and tx > 0 for tx in r["link_tx_bytes"].values())
        res[mode] = r
    on, off = res["on"], res["off"]
    # the runtime sends the same tiles to the same ranks either way; dyn forwards some
    assert on["stats"]["bytes_sent"] == off["stats"]["bytes_sent"] > 0
    assert on["stats"]["dyn"]["forwarded"] > 0
    # off: MPI_Isend from the runtime, seen by the monitor, all to other hosts (the monitor
    # counts the whole job: the factorisation, whose bytes the runtime reports, and the check)
    assert sum(h["bytes"] for h in off["hosts"].values()) >= off["stats"]["bytes_sent"]
    assert all(h["off_host_bytes"] == h["bytes"] for h in off["hosts"].values())
    # on the wire (each host's eth0, headers included) the same bytes leave the hosts in
    # all: every destination gets one copy either way, from the owner or a forwarder
    wire = {m: sum(r["link_tx_bytes"].values()) for m, r in res.items()}
    assert wire["on"] == pytest.approx(wire["off"], rel=0.05)
    # on: the runtime's own PMPI messages, counted by src/dyn/dyn.c for the monitor
    seen_on = sum(h["bytes"] for h in on["hosts"].values())
    assert seen_on >= on["stats"]["bytes_sent"], (on["link_tx_bytes"], off["link_tx_bytes"])
    assert on["hosts"][owner]["bytes"] < off["hosts"][owner]["bytes"]
