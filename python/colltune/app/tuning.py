"""The one place `colltune app` asks the tuner for a table: `tune_points`.

It tunes exactly the points given ({op, form, comm_size, bytes}), in the order given (the
most time first), until the budget is spent, and says for every point left out why. Today it
drives `colltune tune`'s own loop (tune.run_tuning) one point at a time, so that the budget
is checked between points; the tuner of this version has blocking forms only, so the
non-blocking and persistent points are left out with that reason. When the tuner takes a
list of points of every form within a budget, this function calls it instead: its callers
and its return value stay.
"""

from __future__ import annotations

import time
from pathlib import Path

from ..core.colls import COLLS
from ..core.files import Terminated
from ..core.mpi import MPIBuild
from .profile import table_op

# MGD (the paper's modified gradient descent) measures a handful of segment sizes per
# algorithm, not all of them: the cheapest search that still looks at every algorithm.
STRATEGY = "mgd"


def tune_points(build: MPIBuild, points: list[dict], *, budget_s: float, output: str | Path,
                iters: int = 20, log=None) -> dict:
    """Tunes `points` ([{op, form, comm_size, bytes}, ...], in this order) into the table
    at `output` within about `budget_s` seconds (a point under way is finished).
    Returns {"table": doc or None, "output": path, "tuned": [points], "skipped": [{point,
    reason}], "elapsed_s", "measurements", "status": complete|interrupted|failed}."""
    from ..tune import tune as tuner

    say = log or (lambda text: None)
    output = Path(output)
    output.unlink(missing_ok=True)  # a fresh table: run_tuning would resume an old one
    registry = build.registry()
    started = time.monotonic()
    tuned: list[dict] = []
    skipped: list[dict] = []
    done: list[tuple[str, int, int]] = []
    doc, measurements, status = None, 0, "complete"
    for i, p in enumerate(points):
        form = p.get("form", "blocking")
        name = table_op(p["op"], form)
        if form != "blocking":
            skipped.append({"point": p, "reason": f"this colltune's tuner has no {form} form "
                                                  f"({name})"})
            continue
        if p["op"] not in COLLS:
            skipped.append({"point": p, "reason": f"{p['op']} is not an operation colltune "
                                                  "tunes"})
            continue
        spent = time.monotonic() - started
        if spent >= budget_s:
            skipped.append({"point": p, "reason": f"the budget of {budget_s:g} s was spent"})
            continue
        key = (p["op"], int(p["comm_size"]), 0 if p["op"] == "barrier" else int(p["bytes"]))
        if key in done:  # two profile points, one table entry (barrier's sizes)
            tuned.append(p)
            continue
        say(f"tuning {name} {key[1]} ranks {key[2]} B ({i + 1} of {len(points)}, "
            f"{spent:.0f} of {budget_s:g} s spent)")
        # Each call resumes the table of the ones before and tunes only the new point.
        doc, evals, _, status = tuner.run_tuning(build, registry, [*done, key], STRATEGY,
                                                 output=str(output), iters=iters)
        measurements += evals
        # run_tuning keeps what it tuned and returns on Ctrl-C or SIGTERM: the study above
        # must stop too, so the interruption goes on up.
        if status == "interrupted":
            raise KeyboardInterrupt
        if status == "terminated":
            raise Terminated
        if status != "complete":
            skipped += [{"point": q, "reason": f"tuning failed at {name}"}
                        for q in points[i:]]
            break
        done.append(key)
        tuned.append(p)
    return {"table": doc, "output": str(output) if doc else None, "tuned": tuned,
            "skipped": skipped, "elapsed_s": round(time.monotonic() - started, 3),
            "measurements": measurements, "status": status, "strategy": STRATEGY,
            "iters": iters, "budget_s": budget_s}
