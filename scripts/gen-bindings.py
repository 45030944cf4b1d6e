#!/usr/bin/env python3
"""Generates colltune's collective bindings from one list (issue 35).

From src/interpose/collectives.def (a row per MPI collective) this writes:
  src/interpose/bindings.c  the drop-in's C entry points (MPI_Bcast, MPI_Ibcast,
                            MPI_Bcast_init and the _c forms of each) and its name tables
  src/public/public.c       the public ct_* collectives (ct_bcast, ct_ibcast, ...)
  include/colltune.h        their declarations, between the gen-bindings markers (the
                            header's other text, its documentation, stays hand-written)

What is not mechanical stays hand-written and is only called from here: the choice and
dispatch (ct_dropin_intercept in pmpi.c, ct_dropin_intercept_v in pmpi_v.c,
ct_dropin_plan in pmpi_persistent.c), the wait and test family, MPI_Init/Finalize, the
monitor's point-to-point wrappers and the Fortran conversions (fortran.c).

  scripts/gen-bindings.py           rewrite the generated files
  scripts/gen-bindings.py --check   exit 1 (saying which) when one is stale, or when the
                                    list's fortran column disagrees with fortran.c

Python 3.11, standard library only.
"""

from __future__ import annotations

import argparse
import difflib
import re
import sys
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
LIST = "src/interpose/collectives.def"
BINDINGS = "src/interpose/bindings.c"
PUBLIC = "src/public/public.c"
HEADER = "include/colltune.h"
FORTRAN = "src/interpose/fortran.c"
WIDTH = 100

# ---- Argument families -------------------------------------------------------------
#
# params: the C parameters of the blocking form, with COUNT for a scalar count (int, or
#   MPI_Count in the _c forms), COUNTS / DISPLS for the per-rank arrays (int, or
#   MPI_Count / MPI_Aint).
# call: ct_call's fields from sendbuf to comm (coll first and request last are added).
# vargs: ct_vargs (sendcounts, sdispls, recvcounts, rdispls), or None: the family has no
#   per-rank arrays, and its calls pass none.
# send, recv: where the arrays of that side mean something, for the _c forms'
#   conversion: "always", "root" (only at the root: elsewhere they may be garbage) or
#   "not_in_place" (ignored when sendbuf is MPI_IN_PLACE).

NOTHING = "NULL, 0, MPI_DATATYPE_NULL, NULL, 0, MPI_DATATYPE_NULL, MPI_OP_NULL, 0, comm"

FAMILIES: dict[str, dict] = {
    "bcast": {
        "params": "void *buf, COUNT count, MPI_Datatype datatype, int root, MPI_Comm comm",
        "call": "NULL, count, datatype, buf, count, datatype, MPI_OP_NULL, root, comm",
    },
    "reduce": {
        "params": "const void *sendbuf, void *recvbuf, COUNT count, MPI_Datatype datatype, "
                  "MPI_Op op, int root, MPI_Comm comm",
        "call": "sendbuf, count, datatype, recvbuf, count, datatype, op, root, comm",
    },
    "allreduce": {  # and scan, exscan
        "params": "const void *sendbuf, void *recvbuf, COUNT count, MPI_Datatype datatype, "
                  "MPI_Op op, MPI_Comm comm",
        "call": "sendbuf, count, datatype, recvbuf, count, datatype, op, 0, comm",
    },
    "rooted_move": {  # scatter, gather
        "params": "const void *sendbuf, COUNT sendcount, MPI_Datatype sendtype, void *recvbuf, "
                  "COUNT recvcount, MPI_Datatype recvtype, int root, MPI_Comm comm",
        "call": "sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, MPI_OP_NULL, "
                "root, comm",
    },
    "move": {  # allgather, alltoall
        "params": "const void *sendbuf, COUNT sendcount, MPI_Datatype sendtype, void *recvbuf, "
                  "COUNT recvcount, MPI_Datatype recvtype, MPI_Comm comm",
        "call": "sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, MPI_OP_NULL, 0, "
                "comm",
    },
    "barrier": {
        "params": "MPI_Comm comm",
        "call": NOTHING,
    },
    "allgatherv": {
        "params": "const void *sendbuf, COUNT sendcount, MPI_Datatype sendtype, void *recvbuf, "
                  "const COUNTS recvcounts[], const DISPLS displs[], MPI_Datatype recvtype, "
                  "MPI_Comm comm",
        "call": "sendbuf, sendcount, sendtype, recvbuf, 0, recvtype, MPI_OP_NULL, 0, comm",
        "vargs": "NULL, NULL, recvcounts, displs",
        "recv": "always",
    },
    "alltoallv": {
        "params": "const void *sendbuf, const COUNTS sendcounts[], const DISPLS sdispls[], "
                  "MPI_Datatype sendtype, void *recvbuf, const COUNTS recvcounts[], "
                  "const DISPLS rdispls[], MPI_Datatype recvtype, MPI_Comm comm",
        "call": "sendbuf, 0, sendtype, recvbuf, 0, recvtype, MPI_OP_NULL, 0, comm",
        "vargs": "sendcounts, sdispls, recvcounts, rdispls",
        "send": "not_in_place",
        "recv": "always",
    },
    "gatherv": {
        "params": "const void *sendbuf, COUNT sendcount, MPI_Datatype sendtype, void *recvbuf, "
                  "const COUNTS recvcounts[], const DISPLS displs[], MPI_Datatype recvtype, "
                  "int root, MPI_Comm comm",
        "call": "sendbuf, sendcount, sendtype, recvbuf, 0, recvtype, MPI_OP_NULL, root, comm",
        "vargs": "NULL, NULL, recvcounts, displs",
        "recv": "root",
    },
    "scatterv": {
        "params": "const void *sendbuf, const COUNTS sendcounts[], const DISPLS displs[], "
                  "MPI_Datatype sendtype, void *recvbuf, COUNT recvcount, "
                  "MPI_Datatype recvtype, int root, MPI_Comm comm",
        "call": "sendbuf, 0, sendtype, recvbuf, recvcount, recvtype, MPI_OP_NULL, root, comm",
        "vargs": "sendcounts, displs, NULL, NULL",
        "send": "root",
    },
    "reduce_scatter_block": {
        "params": "const void *sendbuf, void *recvbuf, COUNT recvcount, MPI_Datatype datatype, "
                  "MPI_Op op, MPI_Comm comm",
        "call": "sendbuf, recvcount, datatype, recvbuf, recvcount, datatype, op, 0, comm",
    },
    "reduce_scatter": {
        "params": "const void *sendbuf, void *recvbuf, const COUNTS recvcounts[], "
                  "MPI_Datatype datatype, MPI_Op op, MPI_Comm comm",
        "call": "sendbuf, 0, datatype, recvbuf, 0, datatype, op, 0, comm",
        "vargs": "NULL, NULL, recvcounts, NULL",
        "recv": "always",
    },
}

FORMS = ("b", "i", "init", "c", "ic", "init_c")
# The int copies of the per-rank arrays in the _c forms, by their place in ct_vargs.
ARRAY_VARS = ("sc", "sd", "rc", "rd")


@dataclass
class Param:
    decl: str   # with COUNT / COUNTS / DISPLS
    name: str
    kind: str   # "count" (scalar), "counts", "displs" or "other"

    def c_decl(self, large: bool) -> str:
        d = self.decl.replace("COUNTS", "MPI_Count" if large else "int")
        d = d.replace("DISPLS", "MPI_Aint" if large else "int")
        return d.replace("COUNT", "MPI_Count" if large else "int")


def parse_params(text: str) -> list[Param]:
    out = []
    for p in (s.strip() for s in text.split(",")):
        name = re.search(r"(\w+)(\[\])?$", p).group(1)
        kind = ("counts" if "COUNTS" in p else "displs" if "DISPLS" in p
                else "count" if "COUNT" in p else "other")
        out.append(Param(p, name, kind))
    return out


@dataclass
class Row:
    name: str      # Bcast
    coll: str      # CT_BCAST
    family: str
    group: str     # classic | v
    forms: list[str]
    dispatch: dict[str, str]  # form (b, i) -> dispatcher
    c_native: str  # plain | counted
    fortran: list[str]
    doc: str       # "" for none

    @property
    def lower(self) -> str:
        return self.name.lower()

    @property
    def fam(self) -> dict:
        return FAMILIES[self.family]

    @property
    def params(self) -> list[Param]:
        return parse_params(self.fam["params"])

    @property
    def vargs(self) -> list[str] | None:
        v = self.fam.get("vargs")
        return [s.strip() for s in v.split(",")] if v else None


def read_list(path: Path) -> list[Row]:
    rows = []
    for n, line in enumerate(path.read_text().splitlines(), 1):
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        f = line.split(None, 8)
        if len(f) != 9:
            sys.exit(f"{path}:{n}: expected 9 columns, got {len(f)}")
        name, coll, family, group, forms, dispatch, c_native, fortran, doc = f
        where = f"{path}:{n}"
        if family not in FAMILIES:
            sys.exit(f"{where}: unknown family {family!r} (scripts/gen-bindings.py FAMILIES)")
        if group not in ("classic", "v"):
            sys.exit(f"{where}: group must be classic or v, not {group!r}")
        if c_native not in ("plain", "counted"):
            sys.exit(f"{where}: c_native must be plain or counted, not {c_native!r}")
        fl = forms.split(",")
        for x in fl:
            if x not in FORMS:
                sys.exit(f"{where}: unknown form {x!r} (one of {', '.join(FORMS)})")
        disp = {}
        for part in dispatch.split(","):
            form, _, fn = part.rpartition("=")
            if fn not in ("ct_dropin_intercept", "ct_dropin_intercept_v"):
                sys.exit(f"{where}: unknown dispatcher {fn!r}")
            if form:
                disp[form] = fn
            else:
                disp.setdefault("b", fn)
                disp.setdefault("i", fn)
        rows.append(Row(name, coll, family, group, fl, disp, c_native, fortran.split(","),
                        "" if doc.strip() == "-" else doc.strip()))
    return rows


# ---- C text ----------------------------------------------------------------------------


def wrap(head: str, items: list[str], tail: str, indent: int) -> list[str]:
    """head item, item, ... tail, broken at WIDTH with the items aligned after head."""
    pad = " " * indent
    one = pad + head + ", ".join(items) + tail
    if len(one) <= WIDTH:
        return [one]
    lines, cur = [], pad + head
    col = " " * len(cur)
    for i, it in enumerate(items):
        piece = it + ("," if i < len(items) - 1 else tail)
        if cur.strip() and cur != pad + head and len(cur) + 1 + len(piece) > WIDTH:
            lines.append(cur.rstrip())
            cur = col + piece
        else:
            cur = cur + ("" if cur == pad + head else " ") + piece
    lines.append(cur)
    return lines


def signature(ret_name: str, params: list[str]) -> list[str]:
    return wrap(f"int {ret_name}(", params, ")", 0)


def ct_call_init(row: Row, request: str, subst: dict[str, str] | None = None,
                 indent: int = 4) -> list[str]:
    fields = [s.strip() for s in row.fam["call"].split(",")]
    if subst:
        fields = [subst.get(x, x) for x in fields]
    return wrap("ct_call c = {", [row.coll] + fields + [request], "};", indent)


def vargs_init(row: Row, subst: dict[str, str] | None = None, indent: int = 4) -> list[str]:
    v = row.vargs
    if v is None:
        return []
    if subst:
        v = [subst.get(x, x) for x in v]
    return wrap("ct_vargs v = {", v, "};", indent)


def fn(sig: list[str], body: list[str]) -> list[str]:
    return sig + ["{"] + body + ["}", ""]


def decls(row: Row, large: bool, extra: list[str]) -> list[str]:
    return [p.c_decl(large) for p in row.params] + extra


def names(row: Row, extra: list[str], subst: dict[str, str] | None = None) -> list[str]:
    """The arguments that pass row's parameters and the extra ones (declarations) on."""
    tail = [re.search(r"(\w+)$", e).group(1) for e in extra]
    return [subst.get(p.name, p.name) if subst else p.name for p in row.params] + tail


# -- The drop-in --


def dropin_entry(row: Row, form: str) -> list[str]:
    """MPI_X (b) or MPI_IX (i): the call in colltune's form, to the row's dispatcher."""
    nb = form == "i"
    mpi = f"MPI_I{row.lower}" if nb else f"MPI_{row.name}"
    disp = row.dispatch[form]
    # nothing of colltune's can see the call (ct_dropin_settle): the library at once
    pmpi = f"PMPI_I{row.lower}" if nb else f"PMPI_{row.name}"
    # the byte read once: the test and the count (ct_dropin_passed) use the same load
    body = [f"    unsigned char pass = ct_dropin_pass[{row.coll}];", "    if (pass) {",
            f"        ct_dropin_passed({row.coll}, pass);"]
    body += wrap(f"return {pmpi}(", names(row, ["MPI_Request *request"] if nb else []), ");", 8)
    body += ["    }"]
    body += ct_call_init(row, "request" if nb else "NULL") + vargs_init(row)
    if disp == "ct_dropin_intercept":
        assert row.vargs is None, f"{row.name}: ct_dropin_intercept takes no arrays"
        body.append("    return ct_dropin_intercept(&c);")
    else:
        body.append(f"    return ct_dropin_intercept_v(&c, {'&v' if row.vargs else 'NULL'});")
    return fn(signature(mpi, decls(row, False, ["MPI_Request *request"] if nb else [])), body)


def fits_scalars(row: Row) -> list[str]:
    return [f"CT_FITS_INT({p.name})" for p in row.params if p.kind == "count"]


def int_subst(row: Row) -> dict[str, str]:
    """The _c form's arguments as the int form takes them (the arrays' int copies)."""
    s = {p.name: f"(int){p.name}" for p in row.params if p.kind == "count"}
    for var, name in zip(ARRAY_VARS, row.vargs or [], strict=False):
        if name != "NULL":
            s[name] = var
    return s


def array_conversion(row: Row) -> tuple[list[str], list[str]]:
    """(the declarations, ending with `int fits`: whether every count and displacement
    fits an int; the names of the arrays' int copies) of a _c form with per-rank arrays."""
    v = row.vargs
    used = [(var, name) for var, name in zip(ARRAY_VARS, v, strict=True) if name != "NULL"]
    copies = [var for var, _ in used]
    dl = ["    int n = ct_dropin_comm_size(comm), "
          + ", ".join(f"*{var} = NULL" for var in copies) + ", ret;"]
    terms: list = ["n"] + fits_scalars(row)
    for side, idx in (("send", (0, 1)), ("recv", (2, 3))):
        conv = []
        for i in idx:
            if v[i] != "NULL":
                helper = "ct_dropin_counts_to_int" if i % 2 == 0 else "ct_dropin_displs_to_int"
                conv.append(f"!{helper}({v[i]}, n, &{ARRAY_VARS[i]})")
        if not conv:
            continue
        where = row.fam[side]
        if where == "always":
            terms += conv
        else:  # (!root_here || (a && b)), (in_place || (a && b))
            terms.append(("(!root_here || " if where == "root" else "(in_place || ", conv))
    if "root" in (row.fam.get("send"), row.fam.get("recv")):
        dl.append("    int root_here = ct_dropin_is_root(comm, root); /* the arrays mean "
                  "something at the root only */")
    if row.fam.get("send") == "not_in_place":
        dl.append("    int in_place = sendbuf == MPI_IN_PLACE; /* the send arrays are "
                  "ignored */")
    cond = wrap_and("    int fits = ", terms, ";")
    return dl + cond, copies


def wrap_and(head: str, terms: list, tail: str) -> list[str]:
    """head t1 && t2 && ... tail, broken at WIDTH; a term (prefix, [a, b]) is
    prefix(a && b)), its parts aligned when it does not fit a line."""
    lines, cur = [], head
    col = " " * len(head)
    for i, t in enumerate(terms):
        end = " &&" if i < len(terms) - 1 else tail
        if isinstance(t, tuple):
            prefix, parts = t
            inner = parts[0] if len(parts) == 1 else "(" + " && ".join(parts) + ")"
            t = prefix + inner + ")"
            if len(col) + len(t) + len(end) > WIDTH and len(parts) > 1:
                if cur != head:
                    lines.append(cur.rstrip())
                    cur = col
                first = cur + prefix + "("
                pad = " " * len(first)
                lines.append(first + parts[0] + " &&")
                lines += [pad + part + " &&" for part in parts[1:-1]]
                cur = pad + parts[-1] + "))" + end
                continue
        piece = t + end
        if cur != head and cur != col and len(cur) + 1 + len(piece) > WIDTH:
            lines.append(cur.rstrip())
            cur = col + piece
        else:
            cur = cur + ("" if cur in (head, col) else " ") + piece
    lines.append(cur)
    return lines


def frees(copies: list[str], indent: int) -> list[str]:
    return [" " * indent + f"free({c});" for c in copies]


def dropin_c(row: Row, form: str) -> list[str]:
    """MPI_X_c (c) or MPI_IX_c (ic): the int form where every count and displacement fits
    an int (calling the drop-in's own MPI_X, so the call is chosen, monitored and logged
    like an int one), else the library's _c function."""
    nb = form == "ic"
    base = f"MPI_I{row.lower}" if nb else f"MPI_{row.name}"
    extra = ["MPI_Request *request"] if nb else []
    sig = signature(base + "_c", decls(row, True, extra))
    # the library's _c call, returned: the profile times it as a native call of unknown
    # size (dropin.h: CT_DROPIN_LIBRARY_C)
    prof = (f"CT_DROPIN_LIBRARY_C({row.coll}, CT_PROF_{'NONBLOCKING' if nb else 'BLOCKING'}, "
            f"comm, {'request' if nb else 'NULL'}, ")
    lib = wrap(f"{prof}P{base}_c(", names(row, extra), "));", 8)
    count = f'ct_dropin_count_native({row.coll}, comm, "{base}_c", CT_WHY_LARGE_COUNT);'
    counted = [f"        {count}"] if row.c_native == "counted" else []
    if row.vargs is None:
        fits = " || ".join(f"!{t}" for t in fits_scalars(row))
        if counted:
            body = [f"    if ({fits}) {{"] + counted + lib + ["    }"]
        else:
            body = [f"    if ({fits})"] + lib
        body += wrap(f"    return {base}(", names(row, extra, int_subst(row)), ");", 0)
        return fn(sig, body)
    if nb:
        # The int copies of the arrays would have to live until the request completes,
        # which nothing here sees when the call ends native: to the library, counted.
        body = [f'    ct_dropin_count_native({row.coll}, comm, "{base}_c", CT_WHY_FORM);']
        body += wrap(f"{prof}P{base}_c(", names(row, extra), "));", 4)
        return fn(sig, body)
    dl, copies = array_conversion(row)
    body = dl + ["    if (!fits) {"] + frees(copies, 8) + counted + lib + ["    }"]
    body += wrap(f"ret = {base}(", names(row, extra, int_subst(row)), ");", 4)
    body += frees(copies, 4) + ["    return ret;"]
    return fn(sig, body)


def dropin_init(row: Row) -> list[str]:
    """MPI_X_init: colltune's plan, or the library's persistent request (counted)."""
    extra = ["MPI_Info info", "MPI_Request *request"]
    sig = signature(f"MPI_{row.name}_init", decls(row, False, extra))
    v = "&v" if row.vargs else "NULL"
    body = ct_call_init(row, "request") + vargs_init(row)
    body += [f"    int native, rc = ct_dropin_plan(&c, {v}, &native);",
             "    if (!native)", "        return rc;"]
    body += wrap(f"rc = PMPI_{row.name}_init(", names(row, extra), ");", 4)
    body += [f"    return ct_dropin_made_native(rc, &c, {v});"]
    return fn(sig, body)


def dropin_init_c(row: Row) -> list[str]:
    """MPI_X_init_c: the int path where everything fits (the plan keeps its own copy of
    the arrays), else the library's _c init with the program's arrays."""
    extra = ["MPI_Info info", "MPI_Request *request"]
    sig = signature(f"MPI_{row.name}_init_c", decls(row, True, extra))
    # (rc is the receive counts' copy where there are arrays: the result is ret there.)
    res = "rc" if row.vargs is None else "ret"
    lib = wrap(f"{'int ' if row.vargs is None else ''}{res} = PMPI_{row.name}_init_c(",
               names(row, extra), ");", 4)
    lib += [f"    return ct_dropin_made_native_c({res}, {row.coll}, comm, request);"]
    if row.vargs is None:
        body = [f"    if ({' && '.join(fits_scalars(row))})"]
        body += wrap(f"return MPI_{row.name}_init(", names(row, extra, int_subst(row)), ");", 8)
        return fn(sig, body + lib)
    dl, copies = array_conversion(row)
    s = int_subst(row)
    body = dl + ["    if (fits) {"]
    body += ct_call_init(row, "request", s, 8) + vargs_init(row, s, 8)
    body += ["        int native;", "        ret = ct_dropin_plan(&c, &v, &native);"]
    body += frees(copies, 8) + ["        if (!native)", "            return ret;", "    } else {"]
    body += frees(copies, 8) + ["    }"]
    return fn(sig, body + lib)


GENERATED = ("/* GENERATED by scripts/gen-bindings.py from src/interpose/collectives.def: do not "
             "edit.\n * Change the list (or the generator) and run scripts/gen-bindings.py. */")


def gen_bindings(rows: list[Row]) -> str:
    out = [GENERATED, "",
           "/*",
           " * The drop-in's MPI entry points for the collectives: each puts its arguments in",
           " * colltune's form (ct_call, ct_vargs: src/api/call.h) and hands them to the",
           " * dispatcher the list names (ct_dropin_intercept in pmpi.c, ct_dropin_intercept_v",
           " * in pmpi_v.c, ct_dropin_plan in pmpi_persistent.c), which chooses what runs.",
           " * Large-count (_c) calls whose counts and displacements fit an int take the int",
           " * path through the drop-in's own int function; others go to the library's _c.",
           " */",
           "#include <limits.h>", "#include <mpi.h>", "#include <stdlib.h>", "",
           '#include "api/call.h"', '#include "dropin.h"', ""]
    out += ["/* ---- Blocking ---------------------------------------------------------------- */",
            ""]
    for r in rows:
        if "b" in r.forms:
            out += dropin_entry(r, "b")
    out += ["/* ---- Non-blocking ------------------------------------------------------------ */",
            ""]
    for r in rows:
        if "i" in r.forms:
            out += dropin_entry(r, "i")
    out += ["/* ---- Large counts (MPI 4) ----------------------------------------------------- */",
            "", "#if MPI_VERSION >= 4", ""]
    for r in rows:
        for form in ("c", "ic"):
            if form in r.forms:
                out += dropin_c(r, form)
    out += ["#endif /* MPI_VERSION >= 4 */", "",
            "/* ---- Persistent (MPI 4; Open MPI 5 too) ------------------------------------- */",
            "", "#if CT_HAVE_PERSISTENT_COLL", ""]
    for r in rows:
        if "init" in r.forms:
            out += dropin_init(r)
    out += ["#if MPI_VERSION >= 4", ""]
    for r in rows:
        if "init_c" in r.forms:
            out += dropin_init_c(r)
    out += ["#endif /* MPI_VERSION >= 4 */", "#endif /* CT_HAVE_PERSISTENT_COLL */"]
    return "\n".join(out) + "\n"


# -- The public API --


def public_decl(row: Row, nb: bool | str) -> list[str]:
    """ct_X (nb False), ct_iX (True) or ct_X_init (nb "init": the persistent form)."""
    extra = ["const ct_options *opts"] + (["MPI_Request *request"] if nb else [])
    name = (f"ct_{row.lower}_init" if nb == "init" else f"ct_i{row.lower}" if nb
            else f"ct_{row.lower}")
    return wrap(f"int {name}(", decls(row, False, extra), ");", 0)


def public_def(row: Row, nb: bool | str) -> list[str]:
    sig = public_decl(row, nb)
    sig[-1] = sig[-1][:-1]  # no ';'
    body = ct_call_init(row, "request" if nb else "NULL") + vargs_init(row)
    v = "&v" if row.vargs else "NULL"
    if nb == "init":
        body.append(f"    return init_public(&c, {v}, opts);")
    elif nb:
        body.append(f"    return start_public(&c, {v}, opts);")
    elif row.vargs:
        body.append("    return run_public_v(&c, &v, opts);")
    else:
        body.append("    return run_public(&c, opts);")
    return fn(sig, body)


def gen_public(rows: list[Row]) -> str:
    out = [GENERATED, "",
           "/* The public collectives (include/colltune.h): each puts its arguments in the",
           " * common form (src/api/call.h), takes the select layer's choice where the caller",
           " * names no algorithm (ct_call_public_options: the drop-in's rule, forced > table >",
           " * native), and runs it (ct_call_run) or starts it through the non-blocking engine",
           " * (ct_nbc_start, src/nbc). Unlike the drop-in's, a call colltune refuses raises its",
           " * own error: the public API never goes native silently. Above src/nbc in the",
           " * layers (docs/ARCHITECTURE.md). */",
           '#include "api/call.h"', '#include "api/job.h"', '#include "colltune.h"',
           '#include "nbc/nbc.h"', "",
           "static int run_public(const ct_call *c, const ct_options *opts)", "{",
           "    const char *ran;", "    ct_options chosen;", "    int err;",
           "    opts = ct_call_public_options(c, NULL, opts, 0, 0, &chosen, &err);",
           "    return err != MPI_SUCCESS ? err : ct_call_run(c, opts, 0, &ran);", "}", "",
           "static int run_public_v(const ct_call *c, const ct_vargs *v, const ct_options *opts)",
           "{", "    const char *ran;", "    ct_options chosen;", "    int err;",
           "    opts = ct_call_public_options(c, v, opts, 0, 0, &chosen, &err);",
           "    return err != MPI_SUCCESS ? err : ct_call_run_v(c, v, opts, 0, &ran);", "}",
           "",
           "static int start_public(const ct_call *c, const ct_vargs *v, const ct_options *opts)",
           "{", "    const char *ran;", "    if (!c->request)",
           '        return ct_raise_error(c->comm, MPI_ERR_REQUEST, "%s: no request to return",',
           "                              ct_coll_name(c->coll));",
           "    ct_progress_info info; /* a table's non-blocking entries depend on the thread */",
           "    ct_progress_query(&info);", "    ct_options chosen;", "    int err;",
           "    opts = ct_call_public_options(c, v, opts, info.running, 0, &chosen, &err);",
           "    return err != MPI_SUCCESS ? err : ct_nbc_start(c, v, opts, 0, &ran);", "}", "",
           "/* The persistent form: the plan made once (src/nbc/persistent.c), each ct_start",
           " * running it. A call colltune would leave to the library (native chosen, an",
           " * inter-communicator, arguments it refuses) is refused with a message: MPI's own",
           " * MPI_X_init is the program's to call. */",
           "static int init_public(const ct_call *c, const ct_vargs *v, const ct_options *opts)",
           "{", "    const char *ran;", "    if (!c->request)",
           '        return ct_raise_error(c->comm, MPI_ERR_REQUEST, "%s: no request to return",',
           "                              ct_coll_name(c->coll));",
           "    ct_progress_info info;", "    ct_progress_query(&info);", "    ct_options chosen;",
           "    int err, go;",
           "    opts = ct_call_public_options(c, v, opts, info.running, 1, &chosen, &err);",
           "    if (err != MPI_SUCCESS)", "        return err;",
           "    int rc = ct_plan_init(c, v, opts, &go, &ran);",
           "    if (go == -1)",
           "        return ct_raise_error(c->comm, MPI_ERR_ARG, \"%s_init: colltune does not run "
           "this call \"",
           "                              \"(native chosen, an inter-communicator or arguments "
           "it refuses)\",",
           "                              ct_coll_name(c->coll));",
           "    return rc;", "}", ""]
    for r in rows:
        out += public_def(r, False)
    for r in rows:
        out += public_def(r, True)
    for r in rows:
        out += public_def(r, "init")
    return "\n".join(out).rstrip("\n") + "\n"


BEGIN = "/* gen-bindings: begin {} (scripts/gen-bindings.py) */"
END = "/* gen-bindings: end {} */"


def header_region(rows: list[Row], region: str) -> list[str]:
    out = []
    for r in rows:
        if region == "nonblocking":
            out += public_decl(r, True)
        elif region == "persistent":
            out += public_decl(r, "init")
        elif r.group == region.removeprefix("blocking-"):
            if r.doc:
                out.append(f"/* {r.doc} */")
            out += public_decl(r, False)
            if r.doc:
                out.append("")
    while out and not out[-1]:
        out.pop()
    return out


def gen_header(rows: list[Row], text: str) -> str:
    for region in ("blocking-classic", "blocking-v", "nonblocking", "persistent"):
        b, e = BEGIN.format(region), END.format(region)
        if text.count(b) != 1 or text.count(e) != 1:
            sys.exit(f"{HEADER}: needs one '{b}' and one '{e}'")
        head, rest = text.split(b, 1)
        _, tail = rest.split(e, 1)
        text = head + b + "\n" + "\n".join(header_region(rows, region)) + "\n" + e + tail
    return text


# ---- Consistency with the hand-written side ------------------------------------------


def check_list(rows: list[Row]) -> list[str]:
    problems = []
    header = (ROOT / HEADER).read_text()
    enum = re.search(r"typedef enum ct_coll \{(.*?)\} ct_coll;", header, re.S).group(1)
    colls = [c for c in re.findall(r"\b(CT_[A-Z_]+)\b", enum) if c != "CT_NCOLL"]
    listed = [r.coll for r in rows]
    if sorted(colls) != sorted(listed):
        problems.append(f"{LIST}: operations {sorted(set(colls) ^ set(listed))} are in "
                        f"ct_coll or the list but not both")
    fortran = set(re.findall(r"^FORTRAN\((mpi_\w+),", (ROOT / FORTRAN).read_text(), re.M))
    for r in rows:
        want = {"b": f"mpi_{r.lower}", "i": f"mpi_i{r.lower}", "init": f"mpi_{r.lower}_init"}
        for form, sym in want.items():
            if (form in r.fortran) != (sym in fortran):
                problems.append(f"{LIST}: {r.name}'s fortran column says {form} is "
                                f"{'' if form in r.fortran else 'not '}in {FORTRAN}, "
                                f"which {'has' if sym in fortran else 'lacks'} {sym}")
    return problems


def outputs(rows: list[Row]) -> dict[str, str]:
    return {BINDINGS: gen_bindings(rows), PUBLIC: gen_public(rows),
            HEADER: gen_header(rows, (ROOT / HEADER).read_text())}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--check", action="store_true",
                    help="exit 1 when a generated file is stale (nothing written)")
    ap.add_argument("--root", type=Path, default=None,
                    help="the source tree (default: this script's)")
    a = ap.parse_args(argv)
    global ROOT
    if a.root:
        ROOT = a.root.resolve()
    rows = read_list(ROOT / LIST)
    problems = check_list(rows)
    for rel, text in outputs(rows).items():
        path = ROOT / rel
        old = path.read_text() if path.exists() else ""
        if old == text:
            continue
        if a.check:
            diff = difflib.unified_diff(old.splitlines(), text.splitlines(), f"{rel} (committed)",
                                        f"{rel} (generated)", lineterm="", n=1)
            problems.append(f"{rel} is stale: run scripts/gen-bindings.py\n"
                            + "\n".join(list(diff)[:20]))
        else:
            path.write_text(text)
            print(f"wrote {rel}")
    for p in problems:
        print(p, file=sys.stderr)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
