"""The report's model section: the measured-vs-predicted plots of a `colltune validate-model`
run (its 'validate-model' bench). Every value goes through esc()."""

from __future__ import annotations


def validation_section(data):
    from ..render.html import Section, esc

    parts = []
    for run in data.runs:
        for bench in run.get("benches", []):
            doc = bench.get("validation") if bench.get("op") == "validate-model" else None
            if isinstance(doc, dict):
                parts.append(f"<h3>Model validation of run {esc(run['id'])}</h3>"
                             + _validation_html(data, doc))
    if not parts:
        return None
    return Section("model", "Model: measured vs predicted", "\n".join(parts))


def _validation_html(data, doc: dict) -> str:
    from ..core.units import fmt_size
    from ..render.html import esc, figure, table

    out = [f"<p>Segment sizes {esc(', '.join(fmt_size(s) for s in doc.get('segsizes', [])))}; "
           f"costs from {esc(doc.get('p2p'))} (layer {esc(doc.get('layer'))}). Ratio: the "
           "measured time at the segment size the model picks over the best measured time "
           "(1 is perfect).</p>"]
    if not doc.get("complete"):
        out.append("<p class='warn'>This validation did not finish: the cases below are "
                   "those it measured.</p>")
    for case in doc.get("cases") or []:
        s = case["summary"]
        out.append(f"<h4>{esc(case['op'])}, {esc(fmt_size(case['size_bytes']))}, "
                   f"{esc(case['ranks'])} ranks</h4>")
        rows = [[alg, a["measured_best_us"], fmt_size(a["measured_best_segsize"]),
                 fmt_size(a["predicted_best_segsize"]), a["measured_at_predicted_us"],
                 a["ratio"]] for alg, a in s["algorithms"].items()]
        out.append(table(["algorithm", "best measured (µs)", "at", "model picks",
                          "measured there (µs)", "ratio"], rows))
        out.append(f"<p>Ranking measured: {esc(', '.join(s['measured_ranking']))}; predicted: "
                   f"{esc(', '.join(s['predicted_ranking']))} "
                   f"({'the same' if s['same_ranking'] else 'different'}).</p>")
        out.append(figure(data, _validation_svg(case),
                           f"{case['op']} at {case['ranks']} ranks: measured (solid) and "
                           "predicted (dashed) time by segment size."))
    return "\n".join(out)


def _validation_svg(case: dict) -> str:
    import matplotlib
    from matplotlib.figure import Figure

    from ..render.plot import PLOT_LOCK, RC, log_axis, size_axis, to_svg

    with PLOT_LOCK, matplotlib.rc_context(RC):
        fig = Figure(figsize=(7.5, 4))
        ax = fig.add_subplot()
        for i, alg in enumerate(case["summary"]["algorithms"]):
            rows = [r for r in case["rows"] if r["algorithm"] == alg]
            segs = [r["segsize"] for r in rows]
            ax.plot(segs, [r["measured_us"] for r in rows], "o-", color=f"C{i}",
                    label=f"{alg} measured")
            ax.plot(segs, [r["predicted_us"] for r in rows], "--", color=f"C{i}",
                    label=f"{alg} predicted")
        ax.set_xscale("log", base=2)
        ax.set_yscale("log")
        size_axis(ax.xaxis, sorted({r["segsize"] for r in case["rows"]}))
        log_axis(ax.yaxis)
        ax.set_xlabel("segment size")
        ax.set_ylabel("µs")
        ax.legend(fontsize=7, ncol=2)
        return to_svg(fig, "measured vs predicted")
