"""The one-way layers (docs/ARCHITECTURE.md), checked on the source: every import of every
module, function-local ones included. `lint-imports` in CI checks the same contract from
pyproject.toml; this test keeps it in the suite a developer runs."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[2] / "sparseety_tui"

#: Top to bottom; a module may import its own layer and the layers below it.
LAYERS: list[set[str]] = [
    {"cli"},
    # the TUI, the HTTP API and the routing capture: all on ingest, none imports another
    {"ui", "serve", "capture"},
    # the live OTLP receivers: append to a spool that ingest follows
    {"receive"},
    {"ingest"},
    {"core"},
    {"formats"},
    {"events", "sources", "native"},
]


def layer_of(module: str) -> int | None:
    parts = module.split(".")
    if parts[0] != "sparseety_tui" or len(parts) < 2:
        return None
    name = parts[1]
    for rank, layer in enumerate(LAYERS):
        if name in layer:
            return rank
    return None


def module_name(path: Path) -> str:
    return "sparseety_tui." + ".".join(path.relative_to(PACKAGE).with_suffix("").parts)


def imports_of(module: str, source: str) -> list[str]:
    tree = ast.parse(source)
    out: list[str] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            out.extend(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:  # relative: resolve against this module's package
                base = module.split(".")[: -node.level]
                name = ".".join([*base, node.module] if node.module else base)
            else:
                name = node.module or ""
            out.append(name)
            out.extend(f"{name}.{alias.name}" for alias in node.names)
    return out


def upward_imports(module: str, source: str) -> list[str]:
    own = layer_of(module)
    if own is None:
        return []
    bad = []
    for name in imports_of(module, source):
        target = layer_of(name)
        siblings = target == own and name.split(".")[1] != module.split(".")[1]
        if target is not None and (target < own or (siblings and len(LAYERS[own]) > 1)):
            bad.append(name)
    return bad


MODULES = sorted(p for p in PACKAGE.rglob("*.py") if "__pycache__" not in p.parts)


@pytest.mark.parametrize("path", MODULES, ids=lambda p: str(p.relative_to(PACKAGE)))
def test_no_module_imports_upward(path: Path) -> None:
    assert upward_imports(module_name(path), path.read_text()) == []


def test_core_and_formats_never_import_textual_ui_ingest_or_cli() -> None:
    for path in MODULES:
        relative = path.relative_to(PACKAGE).parts
        if relative[0] not in ("core", "formats"):
            continue
        for name in imports_of(module_name(path), path.read_text()):
            assert not name.startswith(
                ("textual", "sparseety_tui.ui", "sparseety_tui.ingest", "sparseety_tui.cli")
            ), f"{path}: imports {name}"


def test_the_check_sees_upward_imports() -> None:
    # The checker itself: a core module importing the UI is caught, a local import too;
    # a source module importing a sibling of its bottom layer is caught; downward is fine.
    local = "def f():\n    from sparseety_tui.ui.app import SparseetyApp\n"
    assert upward_imports("sparseety_tui.core.probe", local) == [
        "sparseety_tui.ui.app",
        "sparseety_tui.ui.app.SparseetyApp",
    ]
    relative = "from ..ingest import worker\n"
    assert upward_imports("sparseety_tui.formats.probe", relative) == [
        "sparseety_tui.ingest",
        "sparseety_tui.ingest.worker",
    ]
    assert upward_imports("sparseety_tui.sources.probe", "import sparseety_tui.events\n") == [
        "sparseety_tui.events"
    ]
    assert upward_imports("sparseety_tui.ui.probe", "from sparseety_tui.core import store\n") == []
    assert upward_imports("sparseety_tui.serve.probe", "import sparseety_tui.ui.app\n") == [
        "sparseety_tui.ui.app"
    ]


def _module_level_imports(source: str) -> list[str]:
    """Imports that run when the module is imported (not inside a function)."""
    tree = ast.parse(source)
    out: list[str] = []
    for node in tree.body:
        for inner in ast.walk(node):
            if isinstance(inner, (ast.FunctionDef, ast.AsyncFunctionDef)):
                break
            if isinstance(inner, ast.Import):
                out.extend(alias.name for alias in inner.names)
            elif isinstance(inner, ast.ImportFrom) and inner.module:
                out.append(inner.module)
    return out


def test_torch_and_capture_stay_in_capture_and_the_cli_imports_them_lazily() -> None:
    """Only capture/ imports torch; the cli reaches capture (and torch) only inside the
    functions of its capture commands, so every other command runs without the extra."""
    for path in MODULES:
        parts = path.relative_to(PACKAGE).parts
        if parts[0] == "capture":
            continue
        source = path.read_text()
        names = imports_of(module_name(path), source)
        heavy = [
            n for n in names if n.split(".")[0] == "torch" or n.startswith("sparseety_tui.capture")
        ]
        if parts[0] != "cli":
            assert heavy == [], path
            continue
        eager = [
            n for n in _module_level_imports(source)
            if n.split(".")[0] == "torch" or n.startswith("sparseety_tui.capture")
        ]  # fmt: skip
        assert eager == [], path
