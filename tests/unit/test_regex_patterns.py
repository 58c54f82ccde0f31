"""Every compiled regex of ``sparseety_tui.formats`` (found by walking the modules, so a new
one is covered without being listed) matches a real line or a sample documented beside it,
and compiles on the oldest Python supported. tests/integration/test_regex_linear.py times
the same patterns on near-miss lines (tests/support/hostile.py)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from pattern_walk import patterns, witnesses


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
