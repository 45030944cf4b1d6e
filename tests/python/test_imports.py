"""The package's import structure (docs/ARCHITECTURE.md): no import cycle among the modules of
python/colltune, none among its subpackages, and no private name (`_x`) taken from another
module of the package.

Every import counts, also those inside functions (a lazy import is still a dependency);
imports under `if TYPE_CHECKING:` do not (they never run). The graph is read from the source
with `ast`, so the test needs nothing imported and sees modules no test imports.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[2] / "python" / "colltune"
ROOT = "colltune"
# Thin re-export modules kept at old names for scripts outside the package (bench/): no module
# of the package may import them. Remove each once its users import the new name. (None left.)
COMPAT: set[str] = set()


# -- reading the package ------------------------------------------------------------------


def module_names(package: Path, root: str = ROOT) -> dict[str, Path]:
    """Dotted module name -> file, for every .py under the package (a package is its
    __init__)."""
    names = {}
    for path in sorted(package.rglob("*.py")):
        parts = list(path.relative_to(package).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts = parts[:-1]
        names[".".join([root, *parts])] = path
    return names


def _is_type_checking(node: ast.If) -> bool:
    test = node.test
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING")


def _imports(tree: ast.AST):
    """Every Import/ImportFrom node, outside `if TYPE_CHECKING:` blocks."""
    stack = [tree]
    while stack:
        node = stack.pop()
        if isinstance(node, ast.If) and _is_type_checking(node):
            stack.extend(node.orelse)
            continue
        if isinstance(node, ast.Import | ast.ImportFrom):
            yield node
        stack.extend(ast.iter_child_nodes(node))


def _resolve(module: str, is_package: bool, node: ast.ImportFrom) -> str:
    if not node.level:
        return node.module or ""
    base = module.split(".")
    if not is_package:
        base = base[:-1]
    if node.level > 1:
        base = base[: len(base) - (node.level - 1)]
    return ".".join([*base, *([node.module] if node.module else [])])


def import_graph(package: Path, root: str = ROOT):
    """(edges, private): edges maps each module to the package modules it imports; private
    lists (module, line, text) of every private name taken from another package module."""
    names = module_names(package, root)
    edges: dict[str, set[str]] = {m: set() for m in names}
    private: list[tuple[str, int, str]] = []

    def target(name: str) -> str | None:
        # The module itself, or the package module that holds the name.
        while name and name not in names:
            name = name.rpartition(".")[0]
        return name or None

    for module, path in names.items():
        tree = ast.parse(path.read_text(), str(path))
        is_package = path.name == "__init__.py"
        aliases: dict[str, str] = {}  # local name -> package module it stands for
        for node in _imports(tree):
            if isinstance(node, ast.Import):
                for a in node.names:
                    if a.name == root or a.name.startswith(root + "."):
                        dep = target(a.name)
                        if dep and dep != module:
                            edges[module].add(dep)
                            if a.asname:
                                aliases[a.asname] = dep
                continue
            base = _resolve(module, is_package, node)
            if base != root and not base.startswith(root + "."):
                continue
            for a in node.names:
                full = f"{base}.{a.name}"
                if full in names:  # `from . import table`: the module itself
                    dep = full
                    aliases[a.asname or a.name] = dep
                else:
                    dep = target(base)
                    if a.name.startswith("_") and not a.name.startswith("__"):
                        private.append((module, node.lineno, f"from {base} import {a.name}"))
                if dep and dep != module:
                    edges[module].add(dep)
        for node in ast.walk(tree):
            if (isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name)
                    and node.value.id in aliases and node.attr.startswith("_")
                    and not node.attr.startswith("__")):
                private.append((module, node.lineno, f"{node.value.id}.{node.attr}"))
    return edges, private


def package_of(module: str, root: str = ROOT) -> str:
    """The node of the package-level graph: a subpackage (colltune.probe), or a top-level
    module on its own (colltune.cli; colltune itself for the __init__)."""
    parts = module.split(".")
    return ".".join(parts[:2]) if len(parts) > 1 else module


def package_graph(edges: dict[str, set[str]], packages: set[str],
                  root: str = ROOT) -> dict[str, set[str]]:
    """Edges between subpackages: a top-level module is its own node, and a module inside
    a subpackage belongs to it."""
    def node(m: str) -> str:
        head = package_of(m, root)
        return head if head in packages else m

    graph: dict[str, set[str]] = {node(m): set() for m in edges}
    for m, deps in edges.items():
        for d in deps:
            if node(d) != node(m):
                graph[node(m)].add(node(d))
    return graph


def find_cycle(graph: dict[str, set[str]]) -> list[str] | None:
    """One cycle of the directed graph as a path [a, b, ..., a], or None."""
    WHITE, GREY, BLACK = 0, 1, 2
    colour = dict.fromkeys(graph, WHITE)
    for start in sorted(graph):
        if colour[start] != WHITE:
            continue
        path = [start]
        stack = [iter(sorted(graph[start]))]
        colour[start] = GREY
        while stack:
            nxt = next(stack[-1], None)
            if nxt is None:
                colour[path.pop()] = BLACK
                stack.pop()
            elif colour.get(nxt, WHITE) == GREY:
                return path[path.index(nxt):] + [nxt]
            elif colour.get(nxt, WHITE) == WHITE:
                colour[nxt] = GREY
                path.append(nxt)
                stack.append(iter(sorted(graph.get(nxt, ()))))
    return None


def subpackages(package: Path, root: str = ROOT) -> set[str]:
    return {f"{root}.{p.parent.name}" for p in package.glob("*/__init__.py")}


# -- the checks on colltune -------------------------------------------------------------------


@pytest.fixture(scope="module")
def graph():
    return import_graph(PACKAGE)


def test_no_module_cycle(graph):
    edges, _ = graph
    assert len(edges) > 20
    assert find_cycle(edges) is None, " -> ".join(find_cycle(edges))


def test_no_subpackage_cycle(graph):
    edges, _ = graph
    packages = subpackages(PACKAGE)
    assert {"colltune.core", "colltune.probe", "colltune.report"} <= packages
    pg = package_graph(edges, packages)
    cycle = find_cycle(pg)
    assert cycle is None, " -> ".join(cycle)


def test_no_private_names_across_modules(graph):
    _, private = graph
    assert not private, "\n".join(f"{m}:{line}: {text}" for m, line, text in private)


def test_nothing_in_the_package_imports_a_compatibility_module(graph):
    edges, _ = graph
    users = {m: sorted(d & COMPAT) for m, d in edges.items() if d & COMPAT and m not in COMPAT}
    assert not users, users
    assert COMPAT <= set(edges), COMPAT - set(edges)


def test_every_module_lives_in_a_stage():
    top = {p.stem for p in PACKAGE.glob("*.py")}
    # The entry points, the package itself and the compatibility modules; all else in stages.
    assert top <= {"__init__", "cli", "run"} | {m.split(".")[1] for m in COMPAT}, top


# -- the checker can fail ---------------------------------------------------------------------


def test_find_cycle_on_synthetic_graphs():
    assert find_cycle({"a": {"b"}, "b": {"c"}, "c": set()}) is None
    cycle = find_cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}})
    assert cycle[0] == cycle[-1] and set(cycle) == {"a", "b", "c"}
    assert find_cycle({"a": {"a"}}) == ["a", "a"]


def test_checker_sees_cycles_and_private_imports(tmp_path):
    pkg = tmp_path / "pkg"
    (pkg / "sub").mkdir(parents=True)
    (pkg / "other").mkdir()
    (pkg / "__init__.py").write_text("")
    (pkg / "sub" / "__init__.py").write_text("")
    (pkg / "other" / "__init__.py").write_text("")
    (pkg / "sub" / "a.py").write_text("from ..other.b import thing\n")
    (pkg / "other" / "b.py").write_text(
        "thing = 1\n\ndef f():\n    from ..sub import c\n    return c._hidden\n")
    (pkg / "sub" / "c.py").write_text(
        "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from ..other import b\n"
        "_hidden = 2\n")
    (pkg / "d.py").write_text("from .sub.c import _hidden\nimport pkg.other.b as ob\n")
    edges, private = import_graph(pkg, "pkg")
    assert edges["pkg.sub.a"] == {"pkg.other.b"}
    assert edges["pkg.other.b"] == {"pkg.sub.c"}
    assert edges["pkg.sub.c"] == set()  # TYPE_CHECKING imports do not count
    assert edges["pkg.d"] == {"pkg.sub.c", "pkg.other.b"}
    assert find_cycle(edges) is None  # modules: a -> b -> c, no cycle
    pg = package_graph(edges, subpackages(pkg, "pkg"), "pkg")
    assert find_cycle(pg) in (["pkg.sub", "pkg.other", "pkg.sub"],
                              ["pkg.other", "pkg.sub", "pkg.other"])
    assert sorted(text for _, _, text in private) == ["c._hidden",
                                                      "from pkg.sub.c import _hidden"]
