"""The loader of line shape tables: rows checked and compiled once (``formats.shapes``)."""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

from sparseety_tui.formats._numbers import count, real

#: What a group's text is: a count, a decimal, or text kept as it is.
FieldType = Literal["int", "float", "text"]
#: How the code applies a row: at the start of the text, or anywhere in it.
Op = Literal["match", "search"]
#: How a table's rows relate to each other (see the module docstring).
Mode = Literal["exclusive", "first", "parts"]

_CONVERT = {"int": count, "float": real}


@dataclass(frozen=True)
class LineShape:
    """One row: ``pattern`` (bytes, or str for a pattern applied to decoded text) named
    ``name``; ``kind`` the kind of line or part it recognises; ``fields`` the type of each
    group (by name, or by number for an unnamed group); ``samples`` real lines it
    matches (of the pattern's type); ``op`` how the code applies it."""

    name: str
    pattern: bytes | str
    kind: str
    samples: tuple[bytes | str, ...]
    fields: Mapping[str, FieldType] = field(default_factory=dict)
    op: Op = "match"


@dataclass(frozen=True)
class Row:
    """A loaded shape: the shape and its compiled pattern."""

    shape: LineShape
    regex: re.Pattern[bytes] | re.Pattern[str]

    def find(self, text: bytes | str) -> re.Match[bytes] | re.Match[str] | None:
        """The row's match in ``text``, as the code applies it (``LineShape.op``)."""
        find: Any = self.regex.match if self.shape.op == "match" else self.regex.search
        found: re.Match[bytes] | re.Match[str] | None = find(text)
        return found


@dataclass(frozen=True)
class Table:
    """A named table of loaded rows, in order, and how they relate (``mode``)."""

    name: str
    mode: Mode
    rows: tuple[Row, ...]

    def __iter__(self) -> Iterator[Row]:
        return iter(self.rows)

    def row(self, name: str) -> Row:
        for row in self.rows:
            if row.shape.name == name:
                return row
        raise KeyError(f"{self.name} has no row {name!r}")

    def bytes_regex(self, name: str) -> re.Pattern[bytes]:
        """The compiled pattern of the bytes row ``name``."""
        regex = self.row(name).regex
        if not isinstance(regex.pattern, bytes):
            raise TypeError(f"{self.name}.{name} is a str pattern")
        return regex

    def str_regex(self, name: str) -> re.Pattern[str]:
        """The compiled pattern of the str row ``name``."""
        regex = self.row(name).regex
        if not isinstance(regex.pattern, str):
            raise TypeError(f"{self.name}.{name} is a bytes pattern")
        return regex

    def alternation(self, *names: str) -> re.Pattern[bytes]:
        """One compiled pattern that matches where any of the bytes rows ``names`` does,
        for code that only asks whether one of them matches."""
        parts = []
        for name in names:
            pattern = self.row(name).shape.pattern
            if not isinstance(pattern, bytes):
                raise TypeError(f"{self.name}.{name} is a str pattern")
            parts.append(pattern)
        return re.compile(b"(?:" + b"|".join(parts) + b")")


#: Every table loaded so far, by name (the tests walk them).
TABLES: dict[str, Table] = {}


def _group_keys(regex: re.Pattern[bytes] | re.Pattern[str]) -> set[str]:
    """Every group of ``regex`` as ``LineShape.fields`` names it: by name, else by number."""
    names = {number: name for name, number in regex.groupindex.items()}
    return {names.get(number, str(number)) for number in range(1, regex.groups + 1)}


def _check(table_name: str, shape: LineShape, row: Row) -> None:
    """Raise ValueError when a row's types or samples do not hold (module docstring)."""
    where = f"{table_name}.{shape.name}"
    groups = _group_keys(row.regex)
    if set(shape.fields) != groups:
        raise ValueError(f"{where}: groups {sorted(groups)}, typed {sorted(shape.fields)}")
    if not shape.samples:
        raise ValueError(f"{where}: no sample line")
    for sample in shape.samples:
        if type(sample) is not type(shape.pattern):
            raise ValueError(f"{where}: sample {sample!r} is not of the pattern's type")
        m = row.find(sample)
        if m is None:
            raise ValueError(f"{where}: does not match its sample {sample!r}")
        for key, kind in shape.fields.items():
            value = m.group(int(key) if key.isdigit() else key)
            convert = _CONVERT.get(kind)
            if value is not None and convert is not None and convert(value) is None:
                raise ValueError(f"{where}: {key}={value!r} in {sample!r} is no {kind}")


def table(name: str, mode: Mode, shapes: tuple[LineShape, ...]) -> Table:
    """Compile and check the rows ``shapes`` (once: call at import) as table ``name``."""
    if name in TABLES:
        raise ValueError(f"table {name!r} is loaded twice")
    rows = []
    seen: set[str] = set()
    for shape in shapes:
        if shape.name in seen:
            raise ValueError(f"{name}: two rows named {shape.name!r}")
        seen.add(shape.name)
        row = Row(shape, re.compile(shape.pattern))
        _check(name, shape, row)
        rows.append(row)
    loaded = Table(name, mode, tuple(rows))
    TABLES[name] = loaded
    return loaded
