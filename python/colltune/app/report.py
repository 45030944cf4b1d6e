"""The report's section for `colltune app` studies: the verdict with its intervals, every
run of the comparison in the order it ran, the collective time per operation native against
tuned, the algorithms that served the calls, what was tuned and the load. A study stopped
before its verdict shows its runs and why it stopped. Every value goes through esc()."""

from __future__ import annotations


def app_section(data):
    from ..render.html import Section, esc

    parts = []
    for run in data.runs:
        stages = {b.get("stage"): b for b in run.get("benches", []) if b.get("op") == "app"}
        if not stages:
            continue
        head = f"<h3>Run {esc(run['id'])}: {esc(_command(stages))}</h3>"
        verdict = stages.get("verdict")
        if verdict and isinstance(verdict.get("app"), dict):
            parts.append(head + _verdict_html(verdict["app"]))
        else:
            parts.append(head + f"<p class='warn'>No verdict: the study ended "
                                f"{esc(run.get('status'))} ({esc(run.get('reason'))}).</p>"
                         + _runs_html(stages.get("runs", {}).get("results") or []))
    if not parts:
        return None
    intro = ("<p><code>colltune app</code>: the program profiled under the drop-in, exactly "
             "the points it used tuned and verified, then run natively (no drop-in) and tuned "
             "(the drop-in with the verified table) alternately. Medians with 95% "
             "distribution-free intervals; the speed-up's interval by bootstrap; a verdict "
             "only where that interval excludes 1.</p>")
    return Section("app", "Applications: native against tuned", intro + "\n".join(parts))


def _command(stages: dict) -> str:
    for b in stages.values():
        if b.get("command"):
            return b["command"]
    return ""


def _verdict_html(doc: dict) -> str:
    from ..core.units import fmt_size
    from ..render.html import esc, table

    unit = " s" if doc.get("unit") == "s" else ""
    rows = [[v, f"{e['value']:.4g}{unit}", f"[{e['lo']:.4g}, {e['hi']:.4g}]{unit}", e["n"]]
            for v, e in doc["variants"].items()]
    sp = doc["speedup"]
    out = [f"<p>{esc(doc.get('ranks'))} ranks, {esc(doc.get('placement'))}; compared "
           f"{esc('the metric ' + repr(doc['metric']) if doc.get('metric') else 'wall time')}."
           "</p>", table(["variant", "median", "95% interval", "runs"], rows),
           f"<p><strong>Speed-up ({esc(doc['speedup_means'])}): {sp['value']:.3f} "
           f"[{sp['lo']:.3f}, {sp['hi']:.3f}]: {esc(doc['verdict_text'])}</strong></p>"]
    out += [f"<p class='warn'>{esc(w)}</p>" for w in doc.get("warnings") or []]
    c = doc.get("collectives") or {}
    ops = sorted(set(c.get("native") or {}) | set(c.get("tuned") or {}))
    if ops:
        def cell(o):
            if not o or o.get("time_s") is None:
                return "-"
            return f"{o['time_s'] * 1e3:.3g} ms" + (f" ({o['share'] * 100:.3g}%)"
                                                     if o.get("share") is not None else "")
        out.append(table(["operation", "calls", "native: time a rank (share)",
                          "tuned: time a rank (share)"],
                         [[op, (c["native"].get(op) or c["tuned"].get(op) or {}).get("calls"),
                           cell(c["native"].get(op)), cell(c["tuned"].get(op))]
                          for op in ops]))
    pw = doc.get("program_wall") or {}
    if pw.get("native") is not None and pw.get("tuned") is not None:
        out.append(f"<p>The program's own time (MPI_Init to MPI_Finalize, slowest rank) in the "
                   f"profiled runs: native {pw['native']:.3f} s of {pw['native_run_s']:.3f} s "
                   f"from launch to exit, tuned {pw['tuned']:.3f} s of "
                   f"{pw['tuned_run_s']:.3f} s.</p>")
    if doc.get("algorithms"):
        if doc.get("algorithms_source") == "table":
            out.append("<p>Without a profile: the algorithms the verified table chooses for "
                       "those calls (the drop-in's lookup rule), not measured.</p>")
        out.append(table(["operation", "ranks", "size", "algorithm", "segment", "calls"],
                         [[a["op"], a["comm_size"], fmt_size(a["bytes"]), a["algorithm"],
                           fmt_size(a["segsize"]) if a["segsize"] else "-", a["calls"]]
                          for a in doc["algorithms"]]))
    t = doc.get("tuning") or {}
    skipped = "".join(f"<li>{esc(k['point'])}: {esc(k['reason'])}</li>"
                      for k in t.get("skipped") or [])
    out.append(f"<p>Tuned {esc(t.get('tuned'))} of {esc(t.get('points'))} points; the "
               f"verification made {esc(t.get('corrections'))} correction(s).</p>"
               + (f"<ul>{skipped}</ul>" if skipped else ""))
    ld = doc.get("load") or {}
    if ld.get("max") is not None:
        out.append(f"<p>Load (1-minute average) during the runs: {ld['min']:.2f} to "
                   f"{ld['max']:.2f} on {esc(ld.get('cores'))} core(s).</p>")
    if ld.get("warning"):
        out.append(f"<p class='warn'>{esc(ld['warning'])}</p>")
    out.append(_runs_html(doc.get("runs") or []))
    return "\n".join(out)


def _runs_html(runs: list[dict]) -> str:
    from ..render.html import table

    if not runs:
        return ""
    return table(["#", "round", "variant", "warm-up", "wall (s)", "metric", "load"],
                 [[r.get("index"), r.get("round"), r.get("variant") or r.get("algorithm"),
                   "yes" if r.get("warmup") else "", r.get("wall_s"), r.get("metric"),
                   r.get("load")] for r in runs])
