"""The one place `colltune app` asks the tuner for a table: `tune_points`.

It tunes exactly the points given ({op, form, comm_size, bytes}), in the order given (the
most time first), until the budget is spent, and says for every point left out why. It
hands them to the tuner's own entry point for a list of points of every form
(tune.tune_points: blocking, non-blocking and persistent, each confirmed against native
as `colltune tune` does), the budget checked between points.
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
    reason}], "elapsed_s", "measurements", "status": complete|failed}; Ctrl-C and SIGTERM
    go on up."""
    from ..tune import tune as tuner

    say = log or (lambda text: None)
    output = Path(output)
    output.unlink(missing_ok=True)  # a fresh table: run_tuning would resume an old one
    started = time.monotonic()
    skipped: list[dict] = []
    keys: dict[tuple[str, int, int], list[dict]] = {}  # table point -> its profile points
    todo: list[dict] = []
    for p in points:
        form = p.get("form", "blocking")
        name = table_op(p["op"], form)
        if p["op"] not in COLLS:
            skipped.append({"point": p, "reason": f"{p['op']} is not an operation colltune "
                                                  "tunes"})
        elif int(p["bytes"]) == 0 and p["op"] != "barrier":
            # an empty message (a rank with nothing to send): no algorithm moves it faster,
            # and the measurement program takes sizes from 1 B
            skipped.append({"point": p, "reason": "0-byte calls: nothing to tune"})
        else:
            # barrier has one entry whatever the profile's sizes
            key = (name, int(p["comm_size"]), 0 if p["op"] == "barrier" else int(p["bytes"]))
            if key not in keys:
                todo.append({"op": p["op"], "form": form, "comm_size": int(p["comm_size"]),
                             "bytes": key[2]})
            keys.setdefault(key, []).append(p)
    order = list(keys)

    def on_point(doc: dict, done: int, total: int) -> None:
        if done < total:
            op, n, size = order[done]
            say(f"tuning {op} {n} ranks {size} B ({done + 1} of {total}, "
                f"{time.monotonic() - started:.0f} of {budget_s:g} s spent)")

    doc, status = None, "complete"
    if order:
        doc, status = tuner.tune_points(build, todo, output=str(output), budget_s=budget_s,
                                        strategy=STRATEGY, iters=iters, on_point=on_point)
        # the tuner keeps what it tuned and returns on Ctrl-C or SIGTERM: the study above
        # must stop too, so the interruption goes on up.
        if status == "interrupted":
            raise KeyboardInterrupt
        if status == "terminated":
            raise Terminated
    entries = {(e["op"], e["ranks"], e["size_bytes"]) for e in (doc or {}).get("entries", [])}
    tuned = [p for k in order if k in entries for p in keys[k]]
    why = ("the tuning failed (see above)" if status == "failed"
           else f"the budget of {budget_s:g} s was spent")
    skipped += [{"point": p, "reason": why} for k in order if k not in entries for p in keys[k]]
    return {"table": doc, "output": str(output) if doc else None, "tuned": tuned,
            "skipped": skipped, "elapsed_s": round(time.monotonic() - started, 3),
            "measurements": sum(int(e.get("evaluations") or 0)
                                for e in (doc or {}).get("entries", [])),
            "status": status, "strategy": STRATEGY, "iters": iters, "budget_s": budget_s}
