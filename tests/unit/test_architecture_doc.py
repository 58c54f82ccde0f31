"""The docs a newcomer reads stay short and true: every Python name docs/ARCHITECTURE.md
cites exists in sparseety_tui/, README.md and docs/ARCHITECTURE.md keep within their length,
and every relative link of README.md, docs/*.md and bench/ reaches a file (and,
in a Markdown file, a heading) that exists.

A name is cited in backticks. What counts as a Python name: a CamelCase class
(`RequestStore`, `Snapshot`), a snake_case or UPPER_CASE name (`compute_totals`, `TICK_S`,
`FAMILIES`), a call (`freeze()`), or a dotted path (`core.store`, `ingest.parallel`,
`Extractor.freeze`). Anything else in backticks (commands, options, `$ENV` variables, JSON
keys, line kinds such as `vllm.stats`, file names) is prose and is not checked.
"""

from __future__ import annotations

import ast
import builtins
import re
from collections.abc import Iterator
from functools import cache
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PACKAGE = ROOT / "sparseety_tui"
ARCHITECTURE = ROOT / "docs" / "ARCHITECTURE.md"
MAX_LINES = 250

#: The packages of sparseety_tui that a dotted path may start with.
TOP = {p.name for p in PACKAGE.iterdir() if p.is_dir() and (p / "__init__.py").exists()} | {
    p.stem for p in PACKAGE.glob("*.py") if not p.stem.startswith("_")
}

_IDENT = r"[A-Za-z_][A-Za-z0-9_]*"
_CITED = re.compile(rf"`({_IDENT}(?:\.{_IDENT})*)(\(\))?`")
_FILE_SUFFIXES = {"py", "pyi", "c", "md", "json", "toml", "yaml", "yml", "tcss", "log", "jsonl"}


# -- what the code defines ------------------------------------------------------------------


def _defined(tree: ast.AST) -> Iterator[str]:
    """Every name a module defines: functions, classes, assignments and annotations at any
    depth (module, class or function level), and ``self.NAME`` attributes."""
    for node in ast.walk(tree):
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            yield node.name
        targets: list[ast.expr] = []
        if isinstance(node, ast.Assign):
            targets = list(node.targets)
        elif isinstance(node, ast.AnnAssign | ast.AugAssign):
            targets = [node.target]
        while targets:
            target = targets.pop()
            if isinstance(target, ast.Name):
                yield target.id
            elif isinstance(target, ast.Attribute):
                yield target.attr
            elif isinstance(target, ast.Tuple | ast.List):
                targets.extend(target.elts)


@cache
def _names_in(path: Path) -> frozenset[str]:
    """The names defined in a module file, or in every module under a package directory."""
    files = sorted(path.rglob("*.py*")) if path.is_dir() else [path]
    names: set[str] = set()
    for file in files:
        if file.suffix in (".py", ".pyi"):
            names.update(_defined(ast.parse(file.read_text(encoding="utf-8"))))
    return frozenset(names)


def _face(package: Path) -> frozenset[str]:
    """What a package shows: the names its ``__init__`` defines or imports, and its public
    submodules."""
    tree = ast.parse((package / "__init__.py").read_text(encoding="utf-8"))
    imported = {
        alias.asname or alias.name
        for node in ast.walk(tree)
        if isinstance(node, ast.ImportFrom)
        for alias in node.names
    }
    submodules = {p.stem for p in package.iterdir() if not p.name.startswith("_")}
    return frozenset(_defined(tree)) | imported | submodules


def _all_names() -> frozenset[str]:
    return _names_in(PACKAGE)


def _module_path(parts: list[str]) -> Path | None:
    """The file or package directory of a dotted module path under sparseety_tui/, if any."""
    path = PACKAGE.joinpath(*parts)
    if path.is_dir():
        return path
    if path.with_suffix(".py").is_file():
        return path.with_suffix(".py")
    return None


def problem(cited: str) -> str | None:
    """Why a name cited in backticks does not hold (None: it does, or it is not a name)."""
    parts = cited.split(".")
    if parts[-1] in _FILE_SUFFIXES:
        return None  # a file name
    if parts[0] == "sparseety_tui":
        parts = parts[1:]
    if parts and parts[0] in TOP:
        return _dotted_problem(cited, parts)
    if len(parts) > 1:
        if not parts[0][0].isupper():
            return None  # a line kind (vllm.stats), a JSON key path: prose
        missing = [p for p in parts if p not in _all_names()]
        return f"{cited}: {', '.join(missing)} not defined in sparseety_tui/" if missing else None
    name = parts[0]
    looks_like_code = "_" in name or name[0].isupper()
    if not looks_like_code or hasattr(builtins, name):
        return None  # a command or a word, or Python's own (None, ValueError)
    return None if name in _all_names() else f"{cited}: not defined in sparseety_tui/"


def _dotted_problem(cited: str, parts: list[str]) -> str | None:
    """``core.store.RequestStore``, ``ingest.parallel``, ``events.LineKind``: the longest
    module prefix must exist, and the names after it be defined there (after a package: on
    its face, the names its ``__init__`` defines or imports)."""
    for cut in range(len(parts), 0, -1):
        module = _module_path(parts[:cut])
        if module is not None:
            rest = parts[cut:]
            where = ".".join(parts[:cut])
            if module.is_dir() and rest and rest[0] not in _face(module):
                return f"{cited}: {rest[0]} is not on the face of {where} (its __init__)"
            missing = [p for p in rest if p not in _names_in(module)]
            return f"{cited}: {', '.join(missing)} not defined in {where}" if missing else None
    return f"{cited}: no module {'.'.join(parts)} under sparseety_tui/"


def cited_names(text: str) -> list[str]:
    """The backticked names of a Markdown text, in order (fenced blocks left out)."""
    prose = re.sub(r"```.*?```", "", text, flags=re.DOTALL)
    return [m.group(1) for m in _CITED.finditer(prose)]


# -- links ----------------------------------------------------------------------------------

_LINK = re.compile(r"\]\(([^)\s]+)\)")


def _anchors(markdown: Path) -> set[str]:
    """GitHub's anchors of a Markdown file's headings: lower case, punctuation dropped
    (hyphens and underscores kept), spaces to hyphens."""
    anchors = set()
    for line in markdown.read_text(encoding="utf-8").splitlines():
        match = re.match(r"#{1,6}\s+(.*)", line)
        if match:
            heading = match.group(1).strip().lower()
            anchors.add(re.sub(r"[^\w\- ]", "", heading).replace(" ", "-"))
    return anchors


def broken_links(markdown: Path) -> list[str]:
    """The relative links of a Markdown file whose target (or heading) does not exist."""
    text = re.sub(r"```.*?```", "", markdown.read_text(encoding="utf-8"), flags=re.DOTALL)
    broken = []
    for target in _LINK.findall(text):
        if re.match(r"[a-z]+:", target):
            continue  # https:, mailto:
        path_part, _, anchor = target.partition("#")
        path = (markdown.parent / path_part).resolve() if path_part else markdown
        if not path.exists():
            broken.append(f"{target}: no such file")
        elif anchor and path.suffix == ".md" and anchor not in _anchors(path):
            broken.append(f"{target}: no such heading in {path.name}")
    return broken


# -- the tests ------------------------------------------------------------------------------


def test_every_name_architecture_cites_exists() -> None:
    cited = cited_names(ARCHITECTURE.read_text(encoding="utf-8"))
    assert len(cited) > 50  # the doc does cite the code
    problems = sorted({p for name in cited if (p := problem(name))})
    assert problems == []


def test_a_wrong_name_is_caught() -> None:
    # Each shape of citation, right and wrong: the check fails on the wrong one.
    assert problem("RequestStore") is None
    assert problem("RequestStores") is not None
    assert problem("compute_totals") is None
    assert problem("compute_totalz") is not None
    assert problem("TICK_S") is None
    assert problem("WAKE_AFTER_S") is not None
    assert problem("Extractor.freeze") is None
    assert problem("Extractor.thaw") is not None
    assert problem("core.store") is None
    assert problem("core.totals") is not None  # an old flat module, not a subpackage
    assert problem("core.store.RequestStore") is None
    assert problem("core.figures.RequestStore") is not None  # in the wrong subpackage
    assert problem("ingest.parallel") is None
    assert problem("ingest.paralel") is not None
    assert problem("formats.FAMILIES") is None
    assert problem("formats.FAMILY") is not None
    assert problem("formats.registry") is not None  # a private module, not on the face
    assert problem("sparseety_tui.events.LineKind") is None
    # Prose is not a name.
    for word in ("tail", "vllm.stats", "events.py", "summary"):
        assert problem(word) is None


def test_cited_names_are_read_from_backticks_outside_code_blocks() -> None:
    text = "See `RequestStore` and `freeze()`, not ``` `Bogus` ``` nor `--json`.\n"
    text += "```\n`Hidden`\n```\n"
    assert cited_names(text) == ["RequestStore", "freeze"]


def test_readme_and_architecture_are_short() -> None:
    for doc in (ROOT / "README.md", ARCHITECTURE):
        lines = len(doc.read_text(encoding="utf-8").splitlines())
        assert lines <= MAX_LINES, f"{doc.name}: {lines} lines"


def test_every_relative_link_reaches_a_file() -> None:
    docs = [
        ROOT / "README.md",
        *sorted((ROOT / "docs").glob("*.md")),
        ROOT / "bench" / "RESULTS.md",
        *sorted((ROOT / "bench" / "history").glob("*.md")),
    ]
    broken = {doc.relative_to(ROOT).as_posix(): b for doc in docs if (b := broken_links(doc))}
    assert broken == {}


def test_a_broken_link_is_caught(tmp_path: Path) -> None:
    (tmp_path / "there.md").write_text("# A heading, here\n")
    page = tmp_path / "page.md"
    page.write_text(
        "[ok](there.md) [ok](there.md#a-heading-here) [web](https://example.com/x)\n"
        "[gone](missing.md) [no heading](there.md#elsewhere)\n"
    )
    assert broken_links(page) == [
        "missing.md: no such file",
        "there.md#elsewhere: no such heading in there.md",
    ]
