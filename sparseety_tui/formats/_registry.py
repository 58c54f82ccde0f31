"""The table of format families and per-file detection.

Adding a family is one module plus one line in ``FAMILIES`` (or ``register`` for a family
that lives elsewhere).
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager

from sparseety_tui.formats import _generic as generic
from sparseety_tui.formats import _kvline as kvline
from sparseety_tui.formats import _trace as trace
from sparseety_tui.formats import otlp, sglang, vllm
from sparseety_tui.formats._base import FormatFamily
from sparseety_tui.formats._wrapped import WrappedFamily
from sparseety_tui.formats._wrappers import detect_wrapper

FAMILIES: dict[str, FormatFamily] = {
    trace.FAMILY.name: trace.FAMILY,
    kvline.FAMILY.name: kvline.FAMILY,
    vllm.FAMILY.name: vllm.FAMILY,
    sglang.FAMILY.name: sglang.FAMILY,
    otlp.FAMILY.name: otlp.FAMILY,
}

#: How many leading lines detection looks at (a few KB of a real log).
SNIFF_LINES = 200
#: Below this confidence a file is "unknown": ``FALLBACK`` reads it (its tracebacks, error
#: and access lines; the other lines are unparsed).
MIN_CONFIDENCE = 0.2
#: The family that reads a file no family is confident about (formats/_generic.py). Not in
#: ``FAMILIES``: never detected, never named by ``--format``.
FALLBACK: FormatFamily = generic.FALLBACK


class UnknownFormatError(ValueError):
    """Raised for a ``--format`` name that is not registered."""


def family_by_name(name: str) -> FormatFamily:
    try:
        return FAMILIES[name]
    except KeyError:
        known = ", ".join(sorted(FAMILIES))
        raise UnknownFormatError(f"unknown format {name!r} (known: {known})") from None


#: Added to a family's score when the file name names it (``sglang-server.log``). Only
#: breaks near-ties, such as a file of bare OpenAI ``usage`` bodies that either server logs.
NAME_HINT_BONUS = 0.05


def detect(lines: list[bytes], path: str | None = None) -> FormatFamily | None:
    """The family most confident about these first lines, or None when none is. A file
    every line of which a wrapper rewrote (formats/_wrappers.py) is sniffed by the lines
    inside it, and its family is that family inside the wrapper."""
    kind = detect_wrapper(lines)
    if kind is not None:
        inner = [p.inner for p in map(kind.unwrap, lines) if p is not None]
        family = _detect_bare(inner, path)
        return WrappedFamily(family, kind) if family is not None else None
    return _detect_bare(lines, path)


def fallback_for(lines: list[bytes]) -> FormatFamily:
    """The family of a file no family claims: ``FALLBACK`` (tracebacks, error and access
    lines), inside the file's wrapper if it has one (a CI tail shipped by Docker)."""
    kind = detect_wrapper(lines)
    return FALLBACK if kind is None else WrappedFamily(FALLBACK, kind)


def _detect_bare(lines: list[bytes], path: str | None) -> FormatFamily | None:
    best: FormatFamily | None = None
    best_score = MIN_CONFIDENCE
    file_name = os.path.basename(path).lower() if path else ""
    for family in FAMILIES.values():
        score = family.sniff(lines)
        if score > 0 and family.name in file_name:
            score += NAME_HINT_BONUS
        if score > best_score:
            best, best_score = family, score
    return best


def register(family: FormatFamily) -> None:
    """Add ``family`` to ``FAMILIES`` (detected, and named by ``--format``): a family that
    lives outside this package, or a test's. Its name must be new."""
    if family.name in FAMILIES:
        raise ValueError(f"a format family named {family.name!r} is registered already")
    FAMILIES[family.name] = family


def unregister(name: str) -> None:
    """Remove the family ``register`` added under ``name``."""
    del FAMILIES[name]


@contextmanager
def registered(family: FormatFamily) -> Iterator[FormatFamily]:
    """``family`` registered for the ``with`` block, removed after it (tests)."""
    register(family)
    try:
        yield family
    finally:
        unregister(family.name)
