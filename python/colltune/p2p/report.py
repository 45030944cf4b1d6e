"""The report's point-to-point section: the os/or/g/one-way curves of a `colltune p2p` run
(stored as its 'p2p' bench). Every value goes through esc()."""

from __future__ import annotations


def p2p_section(data):
    from ..render.html import Section, esc

    parts = []
    for run in data.runs:
        for bench in run.get("benches", []):
            doc = bench.get("p2p") if bench.get("op") == "p2p" else None
            if isinstance(doc, dict):
                parts.append(f"<h3>Point-to-point costs of run {esc(run['id'])}</h3>"
                             + _p2p_html(data, doc))
    if not parts:
        return None
    return Section("p2p", "Point-to-point costs (measured)", "\n".join(parts))


def _p2p_html(data, doc: dict) -> str:
    from ..core.units import fmt_size
    from ..render.html import esc, figure, table

    mpi = doc.get("mpi") or {}
    out = [f"<p>{esc(mpi.get('implementation'))} {esc(mpi.get('version'))}; "
           "os: time of MPI_Isend; or: a receive of data already there; g: the gap between "
           "consecutive sends; one-way: half a ping-pong (docs/P2P.md).</p>"]
    for layer in doc.get("layers") or []:
        switches = [f"{s['from']} → {s['to']} at {fmt_size(s['at_bytes'])}"
                    for s in layer.get("switches") or []]
        pair = layer.get("pair")
        out.append(f"<h4>Layer {esc(layer.get('layer'))}"
                   f"{' (cores ' + esc('-'.join(map(str, pair))) + ')' if pair else ''}</h4>")
        out.append(f"<p>Protocol switches: {esc('; '.join(switches) or 'none found')}</p>")
        points = layer.get("points") or []
        if points:
            out.append(figure(data, _p2p_svg(points), "os, or, g and the one-way time by "
                               "message size, with the send mode."))
            rows = [[fmt_size(p["size_bytes"]), p["os_us"], p["or_us"], p["g_us"],
                     p["oneway_us"], p["mode"]] for p in points]
            out.append("<details><summary>Every size</summary>"
                       + table(["size", "os (µs)", "or (µs)", "g (µs)", "one-way (µs)", "mode"],
                               rows) + "</details>")
    return "\n".join(out)


def _p2p_svg(points: list[dict]) -> str:
    import matplotlib
    from matplotlib.figure import Figure

    from ..render.plot import PLOT_LOCK, RC, log_axis, size_axis, to_svg

    sizes = [max(1, p["size_bytes"]) for p in points]
    with PLOT_LOCK, matplotlib.rc_context(RC):
        fig = Figure(figsize=(7.5, 4))
        ax = fig.add_subplot()
        for key, label in (("os_us", "os"), ("or_us", "or"), ("g_us", "g"),
                           ("oneway_us", "one-way")):
            ax.plot(sizes, [p[key] for p in points], marker=".", label=label)
        rendezvous = [s for s, p in zip(sizes, points, strict=True) if p["mode"] == "rendezvous"]
        if rendezvous:
            ax.axvspan(min(rendezvous), max(rendezvous), color="0.9", zorder=0,
                       label="rendezvous")
        ax.set_xscale("log", base=2)
        ax.set_yscale("log")
        size_axis(ax.xaxis, sorted(set(sizes)))  # about ten labels: they never overlap
        log_axis(ax.yaxis)
        ax.set_xlabel("message size")
        ax.set_ylabel("µs")
        ax.legend(fontsize=8)
        return to_svg(fig, "point-to-point costs")
