"""RequestStore: one compact row per request, O(1) lookup by id, lines located not kept.

Columns hold a few bytes per request each (no per-row Python object); the row layout, what
unknown is in each column and the per-token side record are ``core.store._layout``'s. Heavy
per-request data (text, token ids, per-token routing) is never stored: each row keeps where
its lines live (file index, byte offset, length) and the detail view re-reads and re-parses
them on demand. Rows that have per-token data get a small ``RowExtras`` side record, and
rows of more than one line the places of the others in ``more_lines``; request-level-only
rows (the common case in big request logs) get neither, and the totals walk only the rows
with per-token data.

Columns are kept in segments of ``SEGMENT_ROWS`` rows (``SegmentedColumn``, in
``_segments``) so that a frozen copy shares the full ones instead of copying them, and a
column every row leaves unknown holds no bytes at all (``LazyColumn``, in ``_lazy``). A
file read in byte ranges comes back as ``StorePart``s (``_parts``).

Only the Extractor writes (one writer), on one thread. Readers on other threads never
touch a RequestStore: they get a ``FrozenStore`` (``Extractor.freeze()``), an
immutable copy that is built incrementally. For that the store keeps ``dirty_from``: the
lowest row changed in place since the last freeze (rows are only ever appended at the end,
so rows below it and below the last frozen length are unchanged and their frozen copy can
be shared).
"""

from __future__ import annotations

import math
from array import array
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from sparseety_tui.core.store import _parts
from sparseety_tui.core.store._idindex import EncodedIds, IdIndex
from sparseety_tui.core.store._layout import (
    BYTE_COLUMNS,
    FILE_COLUMN,
    FLOAT32_COLUMNS,
    FLOAT64_COLUMNS,
    INT_COLUMNS,
    LAZY_COLUMNS,
    LAZY_FILLS,
    NAN,
    ROW_LAYOUT,
    SHORT_COLUMNS,
    STATE_CODE,
    TIMING_FROM,
    TRACE_COLUMNS,
    UNKNOWN,
    RowExtras,
    unknown_of,
)
from sparseety_tui.core.store._lazy import Column, LazyColumn, column_values
from sparseety_tui.core.store._line_table import LineTable
from sparseety_tui.core.store._parts import StorePart
from sparseety_tui.core.store._segments import SEGMENT_SHIFT, RowTable, SegmentedColumn

if TYPE_CHECKING:
    import numpy as np

#: Where ``merge_row`` finds a line's state and arrival time, and the states it compares.
_STATE_AT = ROW_LAYOUT.index("state")
_RECEIVED_AT = ROW_LAYOUT.index("received_ts")
_OPEN = (STATE_CODE["received"], STATE_CODE["running"])
_ENDS = (STATE_CODE["finished"], STATE_CODE["aborted"], STATE_CODE["failed"])


@dataclass(frozen=True)
class LineLocation:
    file: int
    offset: int
    length: int


class RequestStore:
    def __init__(self) -> None:
        # Row -> id (``ids[row]``) and id -> row (``ids.find(id)``): one compact object.
        self.ids = IdIndex()
        self.models: list[str] = [""]
        self._model_code: dict[str, int] = {"": 0}
        self.columns: dict[str, Column] = {}
        typecodes = {
            **dict.fromkeys(INT_COLUMNS, "i"),
            **dict.fromkeys(FLOAT32_COLUMNS, "f"),
            **dict.fromkeys(FLOAT64_COLUMNS, "d"),
            **dict.fromkeys(BYTE_COLUMNS, "B"),
            **dict.fromkeys(SHORT_COLUMNS, "H"),
            **dict.fromkeys(TRACE_COLUMNS, "Q"),
            FILE_COLUMN: "I",
        }
        for name, typecode in typecodes.items():
            if name in LAZY_COLUMNS:
                fill = unknown_of(typecode)
                fill = LAZY_FILLS.get(name, fill)
                self.columns[name] = LazyColumn(typecode, fill, self._array_setter(name))
            else:
                self.columns[name] = SegmentedColumn(typecode)
        self.offset = SegmentedColumn("q")
        self.length = SegmentedColumn("I")
        self.extras: RowTable[RowExtras] = RowTable()
        self.more_lines = LineTable(SEGMENT_SHIFT)
        #: Lowest row changed in place since the last freeze (see the module docstring).
        self.dirty_from = 0
        #: Rows a span made under vLLM's engine-side id (``<id>-<8 hex>``) by the API id
        #: ``<id>``, so that a later line naming the API id joins them (core.extraction).
        self.span_aliases: dict[str, int] = {}
        #: Whether some row's timing comes from another source than its file's (a timing
        #: source column holds bytes): only then does a later line set one back.
        self.timing_codes = False
        self._bind_columns()
        # Attribute shortcuts for the hot path.
        c = self.columns
        self.prompt_tokens = c["prompt_tokens"]
        self.completion_tokens = c["completion_tokens"]
        self.cached_tokens = c["cached_tokens"]
        self.latency_s = c["latency_s"]
        self.ttft_s = c["ttft_s"]
        self.state = c["state"]

    def _bind_columns(self) -> None:
        """The hot path's shortcuts to the columns (again once a lazy one is an array)."""
        self._row_columns = [self.columns[name] for name in ROW_LAYOUT]
        self._row_appenders = [column.append for column in self._row_columns]
        self._append_line_no = self.columns["line_no"].append
        self._append_file = self.columns[FILE_COLUMN].append
        self._append_offset = self.offset.append
        self._append_length = self.length.append

    def seal(self) -> None:
        """Move every column's full segments out of its tail (``SegmentedColumn.seal``),
        and the ids' (``IdIndex.seal``), before a freeze shares them."""
        self.ids.seal(SEGMENT_SHIFT)
        sealed = [
            column.seal()
            for column in (*self.columns.values(), self.offset, self.length)
            if isinstance(column, SegmentedColumn)
        ]
        if any(sealed):
            self._bind_columns()  # the tails are new arrays

    def _array_setter(self, name: str) -> Callable[[SegmentedColumn], None]:
        timing_code = name in TIMING_FROM.values()

        def on_array(column: SegmentedColumn) -> None:
            self.columns[name] = column
            self._bind_columns()
            if timing_code:
                self.timing_codes = True

        return on_array

    def __len__(self) -> int:
        return len(self.ids)

    def model_code(self, name: str) -> int:
        code = self._model_code.get(name)
        if code is None:
            code = len(self.models)
            if code > 0xFFFF:
                code = 0  # beyond 65,535 distinct model names the name is not kept
            else:
                self.models.append(name)
                self._model_code[name] = code
        return code

    def new_row(self, request_id: str, file: int, offset: int, length: int, line_no: int) -> int:
        """Append an all-unknown row for ``request_id`` and return its index."""
        row = self.ids.append(request_id)
        for name in INT_COLUMNS:
            self.columns[name].append(UNKNOWN)
        self.columns["line_no"][row] = line_no
        for name in FLOAT32_COLUMNS:
            self.columns[name].append(NAN)
        for name in FLOAT64_COLUMNS:
            self.columns[name].append(NAN)
        for name in BYTE_COLUMNS:
            self.columns[name].append(0)
        self.columns["model"].append(0)
        for name in TRACE_COLUMNS:
            self.columns[name].append(0)
        self.columns["file"].append(file)
        self.offset.append(offset)
        self.length.append(length)
        return row

    def append_row(
        self,
        request_id: str,
        values: tuple[Any, ...],
        file: int,
        offset: int,
        length: int,
        line_no: int,
    ) -> int:
        """Append a row from values in ``ROW_LAYOUT`` order (the Extractor's hot path)."""
        row = self.ids.append(request_id)
        for append, value in zip(self._row_appenders, values):
            append(value)
        self._append_line_no(line_no)
        self._append_file(file)
        self._append_offset(offset)
        self._append_length(length)
        return row

    def extend_rows(
        self,
        request_ids: list[str] | EncodedIds,
        columns: dict[str, Any],
        file: int,
        offsets: Any,
        lengths: Any,
        line_nos: Any,
        unknown: Sequence[str] = (),
    ) -> None:
        """Append many new rows at once; ``columns`` are numpy arrays keyed by name, line
        offsets and lengths lists or arrays; the columns named in ``unknown`` get their
        unknown value (-1, NaN, 0: a column that holds none yet stays empty). Every
        conversion is done before the first write, so a failing one leaves the store as
        it was."""
        import numpy as np

        files = self.columns["file"]
        n = len(request_ids)
        blobs = [
            (self.columns[name], values.astype(self.columns[name].typecode, copy=False).tobytes())
            for name, values in columns.items()
        ]
        fills: dict[str, bytes] = {}
        lazy: list[LazyColumn] = []
        for name in unknown:
            column = self.columns[name]
            code = column.typecode
            if isinstance(column, LazyColumn) and column.is_fill(unknown_of(code)):
                lazy.append(column)
            else:  # (a lazy column whose fill is another value: the unknowns are values)
                if code not in fills:
                    fills[code] = (array(code, [unknown_of(code)]) * n).tobytes()
                blobs.append((column, fills[code]))
        blobs.append((self.columns["line_no"], line_nos.astype("i", copy=False).tobytes()))
        blobs.append((files, np.full(len(request_ids), file, dtype=files.typecode).tobytes()))
        blobs.append((self.offset, np.asarray(offsets, dtype=np.int64).tobytes()))
        blobs.append((self.length, np.asarray(lengths, dtype=np.uint32).tobytes()))
        self.ids.extend(request_ids)
        for column, blob in blobs:
            column.frombytes(blob)
        for lazy_column in lazy:
            lazy_column.extend_fill(n)

    def touch(self, row: int) -> None:
        """Note that ``row`` is about to change in place (see ``dirty_from``)."""
        if row < self.dirty_from:
            self.dirty_from = row

    def set_state(self, row: int, code: int) -> None:
        self.touch(row)
        self.state[row] = code

    def merge_row(self, row: int, values: tuple[Any, ...]) -> None:
        """Overwrite the cells ``values`` knows (not -1, not NaN, not 0 for codes): the one
        rule for merging what two lines, or two parts of a file, say of a request.

        One exception: an open state (received, running) does not replace an end
        (finished, aborted, failed) whose time is known when the line's own time is known
        and not after it. A span that ended the request and a log's ``Received request``
        line read after it say the same request arrived, then ended, not that it is running
        again; a line later than the end still reopens it."""
        if row < self.dirty_from:
            self.dirty_from = row
        if values[_STATE_AT] in _OPEN and self.state[row] in _ENDS:
            ended = self.columns["finished_ts"][row]
            at = values[_RECEIVED_AT]
            if ended == ended and at == at and at <= ended:
                values = (*values[:_STATE_AT], 0, *values[_STATE_AT + 1 :])
        for column, value in zip(self._row_columns, values):
            if value == value and value != UNKNOWN and (value or column.typecode in "if"):
                column[row] = value

    def add_line(self, row: int, file: int, offset: int, length: int) -> None:
        """Record one more line that contributed to ``row``."""
        self.touch(row)
        more = self.more_lines.get(row)
        self.more_lines[row] = (
            ((file, offset, length),) if more is None else (*more, (file, offset, length))
        )

    def extras_for(self, row: int) -> RowExtras:
        """The row's extras, created if need be; the caller is about to change them."""
        if row < self.dirty_from:
            self.dirty_from = row
        extras = self.extras.get(row)
        if extras is None:
            extras = self.extras[row] = RowExtras()
        return extras

    def lines_of(self, row: int) -> list[LineLocation]:
        """Where every line of this request lives, first line first."""
        locations = [LineLocation(self.columns["file"][row], self.offset[row], self.length[row])]
        more = self.more_lines.get(row)
        if more is not None:
            locations.extend(LineLocation(f, o, n) for f, o, n in more)
        return locations

    def get(self, name: str, row: int) -> int | float | None:
        """One cell with unknown mapped to None."""
        value: int | float = self.columns[name][row]
        if isinstance(value, float):
            return None if math.isnan(value) else value
        if name in INT_COLUMNS:
            return None if value == UNKNOWN else value
        return value

    def numeric_view(
        self, start: int = 0, stop: int | None = None, names: Sequence[str] | None = None
    ) -> dict[str, np.ndarray[Any, Any]]:
        """Copies of rows [start, stop) of all columns (or of ``names``) as numpy arrays
        (unknown ints become NaN floats).

        Copies, not views: the writer may append (and so reallocate) at any time. Call it
        from the writer's thread: the buffer is exported while it is copied.
        """
        import numpy as np

        out: dict[str, np.ndarray[Any, Any]] = {}
        n = len(self.ids)
        stop = n if stop is None else min(stop, n)
        count = max(stop - start, 0)
        for name in self.columns if names is None else names:
            values = column_values(self.columns[name], start, count).copy()
            if name in INT_COLUMNS:
                as_float = values.astype(np.float64)
                as_float[values == UNKNOWN] = np.nan
                out[name] = as_float
            else:
                out[name] = values
        return out

    # -- parts of one file read in ranges ------------------------------------------------

    def export_part(self) -> StorePart:
        """The store's rows in a picklable form (``core.store._parts``)."""
        return _parts.export_part(self)

    def merge_part(
        self, part: StorePart, file: int, line_shift: int, renames: Mapping[str, str] | None
    ) -> None:
        """Append the rows of a later part of file ``file`` (``core.store._parts``)."""
        _parts.merge_part(self, part, file, line_shift, renames)
