"""What the ingest worker publishes: immutable snapshots, and the options it runs with.

A ``Snapshot`` is replaced whole, never changed: a reader takes ``worker.snapshot`` (one
attribute read) and has a consistent frame. Every row, cell, id, file count and
diagnostic in it comes from ``state``, a ``FrozenExtractor`` that no thread writes to.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal

from sparseety_tui.core.figures import Totals
from sparseety_tui.core.query import TimeWindow, ViewQuery
from sparseety_tui.core.store import EngineSeries, FrozenExtractor
from sparseety_tui.events import StatsPayload

if TYPE_CHECKING:
    import numpy as np

#: Files up to this size are read whole at start; bigger ones show their tail first.
BIG_FILE_BYTES = 64 * 1024 * 1024
#: How much of a big file's end is read first, before the backfill of the older part.
TAIL_WINDOW_BYTES = 8 * 1024 * 1024

StartMode = Literal["default", "start", "last"]


@dataclass(frozen=True)
class LiveOptions:
    paths: tuple[str, ...]
    #: Followed directories: files that appear in them later are followed too (the files
    #: they hold at start are in ``paths``).
    directories: tuple[str, ...] = ()
    start: StartMode = "default"
    last_lines: int | None = None
    poll: bool = False
    big_file_bytes: int = BIG_FILE_BYTES
    tail_window_bytes: int = TAIL_WINDOW_BYTES
    totals_interval_s: float = 0.25
    track_rate: bool = True  # False in snapshot tests: the rate depends on the wall clock


@dataclass(frozen=True)
class FileStatus:
    """One followed path as the UI shows it: every file that lived at the path (rotated,
    truncated) and both parts of a backfilled one, added up."""

    path: str
    format: str
    lines: int
    by_kind: Mapping[str, int]
    backfill_done: int = 0  # bytes of the older part read so far
    backfill_total: int = 0  # bytes of the older part (0: no backfill)
    #: Extractor file indices: the first file (its tail part when backfilled), its older
    #: part (when backfilled), then each later incarnation in order.
    parts: tuple[int, ...] = ()
    line_base: int | None = 0  # lines before the tail part (None: not counted yet)
    #: For each part, which file at the path it belongs to (1: the first, 2: the next...).
    incarnations: tuple[int, ...] = ()

    @property
    def unparsed(self) -> int:
        return self.by_kind.get("unparsed", 0)

    @property
    def backfilling(self) -> bool:
        return self.backfill_total > 0 and self.backfill_done < self.backfill_total


@dataclass(frozen=True)
class Snapshot:
    """Everything the UI needs for one frame; never mutated once published."""

    version: int = 0  # bumps on every publish that changed anything
    state: FrozenExtractor | None = None  # every row and count read so far (None: nothing yet)
    files: tuple[FileStatus, ...] = ()
    events: tuple[str, ...] = ()  # recent source events ("file rotated, reopened"), newest last
    totals: Totals | None = None
    totals_rows: int = 0  # rows the totals cover
    rate: tuple[float, ...] = ()  # tokens/s samples (wall clock), oldest first
    engine_points: tuple[StatsPayload, ...] = ()
    #: With a time window: the series of the window's stats lines (the engine panel's
    #: figures); None: every stats line's (``state.engine``).
    engine_window: EngineSeries | None = None
    query: ViewQuery = field(default_factory=ViewQuery)
    view: np.ndarray[Any, Any] | None = None  # row indices; None = identity over rows
    view_rows: int = 0  # store rows the view was computed over
    #: ``query.window`` resolved against the data (None: no window).
    window: TimeWindow | None = None
    #: The query whose rows (filter and window) ``totals`` cover, and its window resolved.
    totals_query: ViewQuery = field(default_factory=ViewQuery)
    totals_window: TimeWindow | None = None
    #: First and last request time over every row (None: no request has a time).
    time_span: tuple[float, float] | None = None
    settled: bool = False  # nothing read is waiting to be fed, no backfill running
    error: str | None = None  # the worker died: why
    #: The last totals/view computation failed (following goes on; they are tried again).
    problem: str | None = None
    #: (state version, first row that may differ from the freeze before it) of the last
    #: freezes, oldest first (``RowChanges``): which rows a reader drawn from an older
    #: state can keep as they are.
    changes: tuple[tuple[int, int], ...] = ()
    #: Which worker made this snapshot (each worker counts its versions from 0: a reader
    #: keeps nothing across a change of lineage, as after a replay's backward seek).
    lineage: int = 0

    def unchanged_below(self, since_version: int) -> int:
        """Rows below this are the same in ``state`` as in the state of ``since_version``
        (0: not known, e.g. that state is older than the changes kept)."""
        state = self.state
        if state is None:
            return 0
        if since_version == state.version:
            return len(state.store)
        bound = -1
        found = False
        for version, changed_from in self.changes:
            if version == since_version:
                found = True
                bound = len(state.store)
            elif found and version <= state.version:
                bound = min(bound, changed_from)
        return max(0, bound) if found else 0

    @property
    def rows(self) -> int:
        """Rows in ``state``: 0 .. rows-1 can be read."""
        return len(self.state.store) if self.state is not None else 0

    @property
    def visible(self) -> int:
        """How many rows the table shows."""
        if self.view is None:
            return self.rows
        return len(self.view)

    def row_at(self, position: int) -> int:
        """Store row shown at table position ``position``."""
        if self.view is None:
            return position
        return int(self.view[position])

    def find(self, request_id: str) -> int | None:
        """Row of ``request_id`` in this snapshot, or None."""
        return self.state.find(request_id) if self.state is not None else None
