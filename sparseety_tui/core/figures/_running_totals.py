"""Totals of a store that grows while it is followed: only new and changed rows are added up.

``compute_totals`` adds up every row in chunks of ``CHUNK_ROWS``; while a log streams,
the totals thread did that over the whole store every few tenths of a second (0.21-0.31 s
of CPU at 600k requests in two timings, ~8 % of a core at 20k lines/s). ``RunningTotals`` keeps the sums of
the whole chunks it added up last time, with the frozen segments those rows were read from,
and starts from them when the newer freeze still holds the same segments (rows change in
place only where a freeze copied their segment: ``FrozenStore.still_holds``). The chunks
are the same and are added in the same order, so every float is the one
``compute_totals`` gives (a test holds the two equal, byte for byte).

What it keeps is additive sums only; the latencies and TTFTs the quantiles need are read
again from the columns (``gather_samples``: four columns, no formula), so it holds no
column-long array between calls.
"""

from __future__ import annotations

from dataclasses import dataclass

from sparseety_tui.core.figures import _sums
from sparseety_tui.core.figures._costmodel import ModelShape
from sparseety_tui.core.figures._document import Totals
from sparseety_tui.core.figures._sums import Sums, accumulate, gather_samples
from sparseety_tui.core.figures._totals import totals_of
from sparseety_tui.core.store import SEGMENT_ROWS, FrozenExtractor


@dataclass(frozen=True)
class _Added:
    """The sums of rows ``0 .. rows-1`` (whole chunks) of the freeze ``segments`` began."""

    shape: ModelShape
    rows: int
    segments: tuple[object, ...]
    sums: Sums


class RunningTotals:
    """``compute_totals(state, shape)`` over successive freezes of one store."""

    def __init__(self) -> None:
        self._added: _Added | None = None
        #: Rows of the last ``compute`` whose sums came from the one before.
        self.reused_rows = 0

    def compute(self, state: FrozenExtractor, shape: ModelShape) -> Totals:
        store = state.store
        n = len(store)
        chunk = _sums.CHUNK_ROWS
        whole = n - n % chunk
        added = self._added
        if added is None or not (
            added.shape == shape and added.rows <= whole and store.still_holds(added.segments)
        ):
            added = None
        start = 0 if added is None else added.rows
        sums = Sums(n) if added is None else added.sums.without_samples(n)
        for first in range(0, start, chunk):
            gather_samples(sums, store, first, first + chunk)
        for first in range(start, whole, chunk):
            accumulate(sums, store, shape, first, first + chunk)
        if whole > start and chunk % SEGMENT_ROWS == 0:
            segments = store.leading_segments(whole)
            self._added = _Added(shape, whole, segments, sums.without_samples(0))
        if n > whole or n == 0:
            accumulate(sums, store, shape, whole, n)  # the last chunk's rows, or none
        self.reused_rows = start
        return totals_of(state, sums, n)
