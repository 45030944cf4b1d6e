"""`colltune cholesky`: the tiled Cholesky over colltune's task runtime (issue 10), with
dynamic broadcasts on or off, and StarPU-MPI's own example beside it (docs/CHOLESKY.md).

ct_cholesky (tools/cholesky) runs under the chosen MPI's mpiexec and prints one JSON line per
factorisation; this module launches it, keeps the median with min and max over the
iterations, the residual ||A - L L^T||_F / ||A||_F of the last one, and records the run. With
--starpu, Debian's `mpi_cholesky` (starpu-examples, single precision, built on Debian's Open
MPI) runs at the same size, tile size, grid and ranks with STARPU_MPI_COOP_SENDS=1 and 0.
"""

from __future__ import annotations

import argparse
import glob
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from ..core.args import add_db, add_ranks, hidden, need
from ..core.mpi import (
    MPIBuild,
    MPIError,
    add_host_arguments,
    apply_host_arguments,
    describe_library,
    run_json_lines,
    stop_process_group,
)

SCHEMA = "colltune-cholesky"
STARPU_GLOB = "/usr/lib/*/starpu/mpi/mpi_cholesky"


class CholeskyError(RuntimeError):
    pass


class CholeskyUsage(CholeskyError):
    """Bad input (exit status 2)."""


def default_grid(ranks: int) -> tuple[int, int]:
    """The most square P x Q = ranks with P <= Q (as ct_cholesky picks it)."""
    p = max(d for d in range(1, int(ranks ** 0.5) + 1) if ranks % d == 0)
    return p, ranks // p


def parse_grid(text: str | None, ranks: int) -> tuple[int, int]:
    if not text:
        return default_grid(ranks)
    m = re.fullmatch(r"(\d+)[xX](\d+)", text.strip())
    if not m or int(m[1]) < 1 or int(m[2]) < 1:
        raise CholeskyUsage(f"bad --grid {text!r}: expected PxQ, e.g. 2x3")
    p, q = int(m[1]), int(m[2])
    if p * q != ranks:
        raise CholeskyUsage(f"grid {p}x{q} has {p * q} ranks but --ranks is {ranks}")
    return p, q


def hosts_grid(ranks: int, ppn: int) -> tuple[int, int]:
    """Across hosts (ranks ppn a host, in rank order): the most square P x Q = ranks whose Q is
    a multiple of ppn. Tile (i, j) is on rank (i mod P)*Q + (j mod Q), so a grid row is Q
    consecutive ranks and a host holds ppn consecutive ranks of one grid row: the P ranks of
    a grid column (which own a panel's tiles) are then on P different hosts."""
    fits = [(p, ranks // p) for p in range(1, ranks + 1)
            if ranks % p == 0 and (ranks // p) % ppn == 0]
    if not fits:
        raise CholeskyUsage(f"{ranks} ranks at {ppn} a host: no grid whose Q is a multiple "
                            f"of {ppn}")
    return min(fits, key=lambda g: (abs(g[0] - g[1]), g[0] > g[1]))


def grid_hosts(grid: tuple[int, int], rank_hosts: list[str]) -> dict:
    """Which hosts each grid column's ranks (a panel's owners) are on."""
    p, q = grid
    cols = [[rank_hosts[i * q + j] for i in range(p)] for j in range(q)]
    return {"rank_hosts": rank_hosts, "column_hosts": cols,
            "panel_crosses_hosts": all(len(set(c)) == p for c in cols)}


def check_sizes(n: int, nb: int, ranks: int) -> None:
    if n < 1 or nb < 1:
        raise CholeskyUsage(f"--order and --nb must be positive (got {n} and {nb})")
    if nb > n:
        raise CholeskyUsage(f"--nb {nb} is larger than --order {n}")
    if ranks < 1:
        raise CholeskyUsage("--ranks must be at least 1")


MONITOR_VARS = ("LD_PRELOAD", "COLLTUNE_MONITOR", "COLLTUNE_MONITOR_OUT")


def _launch(build: MPIBuild, ranks: int, workers: int, args: list[str],
            timeout: float | None, label: str, monitor_out: Path | None = None) -> list[dict]:
    # One BLAS thread per task (ct_cholesky also tells OpenBLAS); ranks pinned one per core
    # only when each rank runs a single worker and they fit.
    env = {**build.launch_env(ranks), "OPENBLAS_NUM_THREADS": "1"}
    export: tuple[str, ...] = ("OPENBLAS_NUM_THREADS",)
    if monitor_out is not None:
        # The drop-in's message monitor at level peers; rank 0 writes the record at
        # MPI_Finalize (docs/MONITOR.md).
        lib = str(build.tool("libcolltune_pmpi.so"))
        env.update(LD_PRELOAD=":".join(filter(None, [lib, os.environ.get("LD_PRELOAD")])),
                   COLLTUNE_MONITOR="peers", COLLTUNE_MONITOR_OUT=str(monitor_out))
        export += MONITOR_VARS
        monitor_out.unlink(missing_ok=True)
    bind = workers == 1
    cmd = build.launch_command(ranks, [str(build.tool("ct_cholesky")), *args], bind=bind,
                               export=export)
    return run_json_lines(cmd, label, env=env, timeout=timeout, progress=False,
                          error=CholeskyError)


# -- bytes per host ----------------------------------------------------------------------------


def host_bytes(record: dict, rank_hosts: list[str]) -> dict:
    """Bytes each host sent, from the monitor's record (level peers): per host the sum over
    its ranks of app_bytes (point-to-point, the MPI back end's MPI_Isend) and coll_bytes
    (colltune's collectives), and from the N x N matrices the part sent to other hosts."""
    ranks = record.get("per_rank") or []
    if len(ranks) != len(rank_hosts):
        raise CholeskyError(f"monitor record has {len(ranks)} ranks, the job {len(rank_hosts)}")
    out: dict[str, dict] = {h: {"app_bytes": 0, "coll_bytes": 0, "off_host_bytes": 0}
                            for h in dict.fromkeys(rank_hosts)}
    for r, rec in enumerate(ranks):
        h = out[rank_hosts[r]]
        h["app_bytes"] += int(rec.get("app_bytes", 0))
        h["coll_bytes"] += int(rec.get("coll_bytes", 0))
        for key in ("bytes", "coll_bytes"):
            matrix = record.get(key)
            row = matrix[r] if isinstance(matrix, list) else []
            h["off_host_bytes"] += sum(int(b) for d, b in enumerate(row)
                                       if rank_hosts[d] != rank_hosts[r])
    for h in out.values():
        h["bytes"] = h["app_bytes"] + h["coll_bytes"]
    return out


def link_tx_bytes(netns: list[str]) -> list[int | None]:
    """Bytes each test-bed host's eth0 has transmitted (its kernel counter, headers included):
    what really left the host, whatever layer sent it."""
    out: list[int | None] = []
    for ns in netns:
        try:
            p = subprocess.run(["nsenter", f"--net={ns}", "ip", "-j", "-s", "link", "show",
                                "eth0"], capture_output=True, text=True, timeout=10)
            out.append(int(json.loads(p.stdout)[0]["stats64"]["tx"]["bytes"]))
        except (OSError, subprocess.TimeoutExpired, ValueError, KeyError, IndexError):
            out.append(None)
    return out


def bed_netns(build: MPIBuild) -> dict[str, str]:
    """Host name -> network namespace of the test bed in use ({} elsewhere)."""
    bed = os.environ.get("COLLTUNE_TESTBED")
    if not bed or not build.placement:
        return {}
    from ..core.hosts import DEFAULT_NAME, read_state

    state = read_state(DEFAULT_NAME if bed == "1" else bed) or {}
    return {h["name"]: h["netns"] for h in state.get("hosts", [])}


def run_cases(build: MPIBuild, ranks: int, cases: list[str], workers: int = 1,
              timeout: float | None = 600) -> list[dict]:
    """Many small factorisations in one job: cases are N:NB:PxQ:d|s:mpi|dyn|dyn-plain."""
    return _launch(build, ranks, workers, ["--cases", ",".join(cases), "--workers",
                                           str(workers)], timeout, "cholesky cases")


def summarize(records: list[dict], warmup: int) -> dict:
    """Median (min, max) over the measured iterations; the residual of the last one."""
    kept = records[warmup:] or records
    secs = [r["seconds"] for r in kept]
    first = kept[-1]
    med = statistics.median(secs)
    n = first["n"]
    return {"seconds": med, "seconds_min": min(secs), "seconds_max": max(secs),
            "gflops": n ** 3 / 3 / med * 1e-9, "residual": records[-1].get("residual"),
            "samples_s": secs, "iterations": len(secs),
            "stats": {k: first.get(k) for k in ("tasks", "sends", "recvs", "bytes_sent", "dyn")
                      if k in first}}


def run_colltune(build: MPIBuild, *, n: int, nb: int, ranks: int, grid: tuple[int, int],
                 dynbcast: str, precision: str, workers: int, iters: int, warmup: int,
                 check: bool, timeout: float | None, monitor_dir: Path | None = None,
                 rank_hosts: list[str] | None = None) -> dict:
    """One job of warmup + iters factorisations (and the residual). With monitor_dir, under
    the drop-in's monitor: `hosts` holds the bytes each host sent over the whole job (every
    factorisation and the check; the monitor record is kept beside), and on the test bed
    `link_tx_bytes`, what each host's eth0 transmitted during the job."""
    comm = {"on": "dyn", "off": "mpi", "plain": "dyn-plain"}[dynbcast]
    args = ["--n", str(n), "--nb", str(nb), "--grid", f"{grid[0]}x{grid[1]}", "--comm", comm,
            "--precision", precision, "--workers", str(workers), "--iters",
            str(iters + warmup)]
    if not check:
        args.append("--no-check")
    mon = None
    if monitor_dir is not None:
        monitor_dir.mkdir(parents=True, exist_ok=True)
        mon = (monitor_dir / f"monitor-n{n}-nb{nb}-{dynbcast}.json").resolve()
    rank_hosts = rank_hosts or (build.placement.rank_hosts(ranks) if build.placement
                                else ["localhost"] * ranks)
    netns = bed_netns(build)
    hosts_order = list(dict.fromkeys(rank_hosts))
    before = link_tx_bytes([netns[h] for h in hosts_order]) if netns else []
    records = _launch(build, ranks, workers, args, timeout, f"cholesky dynbcast={dynbcast}",
                      monitor_out=mon)
    after = link_tx_bytes([netns[h] for h in hosts_order]) if netns else []
    if len(records) != iters + warmup:
        raise CholeskyError(f"ct_cholesky printed {len(records)} results, expected "
                            f"{iters + warmup}")
    out = {"variant": f"colltune dynbcast={dynbcast}", "runtime": "colltune",
           "dynbcast": dynbcast, "comm": comm, **summarize(records, warmup)}
    out["library"] = records[0].get("library", "")
    out["factorisations"] = iters + warmup
    if mon is not None:
        if not mon.exists():
            raise CholeskyError(f"the monitor wrote no record ({mon})")
        out["monitor"] = str(mon)
        out["hosts"] = host_bytes(json.loads(mon.read_text()), rank_hosts)
    if netns:
        out["link_tx_bytes"] = {h: (a - b if a is not None and b is not None else None)
                                for h, b, a in zip(hosts_order, before, after, strict=True)}
    return out


# -- StarPU-MPI's example ----------------------------------------------------------------------


def find_starpu() -> dict | None:
    """Debian's mpi_cholesky and the Open MPI launcher it was built for, or None."""
    prog = os.environ.get("COLLTUNE_STARPU_CHOLESKY") or next(iter(glob.glob(STARPU_GLOB)), None)
    mpiexec = os.environ.get("COLLTUNE_STARPU_MPIEXEC") or shutil.which("mpiexec.openmpi")
    if not prog or not Path(prog).is_file() or not mpiexec:
        return None
    version = ""
    try:
        out = subprocess.run(["dpkg-query", "-W", "-f=${Version}", "starpu-examples"],
                             capture_output=True, text=True, timeout=10)
        version = out.stdout.strip()
    except (OSError, subprocess.TimeoutExpired):
        pass
    return {"program": prog, "mpiexec": mpiexec, "version": version}


def starpu_bed_command(sp: dict, place, ranks: int, env_names: list[str]) -> list[str]:
    """Debian's Open MPI 4.1 launcher (ORTE, not the PRRTE of the project's Open MPI 5)
    across the hosts of a placement: mpiexec inside the first host, the test bed's namespace
    wrapper as remote shell (plm_rsh_agent: ORTE's name), eth0 between hosts, shared memory
    (vader, 4.1's name) inside a host."""
    hosts = place.rank_hosts(ranks)
    groups: list[list] = []
    for h in hosts:
        if groups and groups[-1][0] == h:
            groups[-1][1] += 1
        else:
            groups.append([h, 1])
    cmd = [*place.prefix, sp["mpiexec"], "--host", ",".join(f"{h}:{c}" for h, c in groups),
           "-n", str(ranks), "--map-by", "slot", "--bind-to", "none", "--oversubscribe"]
    if place.rsh:
        cmd += ["--mca", "plm_rsh_agent", place.rsh]
    if place.iface:
        cmd += ["--mca", "oob_tcp_if_include", place.iface, "--mca", "btl_tcp_if_include",
                place.iface]
    cmd += ["--mca", "pml", "ob1", "--mca", "btl", "self,vader,tcp"]
    for k in env_names:
        cmd += ["-x", k]
    return cmd


def run_starpu(sp: dict, *, n: int, nb: int, ranks: int, grid: tuple[int, int], workers: int,
               coop: int, iters: int, warmup: int, timeout: float | None, place=None,
               netns: dict[str, str] | None = None) -> dict:
    """StarPU's example, one job per iteration (it factorises once). Its blocks are
    size/nblocks, so nb must divide n; its grid is -dblockx P -dblocky Q. With a placement
    (the test bed), across its hosts with Debian's Open MPI (starpu_bed_command); with the
    bed's namespaces, `link_tx_bytes` is what each host's eth0 sent over all the jobs (the
    monitor is the drop-in of the project's MPIs, not of Debian's)."""
    if n % nb:
        raise CholeskyUsage(f"StarPU's mpi_cholesky needs --nb to divide --order ({n} % {nb} != 0)")
    env = {"STARPU_NCPU": str(workers), "STARPU_NCUDA": "0", "STARPU_NOPENCL": "0",
           "STARPU_SILENT": "1", "STARPU_MPI_COOP_SENDS": str(coop),
           # Several ranks on one machine: StarPU would bind every rank's workers to the same
           # first cores.
           "STARPU_WORKERS_NOBIND": "1",
           "OMPI_ALLOW_RUN_AS_ROOT": "1", "OMPI_ALLOW_RUN_AS_ROOT_CONFIRM": "1",
           "OMPI_MCA_mpi_yield_when_idle": "1"}
    if place is not None:
        cmd = starpu_bed_command(sp, place, ranks, list(env))
    else:
        cmd = [sp["mpiexec"], "-n", str(ranks)]
        for k in env:
            cmd += ["-x", k]
        if ranks > (os.cpu_count() or 1):
            cmd.append("--oversubscribe")
        cmd += ["--bind-to", "none"]
    cmd += [sp["program"], "-size", str(n), "-nblocks", str(n // nb),
            "-dblockx", str(grid[0]), "-dblocky", str(grid[1])]
    hosts_order = list(dict.fromkeys(place.rank_hosts(ranks))) if place and netns else []
    before = link_tx_bytes([netns[h] for h in hosts_order]) if hosts_order else []
    secs, reported = [], []
    for _ in range(iters + warmup):
        proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                                env={**os.environ, **env}, start_new_session=True)
        try:
            out, err = proc.communicate(timeout=timeout)
        except (subprocess.TimeoutExpired, KeyboardInterrupt):
            stop_process_group(proc, 5)
            raise
        m = re.search(r"Computation time \(in ms\):\s*([\d.]+)", out)
        g = re.search(r"Synthetic GFlops\s*:\s*([\d.]+)", out)
        if proc.returncode != 0 or not m:
            raise CholeskyError(f"StarPU's mpi_cholesky failed (exit {proc.returncode}): "
                                + (err or out).strip()[-600:])
        secs.append(float(m[1]) / 1e3)
        reported.append(float(g[1]) if g else None)
    kept = secs[warmup:] or secs
    med = statistics.median(kept)
    out = {"variant": f"starpu coop_sends={coop}", "runtime": "starpu", "coop_sends": coop,
           "seconds": med, "seconds_min": min(kept), "seconds_max": max(kept),
           "gflops": n ** 3 / 3 / med * 1e-9, "gflops_reported": reported[-1],
           "residual": None, "samples_s": kept, "iterations": len(kept),
           "factorisations": iters + warmup,
           "library": f"StarPU {sp['version']} (Debian starpu-examples), Debian Open MPI"}
    if hosts_order:
        after = link_tx_bytes([netns[h] for h in hosts_order])
        out["link_tx_bytes"] = {h: (a - b if a is not None and b is not None else None)
                                for h, b, a in zip(hosts_order, before, after, strict=True)}
    return out


# -- the verb ----------------------------------------------------------------------------------


def measure(args: argparse.Namespace, build: MPIBuild, log=print) -> dict:
    place = build.placement
    if args.ranks is None:
        args.ranks = place.max_ranks if place else (os.cpu_count() or 1)
    check_sizes(args.n, args.nb, args.ranks)
    if place and not args.grid:
        grid = hosts_grid(args.ranks, place.ppn)
    else:
        grid = parse_grid(args.grid, args.ranks)
    rank_hosts = place.rank_hosts(args.ranks) if place else ["localhost"] * args.ranks
    monitor = getattr(args, "monitor", None)
    if monitor is None:
        monitor = "peers" if place else "off"
    monitor_dir = None
    if monitor != "off":
        monitor_dir = Path(getattr(args, "monitor_dir", None) or tempfile.mkdtemp(
            prefix="colltune-cholesky-"))
    if args.workers < 1 or args.iters < 1 or args.warmup < 0:
        raise CholeskyUsage("--workers and --iters must be at least 1, --warmup at least 0")
    modes = ["on", "off"] if args.dynbcast == "both" else [args.dynbcast]
    doc = {"schema": SCHEMA, "schema_version": 1, "created_at": time.strftime("%FT%T%z"),
           "n": args.n, "nb": args.nb, "ranks": args.ranks, "grid": f"{grid[0]}x{grid[1]}",
           "precision": args.precision, "workers": args.workers, "mpi": build.name,
           "binding": build.binding_label(args.ranks, bind=args.workers == 1),
           "cores": os.cpu_count(), "results": [], "complete": False}
    if place:
        doc["placement"] = {"source": place.source, "hosts": len(set(rank_hosts)),
                            "ppn": place.ppn, **grid_hosts(grid, rank_hosts)}
        if not doc["placement"]["panel_crosses_hosts"]:
            log(f"colltune cholesky: note: grid {doc['grid']} puts some grid column's ranks "
                "on one host (panel tiles do not all cross hosts); Q a multiple of --ppn "
                "avoids it", file=sys.stderr)
    for mode in modes:
        log(f"colltune cholesky: n={args.n} nb={args.nb} grid={doc['grid']} "
            f"dynbcast={mode}", file=sys.stderr)
        doc["results"].append(run_colltune(
            build, n=args.n, nb=args.nb, ranks=args.ranks, grid=grid, dynbcast=mode,
            precision=args.precision, workers=args.workers, iters=args.iters,
            warmup=args.warmup, check=not args.no_check, timeout=args.timeout,
            monitor_dir=monitor_dir, rank_hosts=rank_hosts))
    if args.starpu:
        sp = find_starpu()
        if place and not place.rsh:
            doc["starpu"] = ("not run across a hostfile's hosts (Debian's Open MPI would "
                             "need to be on every host)")
            log(f"colltune cholesky: StarPU skipped: {doc['starpu']}", file=sys.stderr)
        elif sp is None:
            doc["starpu"] = "not installed (apt-get install starpu-examples openmpi-bin)"
            log(f"colltune cholesky: StarPU skipped: {doc['starpu']}", file=sys.stderr)
        else:
            doc["starpu"] = sp
            if args.precision != "s":
                log("colltune cholesky: note: StarPU's example computes in single precision",
                    file=sys.stderr)
            for coop in (1, 0):
                log(f"StarPU mpi_cholesky: STARPU_MPI_COOP_SENDS={coop}", file=sys.stderr)
                doc["results"].append(run_starpu(
                    sp, n=args.n, nb=args.nb, ranks=args.ranks, grid=grid,
                    workers=args.workers, coop=coop, iters=args.iters, warmup=args.warmup,
                    timeout=args.timeout, place=place, netns=bed_netns(build)))
    first = doc["results"][0]
    doc.update(seconds=first["seconds"], gflops=first["gflops"], residual=first["residual"],
               library=describe_library(first.get("library", "")))
    doc["complete"] = True
    return doc


def bench_document(doc: dict, argv: list[str]) -> dict:
    """The run as a colltune-bench/1 document for the store (op 'cholesky')."""
    return {"schema": "colltune-bench/1", "op": "cholesky", "ranks": doc["ranks"],
            "binding": doc["binding"], "datatype": {"d": "double", "s": "float"}[doc["precision"]],
            "command": " ".join(["colltune", *argv]), "cholesky": doc,
            "mpi": doc.get("library"),
            "results": [{"algorithm": r["variant"], "size": doc["n"],
                         "median_us": r["seconds"] * 1e6, "min_us": r["seconds_min"] * 1e6,
                         "max_us": r["seconds_max"] * 1e6, "iterations": r["iterations"],
                         "gflops": r["gflops"], "residual": r["residual"]}
                        for r in doc["results"]]}


def text_table(doc: dict) -> str:
    lines = [f"Cholesky n={doc['n']} nb={doc['nb']} grid {doc['grid']} ({doc['ranks']} ranks, "
             f"{doc['workers']} worker(s) each, precision {doc['precision']}, {doc['mpi']})",
             f"{'variant':28} {'median s':>10} {'min s':>10} {'max s':>10} {'GFlop/s':>9} "
             f"{'residual':>10}"]
    for r in doc["results"]:
        res = "-" if r["residual"] is None else f"{r['residual']:.2e}"
        lines.append(f"{r['variant']:28} {r['seconds']:10.4f} {r['seconds_min']:10.4f} "
                     f"{r['seconds_max']:10.4f} {r['gflops']:9.3f} {res:>10}")
    for r in doc["results"]:
        if "hosts" in r or "link_tx_bytes" in r:
            lines.append(f"bytes sent per host, {r['variant']} (whole job, "
                         f"{r.get('factorisations', '?')} factorisation(s) and the check):")
            for h, b in (r.get("hosts") or {}).items():
                tx = (r.get("link_tx_bytes") or {}).get(h)
                lines.append(f"  {h:12} monitor {b['bytes']:>14,} (to other hosts "
                             f"{b['off_host_bytes']:,})"
                             + ("" if tx is None else f", eth0 transmitted {tx:,}"))
    return "\n".join(lines)


def cmd_cholesky(args: argparse.Namespace) -> int:
    need(args.n is not None, "--order is needed: the matrix order N")
    try:
        apply_host_arguments(args)
        build = MPIBuild.select(args.mpi)
        doc = measure(args, build, log=print)
    except (MPIError, CholeskyError) as e:
        print(f"colltune cholesky: {e}", file=sys.stderr)
        return 2 if isinstance(e, (MPIError, CholeskyUsage)) else 1
    threshold = 1e-12 if args.precision == "d" else 1e-4
    bad = [r for r in doc["results"] if r["residual"] is not None and
           not r["residual"] < threshold]
    if not args.no_record:
        from ..store.store import Store

        with Store.open() as store:
            run = store.begin_run("cholesky", sys.argv[1:], ranks=args.ranks,
                                  binding=doc["binding"])
            run.add_bench(bench_document(doc, sys.argv[1:]))
            run.finish("failed" if bad else "complete",
                       "residual above threshold" if bad else None)
            doc["run_id"] = run.id
    print(json.dumps(doc, indent=1) if args.json else text_table(doc))
    for r in bad:
        print(f"colltune cholesky: {r['variant']}: residual {r['residual']:.3e} is not below "
              f"{threshold:g}", file=sys.stderr)
    return 1 if bad else 0


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("cholesky", help="tiled Cholesky over colltune's task runtime, dynamic "
                                        "broadcasts on/off (and StarPU-MPI's example)")
    p.add_argument("--order", dest="n", type=int, default=None, metavar="N",
                   help="the matrix order N (needed)")
    hidden(p, "--n", dest="n", type=int)
    p.add_argument("--nb", type=int, required=True,
                   help="tile size (need not divide N; StarPU's example needs it to)")
    add_ranks(p, "MPI ranks (default: all cores; across hosts, hosts x --ppn)", type=int,
              default=None)
    p.add_argument("--grid", help="process grid PxQ with P*Q = ranks (default: most square; "
                                  "across hosts, the most square with Q a multiple of --ppn)")
    p.add_argument("--dynbcast", choices=("on", "off", "both", "plain"), default="on",
                   help="on: dynamic broadcasts; off: one MPI_Isend per destination (StarPU "
                        "over MPI); both: on then off; plain: the dyn layer with grouping off")
    p.add_argument("--precision", choices=("d", "s"), default="d",
                   help="d: double, s: single precision (default d)")
    p.add_argument("--workers", type=int, default=1, help="worker threads per rank")
    p.add_argument("--iters", type=int, default=3, help="measured factorisations")
    p.add_argument("--warmup", type=int, default=1, help="factorisations not counted")
    p.add_argument("--no-check", action="store_true", help="skip the residual")
    p.add_argument("--starpu", action="store_true",
                   help="also StarPU-MPI's mpi_cholesky, STARPU_MPI_COOP_SENDS=1 and 0")
    p.add_argument("--timeout", type=float, default=1800, help="seconds per MPI job")
    p.add_argument("--mpi", help="mpich, openmpi, intelmpi or system "
                                 "(default: $COLLTUNE_MPI or mpich)")
    p.add_argument("--json", action="store_true", help="print the result as JSON")
    p.add_argument("--no-record", action="store_true", help="do not record in the store")
    add_db(p)
    p.add_argument("--monitor", choices=("off", "peers"), default=None,
                   help="run under the drop-in's message monitor and report bytes sent per "
                        "host (default: peers across hosts, off on one machine)")
    p.add_argument("--monitor-dir", default=None,
                   help="where the monitor records go (default: a new temporary folder)")
    add_host_arguments(p)
    p.set_defaults(func=cmd_cholesky)


# -- the report's section ----------------------------------------------------------------------


def cholesky_section(data):
    """`colltune cholesky` runs: GFlop/s with dynamic broadcasts on and off, StarPU-MPI's
    example beside them when it ran; a figure of GFlop/s by N when several sizes were run."""
    from ..render.html import Section, table

    rows, series = [], {}
    for run in data.runs:
        for bench in run.get("benches", []):
            doc = bench.get("cholesky") if bench.get("op") == "cholesky" else None
            if not isinstance(doc, dict):
                continue
            by_mode = {r.get("dynbcast"): r for r in doc.get("results", [])
                       if r.get("runtime") == "colltune"}
            gain = None
            if "on" in by_mode and "off" in by_mode and by_mode["on"]["seconds"] > 0:
                gain = by_mode["off"]["seconds"] / by_mode["on"]["seconds"] - 1
            for r in doc.get("results", []):
                res = r.get("residual")
                rows.append([run["id"], doc["n"], doc["nb"], doc["grid"], doc["precision"],
                             doc.get("workers"), r["variant"],
                             f"{r['seconds']:.4f} ({r['seconds_min']:.4f}–"
                             f"{r['seconds_max']:.4f})", f"{r['gflops']:.2f}",
                             "-" if res is None else f"{res:.1e}",
                             f"{gain:+.1%}" if gain is not None and r.get("dynbcast") == "on"
                             else ""])
                key = (doc["ranks"], doc["nb"], doc["precision"], r["variant"])
                series.setdefault(key, []).append((doc["n"], r["gflops"]))
    if not rows:
        return None
    body = ["<p>Tiled Cholesky over colltune's task runtime (docs/CHOLESKY.md): seconds are "
            "the median (min–max) over the measured factorisations; GFlop/s = N³/3 over the "
            "median. <em>on/off gain</em>: time with dynamic broadcasts off over time with "
            "them on, minus one. StarPU rows: Debian's starpu-examples mpi_cholesky (single "
            "precision, Debian's Open MPI).</p>",
            table(["run", "N", "NB", "grid", "prec.", "workers", "variant",
                   "seconds median (min–max)", "GFlop/s", "residual", "on/off gain"], rows)]
    if any(len({n for n, _ in pts}) > 1 for pts in series.values()):
        from ..render.html import figure

        body.append(figure(data, _gflops_svg(series), "Cholesky GFlop/s by matrix order, "
                            "one line per variant (ranks, NB, precision)."))
    return Section("cholesky", "Tiled Cholesky: dynamic broadcasts on and off", "\n".join(body))


def _gflops_svg(series: dict) -> str:
    import matplotlib
    from matplotlib.figure import Figure

    from ..render.plot import PLOT_LOCK, RC, to_svg

    with PLOT_LOCK, matplotlib.rc_context(RC):
        fig = Figure(figsize=(7.5, 4))
        ax = fig.add_subplot()
        for i, ((ranks, nb, prec, variant), pts) in enumerate(sorted(series.items())):
            best: dict[int, float] = {}
            for n, g in pts:
                best[n] = max(g, best.get(n, 0.0))
            ns = sorted(best)
            ax.plot(ns, [best[n] for n in ns], "o-", color=f"C{i % 10}",
                    label=f"{variant} ({ranks} ranks, NB {nb}, {prec})")
        ax.set_xlabel("N (matrix order)")
        ax.set_ylabel("GFlop/s")
        ax.legend(fontsize=7)
        return to_svg(fig, "cholesky")
