"""The report's overlap section: what a `colltune overlap` run measured of non-blocking
collectives next to computation. Every value goes through esc()."""

from __future__ import annotations


def overlap_section(data):
    """`colltune overlap` (and `colltune run`'s short study): total time and overlap by N."""
    from ..render.html import Section, esc

    parts = []
    for run in data.runs:
        for bench in run.get("benches", []):
            doc = bench.get("overlap") if bench.get("op") == "overlap" else None
            if isinstance(doc, dict):
                for st in doc.get("studies") or []:
                    parts.append(f"<h3>Run {esc(run['id'])}: {esc(st['op'])}, "
                                 f"{esc(st['bytes'] // 1024)} KiB, {esc(st['nproc'])} cores"
                                 "</h3>" + _overlap_html(data, st))
    if not parts:
        return None
    return Section("overlap", "Non-blocking collectives: overlap with computation",
                   "\n".join(parts))


def _overlap_html(data, st: dict) -> str:
    from ..render.html import figure, table

    rows = st.get("rows") or []
    if not rows:
        return "<p>No rank count was measured.</p>"
    names = list(rows[0]["results"])
    out = [f"<p>Computation sized to the blocking collective at {st['nproc']} ranks "
           f"({st['blocking_nproc_us']:.0f} µs), the same global work at N ranks. Cells: total "
           "time (µs) / overlap (%), as osu_ibcast computes it.</p>",
           table(["N", "computation (µs)", *names, "best S", "model S"],
                 [[r["n"], round(r["compute_us"]),
                   *(f"{r['results'][n]['total_us']:.0f} / {r['results'][n]['overlap_pct']:.0f}%"
                     for n in names), r["measured_best_s"], r["model_s"]] for r in rows])]
    out.append(figure(data, _overlap_svg(st), "Total time by N (dashed: the model, for the S "
                       "it picks)."))
    return "\n".join(out)


def _overlap_svg(st: dict) -> str:
    import matplotlib
    from matplotlib.figure import Figure

    from ..render.plot import PLOT_LOCK, RC, to_svg

    rows = st["rows"]
    ns = [r["n"] for r in rows]
    with PLOT_LOCK, matplotlib.rc_context(RC):
        fig = Figure(figsize=(7.5, 4))
        ax = fig.add_subplot()
        for i, name in enumerate(rows[0]["results"]):
            ax.plot(ns, [r["results"][name]["total_us"] for r in rows], "o-",
                    color=f"C{i % 10}", label=name)
        # A marker on the model too: a study of one N has one point per series, and a
        # dashed line through one point draws nothing beside its legend entry.
        ax.plot(ns, [r["predicted_total_us"] for r in rows], "k--", marker="x", label="model")
        # N is a count of ranks: ticks at the measured N only, and room around a lone one
        # (matplotlib would otherwise span 1.90-2.10 around N = 2).
        ax.set_xticks(ns, [str(n) for n in ns])
        if len(set(ns)) == 1:
            ax.set_xlim(ns[0] - 1, ns[0] + 1)
        ax.set_xlabel("N (application ranks)")
        ax.set_ylabel("total time (µs)")
        ax.legend(fontsize=7, ncol=2)
        return to_svg(fig, "overlap study")
