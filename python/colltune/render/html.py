"""The report's HTML, the one API every report section writes with (no plotting here, so
the store's command-line listing needs no matplotlib): escaping, sections, tables, figures
and the formats of times, durations, command lines and MPI names."""

from __future__ import annotations

import datetime
import html
import re
import shlex
from dataclasses import dataclass


class Markup(str):
    """HTML that is already safe: `esc()` passes it through unchanged."""


def esc(value) -> str:
    if isinstance(value, Markup):
        return value
    return html.escape("" if value is None else str(value), quote=True)


@dataclass
class Section:
    anchor: str
    title: str
    body: str


def table(headers: list, rows: list[list]) -> str:
    head = "".join(f"<th>{esc(h)}</th>" for h in headers)
    body = "".join("<tr>" + "".join(_cell(v) for v in row) + "</tr>" for row in rows)
    return (f"<div class='table'><table><thead><tr>{head}</tr></thead>"
            f"<tbody>{body}</tbody></table></div>")


def _cell(value) -> str:
    numeric = isinstance(value, int | float) or (
        isinstance(value, str) and not isinstance(value, Markup)
        and re.fullmatch(r"[\d.,]+( [KMG]i?B| B)?", value) is not None)
    return f"<td class='num'>{esc(value)}</td>" if numeric else f"<td>{esc(value)}</td>"


def definition_list(items: list[tuple[str, object]]) -> str:
    rows = "".join(f"<dt>{esc(k)}</dt><dd>{esc(v)}</dd>" for k, v in items if v is not None)
    return f"<dl>{rows}</dl>"


def status_badge(run: dict) -> Markup:
    status = run["status"]
    text = f"<span class='status {esc(status)}'>{esc(status)}</span>"
    if run.get("reason"):
        text += f"<br><small>{esc(run['reason'])}</small>"
    return Markup(text)


CSS = """
body { font: 14px/1.45 system-ui, sans-serif; margin: 0 auto; max-width: 1200px;
       padding: 0 1.5em 3em; color: #1b1b1b; }
h1 { font-size: 1.6em; margin-top: 1em; } h2 { border-bottom: 1px solid #ccc; margin-top: 2em; }
.meta { color: #555; } code, pre { font: 12.5px/1.4 ui-monospace, monospace; }
pre { background: #f5f5f5; padding: .6em .8em; overflow-x: auto; white-space: pre-wrap;
      word-break: break-all; }
.toc ul { display: flex; flex-wrap: wrap; gap: .3em 1.2em; padding: 0; list-style: none; }
figure { margin: 1.5em 0 .5em; } figure svg { max-width: 100%; height: auto; }
figcaption { color: #333; font-size: .95em; }
.table { overflow-x: auto; }
table { border-collapse: collapse; margin: .5em 0; font-size: 12.5px; }
th, td { border: 1px solid #ddd; padding: .2em .5em; text-align: left; vertical-align: top; }
th { background: #f0f0f0; position: sticky; top: 0; } td.num { text-align: right; }
tbody tr:nth-child(even) { background: #fafafa; }
details { margin: .4em 0; } summary { cursor: pointer; color: #0b5394; }
.repro span { font-size: .9em; color: #555; } .repro pre { margin-top: .2em; }
dl { display: grid; grid-template-columns: max-content auto; gap: .1em 1em; }
dt { font-weight: 600; } dd { margin: 0; }
.warn { background: #fff4e5; border-left: 4px solid #f0a020; padding: .4em .8em; }
.status { padding: 0 .4em; border-radius: 3px; background: #eee; }
.status.complete { background: #dff0d8; } .status.running { background: #d9edf7; }
.status.failed, .status.incomplete { background: #f2dede; }
.status.interrupted { background: #fcf8e3; }
.faster { color: #1a5fb4; font-weight: 600; } .slower { color: #c01c28; font-weight: 600; }
"""


def fmt_ratio(value: float | None) -> str:
    return "—" if value is None else f"{value:.2f}"


def fmt_time(timestamp: float | None) -> str:
    if timestamp is None:
        return "—"
    return datetime.datetime.fromtimestamp(timestamp).strftime("%Y-%m-%d %H:%M:%S")


def fmt_duration(seconds: float | None) -> str:
    if seconds is None:
        return "—"
    if seconds < 60:
        return f"{seconds:.1f} s"
    if seconds < 3600:
        return f"{int(seconds // 60)} min {int(seconds % 60)} s"
    return f"{int(seconds // 3600)} h {int(seconds % 3600 // 60)} min"


def fmt_argv(argv) -> str:
    return shlex.join(str(a) for a in argv) if isinstance(argv, list) else str(argv or "")


def command_line(run: dict) -> str:
    """The command that made the run; argv recorded from the verb on gets "colltune" back."""
    argv = run.get("argv") or []
    if argv and argv[0] == run.get("verb"):
        argv = ["colltune", *argv]
    return fmt_argv(argv)


def mpi_label(mpi: dict | None) -> str:
    if not mpi:
        return "unknown MPI"
    return " ".join(str(mpi[k]) for k in ("implementation", "version") if mpi.get(k)) or "MPI"


def figure(data, svg: str, caption: str) -> str:
    """A numbered figure (`data.next_figure()`) around an SVG from plot.to_svg."""
    number = data.next_figure()
    return (f"<figure id='fig-{number}'>{svg}<figcaption>Figure {number}. {esc(caption)}"
            f"</figcaption></figure>")
