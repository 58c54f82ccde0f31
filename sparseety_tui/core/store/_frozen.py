"""Immutable, typed copies of the Extractor's state, for readers on other threads.

The ingest worker is the only writer of the ``RequestStore`` and the aggregates. The UI,
the totals/view thread and the server read a ``FrozenExtractor`` that the writer made with
``Extractor.freeze()``: nothing in it changes after it is made, so any thread may read any
part of it at any time, without locks and without catching races.

Freezing is incremental, so it can run after every fed batch: a ``FrozenStore`` is a list
of segments of ``SEGMENT_ROWS`` rows (the columns, the ids, the extras). A full segment's
columns are the store's own arrays, compacted and read-only from then on (the store copies
one before writing to it: ``SegmentedColumn``), its ids the store's own sealed
bytes and ends (``IdIndex.seal``: ids never change); the rest is copied.
Rows are only appended at the end of a store and ``RequestStore.dirty_from`` says the
lowest row changed in place since the last freeze, so every full segment below it is shared
with the previous frozen store and only the rest is copied: usually the last segment or two.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, overload

from sparseety_tui.core.store._errors import FrozenErrorLog
from sparseety_tui.core.store._files import FrozenFile
from sparseety_tui.core.store._heat import HeatCounts
from sparseety_tui.core.store._idindex import EncodedIds
from sparseety_tui.core.store._layout import INT_COLUMNS, UNKNOWN, RowExtras
from sparseety_tui.core.store._lazy import column_values
from sparseety_tui.core.store._line_table import LineSegment, LineTable, MoreLines
from sparseety_tui.core.store._segments import (
    SEGMENT_ROWS,
    SEGMENT_SHIFT,
    RowTable,
    Segment,
    SegmentedColumn,
    joined,
)
from sparseety_tui.core.store._series import EngineSeries
from sparseety_tui.core.store._store import LineLocation, RequestStore
from sparseety_tui.core.store._views import merged_meta
from sparseety_tui.core.tokens import TokenCounter
from sparseety_tui.events import ErrorPayload, MetaPayload

if TYPE_CHECKING:
    import numpy as np


@dataclass(frozen=True)
class _Segment:
    start: int
    rows: int
    #: Raw dtypes, "offset" and "length" too; a full segment's compacted (store.Segment).
    columns: dict[str, Segment]
    ids: EncodedIds
    extras: dict[int, RowExtras]
    more_lines: LineSegment


class FrozenColumn:
    """One column of a frozen store, indexed by row (``column[row]``)."""

    def __init__(self, segments: Sequence[_Segment], name: str) -> None:
        self._parts = [segment.columns[name] for segment in segments]

    def __getitem__(self, row: int) -> Any:
        return self._parts[row >> SEGMENT_SHIFT][row & (SEGMENT_ROWS - 1)].item()


class FrozenIds(Sequence[str]):
    """Request ids of a frozen store: ``ids[row]`` and ``find(id)``."""

    def __init__(self, segments: Sequence[_Segment], rows: int) -> None:
        self._segments = segments
        self._rows = rows

    def __len__(self) -> int:
        return self._rows

    @overload
    def __getitem__(self, row: int) -> str: ...
    @overload
    def __getitem__(self, row: slice) -> list[str]: ...

    def __getitem__(self, row: int | slice) -> str | list[str]:
        if isinstance(row, slice):
            return [self[i] for i in range(*row.indices(self._rows))]
        if row < 0:
            row += self._rows
        if not 0 <= row < self._rows:
            raise IndexError(row)
        return self._segments[row >> SEGMENT_SHIFT].ids[row & (SEGMENT_ROWS - 1)]

    def __iter__(self) -> Iterator[str]:
        for segment in self._segments:
            yield from segment.ids

    def find(self, request_id: str) -> int | None:
        """The row of ``request_id``, or None. A search of each segment's id bytes (C's
        ``bytes.find``; a hit counts where it starts and ends an id): lookups are rare
        (``g``, ``--request``), rows are many, so no hashes are kept for them."""
        import numpy as np

        key = request_id.encode("utf-8", errors="surrogatepass")
        for segment in self._segments:
            blob, ends = segment.ids.blob, segment.ids.ends
            if not key:  # the empty id: an id whose end is its start
                empty = np.flatnonzero(np.diff(ends, prepend=0) == 0)
                if empty.size:
                    return int(segment.start + empty[0])
                continue
            at = blob.find(key)
            while at != -1:
                end = at + len(key)
                i = int(np.searchsorted(ends, end))
                if i < len(ends) and int(ends[i]) == end and (int(ends[i - 1]) if i else 0) == at:
                    return int(segment.start + i)
                at = blob.find(key, at + 1)
        return None


class FrozenStore:
    """A read-only copy of a RequestStore's first ``len()`` rows, with the same reading
    interface (``columns[name][row]``, ``ids``, ``extras``, ``numeric_view`` ...)."""

    def __init__(
        self,
        segments: tuple[_Segment, ...],
        models: tuple[str, ...],
        dtypes: Mapping[str, np.dtype[Any]],
        span_aliases: Mapping[str, int] | None = None,
    ) -> None:
        """``dtypes``: every column's name and type (also known when there are no rows);
        ``span_aliases``: rows a span made under an engine-side id, by the API id."""
        self._segments = segments
        self.span_aliases: Mapping[str, int] = span_aliases or {}
        self._dtypes = dtypes
        self._rows = sum(segment.rows for segment in segments)
        self.models = models
        self.ids = FrozenIds(segments, self._rows)
        self.extras: Mapping[int, RowExtras] = RowTable([s.extras for s in segments])
        self.more_lines: Mapping[int, MoreLines] = LineTable(
            SEGMENT_SHIFT, [s.more_lines for s in segments]
        )
        self._columns: dict[str, FrozenColumn] = {}

    def __len__(self) -> int:
        return self._rows

    @property
    def columns(self) -> Mapping[str, FrozenColumn]:
        if not self._columns:
            self._columns = {name: FrozenColumn(self._segments, name) for name in self._dtypes}
        return self._columns

    @property
    def offset(self) -> FrozenColumn:
        return self.columns["offset"]

    def leading_segments(self, rows: int) -> tuple[object, ...]:
        """The segments that hold rows ``0 .. rows-1`` (whole segments: ``rows`` is a
        multiple of ``SEGMENT_ROWS``), for ``still_holds``."""
        if rows % SEGMENT_ROWS:
            raise ValueError(f"{rows} rows are not whole segments")
        return self._segments[: rows >> SEGMENT_SHIFT]

    def still_holds(self, segments: tuple[object, ...]) -> bool:
        """Whether this freeze begins with ``segments`` (an earlier freeze's
        ``leading_segments``): then those rows are the same here. A freeze shares the
        segments of the rows that did not change since the freeze before it and copies
        the others (``freeze_store``), so the very same objects mean the same rows."""
        return len(segments) <= len(self._segments) and all(
            mine is theirs for mine, theirs in zip(self._segments, segments)
        )

    def lines_of(self, row: int) -> list[LineLocation]:
        """Where every line of this request lives, first line first."""
        c = self.columns
        locations = [LineLocation(c["file"][row], c["offset"][row], c["length"][row])]
        locations.extend(LineLocation(f, o, n) for f, o, n in self.more_lines.get(row, ()))
        return locations

    def numeric_view(
        self, start: int = 0, stop: int | None = None, names: Sequence[str] | None = None
    ) -> dict[str, np.ndarray[Any, Any]]:
        """Rows [start, stop) of every store column (or of ``names``) as numpy arrays,
        unknown ints as NaN floats (``RequestStore.numeric_view``'s contract)."""

        stop = self._rows if stop is None else min(stop, self._rows)
        first, last = start >> SEGMENT_SHIFT, (stop - 1) >> SEGMENT_SHIFT
        parts = self._segments[first : last + 1] if stop > start else ()
        out: dict[str, np.ndarray[Any, Any]] = {}
        for name in self._dtypes if names is None else names:
            if name in ("offset", "length"):
                continue
            dtype = self._dtypes[name]
            pieces = [  # the rows wanted of each segment (of the first and last: some)
                s.columns[name][max(start - s.start, 0) : min(stop - s.start, s.rows)]
                for s in parts
            ]
            values = joined(pieces, dtype)  # compacted segments widened back
            if name in INT_COLUMNS:
                out[name] = numeric(name, values)
            else:
                # A segment's own rows: copied, as the store's numeric_view copies.
                out[name] = values.copy() if pieces and values is pieces[0] else values
        return out

    def take(self, rows: Sequence[int], names: Sequence[str]) -> dict[str, np.ndarray[Any, Any]]:
        """Store rows ``rows`` (any order, each < ``len()``) of the columns ``names``, in
        their own types: one slice per run of consecutive rows, so the rows a table shows
        (a run, or a few) cost a few numpy calls a column instead of a call a cell. The
        arrays may be views of the store's: read them, never write."""
        runs: list[list[int]] = []  # [segment, first local row, local row after the last]
        for row in rows:
            segment, local = row >> SEGMENT_SHIFT, row & (SEGMENT_ROWS - 1)
            if runs and runs[-1][0] == segment and runs[-1][2] == local:
                runs[-1][2] += 1
            else:
                runs.append([segment, local, local + 1])
        segments = self._segments
        return {
            name: joined(
                [segments[s].columns[name][lo:hi] for s, lo, hi in runs], self._dtypes[name]
            )
            for name in names
        }


def numeric(name: str, values: np.ndarray[Any, Any]) -> np.ndarray[Any, Any]:
    """A column's values as ``numeric_view`` gives them: an int column's unknown as NaN."""
    import numpy as np

    if name not in INT_COLUMNS:
        return values
    as_float = values.astype(np.float64)
    as_float[values == UNKNOWN] = np.nan
    return as_float


def freeze_store(store: RequestStore, previous: FrozenStore | None) -> FrozenStore:
    """Freeze ``store``; ``previous`` must be the last freeze of the same store (or None).
    Writer thread only: it resets ``store.dirty_from``."""
    import numpy as np

    rows = len(store)
    kept: tuple[_Segment, ...] = ()
    if previous is not None:
        clean = min(store.dirty_from, len(previous)) >> SEGMENT_SHIFT
        kept = previous._segments[:clean]
    segments = list(kept)
    store.seal()  # full segments out of the columns' tails: shared below, not copied
    arrays: dict[str, Any] = {**store.columns, "offset": store.offset, "length": store.length}
    for start in range(len(kept) * SEGMENT_ROWS, rows, SEGMENT_ROWS):
        stop = min(start + SEGMENT_ROWS, rows)
        columns = {}
        for name, column in arrays.items():
            if stop - start == SEGMENT_ROWS and isinstance(column, SegmentedColumn):
                # The store's own segment, read-only from now on (it copies on write).
                columns[name] = column.shared_segment(start >> SEGMENT_SHIFT)
                continue
            values = column_values(column, start, stop - start)
            if values.flags.writeable:  # the tail's last rows: copied (a lazy column's
                values = values.copy()  # fill is read-only and holds no memory: shared)
                values.flags.writeable = False
            columns[name] = values
        segment = start >> SEGMENT_SHIFT
        extras = {row: e.copy() for row, e in store.extras.part(segment).items() if row < stop}
        more_lines = store.more_lines.part(segment).snapshot(stop)
        segments.append(
            _Segment(
                start,
                stop - start,
                columns,
                store.ids.encoded_range(start, stop, with_hashes=False),
                extras,
                more_lines,
            )
        )
    store.dirty_from = rows
    models = (
        previous.models
        if previous is not None and len(previous.models) == len(store.models)
        else tuple(store.models)
    )
    dtypes = {name: np.dtype(column.typecode) for name, column in arrays.items()}
    # Aliases are only ever added: the previous copy stands while their number does.
    aliases = (
        previous.span_aliases
        if previous is not None and len(previous.span_aliases) == len(store.span_aliases)
        else dict(store.span_aliases)
    )
    return FrozenStore(tuple(segments), models, dtypes, aliases)


#: vLLM's engine-side request id: the API id, a dash and 8 lowercase hex digits.
_ENGINE_ID = re.compile(r".+-[0-9a-f]{8}")


@dataclass(frozen=True)
class FrozenExtractor:
    """Everything the Extractor knew at one moment (``Extractor.freeze()``): what totals,
    views, the request table, details and the diagnostics read, on any thread."""

    version: int
    store: FrozenStore
    files: tuple[FrozenFile, ...]
    engine: EngineSeries  # a copy no one writes to
    expert_load: HeatCounts
    dropped: HeatCounts
    head_skips: HeatCounts
    errors: tuple[ErrorPayload, ...]
    error_count: int
    tokens: TokenCounter = field(repr=False)
    #: Files whose tokenizer is not ``tokens`` (core.tokens).
    file_tokens: Mapping[int, TokenCounter] = field(default_factory=dict, repr=False)
    #: Every error with its file, line and class (core.store), read-only.
    error_log: FrozenErrorLog = field(default_factory=FrozenErrorLog)
    #: ``expert_load`` and ``dropped`` per model (core.store.HeatByModel).
    expert_by_model: Mapping[str, HeatCounts] = field(default_factory=dict)
    dropped_by_model: Mapping[str, HeatCounts] = field(default_factory=dict)
    #: Expert-distribution dump counts (not per-token routing), all and per model.
    expert_dumps: HeatCounts = field(default_factory=HeatCounts)
    dump_by_model: Mapping[str, HeatCounts] = field(default_factory=dict)

    def tokens_for(self, file: int) -> TokenCounter:
        return self.file_tokens.get(file, self.tokens)

    def meta(self) -> MetaPayload:
        return merged_meta(self.files)

    def find(self, request_id: str) -> int | None:
        """Row of ``request_id``, or None. vLLM's engine-side id (``<id>-<8 hex>``) and
        its API id ``<id>`` name one request: a span's row is found by either."""
        ids = self.store.ids
        row = ids.find(request_id)
        if row is None and self.store.span_aliases:
            row = self.store.span_aliases.get(request_id)
        if row is None and _ENGINE_ID.fullmatch(request_id):
            row = ids.find(request_id[:-9])
        return row
