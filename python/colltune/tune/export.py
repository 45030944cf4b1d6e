"""Export a tuning table (docs/TABLE.md) to the rule files Open MPI and MPICH read
(docs/EXPORT.md): Open MPI coll/tuned's classic dynamic rules file and its JSON rules file,
and MPICH's collective selection (CSEL) JSON tree.

Each table entry becomes a rule that holds over the range of communicator sizes and message
sizes that colltune's own lookup would send to it (table.ranges: boundaries at the geometric
mean of neighbouring keys), so the library picks what the drop-in would pick."""

from __future__ import annotations

import argparse
import json
import sys

from ..core.args import add_output, add_table
from ..core.colls import CLASSIC
from ..core.files import write_atomic
from . import table as tbl

# ---- Open MPI (coll/tuned, 5.0) ----------------------------------------------------------
# Collective ids: the COLLTYPE enum of ompi/mca/coll/base/coll_base_functions.h.
OMPI_COLL_ID = {"allgather": 0, "allreduce": 2, "alltoall": 3, "barrier": 6, "bcast": 7,
                "gather": 9, "reduce": 11, "scatter": 15}
# colltune algorithm -> (number, name) of coll_tuned_<op>_algorithm (ompi_info --param coll
# tuned --level 9 of 5.0.11). 0 ("ignore") = Open MPI's own fixed decision.
OMPI_ALGORITHMS: dict[str, dict[str, tuple[int, str]]] = {
    "bcast": {"linear": (1, "basic_linear"), "chain": (2, "chain"), "pipeline": (3, "pipeline"),
              "binary": (5, "binary_tree"), "binomial": (6, "binomial"),
              "knomial": (7, "knomial"), "scatter_allgather": (9, "scatter_allgather_ring")},
    "reduce": {"linear": (1, "linear"), "chain": (2, "chain"), "binary": (4, "binary"),
               "binomial": (5, "binomial"), "rabenseifner": (7, "rabenseifner")},
    "allreduce": {"reduce_bcast": (2, "nonoverlapping"),
                  "recursive_doubling": (3, "recursive_doubling"), "ring": (4, "ring"),
                  "rabenseifner": (6, "rabenseifner")},
    "scatter": {"linear": (1, "basic_linear"), "binomial": (2, "binomial")},
    "gather": {"linear": (1, "basic_linear"), "binomial": (2, "binomial")},
    "allgather": {"gather_bcast": (1, "linear"), "bruck": (2, "bruck"),
                  "recursive_doubling": (3, "recursive_doubling"), "ring": (4, "ring")},
    "alltoall": {"pairwise": (2, "pairwise"), "bruck": (3, "modified_bruck")},
    "barrier": {"ring": (2, "double_ring"), "binomial": (6, "tree"),
                "dissemination": (4, "bruck")},
}
# The fan-in/out a colltune algorithm implies (a single chain; binary tree; k-nomial radix 4).
OMPI_FANINOUT = {"chain": 1, "pipeline": 1, "binary": 2, "knomial": 4}
OMPI_DEFAULT = (0, "ignore")

# ---- MPICH (CSEL, 5.0) -------------------------------------------------------------------
MPICH_ALGORITHMS: dict[str, dict[str, str]] = {
    "bcast": {"binomial": "MPIR_Bcast_intra_binomial",
              "scatter_allgather": "MPIR_Bcast_intra_scatter_ring_allgather"},
    "reduce": {"binomial": "MPIR_Reduce_intra_binomial",
               "rabenseifner": "MPIR_Reduce_intra_reduce_scatter_gather"},
    "allreduce": {"recursive_doubling": "MPIR_Allreduce_intra_recursive_doubling",
                  "ring": "MPIR_Allreduce_intra_ring",
                  "rabenseifner": "MPIR_Allreduce_intra_reduce_scatter_allgather"},
    "scatter": {"binomial": "MPIR_Scatter_intra_binomial"},
    "gather": {"binomial": "MPIR_Gather_intra_binomial"},
    "allgather": {"ring": "MPIR_Allgather_intra_ring",
                  "recursive_doubling": "MPIR_Allgather_intra_recursive_doubling",
                  "bruck": "MPIR_Allgather_intra_brucks"},
    "alltoall": {"pairwise": "MPIR_Alltoall_intra_pairwise",
                 "bruck": "MPIR_Alltoall_intra_brucks"},
    "barrier": {"dissemination": "MPIR_Barrier_intra_dissemination"},
}
# How the message size of a table entry becomes the size MPICH's tree tests: the key, and
# whether the table's per-rank block is multiplied by the communicator size.
MPICH_SIZE_KEY = {"bcast": ("avg_msg_size", False), "reduce": ("avg_msg_size", False),
                  "allreduce": ("avg_msg_size", False), "alltoall": ("avg_msg_size", False),
                  "allgather": ("total_msg_size", True), "gather": ("total_msg_size", True),
                  "scatter": ("total_msg_size", True), "barrier": (None, False)}
# MPICH reads nothing but the file: a collective the file does not name aborts the program
# when called (assertion `cnt` in mpir_coll.c). Every collective the table does not tune
# gets this fallback, valid for intra- and intercommunicators of any size.
MPICH_FALLBACK = {
    **{c: f"MPIR_{c.capitalize()}_allcomm_nb" for c in (
        "allgather", "allgatherv", "allreduce", "alltoall", "alltoallv", "alltoallw",
        "barrier", "bcast", "exscan", "gather", "gatherv", "reduce", "reduce_scatter",
        "reduce_scatter_block", "scan", "scatter", "scatterv", "neighbor_allgather",
        "neighbor_allgatherv", "neighbor_alltoall", "neighbor_alltoallv",
        "neighbor_alltoallw")},
}
# Nonblocking collectives (MPICH also runs some inside MPI_Init and communicator creation):
# (intracommunicator, intercommunicator) algorithm; one name = valid for both.
MPICH_FALLBACK_NB = {
    "ibarrier": ("MPIR_Ibarrier_intra_sched_recursive_doubling", "MPIR_Ibarrier_inter_sched_bcast"),
    "iallreduce": ("MPIR_Iallreduce_intra_sched_recursive_doubling",
                   "MPIR_Iallreduce_inter_sched_remote_reduce_local_bcast"),
    "iallgather": ("MPIR_Iallgather_intra_sched_ring",
                   "MPIR_Iallgather_inter_sched_local_gather_remote_bcast"),
    "iallgatherv": ("MPIR_Iallgatherv_intra_sched_ring",
                    "MPIR_Iallgatherv_inter_sched_remote_gather_local_bcast"),
    "ibcast": ("MPIR_Ibcast_intra_sched_binomial", "MPIR_Ibcast_inter_sched_flat"),
    "ireduce": ("MPIR_Ireduce_intra_sched_binomial",
                "MPIR_Ireduce_inter_sched_local_reduce_remote_send"),
    "ireduce_scatter": ("MPIR_Ireduce_scatter_intra_sched_noncommutative",
                        "MPIR_Ireduce_scatter_inter_sched_remote_reduce_local_scatterv"),
    "ireduce_scatter_block": (
        "MPIR_Ireduce_scatter_block_intra_sched_noncommutative",
        "MPIR_Ireduce_scatter_block_inter_sched_remote_reduce_local_scatterv"),
    "igather": ("MPIR_Igather_intra_sched_binomial", "MPIR_Igather_inter_sched_long"),
    "iscatter": ("MPIR_Iscatter_intra_sched_binomial", "MPIR_Iscatter_inter_sched_linear"),
    "igatherv": ("MPIR_Igatherv_allcomm_sched_linear",),
    "iscatterv": ("MPIR_Iscatterv_allcomm_sched_linear",),
    "iexscan": ("MPIR_Iexscan_intra_sched_recursive_doubling",),
    "iscan": ("MPIR_Iscan_intra_sched_recursive_doubling",),
    "ialltoall": ("MPIR_Ialltoall_intra_sched_pairwise",
                  "MPIR_Ialltoall_inter_sched_pairwise_exchange"),
    "ialltoallv": ("MPIR_Ialltoallv_intra_sched_blocked",
                   "MPIR_Ialltoallv_inter_sched_pairwise_exchange"),
    "ialltoallw": ("MPIR_Ialltoallw_intra_sched_blocked",
                   "MPIR_Ialltoallw_inter_sched_pairwise_exchange"),
    **{f"ineighbor_{c}": (f"MPIR_Ineighbor_{c}_allcomm_sched_linear",)
       for c in ("allgather", "allgatherv", "alltoall", "alltoallv", "alltoallw")},
}
# The size at which Open MPI 5.0 keys each collective's rules (coll_tuned_decision_dynamic.c):
# the whole message for bcast/reduce/allreduce, ranks * block for allgather/alltoall; for
# gather and scatter it is type size * ranks (the count is ignored), so a table's
# message-size ranges cannot be expressed there: only one rule per comm size is written.
OMPI_SCALED = {"allgather", "alltoall"}
OMPI_ONE_SIZE = {"gather", "scatter", "barrier"}


def _by_op(doc: dict) -> dict[str, dict[int, list[dict]]]:
    """op -> ranks -> entries ascending by size, the classic operations in their order (the
    libraries' rule files have no place for the others)."""
    out: dict[str, dict[int, list[dict]]] = {}
    for op in CLASSIC:
        entries = [e for e in doc["entries"] if e["op"] == op]
        if entries:
            out[op] = {r: sorted((e for e in entries if e["ranks"] == r),
                                 key=lambda e: e["size_bytes"])
                       for r in sorted({e["ranks"] for e in entries})}
    return out


def _comm_ranges(per_ranks: dict) -> list[tuple[int, int, int | None]]:
    return tbl.ranges(sorted(per_ranks))


def _size_rules(op: str, ranks: int, entries: list[dict], mapped) -> list[tuple[int, dict]]:
    """(first size, entry) per message-size range; adjacent ranges with the same result are
    merged."""
    if op in OMPI_ONE_SIZE and mapped is ompi_algorithm:
        # one rule: the entry nearest the middle of the tuned sizes stands for all sizes
        entries = [tbl.lookup({"entries": entries}, op, ranks,
                              entries[len(entries) // 2]["size_bytes"])]
    out: list[tuple[int, dict]] = []
    for key, lo, _ in tbl.ranges([e["size_bytes"] for e in entries]):
        e = next(x for x in entries if x["size_bytes"] == key)
        if op in OMPI_SCALED and mapped is ompi_algorithm and lo:
            lo *= ranks
        if out and mapped(op, out[-1][1]) == mapped(op, e):
            continue
        out.append((lo, e))
    return out


def ompi_algorithm(op: str, e: dict) -> tuple[int, str, int, int]:
    """(number, name, faninout, segsize) of an entry for Open MPI; unknown -> 0 (default)."""
    num, name = OMPI_ALGORITHMS.get(op, {}).get(e["algorithm"], OMPI_DEFAULT)
    if num == 0:
        return 0, name, 0, 0
    return num, name, OMPI_FANINOUT.get(e["algorithm"], 0), e["segsize"]


def export_ompi_rules(doc: dict) -> str:
    """Open MPI coll/tuned classic dynamic rules (coll_tuned_dynamic_rules_filename)."""
    by_op = _by_op(doc)
    lines = [f"{len(by_op)}   # collectives"]
    for op, per_ranks in by_op.items():
        lines.append(f"{OMPI_COLL_ID[op]}   # {op}")
        lines.append(f"{len(per_ranks)}   # communicator sizes")
        for ranks, lo, _ in _comm_ranges(per_ranks):
            rules = _size_rules(op, ranks, per_ranks[ranks], ompi_algorithm)
            lines.append(f"{lo}   # comm size (tuned at {ranks} ranks)")
            lines.append(f"{len(rules)}   # message sizes")
            for first, e in rules:
                num, name, fan, seg = ompi_algorithm(op, e)
                lines.append(f"{first} {num} {fan} {seg}   # {e['algorithm']} -> {name}")
    return "\n".join(lines) + "\n"


def export_ompi_json(doc: dict) -> str:
    """Open MPI coll/tuned JSON rules (the format of Open MPI 6.0; 5.0.x reads only the
    classic file)."""
    collectives: dict[str, list] = {}
    for op, per_ranks in _by_op(doc).items():
        comm_rules = []
        for ranks, lo, hi in _comm_ranges(per_ranks):
            rules = _size_rules(op, ranks, per_ranks[ranks], ompi_algorithm)
            msg = []
            for i, (first, e) in enumerate(rules):
                num, name, fan, seg = ompi_algorithm(op, e)
                rule = {"msg_size_min": first}
                if i + 1 < len(rules):
                    rule["msg_size_max"] = rules[i + 1][0] - 1
                rule.update(alg=name, faninout=fan, seg_size=seg)
                msg.append(rule)
            comm = {"comm_size_min": lo}
            if hi is not None:
                comm["comm_size_max"] = hi
            comm["rules"] = msg
            comm_rules.append(comm)
        collectives[op] = comm_rules
    return json.dumps({"collectives": collectives}, indent=2) + "\n"


def mpich_algorithm(op: str, e: dict) -> str | None:
    """MPICH's algorithm for an entry, or None (no counterpart: the entry is left out and
    the neighbouring rules cover its sizes)."""
    return MPICH_ALGORITHMS.get(op, {}).get(e["algorithm"])


def _leaf(name: str) -> dict:
    return {f"algorithm={name}": {}}


def _alltoall_in_place(node: dict) -> dict:
    """MPICH's alltoall algorithms but one assert on MPI_IN_PLACE (seen with 5.0.2: the
    scheduled pairwise behind allcomm_nb): in-place calls go to the one made for them."""
    intra = node.get("comm_type=intra", node) if isinstance(node, dict) else node
    inter = node.get("comm_type=inter", _leaf("MPIR_Alltoall_allcomm_nb"))
    return {"comm_type=intra": {
        "is_sendbuf_inplace=yes": _leaf("MPIR_Alltoall_intra_pairwise_sendrecv_replace"),
        "is_sendbuf_inplace=no": intra}, "comm_type=inter": inter}


def export_mpich_json(doc: dict, base: dict | None = None) -> str:
    """MPICH collective selection tree (MPIR_CVAR_COLL_SELECTION_TUNING_JSON_FILE).
    `base`: a complete tree (e.g. MPICH's default) whose intracommunicator branches the
    tuned collectives replace; without it, untuned collectives get MPICH_FALLBACK."""
    if base:
        tree: dict = dict(base)
    else:
        tree = {f"collective={c}": _leaf(a) for c, a in MPICH_FALLBACK.items()}
        for c, names in MPICH_FALLBACK_NB.items():
            tree[f"collective={c}"] = _leaf(names[0]) if len(names) == 1 else {
                "comm_type=intra": _leaf(names[0]), "comm_type=inter": _leaf(names[1])}
    for op, per_ranks in _by_op(doc).items():
        mapped = {r: [e for e in es if mpich_algorithm(op, e)] for r, es in per_ranks.items()}
        mapped = {r: es for r, es in mapped.items() if es}
        if not mapped:
            continue
        key, scaled = MPICH_SIZE_KEY[op]
        intra: dict = {}
        ranges = tbl.ranges(sorted(mapped))
        for ranks, _, hi in ranges:
            rules = _size_rules(op, ranks, mapped[ranks], mpich_algorithm)
            if key is None or len(rules) == 1:
                branch = _leaf(mpich_algorithm(op, rules[0][1]))
            else:
                branch = {}
                for i, (_, e) in enumerate(rules):
                    last = i + 1 == len(rules)
                    bound = rules[i + 1][0] - 1 if not last else None
                    if bound is not None and scaled:
                        bound = (bound + 1) * ranks - 1
                    cond = f"{key}=any" if last else f"{key}<={bound}"
                    branch[cond] = _leaf(mpich_algorithm(op, e))
            intra["comm_size=any" if hi is None else f"comm_size<={hi}"] = branch
        old = tree.get(f"collective={op}", {})
        inter = old.get("comm_type=inter") if isinstance(old, dict) else None
        new = {"comm_type=intra": intra}
        new["comm_type=inter"] = inter or _leaf(f"MPIR_{op.capitalize()}_allcomm_nb")
        tree[f"collective={op}"] = new
    if not base:
        tree["collective=alltoall"] = _alltoall_in_place(tree["collective=alltoall"])
    needs_builtin = any(e["op"] == "reduce" and e["algorithm"] == "rabenseifner"
                        for e in doc.get("entries", []))
    for op, safe in (("reduce", "MPIR_Reduce_intra_binomial"),) if needs_builtin else ():
        node = tree.get(f"collective={op}")
        if isinstance(node, dict) and "comm_type=intra" in node:
            # Rabenseifner (reduce_scatter_gather) asserts a built-in operation in MPICH
            # 5.0.2: user-defined operations go to an algorithm that takes any.
            node["comm_type=intra"] = {"is_op_built_in=yes": node["comm_type=intra"],
                                       "is_op_built_in=no": _leaf(safe)}
    return json.dumps(tree, indent=2) + "\n"


FORMATS = {"ompi": export_ompi_rules, "ompi-json": export_ompi_json,
           "mpich": export_mpich_json}


def known_algorithms() -> dict[str, list[str]] | None:
    """colltune's algorithm names per operation (native included), from the build's
    registry; None when there is no build to ask."""
    from ..core.mpi import MPIBuild, MPIError

    try:
        registry = MPIBuild.select().registry()
    except (MPIError, OSError):
        return None
    out: dict[str, list[str]] = {}
    for a in registry:
        out.setdefault(a["coll"], []).append(a["name"])
    return out


def _check_algorithms(doc: dict, where: str) -> None:
    """TableFileError for the first entry whose algorithm colltune does not have."""
    known = known_algorithms()
    if known is None:
        return
    for i, e in enumerate(doc["entries"]):
        names = known.get(e["op"], [])
        if e["algorithm"] not in names:
            raise tbl.TableFileError(
                f"{where}: entries[{i}].algorithm: unknown {e['op']} algorithm "
                f"{e['algorithm']!r}; allowed: {', '.join(names)}")


def cmd_export(args: argparse.Namespace) -> int:
    try:
        doc = tbl.load(args.table)
        base = None
        if args.mpich_base:
            base = json.loads(open(args.mpich_base).read())
        _check_algorithms(doc, args.table)
    except RecursionError:
        print(f"colltune export-rules: {args.mpich_base}: JSON nested too deeply",
              file=sys.stderr)
        return 2
    except (tbl.TableFileError, OSError, json.JSONDecodeError) as e:
        print(f"colltune export-rules: {e}", file=sys.stderr)
        return 2
    text = (export_mpich_json(doc, base) if args.format == "mpich"
            else FORMATS[args.format](doc))
    if args.output in (None, "-"):
        sys.stdout.write(text)
    else:
        write_atomic(args.output, text)
    return 0


def register(sub) -> None:
    p = sub.add_parser("export-rules", help="tuning table -> Open MPI / MPICH rule file",
                       description="Turn a colltune tuning table into the rule file Open MPI "
                       "(coll/tuned dynamic rules, classic or JSON) or MPICH (collective "
                       "selection JSON) reads; see docs/EXPORT.md.")
    add_table(p, "colltune-table/1 JSON file (needed)", positional=True)
    p.add_argument("--format", required=True, choices=sorted(FORMATS),
                   help="the rule file to write (docs/EXPORT.md)")
    add_output(p, "the rule file to write (default: stdout)")
    p.add_argument("--mpich-base", help="mpich: a complete selection tree to start from "
                   "(untuned collectives keep its choices)")
    p.set_defaults(func=cmd_export)
