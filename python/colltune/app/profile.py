"""What a program's collective profile says: the points it used, the order to tune them in,
the time and share of the run per operation, and which algorithm served which calls.

The profile is the drop-in's (COLLTUNE_PROFILE=on), written at MPI_Finalize under the key
"profile" of the monitor record (COLLTUNE_MONITOR_OUT), schema colltune-profile/1: one
point per {operation, form, communicator size, power-of-two size, algorithm, segment size}
with `calls` per communicator, `rank_calls` and `time_total_s` summed over the ranks.

A drop-in without the profile still counts, per operation, the calls that went to the MPI
library and their bytes (the monitor's `native` counters, level count). From those this
module makes approximate points, said as such: one blocking point per operation at its mean
size, no times, no algorithms. Pure functions: the tests give them documents.
"""

from __future__ import annotations

import math

PROFILE_SCHEMA = "colltune-profile/1"
FORMS = ("blocking", "nonblocking", "persistent")
SOURCE_PROFILE = "profile"
SOURCE_COUNTERS = "monitor counters"


def pow2_floor(n: int) -> int:
    """The power of two at or below n (0 for 0): the drop-in's size bucket."""
    return 0 if n <= 0 else 1 << (int(n).bit_length() - 1)


def table_op(op: str, form: str) -> str:
    """The name a tuning table gives an operation in a form (docs/TABLE.md): the blocking
    name, "i" + name for the non-blocking form (as `colltune tune-nbc` writes them), name +
    "_init" for the persistent form."""
    if form == "nonblocking":
        return "i" + op
    if form == "persistent":
        return op + "_init"
    return op


def point_key(p: dict) -> tuple[str, str, int, int]:
    """(op, form, communicator size, bytes): what the tuner tunes, whatever the algorithm."""
    return (p["op"], p.get("form", "blocking"), int(p["comm_size"]), int(p["bytes"]))


def has_profile(doc: dict) -> bool:
    prof = doc.get("profile") if isinstance(doc, dict) else None
    return isinstance(prof, dict) and prof.get("schema") == PROFILE_SCHEMA


def profile_points(doc: dict) -> tuple[list[dict], str]:
    """The points of a monitor record and where they come from (SOURCE_PROFILE or
    SOURCE_COUNTERS). Raises ValueError when the record has neither."""
    if has_profile(doc):
        return [dict(p) for p in doc["profile"].get("points") or []], SOURCE_PROFILE
    ranks = doc.get("per_rank") if isinstance(doc, dict) else None
    if not ranks:
        raise ValueError("the monitor record has no collective profile and no per-rank "
                         "counters")
    n = int(doc.get("ranks") or len(ranks))
    # Every rank of the world makes a collective call on MPI_COMM_WORLD; rank 0's counts are
    # the communicator's (other communicators cannot be told apart here).
    native = ranks[0].get("native") or {}
    points = []
    for op, v in native.items():
        calls = int(v.get("calls") or 0)
        if calls <= 0:
            continue
        total = float(v.get("bytes") or 0)
        # The mean of 8 B calls and one 4 B call is just under 8 B: the nearest power of two
        # (in log scale) is the size most calls had, the one below it may be none's.
        mean = total / calls
        bucket = 0 if mean < 1 else 1 << round(math.log2(mean))
        points.append({"op": op, "form": "blocking", "comm_size": n, "bytes": bucket,
                       "algorithm": "native",
                       "segsize": 0, "calls": calls, "rank_calls": calls * n,
                       "bytes_total": int(total) * n, "time_total_s": None,
                       "approximate": True})
    return points, SOURCE_COUNTERS


def merge_algorithms(points: list[dict]) -> list[dict]:
    """One point per (op, form, comm_size, bytes), its algorithms' counts and times summed:
    the counts a program made, whichever algorithm served them."""
    out: dict[tuple, dict] = {}
    for p in points:
        key = point_key(p)
        m = out.get(key)
        if m is None:
            out[key] = m = {"op": key[0], "form": key[1], "comm_size": key[2],
                            "bytes": key[3], "calls": 0, "rank_calls": 0, "inits": 0,
                            "bytes_total": 0, "time_total_s": None}
        for k in ("calls", "rank_calls", "inits", "bytes_total"):
            m[k] += int(p.get(k) or 0)
        if p.get("time_total_s") is not None:
            m["time_total_s"] = (m["time_total_s"] or 0.0) + float(p["time_total_s"])
    return list(out.values())


def tune_order(points: list[dict]) -> list[dict]:
    """The points to tune, most time spent first (the bytes moved where no time is known),
    each once: [{op, form, comm_size, bytes, time_total_s, calls}]."""
    merged = merge_algorithms(points)
    return sorted(merged, key=lambda p: (-(p["time_total_s"] or 0.0), -p["bytes_total"],
                                         p["op"], p["form"], p["comm_size"], p["bytes"]))


def per_operation(points: list[dict], ranks: int, wall_s: float | None) -> dict[str, dict]:
    """Per operation (forms apart: "iallreduce", "allgather_init"): calls, the time a rank
    spent in it on average (time summed over the ranks / world size) and its share of the
    run's wall time. Time and share are None where the profile has no times."""
    out: dict[str, dict] = {}
    for p in points:
        name = table_op(p["op"], p.get("form", "blocking"))
        o = out.setdefault(name, {"calls": 0, "time_s": None, "share": None})
        o["calls"] += int(p.get("calls") or 0)
        if p.get("time_total_s") is not None:
            o["time_s"] = (o["time_s"] or 0.0) + float(p["time_total_s"]) / max(1, ranks)
    for o in out.values():
        if o["time_s"] is not None and wall_s:
            o["share"] = o["time_s"] / wall_s
    return out


def collective_total(ops: dict[str, dict]) -> tuple[float | None, float | None]:
    """The time in collectives a rank spent (all operations) and its share of the run."""
    times = [o["time_s"] for o in ops.values() if o["time_s"] is not None]
    shares = [o["share"] for o in ops.values() if o["share"] is not None]
    return (sum(times) if times else None, sum(shares) if shares else None)


def algorithms_served(points: list[dict]) -> list[dict]:
    """Which algorithm served which calls: one row per point and algorithm, the most calls
    first within an operation."""
    rows = [{"op": table_op(p["op"], p.get("form", "blocking")), "comm_size": p["comm_size"],
             "bytes": p["bytes"], "algorithm": p.get("algorithm") or "native",
             "segsize": int(p.get("segsize") or 0), "calls": int(p.get("calls") or 0),
             "time_total_s": p.get("time_total_s")} for p in points]
    return sorted(rows, key=lambda r: (r["op"], r["comm_size"], r["bytes"], -r["calls"]))


def run_wall(doc: dict) -> float | None:
    """The run's wall time from the monitor record: the slowest rank's, MPI_Init to
    MPI_Finalize."""
    ranks = doc.get("per_rank") if isinstance(doc, dict) else None
    walls = [float(r["wall_s"]) for r in ranks or [] if r.get("wall_s") is not None]
    return max(walls) if walls else None


def mpi_share(doc: dict) -> float | None:
    """The share of the run inside MPI (all calls, the monitor's counters): what a record
    without a profile can say about the collectives' weight."""
    ranks = doc.get("per_rank") if isinstance(doc, dict) else None
    if not ranks:
        return None
    pairs = [(float(r["mpi_s"]), float(r["wall_s"])) for r in ranks
             if r.get("mpi_s") is not None and r.get("wall_s")]
    return max(m / w for m, w in pairs) if pairs else None
