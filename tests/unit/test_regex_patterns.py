"""Every compiled regex of ``sparseety_tui.formats`` (found by walking the modules, so a new
one is covered without being listed) matches a real line or a sample documented beside it,
and compiles on the oldest Python supported. tests/integration/test_regex_linear.py times
the same patterns on near-miss lines (tests/support/hostile.py)."""

from __future__ import annotations

import importlib
import inspect
import pkgutil
import re
from collections.abc import Iterator
from functools import cache
from typing import Any

import pytest
from hostile import (
    corpus_lines,
    documented_samples,
)

import sparseety_tui.formats


@cache
def patterns() -> dict[str, re.Pattern[Any]]:
    """Every compiled pattern in ``sparseety_tui.formats``, once, named where it is made
    (a module that imports it from another is not where it is made)."""
    found: dict[int, tuple[str, re.Pattern[Any]]] = {}
    package = sparseety_tui.formats
    for info in pkgutil.walk_packages(package.__path__, package.__name__ + "."):
        module = importlib.import_module(info.name)
        source = inspect.getsource(module)
        for name, value in vars(module).items():
            if isinstance(value, re.Pattern):
                made_here = re.search(rf"^{name} = re\.compile", source, re.MULTILINE)
                if made_here or id(value) not in found:
                    found[id(value)] = (f"{info.name}.{name}", value)
    return dict(sorted(found.values()))


def _as_subject(pattern: re.Pattern[Any], line: bytes) -> Any:
    return line.decode("utf-8", "replace") if isinstance(pattern.pattern, str) else line


@cache
def witnesses(pattern: re.Pattern[Any], keep: int = 3) -> list[tuple[bytes, int, int]]:
    """Up to ``keep`` lines of the corpus or of the documented samples the pattern finds a
    match in, with the match's span (in bytes of the line): the first, one from the
    middle and the last (each cut to 2 KB after the match)."""
    found: list[tuple[bytes, int, int]] = []
    for line in (*corpus_lines(), *documented_samples()):
        subject = _as_subject(pattern, line)
        m = pattern.search(subject)
        if m is None or m.end() == m.start():
            continue
        if isinstance(subject, str):
            start = len(subject[: m.start()].encode("utf-8", "replace"))
            end = start + len(subject[m.start() : m.end()].encode("utf-8", "replace"))
            line = subject.encode("utf-8", "replace")
        else:
            start, end = m.span()
        found.append((line[: end + 2048], start, end))
    if len(found) <= keep:
        return found
    return [found[0], found[len(found) // 2], found[-1]]


def test_every_pattern_is_found_and_has_a_real_sample() -> None:
    """The walk finds the patterns (the server families' own among them), and every one
    of them matches some real line, so the near misses below start from a real shape."""
    found = patterns()
    assert "vllm.line.ray_repeat" in found
    assert len(found) >= 40
    missing = [name for name, pattern in found.items() if not witnesses(pattern, keep=1)]
    assert not missing, (
        f"no real line matches {missing}: add one to tests/data/real_logs/ or document a "
        "sample line beside the pattern (``...``)"
    )


def _opcodes(parsed: Any) -> Iterator[str]:
    """The names of every opcode of a parsed pattern (``re._parser``), nested ones too."""
    for op, arg in parsed.data:
        yield str(op)
        stack = [arg]
        while stack:
            item = stack.pop()
            if hasattr(item, "data"):
                yield from _opcodes(item)
            elif isinstance(item, (list, tuple)):
                stack.extend(item)


@pytest.mark.parametrize("name", sorted(patterns()))
def test_pattern_compiles_on_python_310(name: str) -> None:
    """The README promises Python 3.10, whose ``re`` has no possessive quantifiers or
    atomic groups (3.11): linearity must come from the pattern's shape instead."""
    from re import _parser  # type: ignore[attr-defined]

    pattern = patterns()[name]
    newer = {"POSSESSIVE_REPEAT", "ATOMIC_GROUP"}
    assert not newer & set(_opcodes(_parser.parse(pattern.pattern, pattern.flags)))
