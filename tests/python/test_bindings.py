"""The generated bindings (issue 35): scripts/gen-bindings.py --check passes on the
tree, and fails (naming the file) when a generated file or the list was changed by
hand without regenerating."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
GEN = ROOT / "scripts" / "gen-bindings.py"
# What the generator reads and writes.
FILES = ["src/interpose/collectives.def", "src/interpose/bindings.c", "src/public/public.c",
         "include/colltune.h", "src/interpose/fortran.c"]


def check(root: Path) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, str(GEN), "--check", "--root", str(root)],
                          capture_output=True, text=True, timeout=60)


def test_generated_files_are_current():
    p = check(ROOT)
    assert p.returncode == 0, p.stderr


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    for f in FILES:
        (tmp_path / f).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(ROOT / f, tmp_path / f)
    assert check(tmp_path).returncode == 0  # the copy is as good as the tree
    return tmp_path


@pytest.mark.parametrize("rel, old, new", [
    # a hand edit to a generated entry point
    ("src/interpose/bindings.c", "return ct_dropin_intercept(&c);",
     "return ct_dropin_intercept_v(&c, NULL);"),
    ("src/public/public.c", "return run_public(&c, opts);", "return 0;"),
    # a declaration edited in the header's generated region
    ("include/colltune.h", "int ct_ialltoall(", "int ct_ialltoall_renamed("),
])
def test_a_hand_edit_is_stale(tree: Path, rel: str, old: str, new: str):
    path = tree / rel
    text = path.read_text()
    assert old in text
    path.write_text(text.replace(old, new, 1))
    p = check(tree)
    assert p.returncode != 0
    assert f"{rel} is stale" in p.stderr


def test_a_list_change_makes_the_outputs_stale(tree: Path):
    path = tree / "src/interpose/collectives.def"
    text = path.read_text()
    # Scan loses its persistent forms: bindings.c no longer matches.
    line = next(x for x in text.splitlines() if x.startswith("Scan "))
    path.write_text(text.replace(line, line.replace("b,i,init,c,ic,init_c", "b,i,c,ic", 1)))
    p = check(tree)
    assert p.returncode != 0
    assert "src/interpose/bindings.c is stale" in p.stderr
    # ... and regenerating brings the tree back to a passing --check.
    subprocess.run([sys.executable, str(GEN), "--root", str(tree)], check=True,
                   capture_output=True, timeout=60)
    assert "MPI_Scan_init(" not in (tree / "src/interpose/bindings.c").read_text()
    assert check(tree).returncode == 0


def test_the_fortran_column_follows_fortran_c(tree: Path):
    path = tree / "src/interpose/fortran.c"
    path.write_text(path.read_text().replace("FORTRAN(mpi_iscan,", "FORTRAN(mpi_iscan_gone,", 1))
    p = check(tree)
    assert p.returncode != 0
    assert "Scan's fortran column" in p.stderr


def test_every_operation_has_a_row(tree: Path):
    path = tree / "src/interpose/collectives.def"
    path.write_text("".join(x for x in path.read_text().splitlines(keepends=True)
                            if not x.startswith("Exscan ")))
    p = check(tree)
    assert p.returncode != 0
    assert "CT_EXSCAN" in p.stderr
