"""Heavy-work scheduling: when the totals and the table's view are computed again.

Totals (``compute_totals``, an O(rows) pass) and a sorted or filtered view (an index array)
are computed on the totals thread (``ingest.heavy``) from a frozen copy, at most every
``interval_s`` and never more often than ``duty`` times their own cost, so a store of
millions of requests is summed about once a second, not on every batch. A new filter or
window is computed at once, and so is everything once a big file's older part is in
(``due_now``). Without a sort or filter (and no backfill) the view is the identity and costs
nothing. ``HeavySchedule`` holds the last results and decides; it never runs anything.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any

from sparseety_tui.core.figures import Totals
from sparseety_tui.core.query import TimeWindow, ViewQuery
from sparseety_tui.ingest.heavy import HeavyResult

if TYPE_CHECKING:
    import numpy as np

#: Totals and views are recomputed at most once per this many times their own cost (their
#: thread then uses at most ~1/HEAVY_DUTY of a core), and never more often than
#: ``LiveOptions.totals_interval_s``.
HEAVY_DUTY = 8.0


class HeavySchedule:
    """The last totals and view, and when the next ones are due.

    ``rows`` and ``version`` are the store's row count and the Extractor's version now;
    ``backfilling`` says whether any file has a backfilled older part (store order is then
    not log order, so the table needs a view even without a sort); ``now`` is the
    caller's clock value.
    """

    def __init__(self, interval_s: float, duty: float = HEAVY_DUTY) -> None:
        self._interval_s = interval_s
        self._duty = duty
        self.totals: Totals | None = None
        self.totals_rows = 0
        self.totals_query = ViewQuery()  # whose rows (filter, window) the totals cover
        self.totals_window: TimeWindow | None = None
        self.time_span: tuple[float, float] | None = None
        self.fed_version = -1  # the Extractor version the totals were computed from
        self.view: np.ndarray[Any, Any] | None = None
        self.view_query = ViewQuery()
        self.view_rows = 0
        self.view_window: TimeWindow | None = None
        self.view_version = -1  # the Extractor version the view was computed from
        self.problem: str | None = None  # the last failure
        self._totals_at = -math.inf
        self._totals_cost = 0.0
        self._view_at = -math.inf
        self._view_cost = 0.0

    @staticmethod
    def needs_view(query: ViewQuery, backfilling: bool) -> bool:
        """Whether the table needs an index array: a filter or sort, or a big log whose
        older part was read after its tail (store order is then not log order)."""
        return not query.is_identity or backfilling

    def view_stale(self, query: ViewQuery, rows: int, version: int) -> bool:
        """The view misses rows, or (a window relative to the newest time) new lines may
        have moved that time, and with it the window, since it was computed."""
        if self.view_rows != rows:
            return True
        relative = query.window is not None and query.window.relative
        return relative and self.view_version != version

    def arrival_order(self, query: ViewQuery, rows: int, backfilling: bool) -> bool:
        """Take a query that needs no view at once (back to arrival order: nothing to
        compute); whether the view changed so."""
        if query is self.view_query or self.needs_view(query, backfilling):
            return False
        self.view, self.view_query, self.view_rows = None, query, rows
        return True

    def due(
        self,
        query: ViewQuery,
        rows: int,
        version: int,
        now: float,
        *,
        busy: bool,
        backfilling: bool,
    ) -> tuple[bool, bool]:
        """Whether the totals and the view are due (neither while a job runs: ``busy``)."""
        if busy:
            return False, False
        # A new filter or window: the totals follow it at once, like the table.
        narrowed = not query.same_rows(self.totals_query)
        totals_due = (self.totals_rows != rows or version != self.fed_version or narrowed) and (
            narrowed or now - self._totals_at >= self._gap(self._totals_cost)
        )
        view_due = query is not self.view_query or (
            self.needs_view(query, backfilling)
            and self.view_stale(query, rows, version)
            and now - self._view_at >= self._gap(self._view_cost)
        )
        return totals_due, view_due

    def _gap(self, cost: float) -> float:
        return max(self._interval_s, self._duty * cost)

    def submitted(self, now: float, totals: bool, view: bool) -> None:
        """A job for the due ``totals`` and/or ``view`` was submitted at ``now``."""
        if totals:
            self._totals_at = now
        if view:
            self._view_at = now

    def due_now(self) -> None:
        """Everything is due at the next pass (a big file's older part is in: its totals
        and order are wanted now, not after the throttle's wait; this happens once per
        backfill, so it cannot keep a core busy)."""
        self._totals_at = self._view_at = -math.inf

    def apply(self, result: HeavyResult) -> None:
        """Keep a finished job's results. A failure is kept as ``problem`` (shown on
        screen and in diagnostics) and tried again at the next due time: the throttle
        keeps a failing computation from spinning."""
        job = result.job
        if result.error is not None:
            self.problem = f"totals/view computation failed: {result.error}"
            return
        self.problem = None
        if job.totals:
            self.totals = result.totals
            self._totals_cost = result.totals_cost
            self.totals_rows = job.rows
            self.totals_query = job.totals_query or ViewQuery()
            self.totals_window = result.totals_window
            self.time_span = result.time_span
            self.fed_version = job.state.version
        if job.query is not None:
            self.view = result.view
            self._view_cost = result.view_cost
            self.view_query = job.query
            self.view_window = result.window
            self.view_rows = job.rows
            self.view_version = job.state.version

    def totals_current(self, query: ViewQuery, rows: int, version: int) -> bool:
        """The totals cover every row now, of ``query``'s rows."""
        return (
            self.totals_rows == rows
            and self.fed_version == version
            and query.same_rows(self.totals_query)
        )

    def view_current(self, query: ViewQuery, rows: int, version: int, backfilling: bool) -> bool:
        """The view is ``query``'s over every row now (or none is needed)."""
        return self.view_query is query and (
            not self.needs_view(query, backfilling) or not self.view_stale(query, rows, version)
        )

    def pending(self, query: ViewQuery, rows: int, version: int, backfilling: bool) -> bool:
        """A recompute is due but may be throttled: the worker wakes up soon to do it."""
        return (
            query is not self.view_query
            or self.totals_rows != rows
            or not query.same_rows(self.totals_query)
            or self.fed_version != version
            or (self.needs_view(query, backfilling) and self.view_stale(query, rows, version))
        )
