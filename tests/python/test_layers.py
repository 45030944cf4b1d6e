"""The C layers (issue 35): each directory of src/ includes only headers of its own layer or
of layers below it, in the order docs/ARCHITECTURE.md draws, so no two directories include
each other (tests/python/test_imports.py checks the Python packages the same way). The
self-test plants an upward include in a copy and checks that it is caught."""

from __future__ import annotations

import re
import shutil
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
# Lowest first. One layer may hold several directories (none includes the other).
LAYERS: list[tuple[str, ...]] = [
    ("monitor",), ("sched",), ("coll",), ("model", "select"), ("api",), ("nbc",),
    ("public",), ("dyn", "interpose"), ("stf",),
]
INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"', re.M)


def rank_of(directory: str) -> int:
    for i, layer in enumerate(LAYERS):
        if directory in layer:
            return i
    raise AssertionError(f"src/{directory}/ is in no layer: add it to LAYERS and "
                         "docs/ARCHITECTURE.md")


def upward_includes(src: Path) -> list[str]:
    """'file: "header" (layer a includes layer b above it)' for every offending include."""
    found = []
    for path in sorted(src.rglob("*.[ch]")):
        here = path.relative_to(src).parts[0]
        for inc in INCLUDE.findall(path.read_text(errors="replace")):
            target = next((t.resolve() for t in (path.parent / inc, src / inc) if t.exists()),
                          None)
            if target is None or src.resolve() not in target.parents:
                continue  # a public header (include/) or the system's
            there = target.relative_to(src.resolve()).parts[0]
            if there != here and rank_of(there) >= rank_of(here):
                found.append(f"{path.relative_to(src)}: \"{inc}\" (src/{here} includes "
                             f"src/{there}, not below it)")
    return found


def test_every_directory_is_in_a_layer():
    for d in (ROOT / "src").iterdir():
        if d.is_dir():
            rank_of(d.name)


def test_no_include_goes_up():
    assert upward_includes(ROOT / "src") == []


def test_architecture_doc_draws_the_same_order():
    text = (ROOT / "docs/ARCHITECTURE.md").read_text()
    drawn = " < ".join("/".join(layer) for layer in LAYERS)
    assert drawn in text, f"docs/ARCHITECTURE.md should draw the C layers as: {drawn}"


def test_self_test_catches_a_planted_upward_include(tmp_path):
    src = tmp_path / "src"
    shutil.copytree(ROOT / "src", src)
    assert upward_includes(src) == []
    victim = src / "sched" / "sched.c"
    victim.write_text('#include "../api/job.h"\n' + victim.read_text())
    found = upward_includes(src)
    assert len(found) == 1 and "src/sched includes src/api" in found[0], found
    # Two directories of one layer may not include each other either.
    victim.write_text(victim.read_text().replace('#include "../api/job.h"\n', ""))
    other = src / "model" / "model.c"
    other.write_text('#include "../select/select.h"\n' + other.read_text())
    assert any("src/model includes src/select" in f for f in upward_includes(src))
