"""The report's figures, the one plotting API every report section draws with: the style
(RC) under PLOT_LOCK, axes labelled in plain numbers and sizes, and the figure as inline SVG.

    with PLOT_LOCK, matplotlib.rc_context(RC):
        fig = Figure(...); ...; return to_svg(fig, "what the figure shows")
"""

from __future__ import annotations

import io
import math
import threading

from matplotlib.figure import Figure
from matplotlib.ticker import (
    FixedLocator,
    FuncFormatter,
    LogFormatter,
    LogFormatterMathtext,
    NullLocator,
)

from ..core.units import fmt_size
from .html import esc

# Plain text for every label (a '$' in a value must not start mathtext), text kept as
# text in the SVG (smaller, searchable), and ids that depend only on content.
RC = {"svg.fonttype": "none", "svg.hashsalt": "colltune", "text.parse_math": False,
       "font.size": 9, "axes.titlesize": 10}


SVG_METADATA = {"Creator": None, "Date": None, "Format": None, "Type": None}


# rcParams are global and matplotlib is not thread-safe; the dashboard draws from threads.
PLOT_LOCK = threading.Lock()


def size_axis(axis, sizes: list[int]) -> None:
    # The measured sizes that are powers of two (short labels: 1 KiB, not 1.414 KiB, whose
    # long labels collided on the point-to-point figure's half-decade sizes, issue 39),
    # else every measured size, thinned to about eight labels so they never overlap.
    pow2 = [s for s in sizes if s > 0 and s & (s - 1) == 0]
    ticks = pow2 if len(pow2) >= 2 else sizes
    step = max(1, math.ceil(len(ticks) / 8))
    axis.set_major_locator(FixedLocator(ticks[::step] or [1]))
    axis.set_minor_locator(NullLocator())
    axis.set_major_formatter(FuncFormatter(lambda x, _: fmt_size(x)))


def log_axis(axis) -> None:
    """Plain numbers (0.1, 1, 10, 200) on a log axis set with set_xscale/set_yscale("log"):
    matplotlib's own log labels are mathtext, which RC turns off, so they would read
    `$\\mathdefault{10^{3}}$`. Minor ticks are labelled too when the axis spans little more
    than a decade, so that a short axis is never left without numbers."""
    axis.set_major_formatter(LogFormatter(labelOnlyBase=False))
    axis.set_minor_formatter(LogFormatter(labelOnlyBase=False, minor_thresholds=(1, 0.4)))


def plain_tick_labels(fig: Figure) -> None:
    """Whatever log axis a figure still has with matplotlib's mathtext labels gets plain ones
    of the same kind (the same ticks labelled), so no figure can show `\\mathdefault`."""
    for ax in fig.axes:
        for axis in (ax.xaxis, ax.yaxis):
            for get, put in ((axis.get_major_formatter, axis.set_major_formatter),
                             (axis.get_minor_formatter, axis.set_minor_formatter)):
                f = get()
                if isinstance(f, LogFormatterMathtext):
                    put(LogFormatter(base=getattr(f, "_base", 10.0),
                                     labelOnlyBase=f.labelOnlyBase,
                                     minor_thresholds=f.minor_thresholds))


def legend_label(label: str) -> str:
    # matplotlib hides legend entries whose label starts with "_".
    return " " + label if label.startswith("_") else label


def to_svg(fig: Figure, label: str) -> str:
    plain_tick_labels(fig)
    buf = io.StringIO()
    fig.savefig(buf, format="svg", bbox_inches="tight", metadata=SVG_METADATA)
    text = buf.getvalue()
    text = text[text.index("<svg"):]
    return text.replace("<svg ", f'<svg role="img" aria-label="{esc(label)}" ', 1)
