"""The report's machine section: what `colltune probe` measured (machine.json, stored as the
run's 'probe' bench), next to what the OS and hwloc say.

Figures: the traversal curves with the detected cache sizes marked (and the OS's, dashed),
the sharing ratios, the memory-contention scaling, the latency matrix as a heatmap and the
bandwidth curve of each communication layer. Every value goes through `esc()`.
"""

from __future__ import annotations

import math

from ..render.html import figure


def machine_section(data):
    """Report builder (REPORT_SECTIONS): one machine part per run that holds a probe."""
    from ..render.html import Section, esc

    parts = []
    for run in data.runs:
        for bench in run.get("benches", []):
            doc = bench.get("probe") if bench.get("op") == "probe" else None
            if isinstance(doc, dict):
                parts.append(f"<h3>Probe of run {esc(run['id'])}</h3>" + machine_html(data, doc))
    if not parts:
        return None
    return Section("machine", "Machine (measured)", "\n".join(parts))


def machine_html(data, doc: dict) -> str:
    from ..render.html import definition_list, esc

    items = [("probe", "quick" if doc.get("quick") else "full"),
             ("cores", ", ".join(map(str, doc.get("cores") or []))),
             ("binding", (doc.get("binding") or {}).get("binder")),
             ("run time", f"{doc.get('duration_s', 0):.1f} s"),
             ("schema", doc.get("schema"))]
    out = [definition_list(items)]
    for name, part in (doc.get("parts") or {}).items():
        if part.get("status") not in ("ok", "skipped"):
            out.append(f"<p class='warn'>Part {esc(name)} {esc(part.get('status'))}: "
                       f"{esc(part.get('error'))}</p>")
    for w in doc.get("warnings") or []:
        out.append(f"<p class='warn'>{esc(w)}</p>")
    for builder in (_caches_html, _sharing_html, _memory_html, _comm_html):
        try:
            html = builder(data, doc)
        except (KeyError, TypeError, ValueError, IndexError) as e:
            html = f"<p class='warn'>This part of the probe could not be shown: {esc(e)}</p>"
        if html:
            out.append(html)
    return "\n".join(out)


def _groups(groups) -> str:
    if groups is None:
        return "—"
    return " ".join("{" + ",".join(map(str, g)) + "}" for g in groups)


def _caches_html(data, doc: dict) -> str | None:
    from ..core.units import fmt_size
    from ..render.html import Markup, esc, table

    caches = doc.get("caches") or []
    curve = doc.get("cache_curve")
    if not caches and not curve:
        return None
    rows = []
    for c in caches:
        agree = c.get("agree") or {}
        ok = agree.get("size", True) and agree.get("sharing", True)
        flag = Markup("<span class='faster'>agrees</span>" if ok
                      else "<span class='slower'>differs</span>")
        rows.append([f"L{c['level']} {c.get('type', '')}", fmt_size(c["size_bytes"]),
                     c.get("method"), c.get("associativity") or "—",
                     fmt_size(c.get("os_size_bytes")), c.get("os_associativity") or "—",
                     fmt_size(c.get("hwloc_size_bytes")), _groups(c.get("shared_by")),
                     _groups(c.get("os_shared_by")), flag])
    html = ["<h4>Caches</h4>", table(["cache", "measured", "method", "ways (fit)", "OS",
                                     "OS ways", "hwloc", "shared by (measured)",
                                     "shared by (OS)", ""], rows)]
    if doc.get("disagreements"):
        html.append("<ul>" + "".join(f"<li>{esc(d)}</li>" for d in doc["disagreements"])
                    + "</ul>")
    if curve:
        html.append(figure(data, _curve_svg(curve, caches),
                            "Traversal: nanoseconds per access against array size (1 KiB "
                            "stride, random page order), base and huge pages; solid lines: "
                            "measured cache sizes, dashed: the OS's."))
    return "\n".join(html)


def _curve_svg(curve: dict, caches: list[dict]) -> str:
    import matplotlib
    from matplotlib.figure import Figure

    from ..render.plot import PLOT_LOCK, RC, log_axis, size_axis, to_svg

    with PLOT_LOCK, matplotlib.rc_context(RC):
        fig = Figure(figsize=(9, 4.5))
        ax = fig.add_subplot()
        ax.set_xscale("log", base=2)
        ax.set_yscale("log")
        ax.plot(curve["sizes_bytes"], curve["ns_per_access"], marker=".", label="base pages")
        huge = curve.get("huge_pages")
        if huge:
            ax.plot(huge["sizes_bytes"], huge["ns_per_access"], marker=".", label="huge pages")
        colors = matplotlib.colormaps["tab10"]
        for i, c in enumerate(caches):
            color = colors((i + 2) % 10)
            ax.axvline(c["size_bytes"], color=color, linewidth=1.5,
                       label=f"L{c['level']} measured")
            if c.get("os_size_bytes"):
                ax.axvline(c["os_size_bytes"], color=color, linewidth=1.0, linestyle="--",
                           label=f"L{c['level']} OS")
        size_axis(ax.xaxis, curve["sizes_bytes"])
        log_axis(ax.yaxis)
        ax.set_xlabel("array size")
        ax.set_ylabel("ns per access")
        ax.grid(True, alpha=0.3)
        ax.legend(loc="upper left", bbox_to_anchor=(1.01, 1.0), fontsize="small", frameon=False)
        return to_svg(fig, "cache traversal curve")


def _sharing_html(data, doc: dict) -> str | None:
    from ..core.units import fmt_size
    from ..render.html import table

    rows = [[f"L{s['level']}", fmt_size(s["array_bytes"]), f"{p['cores'][0]}-{p['cores'][1]}",
             p["ratio"], "yes" if p["shared"] else "no"]
            for s in doc.get("sharing") or [] for p in s["pairs"]]
    if not rows:
        return None
    groups = [[f"L{s['level']}", _groups(s["shared_by"])] for s in doc["sharing"]]
    return ("<h4>Shared caches</h4><p>Each pair traverses arrays of 2/3 of the level at once; "
            "a ratio over the core alone above 1.5 means the pair shares it.</p>"
            + table(["level", "groups of cores sharing it"], groups)
            + "<details><summary>Every pair</summary>"
            + table(["level", "array per core", "pair", "ratio", "shared"], rows) + "</details>")


def _memory_html(data, doc: dict) -> str | None:
    from ..core.units import fmt_size
    from ..render.html import table

    mem = doc.get("memory")
    if not mem:
        return None
    rows = [[i, g["gbps_per_core"], g["ratio"], "yes" if g["contention"] else "no",
             len(g["pairs"]), _groups([g["cores"]])] for i, g in enumerate(mem["groups"])]
    html = [f"<h4>Memory contention</h4><p>Copy bandwidth ({mem['metric']}) of one core alone: "
            f"{mem['reference_gbps']:.2f} GB/s (arrays of {fmt_size(mem['array_bytes'])}).</p>",
            table(["group", "GB/s per core (pair at once)", "ratio to alone", "contention",
                   "pairs", "cores"], rows)]
    scaling = [g for g in mem["groups"] if g.get("scaling")]
    if scaling:
        html.append(figure(data, _scaling_svg(scaling),
                            "Effective copy bandwidth (all cores together) as more cores of "
                            "each contention group copy at once."))
    return "\n".join(html)


def _scaling_svg(groups: list[dict]) -> str:
    import matplotlib
    from matplotlib.figure import Figure
    from matplotlib.ticker import MaxNLocator

    from ..render.plot import PLOT_LOCK, RC, to_svg

    with PLOT_LOCK, matplotlib.rc_context(RC):
        fig = Figure(figsize=(6, 3.6))
        ax = fig.add_subplot()
        for i, g in enumerate(groups):
            ax.plot([s["n"] for s in g["scaling"]], [s["total_gbps"] for s in g["scaling"]],
                    marker="o", label=f"group {i}")
        # Core counts are whole: no 1.5 cores on the axis.
        ax.xaxis.set_major_locator(MaxNLocator(integer=True))
        ax.set_xlabel("cores copying at once")
        ax.set_ylabel("GB/s in all")
        ax.grid(True, alpha=0.3)
        ax.legend(fontsize="small", frameon=False)
        return to_svg(fig, "memory bandwidth scaling")


def _comm_html(data, doc: dict) -> str | None:
    from ..core.units import fmt_size
    from ..render.html import table

    layers = doc.get("comm_layers") or []
    comm = doc.get("comm")
    if not layers or not comm:
        return None
    rows = [[layer["layer"], layer["latency_us"], layer["min_us"], layer["max_us"],
             len(layer["pairs"]), "-".join(map(str, layer["representative"]))]
            for layer in layers]
    html = [f"<h4>Communication layers</h4><p>MPI latency of a "
            f"{fmt_size(comm['message_bytes'])} message ({comm['message_size_source']}) "
            f"between every pair of cores, one rank per core.</p>",
            table(["layer", "latency (µs)", "min", "max", "pairs", "representative"], rows),
            figure(data, _matrix_svg(comm), "Latency matrix (µs) between cores.")]
    if any(layer.get("bandwidth") for layer in layers):
        html.append(figure(data, _bandwidth_svg(layers),
                            "Point-to-point bandwidth of one representative pair per layer."))
    return "\n".join(html)


def _matrix_svg(comm: dict) -> str:
    import matplotlib
    from matplotlib.figure import Figure

    from ..render.plot import PLOT_LOCK, RC, to_svg

    cores = comm["cores"]
    matrix = [[math.nan if v is None or i == j else v for j, v in enumerate(row)]
              for i, row in enumerate(comm["latency_matrix_us"])]
    with PLOT_LOCK, matplotlib.rc_context(RC):
        side = min(9.0, 2.5 + 0.35 * len(cores))
        fig = Figure(figsize=(side + 1.2, side))
        ax = fig.add_subplot()
        mesh = ax.pcolormesh(matrix, cmap="viridis", edgecolors="white", linewidth=0.5)
        ticks = [i + 0.5 for i in range(len(cores))]
        ax.set_xticks(ticks, [str(c) for c in cores])
        ax.set_yticks(ticks, [str(c) for c in cores])
        ax.invert_yaxis()
        ax.set_xlabel("core")
        ax.set_ylabel("core")
        if len(cores) <= 16:
            for i, row in enumerate(matrix):
                for j, v in enumerate(row):
                    if not math.isnan(v):
                        ax.text(j + 0.5, i + 0.5, f"{v:.3g}", ha="center", va="center",
                                fontsize=7, color="white")
        fig.colorbar(mesh, ax=ax, pad=0.02).set_label("latency (µs)")
        return to_svg(fig, "latency matrix heatmap")


def _bandwidth_svg(layers: list[dict]) -> str:
    import matplotlib
    from matplotlib.figure import Figure

    from ..render.plot import PLOT_LOCK, RC, log_axis, size_axis, to_svg

    sizes = sorted({p["size_bytes"] for layer in layers for p in layer.get("bandwidth") or []})
    with PLOT_LOCK, matplotlib.rc_context(RC):
        fig = Figure(figsize=(9, 4.2))
        ax = fig.add_subplot()
        ax.set_xscale("log", base=2)
        ax.set_yscale("log")
        for layer in layers:
            pts = layer.get("bandwidth") or []
            ax.plot([p["size_bytes"] for p in pts], [p["bandwidth_MBps"] for p in pts],
                    marker=".", label=f"layer {layer['layer']} "
                                      f"(cores {'-'.join(map(str, layer['representative']))})")
        size_axis(ax.xaxis, sizes)
        log_axis(ax.yaxis)
        ax.set_xlabel("message size")
        ax.set_ylabel("MB/s")
        ax.grid(True, alpha=0.3)
        ax.legend(fontsize="small", frameon=False)
        return to_svg(fig, "point-to-point bandwidth per layer")
