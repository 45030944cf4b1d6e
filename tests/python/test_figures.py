"""Every figure of the report (and so of the dashboard, which shows the same pages): tick
labels are plain text, never matplotlib's mathtext such as `$\\mathdefault{10^{3}}$` (the
report turns mathtext off so that stored names print as they are), and no two tick labels of
an axis overlap."""

from __future__ import annotations

import copy
import itertools
import json
from pathlib import Path

import pytest
from colltune.p2p.p2p import p2p_bench
from colltune.render import plot
from colltune.report import report
from colltune.store.store import Store
from matplotlib.backends.backend_agg import FigureCanvasAgg

FIXTURES = Path(__file__).parent / "fixtures"


def p2p_doc() -> dict:
    """The synthetic point-to-point document with the 48 sizes of a quick measurement (1 B to
    16 MiB) and costs that span several decades, as a real one has."""
    doc = json.loads((FIXTURES / "p2p_synthetic.json").read_text())
    template = doc["layers"][0]["points"][0]
    sizes = sorted({int(2 ** (i / 2)) for i in range(49)})
    points = []
    for s in sizes:
        p = copy.deepcopy(template)
        p.update(size_bytes=s, os_us=0.3 + s / 4e3, or_us=0.2 + s / 5e3, g_us=0.5 + s / 3e3,
                 oneway_us=1.0 + s / 2e3, mode="rendezvous" if s >= 65536 else "eager")
        points.append(p)
    doc["layers"][0]["points"] = points
    doc["layers"][0]["latency_us"] = 1.0
    return doc


def _draws_something(line) -> bool:
    """A legend entry's line shows on the plot: two finite points, or one with a marker."""
    import math

    xs, ys = line.get_xdata(), line.get_ydata()
    n = sum(1 for x, y in zip(xs, ys, strict=True)
            if math.isfinite(float(x)) and math.isfinite(float(y)))
    marker = line.get_marker()
    return n >= 2 or (n == 1 and marker not in (None, "None", "", " "))


@pytest.fixture(scope="module")
def figures(tmp_path_factory, fixture_doc, record) -> list[dict]:
    """Every figure of a report of a run that holds every kind of section `colltune run`
    writes (probe, p2p, each operation's benches, tune, overlap, suite), drawn and read
    back: per figure, its label and per axis the tick labels' texts and whether any two of
    them overlap."""
    stages = json.loads((FIXTURES / "run_stages.json").read_text())["benches"]
    benches = [stages[0], p2p_bench(p2p_doc(), "colltune p2p --quick"),
               fixture_doc("bcast_mpich_16.json"), fixture_doc("allreduce_mpich_16.json"),
               *stages[1:]]
    seen: list[dict] = []
    draw_svg = plot.to_svg

    def reading_svg(fig, label):
        svg = draw_svg(fig, label)
        FigureCanvasAgg(fig)
        fig.canvas.draw()
        renderer = fig.canvas.get_renderer()
        axes = {}
        for i, ax in enumerate(fig.axes):
            for name, axis in (("x", ax.xaxis), ("y", ax.yaxis)):
                labels = [t for t in axis.get_ticklabels(which="both")
                          if t.get_visible() and t.get_text()]
                boxes = [t.get_window_extent(renderer) for t in labels]
                flat = all(t.get_rotation() == 0 for t in labels)
                pairs = itertools.combinations(zip(labels, boxes, strict=True), 2)
                overlap = [(a.get_text(), b.get_text()) for (a, ba), (b, bb) in pairs
                           if flat and ba.overlaps(bb)
                           and min(ba.x1, bb.x1) - max(ba.x0, bb.x0) > 1
                           and min(ba.y1, bb.y1) - max(ba.y0, bb.y0) > 1]
                axes[f"{i}{name}"] = {"texts": [t.get_text() for t in labels],
                                      "overlap": overlap}
        empty = [line.get_label() for ax in fig.axes for line in ax.get_lines()
                 if not line.get_label().startswith("_") and not _draws_something(line)]
        seen.append({"label": label, "axes": axes, "svg": svg, "empty": empty,
                     "xticks": [[t.get_text() for t in ax.xaxis.get_ticklabels()
                                 if t.get_visible() and t.get_text()] for ax in fig.axes]})
        return svg

    mp = pytest.MonkeyPatch()
    # Every figure goes through render.plot.to_svg: the sections look it up when they draw,
    # the report's own figures through the name it imported.
    mp.setattr(plot, "to_svg", reading_svg)
    mp.setattr(report, "to_svg", reading_svg)
    try:
        with Store.open(tmp_path_factory.mktemp("figures") / "ct.db") as store:
            run_id = record(store, benches, argv=["colltune", "run"])
            html = report.render_report(store, [run_id])
    finally:
        mp.undo()
    assert html.count("<svg") == len(seen)
    return seen


def test_every_kind_of_figure_is_drawn(figures):
    labels = " | ".join(f["label"] for f in figures)
    for part in ("cache traversal curve", "memory bandwidth scaling", "latency matrix",
                 "point-to-point bandwidth per layer", "point-to-point costs", "overlap study",
                 "latency against message size", "speed-up over the best native", "heatmap"):
        assert part in labels, labels


def test_tick_labels_are_plain_text(figures):
    for f in figures:
        for name, axis in f["axes"].items():
            bad = [t for t in axis["texts"] if "mathdefault" in t or "$" in t]
            assert not bad, (f["label"], name, bad)
        assert "mathdefault" not in f["svg"], f["label"]


def test_log_axes_have_numbers(figures):
    """A log axis keeps labels (the fix must not leave an axis bare)."""
    for f in figures:
        if f["label"] in ("point-to-point costs", "cache traversal curve",
                          "point-to-point bandwidth per layer"):
            assert len(f["axes"]["0x"]["texts"]) >= 3, f
            assert f["axes"]["0y"]["texts"], f


def test_no_two_tick_labels_overlap(figures):
    for f in figures:
        for name, axis in f["axes"].items():
            assert not axis["overlap"], (f["label"], name, axis["overlap"])


def test_no_legend_entry_without_data(figures):
    """Issue 39: the overlap figure listed a "model" whose dashed line through one point
    drew nothing; every labelled series must show."""
    for f in figures:
        assert not f["empty"], (f["label"], f["empty"])


def test_counts_have_integer_ticks(figures):
    """Issue 39: core counts (memory scaling) and rank counts (overlap) were labelled 1.5,
    1.90, 2.10; their axes carry whole numbers only."""
    checked = 0
    for f in figures:
        if f["label"] in ("memory bandwidth scaling", "overlap study"):
            for text in f["xticks"][0]:
                assert float(text.replace("\u2212", "-")).is_integer(), (f["label"], text)
            checked += 1
    assert checked == 2


def test_point_to_point_sizes_between_powers_of_two_do_not_collide():
    """Issue 39: fig. 5 (point-to-point costs) labelled every measured size, and a
    measurement at half-octave sizes (45.25 KiB, 1.414 MiB) ran its labels together."""
    import math

    from colltune.p2p import report as p2p_report
    from matplotlib.backends.backend_agg import FigureCanvasAgg

    sizes = sorted({max(1, round(2 ** (k / 2))) for k in range(0, 49)})  # 1 B .. 16 MiB
    points = [{"size_bytes": s, "os_us": 1 + s / 1e4, "or_us": 1 + s / 2e4,
               "g_us": 0.5 + s / 1e4, "oneway_us": 2 + s / 5e3,
               "mode": "eager" if s < 65536 else "rendezvous"} for s in sizes]
    drawn = []
    mp = pytest.MonkeyPatch()
    original = plot.to_svg

    def spy(fig, label):
        FigureCanvasAgg(fig)
        fig.canvas.draw()
        renderer = fig.canvas.get_renderer()
        labels = [t for t in fig.axes[0].xaxis.get_ticklabels()
                  if t.get_visible() and t.get_text()]
        boxes = [t.get_window_extent(renderer) for t in labels]
        pairs = itertools.combinations(zip(labels, boxes, strict=True), 2)
        drawn.append(([t.get_text() for t in labels],
                      [(a.get_text(), b.get_text()) for (a, ba), (b, bb) in pairs
                       if ba.overlaps(bb)]))
        return original(fig, label)

    mp.setattr(plot, "to_svg", spy)
    try:
        p2p_report._p2p_svg(points)
    finally:
        mp.undo()
    (texts, overlap), = drawn
    assert overlap == [], texts
    assert len(texts) >= 4 and not any("." in t for t in texts), texts
    assert math.isclose(len(texts), 7, abs_tol=2)
