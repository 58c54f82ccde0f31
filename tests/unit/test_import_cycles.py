"""No import cycles, read from the source: between the modules of ``cli/``, between the
top-level packages of ``sparseety_tui`` and between the subpackages of ``core``.

Every import counts (function-local ones and those under ``TYPE_CHECKING`` included): a
cycle that only lazy imports keep from failing at start-up is still two modules that cannot
be read, tested or moved one without the other. A cycle found is printed with the import
lines that make it.
"""

from __future__ import annotations

import ast
import functools
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2] / "sparseety_tui"


@dataclass(frozen=True, slots=True)
class Edge:
    """``source`` imports ``target`` at ``where`` (path:line)."""

    source: str
    target: str
    where: str


def module_names(root: Path) -> dict[str, Path]:
    """Every module below ``root``, by dotted name (a package by its own name)."""
    out: dict[str, Path] = {}
    for path in sorted(root.rglob("*.py")):
        parts = list(path.relative_to(root.parent).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        out[".".join(parts)] = path
    return out


def _imported(module: str, is_package: bool, node: ast.Import | ast.ImportFrom) -> list[str]:
    """The dotted names an import statement reaches: ``from a import b`` reaches ``a.b``,
    which is the submodule ``b`` when there is one and a name in ``a`` otherwise."""
    if isinstance(node, ast.Import):
        return [alias.name for alias in node.names]
    if node.level:
        package = module.split(".") if is_package else module.split(".")[:-1]
        base = package[: len(package) - node.level + 1]
        name = ".".join([*base, node.module] if node.module else base)
    else:
        name = node.module or ""
    return [f"{name}.{alias.name}" for alias in node.names]


def _resolve(name: str, modules: dict[str, Path]) -> str | None:
    """The module an imported name lives in: the longest known prefix."""
    parts = name.split(".")
    for end in range(len(parts), 0, -1):
        candidate = ".".join(parts[:end])
        if candidate in modules:
            return candidate
    return None


def import_edges(root: Path) -> list[Edge]:
    """Every import between two modules below ``root``, wherever it stands in the file."""
    modules = module_names(root)
    edges: list[Edge] = []
    for module, path in modules.items():
        is_package = path.name == "__init__.py"
        tree = ast.parse(path.read_text(encoding="utf-8"), str(path))
        for node in ast.walk(tree):
            if not isinstance(node, ast.Import | ast.ImportFrom):
                continue
            names = _imported(module, is_package, node)
            targets = {t for t in (_resolve(n, modules) for n in names) if t is not None}
            where = f"{path.relative_to(root.parent)}:{node.lineno}"
            edges.extend(Edge(module, target, where) for target in sorted(targets))
    return edges


def find_cycle(edges: Iterable[Edge], node_of: Callable[[str], str | None]) -> list[Edge]:
    """One cycle of the graph whose nodes are ``node_of(module)`` (None: not in the graph;
    an edge inside one node is no edge), as the edges that make it; [] when there is none."""
    graph: dict[str, dict[str, Edge]] = {}
    for edge in edges:
        a, b = node_of(edge.source), node_of(edge.target)
        if a is not None and b is not None and a != b:
            graph.setdefault(a, {}).setdefault(b, edge)
    done: set[str] = set()
    path: list[Edge] = []

    def visit(node: str, on_path: dict[str, int]) -> list[Edge]:
        on_path[node] = len(path)
        for nxt, edge in sorted(graph.get(node, {}).items()):
            if nxt in on_path:
                return [*path[on_path[nxt] :], edge]
            if nxt in done:
                continue
            path.append(edge)
            cycle = visit(nxt, on_path)
            if cycle:
                return cycle
            path.pop()
        del on_path[node]
        done.add(node)
        return []

    for start in sorted(graph):
        if start not in done:
            cycle = visit(start, {})
            if cycle:
                return cycle
    return []


def describe(cycle: list[Edge]) -> str:
    return "import cycle:\n" + "\n".join(f"  {e.source} -> {e.target}  ({e.where})" for e in cycle)


def _part(
    prefix: str, depth: int, packages_only: Path | None = None
) -> Callable[[str], str | None]:
    """The node of a module: its name's first ``depth`` parts, for modules under ``prefix``
    (with ``packages_only``, only those in a subpackage: a folder below that path)."""

    def node_of(module: str) -> str | None:
        if not (module + ".").startswith(prefix + "."):
            return None
        parts = module.split(".")
        if len(parts) < depth:
            return None
        if packages_only is not None and not (packages_only / parts[depth - 1]).is_dir():
            return None
        return ".".join(parts[:depth])

    return node_of


def _module_in(package: str) -> Callable[[str], str | None]:
    return lambda m: m if m.startswith(package + ".") else None


@functools.cache
def _project_edges() -> tuple[Edge, ...]:
    return tuple(import_edges(ROOT))


def test_no_cycle_between_cli_modules() -> None:
    cycle = find_cycle(_project_edges(), _module_in("sparseety_tui.cli"))
    assert not cycle, describe(cycle)


def test_no_cycle_between_top_level_packages() -> None:
    cycle = find_cycle(_project_edges(), _part("sparseety_tui", 2))
    assert not cycle, describe(cycle)


def test_no_cycle_between_core_subpackages() -> None:
    core = ROOT / "core"
    cycle = find_cycle(_project_edges(), _part("sparseety_tui.core", 3, packages_only=core))
    assert not cycle, describe(cycle)


def test_a_planted_cycle_is_found(tmp_path: Path) -> None:
    """The check itself: a cycle through a lazy import, a ``TYPE_CHECKING`` import and a
    relative one is found and named edge by edge; the same tree without it passes."""
    pkg = tmp_path / "pkg"
    (pkg / "cli").mkdir(parents=True)
    (pkg / "__init__.py").write_text("")
    (pkg / "cli" / "__init__.py").write_text("")
    (pkg / "cli" / "main.py").write_text("def run():\n    from pkg.cli import sub\n")
    (pkg / "cli" / "sub.py").write_text(
        "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from .shared import X\n"
    )
    (pkg / "cli" / "shared.py").write_text("X = 1\n")
    in_cli = _module_in("pkg.cli")
    assert find_cycle(import_edges(pkg), in_cli) == []
    (pkg / "cli" / "shared.py").write_text("from pkg.cli.main import run\nX = 1\n")
    cycle = find_cycle(import_edges(pkg), in_cli)
    assert [(e.source, e.target) for e in cycle] == [
        ("pkg.cli.main", "pkg.cli.sub"),
        ("pkg.cli.sub", "pkg.cli.shared"),
        ("pkg.cli.shared", "pkg.cli.main"),
    ]
    assert "pkg/cli/sub.py:3" in describe(cycle)


def test_a_planted_package_cycle_is_found(tmp_path: Path) -> None:
    """Between packages, any module of one importing any module of the other is an edge;
    with ``packages_only``, the plain modules beside the subpackages are no nodes (a cycle
    through one is left to the day it moves into a subpackage)."""
    pkg = tmp_path / "pkg"
    for folder in ("core", "core/store", "core/figures"):
        (pkg / folder).mkdir(parents=True)
        (pkg / folder / "__init__.py").write_text("")
    (pkg / "__init__.py").write_text("")
    (pkg / "core" / "flat.py").write_text("from pkg.core.figures import totals\n")
    (pkg / "core" / "store" / "_rows.py").write_text("import pkg.core.flat\n")
    (pkg / "core" / "figures" / "totals.py").write_text(
        "def rows():\n    from pkg.core.store._rows import X\n"
    )
    subpackages = _part("pkg.core", 3, packages_only=pkg / "core")
    assert find_cycle(import_edges(pkg), subpackages) == []
    (pkg / "core" / "store" / "_rows.py").write_text("from ..figures import totals\n")
    cycle = find_cycle(import_edges(pkg), subpackages)
    assert [(e.source, e.target) for e in cycle] == [
        ("pkg.core.figures.totals", "pkg.core.store._rows"),
        ("pkg.core.store._rows", "pkg.core.figures.totals"),
    ], describe(cycle)
