"""The report's verification section: what `colltune verify` (and `colltune run`'s last
step) measured through the drop-in, tuned/native per point before and after the correction
step, the corrections and the points still slower with their reason. Every value goes
through esc()."""

from __future__ import annotations


def verify_section(data):
    from ..render.html import Section, esc

    parts = []
    for run in data.runs:
        for bench in run.get("benches", []):
            rec = bench.get("verify") if bench.get("op") == "verify" else None
            if isinstance(rec, dict) and isinstance(rec.get("points"), list):
                parts.append(f"<h3>Run {esc(run['id'])}: {esc(rec.get('table'))}, "
                             f"{esc(len(rec['points']))} points, {esc(rec.get('rounds'))} "
                             f"rounds of {esc(rec.get('iters'))} iterations, "
                             f"{esc(rec.get('placement'))}</h3>" + _points_table(rec))
    if not parts:
        return None
    intro = ("<p>The table measured as a program meets it: a plain OSU-style program (ct_osu) "
             "with the drop-in preloaded (tuned) and without it (native), in separate jobs, "
             "alternating which runs first; medians over rounds. Speed-up = native / tuned "
             "(higher is better; below 1: the table made the program slower), with its 95% "
             "interval over the rounds; the verdict is a tie where the interval holds 1. "
             "Midpoints lie between two sizes of the table.</p>")
    return Section("verify", "Verifying the tuning table through the drop-in",
                   intro + "\n".join(parts))


def _points_table(rec: dict) -> str:
    from ..core.units import fmt_size
    from ..render.html import esc

    limit = 1 + float(rec.get("margin") or 0.05)
    rows = []
    for r in rec["points"]:
        final = r.get("after_ratio", r.get("ratio"))
        bad = isinstance(final, int | float) and final > limit
        from ..tune.verify import speedup_text

        verdict = r.get("speedup_verdict", "tie")
        verdict = "no difference within noise" if verdict == "tie" else verdict
        seg = f" / {fmt_size(r['segsize'])}" if r.get("segsize") else ""
        after = (f"{esc(r.get('after_algorithm'))} speed-up "
                 f"{esc(round(1 / r['after_ratio'], 2))}" if r.get("after_ratio") else "")
        style = " style='background:#f8d7da'" if bad else ""
        rows.append(f"<tr{style}><td>{esc(r.get('op'))}</td><td>{esc(r.get('ranks'))}</td>"
                    f"<td>{esc(fmt_size(r.get('size') or 0))}</td><td>{esc(r.get('kind'))}"
                    f"</td><td>{esc(r.get('algorithm'))}{esc(seg)}</td>"
                    f"<td>{esc(r.get('tuned_us'))}</td><td>{esc(r.get('native_us'))}</td>"
                    f"<td>{esc(speedup_text(r))}</td><td>{esc(verdict)}</td>"
                    f"<td>{esc(r.get('verdict'))}</td>"
                    f"<td>{after}</td></tr>")
    fixes = "".join(f"<li>{esc(c.get('op'))} {esc(c.get('ranks'))} ranks "
                    f"{esc(fmt_size(c.get('size') or 0))}: {esc(c['from'].get('algorithm'))} "
                    f"&rarr; {esc(c['to'].get('algorithm'))} ({esc(c.get('reason'))})</li>"
                    for c in rec.get("corrections") or [])
    still = "".join(f"<li>{esc(s.get('op'))} {esc(s.get('ranks'))} ranks "
                    f"{esc(fmt_size(s.get('size') or 0))}: speed-up "
                    f"{esc(round(1 / s['ratio'], 2) if s.get('ratio') else '-')}, "
                    f"{esc(s.get('reason'))}</li>" for s in rec.get("still_slower") or [])
    return ("<div class='table'><table><thead><tr><th>operation</th><th>ranks</th>"
            "<th>size</th><th>point</th><th>table's choice</th><th>tuned (us)</th>"
            "<th>native (us)</th><th>speed-up [95%]</th><th>verdict</th><th>decision</th>"
            "<th>after correction</th>"
            f"</tr></thead><tbody>{''.join(rows)}</tbody></table></div>"
            + (f"<p>Corrections:</p><ul>{fixes}</ul>" if fixes else "<p>No correction.</p>")
            + (f"<p>Still slower than native beyond the margin (speed-up below "
               f"{esc(round(1 / limit, 2))}):</p><ul>{still}</ul>" if still
               else f"<p>No point with a speed-up below {esc(round(1 / limit, 2))} after the "
                    "correction.</p>"))
