"""The report's monitor section: the message matrices a `colltune monitor` run recorded.
Every value goes through esc()."""

from __future__ import annotations


def monitor_section(data):
    """`colltune monitor`: the communication matrices as heatmaps, per-rank counters."""
    from ..render.html import Section, esc

    parts = []
    for run in data.runs:
        for bench in run.get("benches", []):
            doc = bench.get("monitor") if bench.get("op") == "monitor" else None
            if isinstance(doc, dict):
                parts.append(f"<h3>Run {esc(run['id'])}: {esc(doc.get('command', ''))}</h3>"
                             + _monitor_html(data, doc))
    if not parts:
        return None
    return Section("monitor", "Message monitor", "\n".join(parts))


def _monitor_html(data, doc: dict) -> str:
    from ..render.html import esc, figure, table
    from .monitor import PROFILE_COLUMNS, profile_rows

    prof = profile_rows(doc)
    prof_html = (["<p>Collective profile (COLLTUNE_PROFILE=on): per operation, call form, "
                  "communicator size, message size (log2 bucket) and algorithm, the most "
                  "time first; times summed over the ranks, medians over every rank's "
                  "calls.</p>", table(PROFILE_COLUMNS, prof)] if prof else [])
    if not doc.get("per_rank"):
        return "\n".join(prof_html)
    out = [f"<p>Level {esc(doc['level'])}, {esc(doc['ranks'])} ranks. Hardware counters: "
           f"{esc(doc.get('counters_unavailable') or 'measured')}. Energy: "
           f"{esc(doc.get('energy_unavailable') or 'measured')}.</p>"]
    from .monitor import consistency, consistency_line

    out.append(f"<p>{esc(consistency_line(doc.get('consistency') or consistency(doc)))}</p>")

    def edp(r):  # energy-delay product (J s), when energy is known
        e = r.get("energy_uj")
        return None if e is None else round(e * 1e-6 * r["wall_s"], 6)

    def ipc(r):
        c = r.get("cycles")
        return round(r["instructions"] / c, 3) if c and r.get("instructions") else None

    rows = [[r["rank"], r["app_messages"], r["app_bytes"], r.get("recv_messages"),
             r.get("recv_bytes"), r["coll_messages"], r["coll_bytes"],
             round(r["mpi_s"], 6), round(r["wall_s"], 6), r.get("instructions"),
             r.get("cycles"), ipc(r), r.get("cache_misses"), r.get("energy_uj"), edp(r),
             ", ".join(f"{k} {v['calls']}" for k, v in (r.get("native") or {}).items())]
            for r in doc["per_rank"]]
    out.append(table(["rank", "messages sent", "bytes sent", "messages received",
                      "bytes received", "collective messages", "collective bytes",
                      "MPI (s)", "wall (s)", "instructions", "cycles", "IPC", "cache misses",
                      "energy (µJ)", "energy-delay (J s)", "native collective calls"], rows))
    if "histogram" in doc:
        bins = doc.get("histogram_bins", 48)
        total = [0] * bins
        for row in doc["histogram"]:
            for k, v in enumerate(row):
                total[k % bins] += v
        used = [(k, v) for k, v in enumerate(total) if v]
        if used:
            out.append(table(["message size", "application messages (all peers)"],
                             [[f"{1 << k} to {(1 << (k + 1)) - 1} B" if k else "0 to 1 B", v]
                              for k, v in used]))
    for key, what in (("messages", "application messages"), ("bytes", "application bytes"),
                      ("coll_messages", "colltune collective messages")):
        if key in doc:
            out.append(figure(data, _heatmap_svg(doc[key], what),
                               f"{what.capitalize()}: row = sender, column = receiver."))
    return "\n".join(out + prof_html)


def _heatmap_svg(matrix: list[list[float]], what: str) -> str:
    import matplotlib
    from matplotlib.figure import Figure

    from ..render.plot import PLOT_LOCK, RC, to_svg

    n = len(matrix)
    with PLOT_LOCK, matplotlib.rc_context(RC):
        side = min(9.0, 2.5 + 0.35 * n)
        fig = Figure(figsize=(side + 1.2, side))
        ax = fig.add_subplot()
        mesh = ax.pcolormesh(matrix, cmap="viridis", edgecolors="white", linewidth=0.5)
        ax.invert_yaxis()
        ax.set_xlabel("receiver (rank)")
        ax.set_ylabel("sender (rank)")
        if n <= 16:
            for i, row in enumerate(matrix):
                for j, v in enumerate(row):
                    if v:
                        ax.text(j + 0.5, i + 0.5, f"{v:.3g}", ha="center", va="center",
                                fontsize=7, color="white")
        fig.colorbar(mesh, ax=ax, pad=0.02).set_label(what)
        return to_svg(fig, f"{what} heatmap")
