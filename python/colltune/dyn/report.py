"""The report's section for bench/cholesky_study.py (issue 24): the tiled Cholesky across the
test bed's emulated hosts, dynamic broadcasts on / off / plain and StarPU-MPI's example with
cooperative sends on / off, per (hosts K, link rate, N): GFlop/s against N per variant, the
gains of `on`, and the bytes each host sent (docs/CHOLESKY.md, "Across hosts").

The study records one `colltune-bench/1` document (op `cholesky-study`) holding the whole
study JSON under `study`; `study_bench_document` builds it, `cholesky_study_section` draws it.
"""

from __future__ import annotations

OP = "cholesky-study"
VARIANT_NAMES = {"on": "dynbcast on", "off": "dynbcast off", "plain": "dynbcast plain",
                 "starpu1": "StarPU coop sends on", "starpu0": "StarPU coop sends off"}
GAIN_AGAINST = ("off", "plain", "starpu1", "starpu0")


def gain(on: dict | None, other: dict | None) -> float | None:
    """time other / time on - 1: positive when `on` is faster."""
    if not on or not other or not on.get("seconds") or not other.get("seconds"):
        return None
    return other["seconds"] / on["seconds"] - 1


def owner_host(result: dict) -> str | None:
    """The first host (rank 0's: owner of tile (0, 0), the first panel's diagonal tile)."""
    hosts = list(result.get("link_tx_bytes") or result.get("hosts") or {})
    return hosts[0] if hosts else None


def host_split(result: dict, key: str) -> tuple[float | None, float | None]:
    """Bytes sent by the owner's host and the largest of the others' (key: 'monitor' or
    'eth0'); None where not measured (StarPU has no monitor)."""
    if key == "monitor":
        per = {h: v["bytes"] for h, v in (result.get("hosts") or {}).items()}
    else:
        per = {h: v for h, v in (result.get("link_tx_bytes") or {}).items() if v is not None}
    owner = owner_host(result)
    if not per or owner not in per:
        return None, None
    others = [v for h, v in per.items() if h != owner]
    return per[owner], (max(others) if others else None)


def study_bench_document(doc: dict, argv: list[str]) -> dict:
    """The study as a colltune-bench/1 document for the store: one result per (K, link, N,
    variant), the whole study under `study`."""
    results = []
    for c in doc.get("cases", []):
        for r in c["results"]:
            results.append({"algorithm": f"{r['variant']} K={c['hosts']} {c['link']}",
                            "size": c["n"], "median_us": r["seconds"] * 1e6,
                            "min_us": r["seconds_min"] * 1e6, "max_us": r["seconds_max"] * 1e6,
                            "iterations": len(r.get("samples_s") or []),
                            "gflops": r["gflops"], "residual": r.get("residual")})
    return {"schema": "colltune-bench/1", "op": OP, "ranks": max(
                (c["hosts"] for c in doc.get("cases", [])), default=None),
            "binding": "none (emulated hosts share the machine's cores)",
            "datatype": {"d": "double", "s": "float"}.get(doc.get("precision", "d")),
            "command": " ".join(argv), "study": doc, "results": results}


def _mb(v: float | None) -> str:
    return "-" if v is None else f"{v / 1e6:.1f}"


def cholesky_study_section(data):
    """Every recorded study: the table per (K, link, N, variant), the figures."""
    from ..render.html import Section, esc, figure, table

    studies = [(run["id"], bench["study"]) for run in data.runs
               for bench in run.get("benches", [])
               if bench.get("op") == OP and isinstance(bench.get("study"), dict)]
    if not studies:
        return None
    body = ["<p>bench/cholesky_study.py: the tiled Cholesky across the test bed's emulated "
            "hosts (one rank a host, all hosts on one machine's cores), per hosts K, link "
            "rate and N (NB = N / 12). GFlop/s = N³/3 over the median time, with min and "
            "max over the factorisations; <em>gain</em> of on over X: time X / time on − 1. "
            "Bytes: the whole job, from rank 0's host (owner of the first panel's diagonal "
            "tile) and the largest of the other hosts, from the drop-in's monitor and from "
            "each host's eth0 counter (StarPU: eth0 only).</p>"]
    for run_id, doc in studies:
        rows = []
        for c in doc.get("cases", []):
            by = {r["variant"]: r for r in c["results"]}
            for r in c["results"]:
                g = [gain(by.get("on"), by.get(v)) if r["variant"] == "on" else None
                     for v in GAIN_AGAINST]
                mo, mx = host_split(r, "monitor")
                eo, ex = host_split(r, "eth0")
                res = r.get("residual")
                rows.append([run_id, c["hosts"], c["link"], c["n"], r.get("nb"), r.get("grid"),
                             VARIANT_NAMES.get(r["variant"], r["variant"]),
                             f"{r['gflops']:.2f} ({c['n'] ** 3 / 3e9 / r['seconds_max']:.2f}"
                             f"–{c['n'] ** 3 / 3e9 / r['seconds_min']:.2f})",
                             "-" if res is None else f"{res:.1e}",
                             *("" if x is None else f"{x:+.1%}" for x in g),
                             f"{_mb(mo)} / {_mb(mx)}", f"{_mb(eo)} / {_mb(ex)}"])
        body.append(table(["run", "K", "link", "N", "NB", "grid", "variant",
                           "GFlop/s median (min–max)", "residual", "on/off", "on/plain",
                           "on/StarPU coop", "on/StarPU no coop",
                           "MB monitor owner / max other", "MB eth0 owner / max other"], rows))
        starpu = doc.get("starpu") or {}
        if starpu.get("absent"):
            body.append(f"<p>StarPU-MPI not run: {esc(starpu['absent'])}</p>")
        if doc.get("cases"):
            body.append(figure(data, _gflops_svg(doc), "Cholesky across emulated hosts: "
                               "GFlop/s against N, one panel per (hosts, link), one line per "
                               "variant."))
            body.append(figure(data, _bytes_svg(doc), "Bytes each host's eth0 sent at the "
                               "largest N, per variant (the whole job)."))
    return Section("cholesky-study", "Cholesky across emulated hosts: dynamic broadcasts and "
                   "StarPU-MPI", "\n".join(body))


def _panels(doc: dict) -> list[tuple[int, str]]:
    return list(dict.fromkeys((c["hosts"], c["link"]) for c in doc["cases"]))


def _gflops_svg(doc: dict) -> str:
    import matplotlib
    from matplotlib.figure import Figure

    from ..render.plot import PLOT_LOCK, RC, to_svg

    panels = _panels(doc)
    with PLOT_LOCK, matplotlib.rc_context(RC):
        fig = Figure(figsize=(3.2 * len(panels), 3.4))
        axes = fig.subplots(1, len(panels), squeeze=False)[0]
        for ax, (k, link) in zip(axes, panels, strict=True):
            series: dict[str, list] = {}
            for c in doc["cases"]:
                if (c["hosts"], c["link"]) == (k, link):
                    for r in c["results"]:
                        series.setdefault(r["variant"], []).append(
                            (c["n"], r["gflops"], c["n"] ** 3 / 3e9 / r["seconds_max"],
                             c["n"] ** 3 / 3e9 / r["seconds_min"]))
            for i, (variant, pts) in enumerate(series.items()):
                pts.sort()
                ns = [p[0] for p in pts]
                ax.errorbar(ns, [p[1] for p in pts],
                            yerr=[[p[1] - p[2] for p in pts], [p[3] - p[1] for p in pts]],
                            fmt="o-", color=f"C{i % 10}", capsize=2,
                            label=VARIANT_NAMES.get(variant, variant))
            ax.set_title(f"{k} hosts, {link}", fontsize=9)
            ax.set_xlabel("N")
        axes[0].set_ylabel("GFlop/s")
        axes[-1].legend(fontsize=6)
        return to_svg(fig, "cholesky-study")


def _bytes_svg(doc: dict) -> str:
    import matplotlib
    from matplotlib.figure import Figure

    from ..render.plot import PLOT_LOCK, RC, to_svg

    panels = _panels(doc)
    with PLOT_LOCK, matplotlib.rc_context(RC):
        fig = Figure(figsize=(3.2 * len(panels), 3.4))
        axes = fig.subplots(1, len(panels), squeeze=False)[0]
        for ax, (k, link) in zip(axes, panels, strict=True):
            cases = [c for c in doc["cases"] if (c["hosts"], c["link"]) == (k, link)]
            c = max(cases, key=lambda c: c["n"])
            width = 0.8 / max(1, len(c["results"]))
            for i, r in enumerate(c["results"]):
                tx = r.get("link_tx_bytes") or {}
                hosts = list(tx)
                ax.bar([j + i * width for j in range(len(hosts))],
                       [(tx[h] or 0) / 1e6 for h in hosts], width, color=f"C{i % 10}",
                       label=VARIANT_NAMES.get(r["variant"], r["variant"]))
                ax.set_xticks([j + 0.4 - width / 2 for j in range(len(hosts))],
                              [h.rsplit("-", 1)[-1] for h in hosts], fontsize=7)
            ax.set_title(f"{k} hosts, {link}, N={c['n']}", fontsize=9)
        axes[0].set_ylabel("MB sent (eth0)")
        axes[-1].legend(fontsize=6)
        return to_svg(fig, "cholesky-study-bytes")
