"""The report's first section (issue 39): its answer before the details. Per operation:
where colltune's best algorithm is faster than native, by how much with the 95% interval,
where it is slower or no different within noise; the table a user should use and the one
line that uses it; the warnings (load above the cores, noisy results). One ratio
convention, said in a legend: the speed-up, native time / colltune time, higher is better.
Every value goes through esc()."""

from __future__ import annotations

import shlex

from ..bench.bench import bench_warnings, size_versus
from ..core.stats import FASTER, SLOWER, TIE, TIE_TEXT
from ..core.units import fmt_size
from ..render.html import Markup, Section, esc, mpi_label, table

LEGEND = ("Every ratio in this report is a <strong>speed-up = native time / colltune time"
          "</strong>: higher is better, 1 means no difference. [lo, hi] is its 95% interval "
          "(bootstrap over the interleaved rounds' medians); colltune is called faster or "
          "slower only where the interval excludes 1, otherwise the sizes count as "
          f"“{TIE_TEXT}”.")

# Benches of the operations' latencies; the others (probe, tune, verify, ...) are not
# candidates against native.
_NOT_LATENCY = ("probe", "p2p", "validate-model", "overlap", "tune", "monitor", "cholesky",
                "cholesky-study", "suite", "verify")


def summary_section(data) -> Section:
    warnings: list[str] = []
    rows = []
    for run in data.runs:
        for bench in run.get("benches", []):
            if bench.get("op") in _NOT_LATENCY or not bench.get("results"):
                continue
            warnings += [f"run {run['id']}, {bench['op']}: {w.removeprefix('warning: ')}"
                         for w in bench_warnings(bench, limit=3)]
            rows.append(_operation_row(run, bench))
    parts = [f"<p class='legend'>{LEGEND}</p>"]
    if warnings:
        parts.append("<div class='warn'><strong>Warnings</strong><ul>"
                     + "".join(f"<li>{esc(w)}</li>" for w in warnings) + "</ul></div>")
    if rows:
        parts.append(table(["operation", "run", "colltune faster at (speed-up [95%])",
                            "slower at (speed-up [95%])", TIE_TEXT + " at (speed-up [95%])",
                            "best speed-up"], rows))
    else:
        parts.append("<p>No operation was measured against native in these runs.</p>")
    parts.append(_use_line(data))
    return Section("summary", "Summary: where colltune is faster", "\n".join(parts))


def _operation_row(run: dict, bench: dict) -> list:
    versus = [(s, v) for s, v in size_versus(bench) if v.speedup is not None]
    sized = bench.get("op") != "barrier"

    def where(verdict: str, with_speedup: bool) -> Markup | str:
        hits = [(s, v) for s, v in versus if v.verdict == verdict]
        if not hits:
            return "—"
        if not sized:
            return Markup(f"{esc(hits[0][1].best)} {esc(hits[0][1].speedup_text())}"
                          if with_speedup else "yes")
        if not with_speedup:
            return ", ".join(fmt_size(s) for s, _ in hits)
        return Markup("<br>".join(f"{esc(fmt_size(s))}: {esc(v.best)} "
                                  f"{esc(v.speedup_text())}" for s, v in hits))

    if versus and all(v.verdict is None for _, v in versus):
        # Results stored without rounds (or samples): no interval, so no verdict either.
        title = f"{bench['op']} · {bench.get('ranks')} ranks · {mpi_label(bench.get('mpi'))}"
        points = max(versus, key=lambda p: p[1].speedup.value)
        return [title, run["id"], Markup("<em>no intervals: measured before interleaved "
                                         "rounds</em>"), "—", "—",
                f"{points[1].speedup.value:.2f} ({points[1].best}, point estimate)"]
    faster = [(s, v) for s, v in versus if v.verdict == FASTER]
    best = max(faster, key=lambda p: p[1].speedup.value, default=None)
    best_text = (f"{best[1].speedup_text()} ({best[1].best}"
                 + (f" at {fmt_size(best[0])})" if sized else ")") if best else "—")
    title = f"{bench['op']} · {bench.get('ranks')} ranks · {mpi_label(bench.get('mpi'))}"
    return [title, run["id"], where(FASTER, True), where(SLOWER, True), where(TIE, True),
            best_text]


def _use_line(data) -> str:
    """The table a user should use: the last verified one in these runs (verify writes a
    corrected table beside the tuned one), else the last tuned one; and the one line that
    runs a program with it through the drop-in library."""
    found = None
    for run in data.runs:
        for bench in run.get("benches", []):
            rec = bench.get("verify") if bench.get("op") == "verify" else None
            if isinstance(rec, dict) and (rec.get("output") or rec.get("table")):
                found = (rec.get("output") or rec.get("table"), run, "verified")
            doc = bench.get("tune") if bench.get("op") == "tune" else None
            if isinstance(doc, dict) and doc.get("output") and (found is None
                                                                  or found[2] != "verified"):
                found = (doc["output"], run, "tuned, not verified")
    if found is None:
        return ("<p>No tuning table in these runs: <code>colltune tune</code> writes one and "
                "<code>colltune verify</code> checks it through the drop-in.</p>")
    path, run, how = found
    mpi = (run.get("mpi") or {}).get("implementation", "")
    flavor = {"MPICH": "mpich", "Open MPI": "openmpi"}.get(mpi)
    preload = "$(colltune preload" + (f" --mpi {flavor}" if flavor else "") + ")"
    ranks = run.get("ranks") or 4
    line = (f"LD_PRELOAD={preload} COLLTUNE_TABLE={shlex.quote(str(path))} "
            f"mpiexec -n {ranks} ./your_program")
    return (f"<p>The table to use ({esc(how)}, run {esc(run['id'])}): "
            f"<code>{esc(path)}</code>. The one line that uses it:</p>"
            f"<pre class='use'>{esc(line)}</pre>")
