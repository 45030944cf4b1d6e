"""One self-contained HTML report of one or more runs.

The report opens offline: CSS is inline and every plot is an inline SVG drawn by
matplotlib. It is assembled from section builders: `REPORT_SECTIONS` (about the
runs as a whole) and `OPERATION_PARTS` (one operation's measurements). Each
builder returns HTML (or a `Section`) or None when the runs hold nothing for it,
so a later capability adds a section by appending a builder. Every value taken
from the store goes through `esc()`.
"""

from __future__ import annotations

import datetime
import math
import re
import shlex
import tempfile
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import matplotlib
from matplotlib.colors import TwoSlopeNorm
from matplotlib.figure import Figure
from matplotlib.ticker import (
    FuncFormatter,
)

from .. import __version__
from ..app.report import app_section
from ..core.files import write_atomic
from ..core.units import fmt_size, fmt_us
from ..dyn.cholesky import cholesky_section
from ..dyn.report import cholesky_study_section
from ..model.report import validation_section
from ..monitor.report import monitor_section
from ..nbc.report import overlap_section
from ..p2p.report import p2p_section
from ..probe.report import machine_section
from ..render.html import (
    CSS,
    Markup,
    Section,
    command_line,
    definition_list,
    esc,
    fmt_duration,
    fmt_ratio,
    fmt_time,
    mpi_label,
    status_badge,
    table,
)
from ..render.plot import PLOT_LOCK, RC, legend_label, log_axis, size_axis, to_svg
from ..store.store import Store
from ..tune.report import tune_section
from ..tune.verify_report import verify_section
from .suite import suite_section
from .summary import summary_section

# The plotted latency: median over iterations of the slowest rank's time, the time the
# collective as a whole took; OSU-style averages are in the tables.
METRIC = "median_us"
METRIC_TEXT = "median over iterations of the slowest rank's time"

_LINESTYLES = ("-", "--", ":", "-.")
_NATIVE_COLORS = ("black", "dimgray", "darkgray", "silver")
# Benches that are not an operation's latencies: the report shows them in these sections.
SPECIAL_BENCHES = ("probe", "p2p", "validate-model", "overlap", "tune", "monitor", "cholesky",
                   "cholesky-study", "suite", "verify", "app")


@dataclass
class Curve:
    """One line of a plot: an algorithm (with its segment size) in one bench of one run."""

    run: dict
    bench: dict
    algorithm: str
    segsize: int
    results: dict[int, dict] = field(default_factory=dict)
    label: str = ""
    style: dict = field(default_factory=dict)

    @property
    def native(self) -> bool:
        return self.algorithm == "native"

    @property
    def name(self) -> str:
        """The algorithm and its segment size, without the run."""
        return self.algorithm + (f" seg {fmt_size(self.segsize)}" if self.segsize else "")

    @property
    def pairing_key(self) -> tuple[str, int]:
        return self.algorithm, self.segsize

    def latency(self, size: int) -> float | None:
        result = self.results.get(size)
        if result is None:
            return None
        value = result.get(METRIC)
        return result.get("avg_us") if value is None else value

    def series(self) -> tuple[list[int], list[float]]:
        points = [(s, v) for s in sorted(self.results) if (v := self.latency(s)) is not None]
        return [p[0] for p in points], [p[1] for p in points]


@dataclass
class OpGroup:
    """Everything measured for one operation at one rank count and datatype."""

    index: int
    op: str
    ranks: int | None
    datatype: str | None
    curves: list[Curve] = field(default_factory=list)

    @property
    def anchor(self) -> str:
        return f"op-{self.index}-{re.sub(r'[^A-Za-z0-9_-]', '-', self.op)}"

    @property
    def title(self) -> str:
        parts = [self.op]
        if self.ranks is not None:
            parts.append(f"{self.ranks} ranks")
        if self.datatype:
            parts.append(self.datatype)
        return " · ".join(parts)

    @property
    def sizes(self) -> list[int]:
        return sorted({s for c in self.curves for s in c.results})

    @property
    def sizeless(self) -> bool:
        """An operation without a message size (the barrier: one result per algorithm, at
        size 0), drawn as bars rather than against size."""
        return self.sizes == [0]

    @property
    def run_ids(self) -> list[int]:
        return list(dict.fromkeys(c.run["id"] for c in self.curves))

    def best_native(self, size: int) -> tuple[float, Curve] | None:
        found = [(v, c) for c in self.curves if c.native and (v := c.latency(size)) is not None]
        return min(found, key=lambda p: p[0]) if found else None

    def ratio(self, curve: Curve, size: int) -> float | None:
        """The speed-up of `curve` over the best native: native time / its time, higher
        is better (the one convention of the report, issue 39)."""
        best = self.best_native(size)
        value = curve.latency(size)
        if best is None or value is None or value <= 0:
            return None
        return best[0] / value


@dataclass
class ReportData:
    runs: list[dict]
    groups: list[OpGroup]
    store_path: str
    figures: int = 0

    @property
    def run_ids(self) -> list[int]:
        return [r["id"] for r in self.runs]

    def next_figure(self) -> int:
        self.figures += 1
        return self.figures


# -- entry points ------------------------------------------------------------------------


def write_report(store: Store, run_ids: list[int], out_path: str) -> str:
    """Write the report of `run_ids` to `out_path` atomically; returns `out_path`."""
    write_atomic(out_path, render_report(store, run_ids))
    return str(out_path)


def render_report(store: Store, run_ids: list[int], *, nav: str = "") -> str:
    """The report as an HTML string. `nav` is trusted HTML put above the title."""
    data = load_report_data(store, run_ids)
    # The answer first (issue 39): the summary, then the runs and the details.
    sections = [summary_section(data)]
    sections += [s for build in REPORT_SECTIONS if (s := build(data)) is not None]
    sections += [s for g in data.groups if (s := _operation_section(data, g)) is not None]
    if not data.groups:
        sections.append(Section("no-results", "Results",
                                "<p>These runs recorded no benchmark results.</p>"))
    return _page(data, sections, nav)


def load_report_data(store: Store, run_ids: list[int]) -> ReportData:
    ids = list(dict.fromkeys(int(i) for i in run_ids))
    if not ids:
        raise ValueError("a report needs at least one run")
    runs = [store.run(i, samples=False) for i in ids]
    groups: dict[tuple, OpGroup] = {}
    for run in runs:
        for bench in run["benches"]:
            if bench["op"] in SPECIAL_BENCHES:  # shown by their own sections
                continue
            key = (bench["op"], bench.get("ranks"), bench.get("datatype"))
            group = groups.setdefault(key, OpGroup(len(groups) + 1, *key))
            _add_curves(group, run, bench)
    for group in groups.values():
        _label_and_style(group)
    return ReportData(runs, list(groups.values()), str(store.path))


def _add_curves(group: OpGroup, run: dict, bench: dict) -> None:
    curves: dict[tuple[str, int], Curve] = {}
    for result in bench["results"]:
        key = (str(result["algorithm"]), int(result.get("segsize") or 0))
        if key not in curves:
            curves[key] = Curve(run, bench, *key)
            group.curves.append(curves[key])
        curves[key].results[int(result["size"])] = result


def _label_and_style(group: OpGroup) -> None:
    """Labels name the run (and bench) only where the plot mixes several; color follows
    the algorithm and line style the run, so one algorithm is comparable across runs."""
    run_order = group.run_ids
    benches_per_run = {rid: {c.bench["seq"] for c in group.curves if c.run["id"] == rid}
                       for rid in run_order}
    algorithms = list(dict.fromkeys(c.pairing_key for c in group.curves if not c.native))
    palette = matplotlib.colormaps["tab10" if len(algorithms) <= 10 else "tab20"]
    group.curves.sort(key=lambda c: (not c.native, algorithms.index(c.pairing_key)
                                     if not c.native else 0, run_order.index(c.run["id"])))
    for curve in group.curves:
        label = curve.name
        run_index = run_order.index(curve.run["id"])
        if len(run_order) > 1:
            label += f" · run {curve.run['id']} {mpi_label(curve.run.get('mpi'))}"
        if len(benches_per_run[curve.run["id"]]) > 1:
            label += f" #{curve.bench['seq']}"
        curve.label = label
        linestyle = _LINESTYLES[run_index % len(_LINESTYLES)]
        if curve.native:
            # The MPI library's own collective is the reference: thick, dark, round markers.
            color = _NATIVE_COLORS[run_index % len(_NATIVE_COLORS)]
            curve.style = {"color": color, "linestyle": linestyle, "linewidth": 2.6,
                           "marker": "o", "markersize": 4, "zorder": 3}
        else:
            color = palette(algorithms.index(curve.pairing_key) % palette.N)
            curve.style = {"color": color, "linestyle": linestyle, "linewidth": 1.3,
                           "marker": ".", "markersize": 5, "zorder": 2}


# -- report-wide sections -------------------------------------------------------------------


def _runs_section(data: ReportData) -> Section:
    headers = ["run", "verb", "status", "started", "duration", "MPI", "ranks", "binding",
               "host", "colltune", "source revision", "command"]
    rows = [[r["id"], r["verb"], status_badge(r), fmt_time(r["started_at"]),
             fmt_duration(r["duration_s"]), mpi_label(r.get("mpi")), r.get("ranks"),
             r.get("binding"), r["host"], r["colltune_version"], r.get("git_revision"),
             Markup(f"<code>{esc(command_line(r))}</code>")] for r in data.runs]
    return Section("runs", "Runs", table(headers, rows))


def _environment_section(data: ReportData) -> Section:
    parts = []
    machines: dict[str, list[dict]] = {}
    for run in data.runs:
        machines.setdefault(repr(sorted((run.get("machine") or {}).items())), []).append(run)
    for runs in machines.values():
        ids = ", ".join(str(r["id"]) for r in runs)
        parts.append(f"<h3>Machine of run{'s' if len(runs) > 1 else ''} {esc(ids)}</h3>")
        parts.append(_machine_html(runs[0].get("machine") or {}))
    for run in data.runs:
        parts.append(f"<h3>MPI of run {esc(run['id'])}</h3>")
        parts.append(_mpi_html(run))
    return Section("environment", "Machine and MPI", "\n".join(parts))


def _machine_html(machine: dict) -> str:
    memory = machine.get("memory_total_bytes")
    items = [("host", machine.get("hostname")), ("CPU", machine.get("cpu_model")),
             ("logical cores", machine.get("logical_cores")),
             ("memory", fmt_size(memory) if memory else None),
             ("OS", machine.get("os_release") or machine.get("os")),
             ("kernel", machine.get("kernel")), ("architecture", machine.get("arch"))]
    caches = machine.get("caches") or []
    if caches:
        items.append(("caches (cpu0)", "; ".join(
            f"L{c.get('level')} {c.get('type')} {c.get('size')} shared by CPUs "
            f"{c.get('shared_cpu_list')}" for c in caches)))
    return definition_list(items)


def _mpi_html(run: dict) -> str:
    mpi = run.get("mpi") or {}
    items = [("implementation", mpi.get("implementation")), ("version", mpi.get("version")),
             ("ranks", run.get("ranks")), ("binding", run.get("binding"))]
    text = definition_list(items)
    if mpi.get("library"):
        text += f"<pre class='library'>{esc(mpi['library'])}</pre>"
    others = {mpi_label(b.get("mpi")) for b in run["benches"] if b.get("mpi") not in (None, mpi)}
    if others:
        text += f"<p class='warn'>Some benches report another MPI: {esc(', '.join(others))}</p>"
    return text


REPORT_SECTIONS: list[Callable[[ReportData], Section | None]] = [
    _runs_section,
    _environment_section,
    machine_section,
    p2p_section,
    validation_section,
    overlap_section,
    tune_section,
    verify_section,
    monitor_section,
    cholesky_section,
    cholesky_study_section,
    suite_section,
    app_section,
]


# -- per-operation parts ----------------------------------------------------------------------


def _operation_section(data: ReportData, group: OpGroup) -> Section | None:
    parts = [p for build in OPERATION_PARTS if (p := build(data, group)) is not None]
    if not parts:
        return None
    return Section(group.anchor, group.title, _group_intro(group) + "\n".join(parts))


def failed_check(result: dict) -> bool:
    """Only a comparison that was made and differed is a failure ('not checked' is not)."""
    return result.get("check") == "FAILED"


def _group_intro(group: OpGroup) -> str:
    benches = {(c.run["id"], c.bench["seq"]): c for c in group.curves}
    lines = []
    for (run_id, _), curve in benches.items():
        b = curve.bench
        # 0 iterations / warm-up means ct_bench chose them per size (see the tables).
        iters = b.get("iterations") or "20 to 1000 (by size)"
        warmup = b.get("warmup") or "10%"
        lines.append(f"<li>run {esc(run_id)} ({esc(mpi_label(curve.run.get('mpi')))}): "
                     f"{esc(iters)} iterations after {esc(warmup)} "
                     f"warm-up, root {esc(b.get('root'))}, binding {esc(b.get('binding'))}</li>")
    text = f"<ul class='benches'>{''.join(lines)}</ul>"
    failed = [(c, s) for c in group.curves for s, r in c.results.items()
              if failed_check(r)]
    if failed:
        listed = ", ".join(c.label if group.sizeless else f"{c.label} at {fmt_size(s)}"
                           for c, s in failed[:10])
        more = f" and {len(failed) - 10} more" if len(failed) > 10 else ""
        mark = "hatched in the plot" if group.sizeless else "marked × in the latency plot"
        text += (f"<p class='warn'>{len(failed)} result(s) failed the correctness check "
                 f"({mark}): {esc(listed)}{esc(more)}</p>")
    if not any(c.native for c in group.curves):
        text += "<p>No native measurement: the ratio plots are left out.</p>"
    return text


def _latency_part(data: ReportData, group: OpGroup) -> str | None:
    if group.sizeless:
        return None

    def draw(ax):
        for curve in group.curves:
            ax.plot(*curve.series(), label=legend_label(curve.label), **curve.style)
        _mark_failed(ax, group)
        ax.set_yscale("log")
        log_axis(ax.yaxis)
        ax.set_ylabel("latency (µs)")

    svg = _plot(draw, group.sizes, f"{group.title}: latency against message size")
    headers = ["size"] + [c.label for c in group.curves]
    rows = [[fmt_size(s)] + [fmt_us(c.latency(s)) for c in group.curves] for s in group.sizes]
    caption = (f"{esc(group.title)}: latency ({METRIC_TEXT}) against message size per rank, "
               "log-log. Native (the MPI library's own collective) in thick dark lines.")
    return _figure(data, group, svg, caption, table(headers, rows))


def _ratio_part(data: ReportData, group: OpGroup) -> str | None:
    if group.sizeless or not any(c.native for c in group.curves):
        return None

    def draw(ax):
        for curve in group.curves:
            sizes = [s for s in sorted(curve.results) if group.ratio(curve, s) is not None]
            ax.plot(sizes, [group.ratio(curve, s) for s in sizes],
                    label=legend_label(curve.label), **curve.style)
        ax.axhline(1.0, color="black", linewidth=0.8)
        ax.set_yscale("log", base=2)
        ax.yaxis.set_major_formatter(FuncFormatter(lambda y, _: f"{y:g}"))
        ax.set_ylabel("speed-up: best native / latency (above 1: faster)")

    svg = _plot(draw, group.sizes, f"{group.title}: speed-up over the best native")
    headers = ["size", "best native (µs)"] + [c.label for c in group.curves] + ["fastest"]
    rows = [_ratio_row(group, s) for s in group.sizes]
    caption = (f"{esc(group.title)}: each algorithm's speed-up, the best native latency at "
               f"that size{_of_runs(group)} divided by the algorithm's (above 1: faster than "
               "the MPI library).")
    return _figure(data, group, svg, caption, table(headers, rows))


def _of_runs(group: OpGroup) -> str:
    ids = group.run_ids
    return f" of runs {', '.join(map(str, ids))}" if len(ids) > 1 else ""


def _ratio_row(group: OpGroup, size: int) -> list:
    best = group.best_native(size)
    ratios = [group.ratio(c, size) for c in group.curves]
    known = [(v, c) for c in group.curves if (v := c.latency(size)) is not None]
    fastest = min(known, key=lambda p: p[0])[1].label if known else None
    high = max((r for r in ratios if r is not None), default=None)
    cells = [Markup(f"<strong>{fmt_ratio(r)}</strong>") if r is not None and r == high
             else fmt_ratio(r) for r in ratios]
    return [fmt_size(size), fmt_us(best[0] if best else None), *cells, fastest]


def _heatmap_part(data: ReportData, group: OpGroup) -> str | None:
    if group.sizeless or not any(c.native for c in group.curves):
        return None
    sizes = group.sizes
    matrix = [[group.ratio(c, s) for s in sizes] for c in group.curves]
    svg = _heatmap_svg(group, sizes, matrix)
    headers = ["algorithm"] + [fmt_size(s) for s in sizes]
    rows = [[c.label] + [fmt_ratio(r) for r in row]
            for c, row in zip(group.curves, matrix, strict=True)]
    caption = (f"{esc(group.title)}: speed-up over the best native{_of_runs(group)} per "
               "algorithm and size (best native / latency; blue, above 1: faster than native; "
               "red: slower).")
    return _figure(data, group, svg, caption, table(headers, rows))


def _sizeless_part(data: ReportData, group: OpGroup) -> str | None:
    """The barrier: one latency per algorithm as horizontal bars, with the ratio to the best
    native in the table; a failed check is hatched."""
    if not group.sizeless:
        return None
    curves = group.curves
    values = [c.latency(0) for c in curves]
    with PLOT_LOCK, matplotlib.rc_context(RC):
        fig = Figure(figsize=(9, 0.32 * len(curves) + 1.4))
        ax = fig.add_subplot()
        rows = list(range(len(curves)))
        bars = ax.barh(rows, [v or 0.0 for v in values],
                       color=[c.style.get("color") for c in curves], height=0.7)
        for bar, curve in zip(bars, curves, strict=True):
            if any(failed_check(r) for r in curve.results.values()):
                bar.set_hatch("xx")
                bar.set_edgecolor("red")
        ax.set_yticks(rows, [c.label for c in curves])
        ax.invert_yaxis()
        ax.set_xlabel("latency (µs)")
        ax.grid(True, axis="x", alpha=0.3)
        svg = to_svg(fig, f"{group.title}: latency per algorithm")
    headers = ["algorithm", "latency (µs)", "speed-up over best native", "check"]
    table_rows = [[c.label, fmt_us(v), fmt_ratio(group.ratio(c, 0)),
                   c.results[0].get("check")] for c, v in zip(curves, values, strict=True)]
    caption = (f"{esc(group.title)}: latency ({METRIC_TEXT}) per algorithm; the operation has "
               "no message size. Native (the MPI library's own) in dark gray or black.")
    return _figure(data, group, svg, caption, table(headers, table_rows))


def _comparison_part(data: ReportData, group: OpGroup) -> str | None:
    """Two runs side by side: run B's latency over run A's for each algorithm both measured."""
    if len(data.runs) != 2 or len(group.run_ids) != 2:
        return None
    a_id, b_id = data.run_ids
    a, b = _first_bench_curves(group, a_id), _first_bench_curves(group, b_id)
    pairs = [(a[k], b[k]) for k in a if k in b]
    if not pairs:
        return None
    summary_rows = [_comparison_row(group, s, a_id, b_id) for s in group.sizes]
    summary = table(["size", f"best native, run {a_id} (µs)", f"best native, run {b_id} (µs)",
                     "speed-up of B (A/B)", f"fastest in run {a_id}", f"fastest in run {b_id}",
                     "speed-up of B (A/B)"], summary_rows)
    matrix_rows = [[fmt_size(s)] + [_ratio_cell(cb.latency(s), ca.latency(s))
                                    for ca, cb in pairs] for s in group.sizes]
    matrix = table(["size"] + [ca.name for ca, _ in pairs], matrix_rows)
    return (f"<h3>Run {esc(b_id)} (B) against run {esc(a_id)} (A)</h3>"
            f"<p>Speed-up of run B over run A: run A's latency divided by run B's (above 1: "
            f"run B faster). The overlaid curves are in the latency figure above.</p>{summary}"
            f"<h4>Per algorithm, speed-up of B (A/B)</h4>{matrix}")


def _first_bench_curves(group: OpGroup, run_id: int) -> dict[tuple[str, int], Curve]:
    curves = [c for c in group.curves if c.run["id"] == run_id]
    first = min(c.bench["seq"] for c in curves)
    return {c.pairing_key: c for c in curves if c.bench["seq"] == first}


def _comparison_row(group: OpGroup, size: int, a_id: int, b_id: int) -> list:
    def best(run_id, native_only):
        found = [(v, c) for c in group.curves if c.run["id"] == run_id
                 and (c.native or not native_only) and (v := c.latency(size)) is not None]
        return min(found, key=lambda p: p[0]) if found else (None, None)

    (na, _), (nb, _) = best(a_id, True), best(b_id, True)
    (fa, ca), (fb, cb) = best(a_id, False), best(b_id, False)
    return [fmt_size(size), fmt_us(na), fmt_us(nb), _ratio_cell(nb, na),
            f"{ca.name} {fmt_us(fa)}" if ca else "—",
            f"{cb.name} {fmt_us(fb)}" if cb else "—",
            _ratio_cell(fb, fa)]


def _ratio_cell(b: float | None, a: float | None) -> Markup:
    if a is None or b is None or a <= 0:
        return Markup("—")
    if b <= 0:
        return Markup("—")
    ratio = a / b  # the speed-up of B: higher is better
    css = "faster" if ratio > 1.05 else "slower" if ratio < 0.95 else "same"
    return Markup(f"<span class='{css}'>{esc(fmt_ratio(ratio))}</span>")


def _results_part(data: ReportData, group: OpGroup) -> str:
    headers = ["algorithm", "size", "count", "iterations", "avg (µs)", "min (µs)", "max (µs)",
               "median (µs)", "check"]
    rows = [[c.label, fmt_size(s), r.get("count"), r.get("iterations"), fmt_us(r.get("avg_us")),
             fmt_us(r.get("min_us")), fmt_us(r.get("max_us")), fmt_us(r.get("median_us")),
             r.get("check")] for c in group.curves for s, r in sorted(c.results.items())]
    return (f"<details><summary>All results of {esc(group.title)} (avg, min and max over "
            f"ranks of the per-rank mean; median of the slowest rank)</summary>"
            f"{table(headers, rows)}</details>")


OPERATION_PARTS: list[Callable[[ReportData, OpGroup], str | None]] = [
    _latency_part,
    _ratio_part,
    _heatmap_part,
    _sizeless_part,
    _comparison_part,
    _results_part,
]


# -- figures ------------------------------------------------------------------------------------


def _figure(data: ReportData, group: OpGroup, svg: str, caption: str, data_table: str) -> str:
    number = data.next_figure()
    return (f"<figure id='fig-{number}'>{svg}<figcaption>Figure {number}. {caption}"
            f"</figcaption></figure>"
            f"<details><summary>Table behind figure {number}</summary>{data_table}</details>"
            f"<div class='repro'><span>Reproduce figure {number}:</span>"
            f"<pre>{esc(_reproduction(data, group))}</pre></div>")


def _reproduction(data: ReportData, group: OpGroup) -> str:
    lines = []
    for run_id in group.run_ids:
        curve = next(c for c in group.curves if c.run["id"] == run_id)
        lines.append(f"# measured by run {run_id}:")
        lines.append(command_line(curve.run))
        commands = dict.fromkeys(c.bench.get("command") for c in group.curves
                                 if c.run["id"] == run_id and c.bench.get("command"))
        if commands:
            lines.append("# which ran:")
            lines.extend(_without_temporary_files(c) for c in commands)
    lines.append("# then drew this figure with:")
    lines.append(f"colltune report {' '.join(map(str, data.run_ids))} -o report.html")
    return "\n".join(lines)


def _without_temporary_files(command: str) -> str:
    """ct_bench's command as recorded names the temporary JSON Lines file that `colltune
    bench` read and removed: a reproduction cannot cite it. The file becomes a name in the
    current directory, which the command then writes."""
    try:
        words = shlex.split(command)
    except ValueError:
        return command
    tmp = tempfile.gettempdir().rstrip("/") + "/"
    out = [Path(w).name if w.startswith(tmp) and not Path(w).exists() else w for w in words]
    return shlex.join(out)


def _plot(draw: Callable, sizes: list[int], label: str) -> str:
    """A latency-like figure against message size (log2 x axis), as inline SVG."""
    with PLOT_LOCK, matplotlib.rc_context(RC):
        fig = Figure(figsize=(9, 4.8))
        ax = fig.add_subplot()
        ax.set_xscale("log", base=2)
        draw(ax)
        size_axis(ax.xaxis, sizes)
        ax.set_xlabel("message size per rank")
        ax.grid(True, which="major", alpha=0.3)
        ax.legend(loc="upper left", bbox_to_anchor=(1.01, 1.0), fontsize="small", frameon=False)
        return to_svg(fig, label)


def _heatmap_svg(group: OpGroup, sizes: list[int], matrix: list[list[float | None]]) -> str:
    logs = [[math.log2(r) if r else math.nan for r in row] for row in matrix]
    finite = [v for row in logs for v in row if not math.isnan(v)]
    # Centred on ratio 1 so blue always means faster than native and red slower.
    span = max([0.1] + [abs(v) for v in finite])
    with PLOT_LOCK, matplotlib.rc_context(RC):
        fig = Figure(figsize=(max(6.0, 0.6 * len(sizes) + 3), 0.32 * len(group.curves) + 1.6))
        ax = fig.add_subplot()
        # Speed-ups: above 1 (log > 0) is faster, blue.
        mesh = ax.pcolormesh(logs, cmap="RdBu", norm=TwoSlopeNorm(0.0, -span, span),
                             edgecolors="white", linewidth=0.5)
        ax.set_xticks([i + 0.5 for i in range(len(sizes))], [fmt_size(s) for s in sizes],
                      rotation=45, ha="right")
        ax.set_yticks([i + 0.5 for i in range(len(group.curves))],
                      [c.label for c in group.curves])
        ax.invert_yaxis()
        ax.set_xlabel("message size per rank")
        if len(sizes) * len(group.curves) <= 400:
            _annotate_cells(ax, matrix, logs, span)
        bar = fig.colorbar(mesh, ax=ax, pad=0.02)
        bar.set_label("speed-up: best native / latency")
        bar.formatter = FuncFormatter(lambda v, _: f"{2 ** v:.3g}")
        bar.update_ticks()
        return to_svg(fig, f"{group.title}: heatmap of the speed-up over the best native")


def _annotate_cells(ax, matrix, logs, span) -> None:
    for y, row in enumerate(matrix):
        for x, ratio in enumerate(row):
            if ratio is None:
                ax.text(x + 0.5, y + 0.5, "—", ha="center", va="center", color="gray")
                continue
            dark = abs(logs[y][x]) > 0.6 * span
            ax.text(x + 0.5, y + 0.5, f"{ratio:.2f}", ha="center", va="center",
                    fontsize=7, color="white" if dark else "black")


def _mark_failed(ax, group: OpGroup) -> None:
    points = [(s, v) for c in group.curves for s, r in c.results.items()
              if failed_check(r) and (v := c.latency(s)) is not None]
    if points:
        ax.scatter(*zip(*points, strict=True), marker="x", s=60, color="red", zorder=4,
                   label="failed check")


# -- HTML helpers ---------------------------------------------------------------------------------


def _page(data: ReportData, sections: list[Section], nav: str) -> str:
    ids = ", ".join(str(i) for i in data.run_ids)
    toc = "".join(f"<li><a href='#{esc(s.anchor)}'>{esc(s.title)}</a></li>" for s in sections)
    body = "\n".join(f"<section id='{esc(s.anchor)}'><h2>{esc(s.title)}</h2>{s.body}</section>"
                     for s in sections)
    generated = fmt_time(datetime.datetime.now().timestamp())
    return f"""<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>colltune report: run{'s' if len(data.runs) > 1 else ''} {esc(ids)}</title>
<style>{CSS}</style></head>
<body>{nav}
<header><h1>colltune report: run{'s' if len(data.runs) > 1 else ''} {esc(ids)}</h1>
<p class="meta">Generated {esc(generated)} by colltune {esc(__version__)} from
<code>{esc(data.store_path)}</code>. Latency is the {esc(METRIC_TEXT)}. Ratios are
speed-ups (native / colltune, higher is better).</p>
<nav class="toc"><ul>{toc}</ul></nav></header>
<main>{body}</main>
</body></html>
"""


# -- formatting ------------------------------------------------------------------------------------


