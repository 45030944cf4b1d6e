"""The report's point-to-point and model sections: the os/or/g/one-way curves of a
`colltune p2p` run (stored as its 'p2p' bench) and the measured-vs-predicted plots of a
`colltune validate-model` run (its 'validate-model' bench). Every value goes through esc()."""

from __future__ import annotations

# Benches that are not an operation's latencies: the report shows them in these sections.
SPECIAL_BENCHES = ("probe", "p2p", "validate-model", "overlap", "tune", "monitor", "cholesky",
                   "suite")


def p2p_section(data):
    from .report import Section, esc

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
    from .probe_report import _figure
    from .report import esc, fmt_size, table

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
            out.append(_figure(data, _p2p_svg(points), "os, or, g and the one-way time by "
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

    from .report import _PLOT_LOCK, _RC, _size_axis, _svg, log_axis

    sizes = [max(1, p["size_bytes"]) for p in points]
    with _PLOT_LOCK, matplotlib.rc_context(_RC):
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
        _size_axis(ax.xaxis, sorted(set(sizes)))  # about ten labels: they never overlap
        log_axis(ax.yaxis)
        ax.set_xlabel("message size")
        ax.set_ylabel("µs")
        ax.legend(fontsize=8)
        return _svg(fig, "point-to-point costs")


def validation_section(data):
    from .report import Section, esc

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
    from .probe_report import _figure
    from .report import esc, fmt_size, table

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
        out.append(_figure(data, _validation_svg(case),
                           f"{case['op']} at {case['ranks']} ranks: measured (solid) and "
                           "predicted (dashed) time by segment size."))
    return "\n".join(out)


def _validation_svg(case: dict) -> str:
    import matplotlib
    from matplotlib.figure import Figure

    from .report import _PLOT_LOCK, _RC, _size_axis, _svg, log_axis

    with _PLOT_LOCK, matplotlib.rc_context(_RC):
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
        _size_axis(ax.xaxis, sorted({r["segsize"] for r in case["rows"]}))
        log_axis(ax.yaxis)
        ax.set_xlabel("segment size")
        ax.set_ylabel("µs")
        ax.legend(fontsize=7, ncol=2)
        return _svg(fig, "measured vs predicted")


def overlap_section(data):
    """`colltune overlap` (and `colltune run`'s short study): total time and overlap by N."""
    from .report import Section, esc

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
    from .probe_report import _figure
    from .report import table

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
    out.append(_figure(data, _overlap_svg(st), "Total time by N (dashed: the model, for the S "
                       "it picks)."))
    return "\n".join(out)


def _overlap_svg(st: dict) -> str:
    import matplotlib
    from matplotlib.figure import Figure

    from .report import _PLOT_LOCK, _RC, _svg

    rows = st["rows"]
    ns = [r["n"] for r in rows]
    with _PLOT_LOCK, matplotlib.rc_context(_RC):
        fig = Figure(figsize=(7.5, 4))
        ax = fig.add_subplot()
        for i, name in enumerate(rows[0]["results"]):
            ax.plot(ns, [r["results"][name]["total_us"] for r in rows], "o-",
                    color=f"C{i % 10}", label=name)
        ax.plot(ns, [r["predicted_total_us"] for r in rows], "k--", label="model")
        ax.set_xlabel("N (application ranks)")
        ax.set_ylabel("total time (µs)")
        ax.legend(fontsize=7, ncol=2)
        return _svg(fig, "overlap study")


def tune_section(data):
    """The decision map of `colltune tune` (and `colltune run`'s tuning step): per operation
    and process count, the chosen algorithm by size, coloured, with the gain over native."""
    from .report import Section, esc

    parts = []
    for run in data.runs:
        for bench in run.get("benches", []):
            doc = bench.get("tune") if bench.get("op") == "tune" else None
            if isinstance(doc, dict):
                parts.append(f"<h3>Run {esc(run['id'])}: {esc(doc.get('strategy'))} tuning, "
                             f"{esc(len(doc.get('entries') or []))} points, "
                             f"{esc(doc.get('evaluations'))} measurements, "
                             f"{esc(round(doc.get('elapsed_s') or 0))} s</h3>"
                             + _decision_map(doc))
    if not parts:
        return None
    return Section("tuning", "Tuning: the decision map", "\n".join(parts))


def _decision_map(doc: dict) -> str:
    from .report import esc, fmt_size

    entries = doc.get("entries") or []
    algs = sorted({e["algorithm"] for e in entries})
    colour = {a: f"hsl({(i * 137) % 360}, 60%, 85%)" for i, a in enumerate(algs)}
    colour["native"] = "#e0e0e0"
    sizes = sorted({e["size_bytes"] for e in entries})
    rows = sorted({(e["op"], e["ranks"]) for e in entries})
    cell = {(e["op"], e["ranks"], e["size_bytes"]): e for e in entries}
    head = "".join(f"<th>{esc(fmt_size(s))}</th>" for s in sizes)
    body = []
    for op, n in rows:
        tds = []
        for s in sizes:
            e = cell.get((op, n, s))
            if not e:
                tds.append("<td></td>")
                continue
            gain = (f"{e['native_us'] / e['time_us']:.2f}x" if e.get("native_us") and
                    e["time_us"] else "")
            seg = f" / {fmt_size(e['segsize'])}" if e.get("segsize") else ""
            tds.append(f"<td style='background:{colour[e['algorithm']]}' title='"
                       f"{esc(e['time_us'])} us, native {esc(e.get('native_us'))} us'>"
                       f"{esc(e['algorithm'])}{esc(seg)}<br><small>{esc(gain)}</small></td>")
        body.append(f"<tr><th>{esc(op)} · {esc(n)}</th>{''.join(tds)}</tr>")
    return ("<p>Cell: the chosen algorithm (/ segment size) and native's time over it "
            "(above 1: colltune faster).</p><div class='table'><table><thead><tr>"
            f"<th>operation · ranks</th>{head}</tr></thead><tbody>{''.join(body)}</tbody>"
            "</table></div>")


def monitor_section(data):
    """`colltune monitor`: the communication matrices as heatmaps, per-rank counters."""
    from .report import Section, esc

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
    from .probe_report import _figure
    from .report import esc, table

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
            out.append(_figure(data, _heatmap_svg(doc[key], what),
                               f"{what.capitalize()}: row = sender, column = receiver."))
    return "\n".join(out)


def _heatmap_svg(matrix: list[list[float]], what: str) -> str:
    import matplotlib
    from matplotlib.figure import Figure

    from .report import _PLOT_LOCK, _RC, _svg

    n = len(matrix)
    with _PLOT_LOCK, matplotlib.rc_context(_RC):
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
        return _svg(fig, f"{what} heatmap")
