"""Where each request's lines after its first live: row -> ``MoreLines``, a part a segment.

Most rows of a vLLM log have exactly one such line (the ``Added request`` line after the
``Received request`` one), and they come in bulk, a run of new rows at a time
(the batch applier, ``core.extraction``). Kept as a tuple in a dict, that is four Python objects a row (the
row number, the tuples, the offset) and a dict entry: a visible part of reading a big vLLM
log, and most of what its rows held. So a segment keeps such "single" lines in three
arrays of its rows (file, offset, length; offset -1: none) and everything else (rows with
more lines, lines added one at a time) in a dict. Readers see one ``Mapping``:
``get(row)`` of a single line makes its tuple then.

A frozen store (``FrozenStore``) takes a segment's ``snapshot`` (a copy of what the
writer thread may still change).
"""

from __future__ import annotations

from array import array
from collections.abc import Iterator, Mapping
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # (numpy is imported when a segment first needs its arrays)
    import numpy as np

#: (file, offset, length) of each line of a request after its first, in line order. A
#: tuple, replaced when a line comes (rows have one or two such lines): a frozen copy
#: shares it as it is.
MoreLines = tuple[tuple[int, int, int], ...]

_NONE = -1


class LineSegment:
    """The ``MoreLines`` of one segment's rows (``first`` is the segment's first row).

    The single lines are ``array``s (a row's cell read as a Python int, cheaply: the
    per-line path reads and replaces them one at a time), written in bulk through numpy
    views of them."""

    __slots__ = ("files", "first", "lengths", "lines", "offsets", "singles")

    def __init__(self, first: int) -> None:
        self.first = first
        self.lines: dict[int, MoreLines] = {}
        #: Per row of the segment, its single line (offsets -1: none); None until one.
        self.files: array[int] | None = None
        self.offsets: array[int] | None = None
        self.lengths: array[int] | None = None
        self.singles = 0

    def get(self, row: int) -> MoreLines | None:
        more = self.lines.get(row)
        if more is not None or self.offsets is None:
            return more
        i = row - self.first
        offset = self.offsets[i]
        if offset == _NONE:
            return None
        assert self.files is not None and self.lengths is not None
        return ((self.files[i], offset, self.lengths[i]),)

    def has_single(self, row: int) -> bool:
        return self.offsets is not None and self.offsets[row - self.first] != _NONE

    def drop_single(self, row: int) -> None:
        assert self.offsets is not None
        self.offsets[row - self.first] = _NONE
        self.singles -= 1

    def make_arrays(self, size: int) -> None:
        self.offsets = array("q", [_NONE]) * size
        self.files = array("i", [0]) * size
        self.lengths = array("I", [0]) * size

    def single_rows(self) -> list[int]:
        if self.offsets is None or not self.singles:
            return []
        import numpy as np

        offsets = np.frombuffer(self.offsets, dtype=np.int64)
        rows: list[int] = (np.flatnonzero(offsets != _NONE) + self.first).tolist()
        return rows

    def snapshot(self, stop: int) -> LineSegment:
        """A copy of the rows below ``stop``, for a frozen store."""
        copy = LineSegment(self.first)
        copy.lines = {row: more for row, more in self.lines.items() if row < stop}
        if self.offsets is not None and self.singles:
            import numpy as np

            assert self.files is not None and self.lengths is not None
            copy.offsets, copy.files = array("q", self.offsets), array("i", self.files)
            copy.lengths = array("I", self.lengths)
            offsets = np.frombuffer(copy.offsets, dtype=np.int64)
            offsets[min(max(stop - self.first, 0), len(offsets)) :] = _NONE
            copy.singles = int(np.count_nonzero(offsets != _NONE))
        return copy


class LineTable(Mapping[int, MoreLines]):
    """Row -> ``MoreLines`` for the rows that have any, ``1 << shift`` rows a segment."""

    def __init__(self, shift: int, parts: list[LineSegment] | None = None) -> None:
        self._shift = shift
        self._parts: list[LineSegment] = parts if parts is not None else []
        self._len = sum(len(p.lines) + p.singles for p in self._parts)

    def _segment(self, row: int, grow: bool = False) -> LineSegment | None:
        index = row >> self._shift
        if index < len(self._parts):
            return self._parts[index]
        if not grow:
            return None
        while len(self._parts) <= index:
            self._parts.append(LineSegment(len(self._parts) << self._shift))
        return self._parts[index]

    def part(self, index: int) -> LineSegment:
        """Segment ``index`` (the live one: writer thread only)."""
        return self._parts[index] if index < len(self._parts) else LineSegment(index << self._shift)

    def get(self, row: int, default: MoreLines | None = None) -> MoreLines | None:  # type: ignore[override]
        segment = self._segment(row) if row >= 0 else None
        more = None if segment is None else segment.get(row)
        return default if more is None else more

    def __getitem__(self, row: int) -> MoreLines:
        more = self.get(row)
        if more is None:
            raise KeyError(row)
        return more

    def __setitem__(self, row: int, value: MoreLines) -> None:
        segment = self._segment(row, grow=True)
        assert segment is not None
        if segment.has_single(row):
            segment.drop_single(row)
        elif row not in segment.lines:
            self._len += 1
        segment.lines[row] = value

    def add_singles(
        self, rows: np.ndarray[Any, Any], file: int, offsets: Any, lengths: Any
    ) -> None:
        """One line each for ``rows`` (ascending, none with any yet), at ``offsets`` /
        ``lengths`` of ``file``: array writes, no object a row."""
        if not len(rows):
            return
        import numpy as np

        shift = self._shift
        offsets = np.asarray(offsets, dtype=np.int64)
        lengths = np.asarray(lengths, dtype=np.uint32)
        segments = rows >> shift
        cuts = np.flatnonzero(np.diff(segments)) + 1
        for piece in np.split(np.arange(len(rows)), cuts):
            first_row = int(rows[piece[0]])
            segment = self._segment(first_row, grow=True)
            assert segment is not None
            if segment.offsets is None:
                segment.make_arrays(1 << shift)
            assert segment.offsets is not None and segment.files is not None
            assert segment.lengths is not None
            at = rows[piece] - segment.first
            np.frombuffer(segment.offsets, dtype=np.int64)[at] = offsets[piece]
            np.frombuffer(segment.files, dtype=np.int32)[at] = file
            np.frombuffer(segment.lengths, dtype=np.uint32)[at] = lengths[piece]
            segment.singles += len(piece)
        self._len += len(rows)

    def items(self) -> Iterator[tuple[int, MoreLines]]:  # type: ignore[override]
        """Each row's lines, a segment at a time: its dict's rows, then its single ones."""
        for segment in self._parts:
            yield from segment.lines.items()
            for row in segment.single_rows():
                more = segment.get(row)
                assert more is not None
                yield row, more

    def __iter__(self) -> Iterator[int]:
        for row, _more in self.items():
            yield row

    def values(self) -> Iterator[MoreLines]:  # type: ignore[override]
        for _row, more in self.items():
            yield more

    def __len__(self) -> int:
        return self._len
