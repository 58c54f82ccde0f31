"""The line shape tables (``formats.shapes``): every sample line is told apart as its table
says, the loader refuses a row that does not hold, and every pattern stays linear.

How each table's rows relate is part of the table (``Table.mode``):

- ``exclusive`` (``ci``, ``error``, ``noise``, ``wrapper``, ``vllm.stats``,
  ``vllm.request``, ``sglang.batch`` ...): a sample matches its own row and no other row
  of its table;
- ``first`` (``access``, ``service``, ``engine_warning``, ``kv``): rows are tried in
  order and a line is the first that matches, by design (a uvicorn access line is a
  uvicorn line too, an old SGLang's "Decode out of memory" is a retraction, not an OOM):
  a sample's own row is the first of its table that matches it;
- ``parts`` (``vllm.line``, ``sglang.line``, ``sglang.failure``, ``startup.*``,
  ``traceback``, ``prometheus``): rows read different parts of one line in turn (a
  process prefix, then the logging head; a start-up line's fields), so a sample may match
  other rows too; it must match its own.
"""

from __future__ import annotations

import importlib
import pkgutil
import re
import time
from collections.abc import Callable
from typing import Any

import pytest

import sparseety_tui.formats
from sparseety_tui.formats import shapes
from sparseety_tui.formats.shapes import LineShape, Row, Table

#: Each pumped run is timed at this many units and at four times as many.
UNITS = 2_000
#: Linear code takes about 4x as long on the 4x longer line; a quadratic pattern about
#: 16x. The bound is generous, for a busy machine.
RATIO_BOUND = 12.0
#: Added to both CPU times before the ratio is taken, so that a call too quick to time (a
#: match that fails at the first byte) cannot make a ratio out of the timer's noise.
FLOOR_S = 50e-6
#: What ends a pumped line so that the match fails (every split of the run is then tried
#: before giving up, the expensive case): a carriage return that ``\s*$`` takes, then NUL.
FAIL = b"\r\x00"
#: Runs worth trying on any pattern: whitespace, digits, letters, brackets, separators.
GENERIC_UNITS = (b" ", b"\t", b"0", b"a", b"A", b"[", b"(", b"=", b"|", b'"', b"-", b":", b".")


def _tables() -> dict[str, Table]:
    """Every table, after importing every module of ``formats`` (the tables load then)."""
    package = sparseety_tui.formats
    for info in pkgutil.walk_packages(package.__path__, package.__name__ + "."):
        importlib.import_module(info.name)
    return dict(shapes.TABLES)


TABLES = _tables()


def _same_type(row: Row, sample: bytes | str) -> bool:
    return type(row.shape.pattern) is type(sample)


def test_the_tables_are_there() -> None:
    """The tables of every stateless line shape are loaded (they load on import), each
    with rows."""
    expected = {
        "access",
        "ci",
        "service",
        "error",
        "engine_warning",
        "kv",
        "noise",
        "vllm.line",
        "vllm.stats",
        "vllm.request",
        "sglang.line",
        "sglang.batch",
        "wrapper",
        "ansi",
        "startup.config",
        "traceback",
        "prometheus",
    }
    assert expected <= set(TABLES)
    assert all(table.rows for table in TABLES.values())


@pytest.mark.parametrize("name", sorted(TABLES))
def test_every_sample_is_told_apart_as_its_table_says(name: str) -> None:
    table = TABLES[name]
    for row in table:
        for sample in row.shape.samples:
            assert row.find(sample) is not None, f"{name}.{row.shape.name}: {sample!r}"
            others = [
                other.shape.name
                for other in table
                if other is not row and _same_type(other, sample) and other.find(sample)
            ]
            if table.mode == "exclusive":
                assert not others, f"{name}.{row.shape.name}: {sample!r} also matches {others}"
            elif table.mode == "first":
                first = next(r for r in table if _same_type(r, sample) and r.find(sample))
                assert first is row, (
                    f"{name}.{row.shape.name}: {sample!r} is taken first by {first.shape.name}"
                )


@pytest.mark.parametrize(
    ("shape", "problem"),
    [
        (LineShape("a", rb"x(\d+)", "k", (b"x1",)), "groups"),  # a group without a type
        (LineShape("a", rb"x", "k", (b"x",), {"n": "int"}), "groups"),  # a type without a group
        (LineShape("a", rb"x", "k", ()), "no sample"),
        (LineShape("a", rb"x", "k", (b"y",)), "does not match"),
        (LineShape("a", rb"y", "k", (b"xy",)), "does not match"),  # ``match``: at the start
        (LineShape("a", rb"x(?P<n>\w+)", "k", (b"xab",), {"n": "int"}), "is no int"),
        (LineShape("a", rb"x(?P<n>\S+)", "k", (b"x1e999",), {"n": "float"}), "is no float"),
        (LineShape("a", rb"x", "k", ("x",)), "not of the pattern's type"),
    ],
)
def test_the_loader_refuses_a_row_that_does_not_hold(shape: LineShape, problem: str) -> None:
    with pytest.raises(ValueError, match=problem):
        shapes.table(f"test.refused.{id(shape)}", "exclusive", (shape,))
    assert not any(name.startswith("test.refused.") for name in shapes.TABLES)


def test_the_loader_reads_typed_fields_and_searches_where_told() -> None:
    loaded = shapes.table(
        "test.loaded",
        "exclusive",
        (LineShape("n", rb"n=(?P<n>\d{1,9})", "k", (b"a n=12",), {"n": "int"}, op="search"),),
    )
    try:
        row = loaded.row("n")
        m = row.find(b"a n=12")
        assert m is not None and m.group("n") == b"12"
        assert loaded.bytes_regex("n") is row.regex
        with pytest.raises(TypeError):
            loaded.str_regex("n")
        with pytest.raises(ValueError, match="twice"):
            shapes.table("test.loaded", "exclusive", ())
    finally:
        del shapes.TABLES["test.loaded"]


def test_an_alternation_matches_where_one_of_its_rows_does() -> None:
    ci = TABLES["ci"]
    joined = ci.alternation(*(row.shape.name for row in ci))
    for row in ci:
        for sample in row.shape.samples:
            assert isinstance(sample, bytes)
            assert joined.match(sample) is not None
    assert joined.match(b"tests passed") is None


def _units(sample: bytes) -> list[bytes]:
    """Runs to pump for a pattern whose sample is ``sample``: its own first bytes, each
    byte where the sample changes character class, and the generic runs."""
    units = {sample[:k] for k in (1, 2, 4, 8, 16) if len(sample) >= k}
    kinds = [(chr(b).isalpha(), chr(b).isdigit(), chr(b).isspace()) for b in sample]
    changes = [i for i in range(1, len(sample)) if kinds[i] != kinds[i - 1]]
    units.update(sample[i : i + 1] for i in changes[:24])
    units.update(GENERIC_UNITS)
    return sorted(units)


def _candidates(row: Row) -> list[tuple[bytes, bytes]]:
    """(head, unit): the line is ``head + unit * n + FAIL``. The head is the sample up to
    where the unit is found in it (so the pattern is well into a match when the run
    starts), or nothing."""
    found: list[tuple[bytes, bytes]] = []
    for sample in row.shape.samples:
        raw = sample if isinstance(sample, bytes) else sample.encode("utf-8")
        for unit in _units(raw):
            found.append((b"", unit))
            at = raw.find(unit, 1)
            if at > 0:
                found.append((raw[:at], unit))
    return sorted(set(found))


def _seconds(call: Callable[[Any], object], subject: Any) -> float:
    """The CPU time of this thread one call takes (the least of three): not the wall
    clock, which a busy machine stretches by whole time slices."""
    best = float("inf")
    for _ in range(3):
        start = time.thread_time()
        call(subject)
        best = min(best, time.thread_time() - start)
    return best


def _rows() -> list[tuple[str, Row]]:
    return [(f"{table.name}.{row.shape.name}", row) for table in TABLES.values() for row in table]


@pytest.mark.parametrize(("name", "row"), _rows(), ids=[name for name, _ in _rows()])
def test_every_pattern_stays_linear_on_hostile_input(name: str, row: Row) -> None:
    """``match`` and ``search`` on a pumped run of ``4 * UNITS`` take at most
    ``RATIO_BOUND`` times what they take on ``UNITS``, measured in one run."""
    regex: Any = row.regex
    as_text = isinstance(regex.pattern, str)
    worst = (0.0, "")
    for head, unit in _candidates(row):
        for op in (regex.match, regex.search):
            times = []
            for units in (UNITS, 4 * UNITS):
                line = head + unit * units + FAIL
                subject = line.decode("utf-8", "replace") if as_text else line
                times.append(_seconds(op, subject))
            ratio = (times[1] + FLOOR_S) / (times[0] + FLOOR_S)
            worst = max(worst, (ratio, f"{op.__name__} on {head[:40]!r} + {unit!r} * n"))
    assert worst[0] < RATIO_BOUND, f"{name}: {worst[0]:.1f}x for 4x the line, {worst[1]}"


def test_a_quadratic_pattern_is_caught() -> None:
    """The measure itself: a pattern known to be quadratic on a run of spaces (the Ray
    repeat tail without its lookbehind) fails the bound."""
    quadratic = re.compile(rb"\s*\[repeated \d{1,10}x across cluster\]\s*$")
    line = b" " * UNITS + FAIL
    longer = b" " * (4 * UNITS) + FAIL
    short_s = _seconds(quadratic.search, line)
    long_s = _seconds(quadratic.search, longer)
    assert (long_s + FLOOR_S) / (short_s + FLOOR_S) >= RATIO_BOUND
