"""The ingest worker of the TUI: one thread that follows the logs and owns the Extractor.

Data flows one way (DESIGN.md): ``LogWatcher`` -> ``Extractor.feed_chunks`` -> an immutable
``Snapshot`` that the UI picks up as it is published. The worker is the only writer of the
store and the only thread that touches the Extractor; readers get ``Extractor.freeze()``
copies inside snapshots (one attribute read, atomic under the GIL), never the writer's
structures.

The thread is a short loop; what it decides is in plain objects, each tested without a
thread on events and clock values given as arguments:

- ``PublishPacer`` (``_pacing``): when a snapshot goes out. Each one carries a fresh
  ``freeze()`` (incremental: it copies only the rows changed or added since the last one).
- ``Backfills`` (``_backfill``): a big file's older part, read in small steps after its tail.
- ``Incarnations`` and ``interleave`` (``_rotation``): the Extractor file of each
  incarnation of a followed path (rotation, truncation), events applied between the lines
  they came between.
- ``HeavySchedule`` (``_schedule``): when totals and the table's view are computed again on
  the totals thread (``ingest.heavy``), from a frozen copy, throttled by their own cost.
- ``RateSampler`` (``_rate``), ``QuietFiles`` and ``MemoryTrim`` (``_upkeep``): tok/s, the
  quiet flush of a file's parser, and freed memory handed back to the OS.

Start position (``tail`` without ``--from-start`` / ``--last``): a file of up to
``BIG_FILE_BYTES`` is read whole at start; a bigger one from its last ``TAIL_WINDOW_BYTES``,
then backfilled. Line numbers of that tail are known once the backfill has counted the
lines before it (``line_base``).

No Textual import here: the worker is plain Python and unit-testable.
"""

from __future__ import annotations

import itertools
import os
import threading
import time
from collections import deque
from collections.abc import Callable, Sequence
from dataclasses import replace
from typing import Literal, Protocol

from sparseety_tui.core.extraction import Extractor
from sparseety_tui.core.figures import ModelShape
from sparseety_tui.core.query import ViewQuery
from sparseety_tui.ingest._backfill import Backfills, size_text, tail_cut
from sparseety_tui.ingest._pacing import (
    MAX_PUBLISH_GAP_S,
    MIN_PUBLISH_GAP_S,
    PUBLISH_GAP_S,
    PublishPacer,
)
from sparseety_tui.ingest._publishing import ENGINE_POINTS, EngineWindow, Freezer
from sparseety_tui.ingest._rate import RATE_QUIET_S, RateSampler
from sparseety_tui.ingest._rotation import (
    NEW_FILE_REASON,
    Incarnations,
    Lines,
    file_statuses,
    interleave,
)
from sparseety_tui.ingest._schedule import HEAVY_DUTY, HeavySchedule
from sparseety_tui.ingest._upkeep import (
    QUIET_FLUSH_S,
    TRIM_INTERVAL_S,
    MemoryTrim,
    QuietFiles,
    idle_wait,
)
from sparseety_tui.ingest.heavy import HeavyJob, HeavyWorker
from sparseety_tui.ingest.snapshot import LiveOptions, Snapshot
from sparseety_tui.sources import FileFollower, FollowBatch, LogWatcher

__all__ = [
    "BUSY_WAIT_S",
    "ENGINE_POINTS",
    "HEAVY_DUTY",
    "MAX_PUBLISH_GAP_S",
    "MIN_PUBLISH_GAP_S",
    "PUBLISH_GAP_S",
    "QUIET_FLUSH_S",
    "RATE_QUIET_S",
    "TRIM_INTERVAL_S",
    "IngestWorker",
    "LineSource",
    "MemoryTrim",
    "PublishPacer",
    "RateSampler",
]

#: Longest the worker sleeps while a view change or a heavy recompute is pending.
BUSY_WAIT_S = 0.05

#: Each worker's snapshots get their own ``Snapshot.lineage``.
_LINEAGES = itertools.count(1)


class _HasPath(Protocol):
    @property
    def path(self) -> str: ...


class LineSource(Protocol):
    """What the worker reads lines from: ``sources.LogWatcher`` (following files), or a
    replay (``ingest.replay.ReplaySource``)."""

    @property
    def followers(self) -> Sequence[_HasPath]: ...

    @property
    def needs_polling(self) -> bool: ...

    def poll_all(self) -> list[tuple[str, FollowBatch]]: ...

    def wait(self, timeout_s: float | None) -> bool: ...

    def wake(self) -> None: ...

    def stop(self) -> None: ...


class IngestWorker:
    """Follows ``options.paths`` in a thread and publishes ``Snapshot``s.

    Start with ``start()``, stop with ``stop()``. The UI calls ``snapshot`` (cheap),
    ``set_query`` (filter/sort; applied by the worker), and, in tests, ``drain()``.
    """

    def __init__(
        self,
        extractor: Extractor,
        shape: ModelShape,
        options: LiveOptions,
        *,
        clock: Callable[[], float] = time.monotonic,
        on_wake: Callable[[], None] | None = None,
        source: LineSource | None = None,
        log_seconds_per_second: Callable[[], float] | None = None,
        pacer: PublishPacer | None = None,
        trim: MemoryTrim | None = None,
    ) -> None:
        """``source``: where lines come from instead of following ``options.paths`` (a
        replay, ``ingest.replay.ReplaySource``); ``log_seconds_per_second``: how fast the
        log's time runs against the wall now (a replay's speed, 0 while paused), so that
        tok/s is per second of the log, as it was when written. ``on_wake`` is called (from
        the worker thread; it must not block) whenever a snapshot is published (at most
        every ``publish_gap_s``), so the UI shows each one as it comes and never needs to
        poll. ``pacer`` and ``trim``: the publish pacing and the memory trim policies (their
        defaults unless given)."""
        self._extractor = extractor
        self.shape = shape
        self.options = options
        self._clock = clock
        self._on_wake = on_wake
        self._source = source
        self._pacer = pacer if pacer is not None else PublishPacer()
        self._trim = trim if trim is not None else MemoryTrim()
        #: The tok/s history (a sample every time whole totals come).
        self.rate = RateSampler(options.track_rate, log_seconds_per_second)
        self._schedule = HeavySchedule(options.totals_interval_s)
        self._incarnations = Incarnations(extractor)
        self._backfills = Backfills()
        self._quiet = QuietFiles()
        self._freezer = Freezer(extractor)
        self._engine = EngineWindow()
        self._heavy = HeavyWorker()
        self._snapshot = Snapshot()
        self._query = ViewQuery()
        self._stop = threading.Event()
        self._idle = threading.Event()  # set when the worker has nothing left to do
        self._thread: threading.Thread | None = None
        self._watcher: LineSource | None = None
        self._line_base: dict[str, int | None] = {}
        self._events: deque[str] = deque(maxlen=50)
        # Feeds of history so far: lines that were already in the files (a big file's
        # older part, or the files read at start until the worker first catches up),
        # never lines appended while followed. Tokens read as history are not a rate.
        self._history_reads = 0
        self._caught_up = False  # read everything there was at start, once
        self._backlog = False  # the last poll stopped at its byte budget
        self._published_version = 0
        self._lineage = next(_LINEAGES)

    # -- public (any thread) -------------------------------------------------------------------

    @property
    def snapshot(self) -> Snapshot:
        return self._snapshot

    @property
    def publish_gap_s(self) -> float:
        """Seconds between two snapshots while lines keep coming (the UI sets it by the
        cost of its frames; kept within MIN/MAX_PUBLISH_GAP_S)."""
        return self._pacer.gap_s

    @publish_gap_s.setter
    def publish_gap_s(self, value: float) -> None:
        self._pacer.gap_s = value

    @property
    def running(self) -> bool:
        """Whether the worker's thread is alive (started and not yet ended)."""
        return self._thread is not None and self._thread.is_alive()

    def start(self) -> None:
        self._heavy.start()
        self._thread = threading.Thread(target=self._main, name="sparseety-ingest", daemon=True)
        self._thread.start()

    def stop(self, timeout: float = 5.0) -> None:
        self._stop.set()
        # An idle worker sleeps in the watcher's wait with no deadline (idle_wait): end it,
        # or the join times out and the thread, its watcher and inotify descriptor live on.
        self._wake()
        self._heavy.stop()
        if self._thread is not None:
            self._thread.join(timeout)

    def set_query(self, query: ViewQuery) -> None:
        """Ask for another filter/sort; the next snapshots carry it once computed."""
        self._query = query
        self._idle.clear()
        # At once, not after the idle sleep (without end on a quiet log): a filter or sort
        # typed on a quiet log starts computing when it is asked for.
        self._wake()

    def _wake(self) -> None:
        watcher = self._watcher
        if watcher is not None:
            watcher.wake()

    def drain(self, timeout: float = 10.0) -> bool:
        """Block until everything readable now is fed and published (tests, benchmarks).

        Returns False on timeout. Files must not be growing meanwhile.
        """
        deadline = time.monotonic() + timeout
        self._idle.clear()
        self._wake()  # an idle worker sleeps until a file changes: one more pass now
        while time.monotonic() < deadline:
            if self._idle.wait(0.02):
                snap = self._snapshot
                if snap.settled and snap.query is self._query:
                    return True
                self._idle.clear()
                self._wake()
            if not self.running:
                return self._snapshot.error is None and self._snapshot.settled
        return False

    # -- the thread ----------------------------------------------------------------------------

    def _main(self) -> None:
        try:
            self._open()
            while not self._stop.is_set():
                self._pass()
        except Exception as exc:  # shown in the UI, never swallowed
            self._snapshot = replace(
                self._snapshot,
                error=f"ingest stopped: {type(exc).__name__}: {exc}",
                version=self._snapshot.version + 1,
            )
            self._idle.set()
            raise
        finally:
            if self._watcher is not None:
                self._watcher.stop()

    def _pass(self) -> None:
        """One pass: read what is new, publish, then wait as long as nothing is due."""
        assert self._watcher is not None
        began = self._clock()
        live = self._poll_live()
        backfilled = not self._backlog and self._backfill_step()
        worked = self._flush_quiet() or live or backfilled
        self._publish(began)
        if self._stop.is_set() or self._backlog or backfilled:
            return
        if live or self._pacer.deferred:
            # Lines are coming: they gather in the file until the next snapshot is due,
            # then are read in one go (see PublishPacer).
            self._stop.wait(self._pacer.wait_s(self._clock()))
        elif worked:
            return
        elif self._heavy.busy or self._heavy_pending():
            self._idle.clear()
            self._watcher.wait(BUSY_WAIT_S)
        else:
            self._trim.run(self._clock(), self._extractor.version)
            self._idle.set()
            self._watcher.wait(self._idle_wait())

    def _open(self) -> None:
        if self._source is not None:  # a replay: its lines come as the clock reaches them
            self._watcher = self._source
            for follower in self._source.followers:
                self._follow(follower.path)
            return
        options = self.options
        start: Literal["start", "end"] = "start"
        watcher = LogWatcher(
            options.paths,
            directories=options.directories,
            poll=options.poll,
            start=start,
            last_lines=options.last_lines if options.start == "last" else None,
            chunks=True,
        )
        self._watcher = watcher
        for i, follower in enumerate(watcher.followers):
            path = follower.path
            self._follow(path)
            if options.start != "default":
                if options.start == "last":
                    self._line_base[path] = None
                continue
            found = tail_cut(path, options.big_file_bytes, options.tail_window_bytes)
            if found is None:
                continue
            cut, size = found
            # The follower reads [cut, ...); the backfill reads the lines starting in [0, cut).
            watcher.followers[i] = FileFollower(path, start=cut, chunks=True)
            self._backfills.add(path, self._extractor.add_file(path), cut)
            self._line_base[path] = None
            self._events.append(
                f"{_short(path)}: {size_text(size)}, showing the last "
                f"{size_text(size - cut)} first, reading the rest in the background"
            )

    def _follow(self, path: str) -> None:
        self._incarnations.follow(path)
        self._line_base[path] = 0

    def _poll_live(self) -> bool:
        assert self._watcher is not None
        worked = False
        backlog = False
        now = self._clock()
        for path, batch in self._watcher.poll_all():
            if path not in self._incarnations:
                self._follow(path)  # it appeared in a followed directory
            backlog = backlog or batch.more
            backfill = self._backfills.of(path)
            older = backfill.file if backfill is not None else None
            for item in interleave(batch):
                if not isinstance(item, Lines):
                    if self._incarnations.apply(path, item, older):
                        self._events.append(item.message)  # the status line shows it
                    continue
                file = self._incarnations.file_for(path, item.generation, NEW_FILE_REASON, older)
                # Chunks of whole lines, as the backfill and the batch commands read them:
                # request records take the native scanner, server logs their family's
                # scan_server (a RawLine: a line held across polls).
                self._extractor.feed_chunks(file, item.lines)
                self._quiet.fed(file, now)
                worked = True
            worked = worked or bool(batch.events)
        self._backlog = backlog
        if worked and not self._caught_up:
            self._history_reads += 1  # what the files held at start: history, not a rate
        return worked

    def _flush_quiet(self) -> bool:
        """Flush the parsers of files quiet for ``QUIET_FLUSH_S``; True if that gave events."""
        flushed = False
        for file in self._quiet.due(self._clock()):
            flushed = self._extractor.flush(file) or flushed
        return flushed

    def _idle_wait(self) -> float | None:
        assert self._watcher is not None
        dues = [
            self._quiet.next_due(),
            self.rate.quiet_due(),
            self._trim.next_due(self._extractor.version),
        ]
        return idle_wait(dues, self._clock(), self._watcher.needs_polling)

    def _backfill_step(self) -> bool:
        if self._schedule.view is None and self._backfills.any:
            # Not before the table has an order: until the first view is computed a
            # snapshot shows rows in store order, which is log order only while the
            # store holds the tail alone. Older rows fed before that put the older part
            # at the table's end, where follow shows it.
            return False
        backfill = self._backfills.step(self._extractor)
        if backfill is None:
            return False
        if not backfill.finished:
            self._history_reads += 1
            return True
        self._line_base[backfill.path] = self._extractor.files[backfill.file].lines_total
        self._events.append(f"{_short(backfill.path)}: older part read")
        self._schedule.due_now()
        return True

    def _heavy_pending(self) -> bool:
        rows, version = len(self._extractor.store), self._extractor.version
        return self._schedule.pending(self._query, rows, version, self._backfills.any)

    # -- publishing ----------------------------------------------------------------------------

    def _publish(self, began: float) -> None:
        """Publish a snapshot if one is due; ``began``: when this pass began reading."""
        rows = len(self._extractor.store)
        version = self._extractor.version
        now = self._clock()
        read_all = not self._backlog and self._backfills.settled
        self._caught_up = self._caught_up or read_all
        news = self._take_heavy()
        query = self._query
        schedule = self._schedule
        backfilling = self._backfills.any
        news = schedule.arrival_order(query, rows, backfilling) or news
        self._submit_heavy(query, rows, version, now)
        busy = self._heavy.busy
        totals_current = schedule.totals_current(query, rows, version)
        narrows = schedule.totals_query.narrows
        if totals_current and not busy:
            # A quiet spell's 0 tok/s is news to show.
            news = (
                self.rate.sample_quiet(now, (self._history_reads,), schedule.totals, narrows)
                or news
            )
        view_current = schedule.view_current(query, rows, version, backfilling)
        settled = read_all and totals_current and view_current and not busy
        key = (version, rows, settled, len(self._events))
        if not self._pacer.should_publish(key, news, now):
            return
        self._published_version += 1
        self._snapshot = self._make_snapshot(settled)
        if self._on_wake is not None:
            self._on_wake()
        self._pacer.published(began)

    def _take_heavy(self) -> bool:
        """Keep the totals thread's result if one came; whether one did."""
        result = self._heavy.take()
        if result is None:
            return False
        self._schedule.apply(result)
        if result.error is None and result.job.totals:
            schedule = self._schedule
            self.rate.totals_came(schedule.totals, schedule.totals_query.narrows)
        return True

    def _submit_heavy(self, query: ViewQuery, rows: int, version: int, now: float) -> None:
        """Hand the totals thread what is due. It reads a frozen copy on its own thread:
        ingest never waits for an O(n) pass over the store."""
        schedule = self._schedule
        totals_due, view_due = schedule.due(
            query, rows, version, now, busy=self._heavy.busy, backfilling=self._backfills.any
        )
        if not (totals_due or view_due):
            return
        self._heavy.submit(
            HeavyJob(
                self._freezer.freeze(),
                self.shape,
                totals=totals_due or schedule.totals is None,
                query=query if view_due else None,
                older_files=self._backfills.files,
                totals_query=query,
            )
        )
        schedule.submitted(now, totals_due, view_due)
        if totals_due:
            self.rate.submitted(now, (self._history_reads,))

    def _make_snapshot(self, settled: bool) -> Snapshot:
        schedule = self._schedule
        state = self._freezer.freeze()
        window = schedule.view_window if schedule.view_query.window is not None else None
        engine_points, engine_window = self._engine.view(state.engine, window)
        return Snapshot(
            version=self._published_version,
            state=state,
            files=file_statuses(state, self._incarnations, self._backfills, self._line_base),
            events=tuple(self._events),
            totals=schedule.totals,
            totals_rows=schedule.totals_rows,
            rate=tuple(self.rate.points),
            engine_points=engine_points,
            engine_window=engine_window,
            query=schedule.view_query,
            view=schedule.view,
            view_rows=schedule.view_rows,
            window=schedule.view_window,
            totals_query=schedule.totals_query,
            totals_window=schedule.totals_window,
            time_span=schedule.time_span,
            settled=settled,
            problem=schedule.problem,
            changes=tuple(self._freezer.changes),
            lineage=self._lineage,
        )


def _short(path: str) -> str:
    return os.path.basename(path) or path
