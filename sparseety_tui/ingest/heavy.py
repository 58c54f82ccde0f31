"""Totals and table views, computed off the ingest thread from frozen state.

``compute_totals`` and ``compute_view`` are O(rows) numpy passes; on a store of millions
of requests they take long enough that the ingest thread must not wait for them. It hands
a ``HeavyJob`` (a ``FrozenExtractor`` and what to compute) to this one thread and picks the
result up later; a newer job replaces one not started yet.
"""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

from sparseety_tui.core.figures import ModelShape, RunningTotals, Totals, compute_totals
from sparseety_tui.core.query import (
    TimeWindow,
    ViewQuery,
    compute_view,
    newest_time,
    time_span,
    window_series,
)
from sparseety_tui.core.store import FrozenExtractor

if TYPE_CHECKING:
    import numpy as np


@dataclass(frozen=True)
class HeavyJob:
    state: FrozenExtractor
    shape: ModelShape
    totals: bool
    query: ViewQuery | None
    #: Files holding the older part of a big log, read after its tail (see compute_view).
    older_files: frozenset[int] = frozenset()
    #: The query whose rows (filter and time window) the totals cover (None: all rows).
    totals_query: ViewQuery | None = None

    @property
    def rows(self) -> int:
        return len(self.state.store)


@dataclass
class HeavyResult:
    job: HeavyJob
    totals: Totals | None = None
    totals_cost: float = 0.0
    view: np.ndarray[Any, Any] | None = None
    view_cost: float = 0.0
    #: Why the computation failed ("ValueError: ..."), or None.
    error: str | None = None
    #: ``job.query``'s window and ``job.totals_query``'s, resolved against the data.
    window: TimeWindow | None = None
    totals_window: TimeWindow | None = None
    #: First and last request time of every row (with the totals), or None.
    time_span: tuple[float, float] | None = None


class HeavyWorker:
    """One thread computing totals and views from frozen state, one job at a time."""

    def __init__(self) -> None:
        self._cv = threading.Condition()
        self._job: HeavyJob | None = None
        self._result: HeavyResult | None = None
        self._busy = False
        self._stopped = False
        self._running = RunningTotals()  # this thread's only
        self._thread = threading.Thread(target=self._run, name="sparseety-totals", daemon=True)

    @property
    def busy(self) -> bool:
        """A job is queued, running, or its result was not taken yet."""
        return self._busy

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        with self._cv:
            self._stopped = True
            self._cv.notify()
        if self._thread.is_alive():
            self._thread.join(5.0)

    def submit(self, job: HeavyJob) -> None:
        with self._cv:
            self._job = job
            self._busy = True
            self._cv.notify()

    def take(self) -> HeavyResult | None:
        with self._cv:
            result, self._result = self._result, None
            if result is not None:
                self._busy = self._job is not None
            return result

    def _run(self) -> None:
        while True:
            with self._cv:
                while self._job is None and not self._stopped:
                    self._cv.wait()
                if self._stopped:
                    return
                job, self._job = self._job, None
            assert job is not None
            # Outside the lock: submit() and take() never wait for it.
            result = run_job(job, self._running)
            with self._cv:
                self._result = result


def run_job(job: HeavyJob, running: RunningTotals | None = None) -> HeavyResult:
    """Compute what ``job`` asks for; totals over every row from ``running`` (what it
    added up of the last job's rows) when given. An exception becomes ``result.error``
    (shown on screen and in diagnostics by the ingest worker, which goes on following)."""
    result = HeavyResult(job)
    try:
        anchor = _anchor(job)
        if job.query is not None:
            t0 = time.perf_counter()
            result.window = _resolve(job.query, anchor)
            result.view = compute_view(
                job.state.store, job.shape, job.query, job.rows, job.older_files, result.window
            )
            result.view_cost = time.perf_counter() - t0
        if job.totals:
            t0 = time.perf_counter()
            result.totals, result.totals_window = _totals(job, result, anchor, running)
            result.time_span = time_span(job.state.store)
            result.totals_cost = time.perf_counter() - t0
    except Exception as exc:  # reported, never swallowed: see the docstring
        result.error = f"{type(exc).__name__}: {exc}"
    return result


def _anchor(job: HeavyJob) -> float | None:
    """The newest time in the data, when a window needs it (one pass for both queries)."""
    if any(q is not None and q.window is not None for q in (job.query, job.totals_query)):
        return newest_time(job.state)
    return None


def _resolve(query: ViewQuery | None, anchor: float | None) -> TimeWindow | None:
    return query.window.resolve(anchor) if query is not None and query.window else None


def _totals(
    job: HeavyJob, result: HeavyResult, anchor: float | None, running: RunningTotals | None
) -> tuple[Totals, TimeWindow | None]:
    """Totals over every row, or over the rows of ``job.totals_query`` (its filter and
    window: the totals strip follows the table); engine figures over the window's stats
    points."""
    query = job.totals_query
    if query is None or not query.narrows:
        if running is not None:
            return running.compute(job.state, job.shape), None
        return compute_totals(job.state, job.shape), None
    window = _resolve(query, anchor)
    if job.query is not None and result.view is not None and job.query.same_rows(query):
        rows = result.view  # the table's own rows, in another order
    else:
        rows = compute_view(
            job.state.store,
            job.shape,
            replace(query, sort=None, reverse=False),
            job.rows,
            window=window,
        )
    engine = window_series(job.state.engine, window)[0] if window is not None else None
    return compute_totals(job.state, job.shape, rows=rows, engine=engine), window
