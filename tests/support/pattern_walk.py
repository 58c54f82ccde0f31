"""The regexes of ``sparseety_tui.formats``, found by walking its modules (so a new one is
covered without being listed), and the real lines each one matches: shared by the checks
that every pattern has a real sample (unit) and that each stays linear (integration)."""

from __future__ import annotations

import importlib
import inspect
import pkgutil
import re
from functools import cache
from typing import Any

from hostile import corpus_lines, documented_samples

import sparseety_tui.formats
from sparseety_tui.formats import shapes


@cache
def patterns() -> dict[str, re.Pattern[Any]]:
    """Every compiled pattern in ``sparseety_tui.formats``, once: each row of a line shape
    table by its table and row (``vllm.line.ray_repeat``), and every other pattern named
    where it is made (a module that imports it from another is not where it is made)."""
    package = sparseety_tui.formats
    modules = [
        importlib.import_module(info.name)
        for info in pkgutil.walk_packages(package.__path__, package.__name__ + ".")
    ]
    found: dict[int, tuple[str, re.Pattern[Any]]] = {
        id(row.regex): (f"{table.name}.{row.shape.name}", row.regex)
        for table in shapes.TABLES.values()
        for row in table
    }
    rows = set(found)
    for module in modules:
        source = inspect.getsource(module)
        for name, value in vars(module).items():
            if isinstance(value, re.Pattern) and id(value) not in rows:
                made_here = re.search(rf"^{name} = re\.compile", source, re.MULTILINE)
                if made_here or id(value) not in found:
                    found[id(value)] = (f"{module.__name__}.{name}", value)
    return dict(sorted(found.values()))


def as_subject(pattern: re.Pattern[Any], line: bytes) -> Any:
    return line.decode("utf-8", "replace") if isinstance(pattern.pattern, str) else line


@cache
def witnesses(pattern: re.Pattern[Any], keep: int = 3) -> list[tuple[bytes, int, int]]:
    """Up to ``keep`` lines of the corpus or of the documented samples the pattern finds a
    match in, with the match's span (in bytes of the line): the first, one from the
    middle and the last (each cut to 2 KB after the match)."""
    found: list[tuple[bytes, int, int]] = []
    for line in (*corpus_lines(), *documented_samples()):
        subject = as_subject(pattern, line)
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
