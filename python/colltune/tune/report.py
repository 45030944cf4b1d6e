"""The report's tuning section: the decision map of a `colltune tune` run (the algorithm
chosen per operation and size). Every value goes through esc()."""

from __future__ import annotations


def tune_section(data):
    """The decision map of `colltune tune` (and `colltune run`'s tuning step): per operation
    and process count, the chosen algorithm by size, coloured, with the gain over native."""
    from ..render.html import Section, esc

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
    from ..core.units import fmt_size
    from ..render.html import esc

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
            gain = (f"{e['native_us'] / e['time_us']:.2f}" if e.get("native_us") and
                    e["time_us"] else "")
            seg = f" / {fmt_size(e['segsize'])}" if e.get("segsize") else ""
            tds.append(f"<td style='background:{colour[e['algorithm']]}' title='"
                       f"{esc(e['time_us'])} us, native {esc(e.get('native_us'))} us'>"
                       f"{esc(e['algorithm'])}{esc(seg)}<br><small>{esc(gain)}</small></td>")
        body.append(f"<tr><th>{esc(op)} · {esc(n)}</th>{''.join(tds)}</tr>")
    return ("<p>Cell: the chosen algorithm (/ segment size) and its speed-up, native's "
            "time over its time (above 1: colltune faster).</p>"
            "<div class='table'><table><thead><tr>"
            f"<th>operation · ranks</th>{head}</tr></thead><tbody>{''.join(body)}</tbody>"
            "</table></div>")
