"""The ingest worker of the TUI: one thread that follows the logs and owns the Extractor.

Data flows one way (DESIGN.md): ``LogWatcher`` -> ``Extractor.feed_chunks`` -> an immutable
``Snapshot`` that the UI picks up on its own timer (20 Hz while data flows). The worker is the only
writer of the store and the only thread that touches the Extractor; readers get
``Extractor.freeze()`` copies inside snapshots (one attribute read, atomic under the GIL),
never the writer's structures.

Costs are kept off the hot path:

- After every fed batch a snapshot is published with a fresh ``freeze()``: incremental,
  it copies only the rows changed or added since the last one (and shares the rest), so
  the table shows new rows within one UI tick.
- Totals (``core.totals.compute_totals``, O(n) numpy over the store) are recomputed on
  the totals thread (``ingest.heavy``) from a frozen copy, at most every
  ``totals_interval_s`` and never more often than ``HEAVY_DUTY`` times their own cost, so a
  store of millions of requests is summed about once a second, not on every batch. Over
  every row, only the rows new since the last totals are added up when the rows before
  them did not change (``core.running_totals``: 40 ms instead of 0.3 s at 600k requests).
- A sorted or filtered view of the table is an index array computed on that thread too,
  from the same frozen state, on the same throttle. Without a sort or filter the view is
  the identity and costs nothing.
- A failure there is shown (``Snapshot.problem``: the status line and diagnostics) and the
  computation is tried again later; following goes on.

Each followed path may go through several file incarnations (rotation, truncation, rotated
copies read late): each gets its own Extractor file, so stored line locations never point
into the wrong file, and the status of the path adds them all up. A file that has been quiet
for ``QUIET_FLUSH_S`` has its parser flushed as at the end of a batch file (a traceback cut
off by a dying server is counted; if it goes on later it is not counted again).

Start position (``tail`` without ``--from-start`` / ``--last``): a file of up to
``BIG_FILE_BYTES`` is read whole at start. A bigger one shows its last ``TAIL_WINDOW_BYTES``
first, then the worker backfills the older part in small steps between live polls (the
status line shows a progress bar); the UI stays usable throughout. Line numbers of the tail
part are only known once the backfill has counted the lines before it (``line_base``).

No Textual import here: the worker is plain Python and unit-testable.
"""

from __future__ import annotations

import itertools
import math
import os
import threading
import time
from collections import deque
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any, Literal, Protocol

from sparseety_tui.core.extraction import Extractor
from sparseety_tui.core.figures import ModelShape, Totals
from sparseety_tui.core.query import TimeWindow, ViewQuery, points_in, window_series
from sparseety_tui.core.store import EngineSeries, FrozenExtractor
from sparseety_tui.events import StatsPayload
from sparseety_tui.ingest.batch import release_free_memory
from sparseety_tui.ingest.heavy import HeavyJob, HeavyWorker
from sparseety_tui.ingest.snapshot import FileStatus, LiveOptions, Snapshot
from sparseety_tui.sources import FileFollower, LogWatcher, RawLine, SourceEvent
from sparseety_tui.sources.follower import FollowBatch
from sparseety_tui.sources.lines import Chunk, iter_chunks

if TYPE_CHECKING:
    import numpy as np

#: Longest the worker sleeps when nothing happens (it also wakes on file changes).
IDLE_WAIT_S = 0.5
#: Longest it sleeps while a view change or a heavy recompute is pending.
BUSY_WAIT_S = 0.05
#: Points of the tokens-per-second history kept for the sparkline.
RATE_POINTS = 60
#: A file quiet this long shows 0 tok/s (the last rate sample is otherwise kept).
RATE_QUIET_S = 2.0
#: Engine stats points copied into each snapshot for sparklines.
ENGINE_POINTS = 120
#: A file without new lines for this long has its parser flushed, as at the end of a batch
#: file: what waits for a next line (a traceback's end) is taken as complete.
QUIET_FLUSH_S = 1.0
#: Source events the status line does not show (routine); the diagnostics list the rest.
ROUTINE_EVENTS = frozenset({"opened", "closed"})
#: Snapshots are published at most this often while lines keep coming (the UI shows each
#: one as it comes, ``IngestWorker(on_wake=...)``); the UI may ask for fewer
#: (``publish_gap_s``, by what its frames cost). The first one after a quiet spell is
#: published at once. Meanwhile lines gather in the file and are read in one go just before
#: the next snapshot: one feed of ~1,000 lines costs a fraction of 50 feeds of 20 (the
#: native scanners take only runs of BULK_MIN_LINES), and one freeze instead of 50.
PUBLISH_GAP_S = 0.05
#: The UI's frame budget is kept between these (bench/tail_latency.py: a longer gap keeps
#: the p99 of write -> screen over 150 ms).
MIN_PUBLISH_GAP_S = 0.03
MAX_PUBLISH_GAP_S = 0.1
#: Freezes whose changed rows a snapshot carries (``Snapshot.changes``): the UI keeps a
#: row drawn from any of these states while it did not change (ui/widgets/request_table.py).
ROW_CHANGES_KEPT = 64
#: Totals and views are recomputed at most once per this many times their own cost (their
#: thread then uses at most ~1/HEAVY_DUTY of a core), and never more often than
#: ``LiveOptions.totals_interval_s``.
HEAVY_DUTY = 8.0
#: Freed heap pages go back to the OS at most this often while the logs change...
TRIM_INTERVAL_S = 2.0
#: ...and at most once per this many times the trim's own cost (<= 2 % of a core).
TRIM_DUTY = 50.0


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


@dataclass
class _Followed:
    """One followed path: the Extractor file of each incarnation the follower read."""

    by_generation: dict[int, int]  # follower generation -> Extractor file
    incarnations: list[int]  # Extractor files, oldest first

    @property
    def first(self) -> int:
        """The file of the first incarnation (given before anything was read)."""
        return self.incarnations[0]

    @property
    def latest(self) -> int:
        return self.incarnations[-1]


@dataclass
class _Backfill:
    path: str
    file: int  # extractor file index of the older part
    end: int  # bytes of the older part
    items: Iterator[Chunk | RawLine]  # ~1 MiB of whole lines a step (the batch reader)
    done: int = 0
    finished: bool = False


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
    ) -> None:
        """``source``: where lines come from instead of following ``options.paths`` (a
        replay, ``ingest.replay.ReplaySource``); ``log_seconds_per_second``: how fast the
        log's time runs against the wall now (a replay's speed, 0 while paused), so that
        tok/s is per second of the log, as it was when written. ``on_wake`` is called (from the worker thread; it must not block) whenever a
        snapshot is published (at most every ``publish_gap_s``), so the UI shows each one as
        it comes and never needs to poll."""
        self._extractor = extractor
        self._on_wake = on_wake
        self._last_publish_at = -math.inf
        #: Seconds between two snapshots while lines keep coming (the UI sets it by the
        #: cost of its frames; kept within MIN/MAX_PUBLISH_GAP_S).
        self.publish_gap_s = PUBLISH_GAP_S
        self._heavy_unshown = False  # a heavy result not published yet (publish deferred)
        self._publish_deferred = False  # something to publish once the gap has passed
        self.shape = shape
        self.options = options
        self._clock = clock
        self._snapshot = Snapshot()
        self._query = ViewQuery()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._watcher: LineSource | None = None
        self._source = source
        self._log_speed = log_seconds_per_second
        self._followed: dict[str, _Followed] = {}  # path -> its incarnations' files
        self._fed_at: dict[int, float] = {}  # file -> when lines last came (not flushed since)
        self._backfills: list[_Backfill] = []
        self._backfill_of: dict[str, _Backfill] = {}
        self._line_base: dict[str, int | None] = {}
        self._events: deque[str] = deque(maxlen=50)
        self._rate: deque[float] = deque(maxlen=RATE_POINTS)
        # (when, tokens, backfill progress) of the last rate sample; the tokens of a
        # totals job are those of the state frozen when it was submitted, so these are
        # taken then (``_rate_pending``) and sampled when its result is applied.
        self._rate_last: tuple[float, float, tuple[int, ...]] | None = None
        self._rate_pending: tuple[float, tuple[int, ...]] | None = None
        self._history_reads = 0  # feeds of history so far (see _backfill_progress)
        self._caught_up = False  # read everything there was at start, once
        self._totals: Totals | None = None
        self._totals_rows = 0
        self._totals_query = ViewQuery()  # whose rows (filter, window) the totals cover
        self._totals_window: TimeWindow | None = None
        self._time_span: tuple[float, float] | None = None
        self._view_window: TimeWindow | None = None
        #: (key, points, series) of the window the engine panel shows (_engine_view).
        self._window_engine: tuple[object, tuple[StatsPayload, ...], EngineSeries | None] = (
            None,
            (),
            None,
        )
        self._totals_at = -math.inf
        self._totals_cost = 0.0
        self._view: np.ndarray[Any, Any] | None = None
        self._view_query = ViewQuery()
        self._view_rows = 0
        self._view_version = -1  # the Extractor version the view was computed from
        self._view_at = -math.inf
        self._view_cost = 0.0
        self._fed_version = -1
        self._published_version = 0
        self._backlog = False
        self._idle = threading.Event()  # set when the worker has nothing left to do
        self._last_publish_key: tuple[Any, ...] = ()
        self._heavy = HeavyWorker()
        self._state: FrozenExtractor | None = None  # the last freeze
        #: (state version, first row changed since the freeze before) of the last freezes.
        self._changes: deque[tuple[int, int]] = deque(maxlen=ROW_CHANGES_KEPT)
        self._lineage = next(_LINEAGES)
        self._problem: str | None = None  # the last totals/view failure
        self._trim_due = -math.inf
        self._trimmed_version = 0

    # -- public (any thread) -------------------------------------------------------------------

    @property
    def snapshot(self) -> Snapshot:
        return self._snapshot

    def start(self) -> None:
        self._heavy.start()
        self._thread = threading.Thread(target=self._main, name="sparseety-ingest", daemon=True)
        self._thread.start()

    def stop(self, timeout: float = 5.0) -> None:
        self._stop.set()
        # An idle worker sleeps in the watcher's wait with no deadline (_idle_wait): end it,
        # or the join times out and the thread, its watcher and inotify descriptor live on.
        self._wake()
        self._heavy.stop()
        if self._thread is not None:
            self._thread.join(timeout)
            self._thread = None

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
            if self._thread is None or not self._thread.is_alive():
                return self._snapshot.error is None and self._snapshot.settled
        return False

    # -- the thread ----------------------------------------------------------------------------

    def _main(self) -> None:
        try:
            self._open()
            while not self._stop.is_set():
                live = self._poll_live()
                backfilled = not self._backlog and self._backfill_step()
                worked = self._flush_quiet() or live or backfilled
                self._publish(force=False)
                if self._stop.is_set():
                    break
                if self._backlog or backfilled:
                    continue
                if live or self._publish_deferred:
                    # Lines are coming: they gather in the file until the next snapshot is
                    # due, then are read in one go (see PUBLISH_GAP_S).
                    self._stop.wait(self._until_publish())
                    continue
                if worked:
                    continue
                assert self._watcher is not None
                if self._pending_heavy():
                    self._idle.clear()
                    self._watcher.wait(BUSY_WAIT_S)
                    continue
                self._release_memory()
                self._idle.set()
                self._watcher.wait(self._idle_wait())
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

    def _release_memory(self) -> None:
        """Hand the heap's freed pages back to the OS when the worker catches up.

        Following a busy log allocates and frees millions of short-lived objects (lines,
        payloads, the last frozen segment, the totals' temporaries) and glibc keeps the
        freed pages: 600k requests followed live held 428 B each instead of 288 B
        (bench/tail_memory.py). malloc_trim costs 20-40 ms there, so it runs when the
        store changed, at most every ``max(TRIM_INTERVAL_S, TRIM_DUTY x its last cost)``.
        """
        now = self._clock()
        version = self._extractor.version
        if now < self._trim_due or version == self._trimmed_version:
            return
        started = time.perf_counter()
        release_free_memory()
        cost = time.perf_counter() - started
        self._trimmed_version = version
        self._trim_due = now + max(TRIM_INTERVAL_S, TRIM_DUTY * cost)

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
            try:
                size = os.stat(path).st_size
            except OSError:
                continue  # missing: the follower reports it and waits
            if size <= options.big_file_bytes:
                continue
            cut = max(0, size - options.tail_window_bytes)
            cut = _line_start_at_or_after(path, cut)
            if cut <= 0 or cut >= size:
                continue
            # The follower reads [cut, ...); the backfill reads the lines starting in [0, cut).
            watcher.followers[i] = FileFollower(path, start=cut, chunks=True)
            older = self._extractor.add_file(path)
            backfill = _Backfill(path, older, cut, iter_chunks(path, 0, cut))
            self._backfills.append(backfill)
            self._backfill_of[path] = backfill
            self._line_base[path] = None
            self._events.append(
                f"{_short(path)}: {_size(size)}, showing the last "
                f"{_size(size - cut)} first, reading the rest in the background"
            )

    def _follow(self, path: str) -> None:
        """Start a path (given at start, or a file that appeared in a followed directory)."""
        file = self._extractor.add_file(path)
        self._followed[path] = _Followed({}, [file])
        self._line_base[path] = 0

    def _poll_live(self) -> bool:
        assert self._watcher is not None
        worked = False
        backlog = False
        now = self._clock()
        for path, batch in self._watcher.poll_all():
            if path not in self._followed:
                self._follow(path)  # it appeared in a followed directory
            backlog = backlog or batch.more
            pending = deque(batch.events)
            done = 0  # lines of the batch before the current segment
            for segment in batch.segments:
                lines = segment.lines
                start = 0
                while True:
                    # Events apply between lines: a rotation opens the new incarnation's file
                    # before its lines come.
                    while pending and pending[0].line_index <= done + start:
                        self._on_event(path, pending.popleft())
                    if start >= len(lines):
                        break
                    stop = len(lines)
                    if pending:
                        stop = min(stop, pending[0].line_index - done)
                    file = self._file_for(path, segment.generation, "a new file at the path")
                    # Chunks of whole lines, as the backfill and the batch commands read
                    # them: request records take the native scanner, server logs their
                    # family's scan_server (a RawLine: a line held across polls).
                    self._extractor.feed_chunks(file, lines[start:stop])
                    self._fed_at[file] = now
                    worked = True
                    start = stop
                done += len(lines)
            while pending:
                self._on_event(path, pending.popleft())
            worked = worked or bool(batch.events)
        self._backlog = backlog
        if worked and not self._caught_up:
            self._history_reads += 1  # what the files held at start: history, not a rate
        return worked

    def _file_for(self, path: str, generation: int, reason: str) -> int:
        """The Extractor file of a follower generation of ``path`` (a new incarnation's file
        when the generation is new: generations only grow, so it follows the latest)."""
        followed = self._followed[path]
        file = followed.by_generation.get(generation)
        if file is not None:
            return file
        if generation <= 0 or not followed.by_generation:
            # Nothing read yet (a "missing" event), or the first incarnation.
            if generation > 0:
                followed.by_generation[generation] = followed.first
            return followed.first
        # Earlier rows keep pointing into their own incarnation's file.
        file = self._extractor.new_incarnation(followed.latest, reason)
        backfill = self._backfill_of.get(path)
        if backfill is not None:
            # The older part belongs to the first incarnation: it no longer lives at the path.
            self._extractor.supersede(backfill.file, reason)
        followed.by_generation[generation] = file
        followed.incarnations.append(file)
        return file

    def _on_event(self, path: str, event: SourceEvent) -> None:
        file = self._file_for(path, event.generation, event.message)
        if event.kind == "closed":
            self._extractor.finish_file(file)  # no more lines will come to it
        if event.kind != "opened":
            self._extractor.note(file, event.message)
        if event.kind not in ROUTINE_EVENTS:  # the status line shows what changed
            self._events.append(event.message)

    def _flush_quiet(self) -> bool:
        """Flush the parsers of files quiet for ``QUIET_FLUSH_S``; True if that gave events."""
        now = self._clock()
        flushed = False
        for file, fed_at in list(self._fed_at.items()):
            if now - fed_at >= QUIET_FLUSH_S:
                del self._fed_at[file]
                flushed = self._extractor.flush(file) or flushed
        return flushed

    def _until_publish(self) -> float:
        """Seconds until the next snapshot may be published (0: now)."""
        return max(0.0, self._last_publish_at + self.publish_gap_s - self._clock())

    def _idle_wait(self) -> float | None:
        """How long to sleep with nothing to do: until the next thing due (a quiet flush,
        a quiet spell's 0 tok/s, a memory trim); None (until a file changes) when nothing
        is, and the watcher's notifications need no polling: an idle log costs no
        wake-ups."""
        dues: list[float] = []
        if self._fed_at:
            dues.append(min(self._fed_at.values()) + QUIET_FLUSH_S)
        last = self._rate_last
        if self.options.track_rate and last is not None and not (self._rate and not self._rate[-1]):
            dues.append(last[0] + RATE_QUIET_S)
        if self._extractor.version != self._trimmed_version:
            dues.append(self._trim_due)
        assert self._watcher is not None
        if not dues and not self._watcher.needs_polling:
            return None
        wait = max(0.01, min(dues) - self._clock()) if dues else IDLE_WAIT_S
        return min(IDLE_WAIT_S, wait)

    def _backfill_step(self) -> bool:
        if self._view is None and self._backfills:
            # Not before the table has an order: until the first view is computed a
            # snapshot shows rows in store order, which is log order only while the
            # store holds the tail alone. Older rows fed before that put the older part
            # at the table's end, where follow shows it (the first screens of a big
            # file showed r14363 where r149999 was the last line).
            return False
        for backfill in self._backfills:
            if backfill.finished:
                continue
            item = next(backfill.items, None)
            if item is not None:
                # Chunks, as the batch commands read: request records take the native
                # scanner, so a big request log's older part loads several times faster.
                self._extractor.feed_chunks(backfill.file, [item])
                self._history_reads += 1
                end = item.offset + (len(item.data) if isinstance(item, Chunk) else item.length)
                backfill.done = min(backfill.end, end)
            else:
                backfill.finished = True
                backfill.done = backfill.end
                self._extractor.finish_file(backfill.file)
                self._line_base[backfill.path] = self._extractor.files[backfill.file].lines_total
                self._events.append(f"{_short(backfill.path)}: older part read")
                # The whole file is in: its totals and order are due now, not after the
                # throttle's wait (up to HEAVY_DUTY times the last cost: ~2 s at 800k rows),
                # which happens once per backfill, so it cannot keep a core busy.
                self._totals_at = self._view_at = -math.inf
            return True
        return False

    def _pending_heavy(self) -> bool:
        """A recompute is due but throttled: wake up soon to do it."""
        rows = len(self._extractor.store)
        return (
            self._heavy.busy
            or self._query is not self._view_query
            or self._totals_rows != rows
            or not self._query.same_rows(self._totals_query)
            or self._fed_version != self._extractor.version
            or (self._needs_view(self._query) and self._view_stale(self._query, rows))
        )

    def _view_stale(self, query: ViewQuery, rows: int) -> bool:
        """The view misses rows, or (a window relative to the newest time) new lines may
        have moved that time, and with it the window, since it was computed."""
        if self._view_rows != rows:
            return True
        relative = query.window is not None and query.window.relative
        return relative and self._view_version != self._extractor.version

    def _needs_view(self, query: ViewQuery) -> bool:
        """Whether the table needs an index array: a filter or sort, or a big log whose
        older part was read after its tail (store order is then not log order)."""
        return not query.is_identity or bool(self._backfills)

    # -- publishing ----------------------------------------------------------------------------

    def _publish(self, force: bool) -> None:
        extractor = self._extractor
        rows = len(extractor.store)
        now = self._clock()
        settled = not self._backlog and all(b.finished for b in self._backfills)
        heavy_changed = self._apply_heavy_result()
        self._caught_up = self._caught_up or settled

        query = self._query
        if query is not self._view_query and not self._needs_view(query):
            # Back to arrival order: nothing to compute.
            self._view, self._view_query, self._view_rows = None, query, rows
            heavy_changed = True
        if not self._heavy.busy:
            # A new filter or window: the totals follow it at once, like the table.
            narrowed = not query.same_rows(self._totals_query)
            totals_due = (
                self._totals_rows != rows or extractor.version != self._fed_version or narrowed
            ) and (
                force
                or narrowed
                or now - self._totals_at
                >= max(self.options.totals_interval_s, HEAVY_DUTY * self._totals_cost)
            )
            view_due = query is not self._view_query or (
                self._needs_view(query)
                and self._view_stale(query, rows)
                and (
                    force
                    or now - self._view_at
                    >= max(self.options.totals_interval_s, HEAVY_DUTY * self._view_cost)
                )
            )
            if totals_due or view_due:
                # The computation reads a frozen copy on its own thread: ingest never
                # waits for an O(n) pass over the store.
                self._heavy.submit(
                    HeavyJob(
                        self._freeze(),
                        self.shape,
                        totals=totals_due or self._totals is None,
                        query=query if view_due else None,
                        older_files=frozenset(b.file for b in self._backfills),
                        totals_query=query,
                    )
                )
                if totals_due:
                    self._totals_at = now
                    self._rate_pending = (now, self._backfill_progress())
                if view_due:
                    self._view_at = now

        totals_current = (
            self._totals_rows == rows
            and self._fed_version == extractor.version
            and query.same_rows(self._totals_query)
        )
        if totals_current and not self._heavy.busy and self._sample_quiet(now):
            heavy_changed = True  # a quiet spell's 0 tok/s is news to show
        view_current = self._view_query is query and (
            not self._needs_view(query) or not self._view_stale(query, rows)
        )
        settled = settled and totals_current and view_current and not self._heavy.busy
        # A heavy result is published once, when it comes (not in the key: its going away
        # in the next pass would be one more publish of the same content after settling).
        key = (extractor.version, rows, settled, len(self._events))
        heavy_changed = heavy_changed or self._heavy_unshown
        if key == self._last_publish_key and not heavy_changed:
            return
        if not force and now - self._last_publish_at < self.publish_gap_s:
            # Too soon after the last one: the loop publishes it once the gap has passed.
            self._publish_deferred = True
            self._heavy_unshown = heavy_changed
            return
        self._publish_deferred = False
        self._heavy_unshown = False
        self._last_publish_key = key
        self._published_version += 1
        state = self._freeze()
        engine_points, engine_window = self._engine_view(state.engine)
        self._snapshot = Snapshot(
            version=self._published_version,
            state=state,
            files=self._file_statuses(state),
            events=tuple(self._events),
            totals=self._totals,
            totals_rows=self._totals_rows,
            rate=tuple(self._rate),
            engine_points=engine_points,
            engine_window=engine_window,
            query=self._view_query,
            view=self._view,
            view_rows=self._view_rows,
            window=self._view_window,
            totals_query=self._totals_query,
            totals_window=self._totals_window,
            time_span=self._time_span,
            settled=settled,
            problem=self._problem,
            changes=tuple(self._changes),
            lineage=self._lineage,
        )
        if self._on_wake is not None:
            self._on_wake()
        self._last_publish_at = now

    def _apply_heavy_result(self) -> bool:
        result = self._heavy.take()
        if result is None:
            return False
        job = result.job
        if result.error is not None:
            # Shown on screen and in diagnostics; tried again at the next due time (the
            # throttle keeps a failing computation from spinning).
            self._problem = f"totals/view computation failed: {result.error}"
            return True
        self._problem = None
        if job.totals:
            self._totals = result.totals
            self._totals_cost = result.totals_cost
            self._totals_rows = job.rows
            self._totals_query = job.totals_query or ViewQuery()
            self._totals_window = result.totals_window
            self._time_span = result.time_span
            self._fed_version = job.state.version
            if self._rate_pending is not None:
                self._sample_rate(*self._rate_pending)
                self._rate_pending = None
        if job.query is not None:
            self._view = result.view
            self._view_cost = result.view_cost
            self._view_query = job.query
            self._view_window = result.window
            self._view_rows = job.rows
            self._view_version = job.state.version
        return True

    def _engine_view(
        self, engine: EngineSeries
    ) -> tuple[tuple[StatsPayload, ...], EngineSeries | None]:
        """The engine panel's newest ``ENGINE_POINTS`` stats points and the series its
        figures (every stats line's count) come from; with a time window, those of the
        window only (points outside it are not drawn, lines outside it not counted)."""
        if not engine.count:
            return (), None
        window = self._view_window if self._view_query.window is not None else None
        if window is None:
            return tuple(itertools.islice(reversed(engine.points), ENGINE_POINTS))[::-1], None
        key = (engine.count, window)  # a pass over STATS_POINTS points: once per change
        if self._window_engine[0] != key:
            series = window_series(engine, window)[0]
            points = tuple(points_in(engine.points, window)[-ENGINE_POINTS:])
            self._window_engine = (key, points, series)
        return self._window_engine[1], self._window_engine[2]

    def _backfill_progress(self) -> tuple[int, ...]:
        """How much history has been read: it changes whenever lines that were already
        in the files are fed (a big file's older part, or files read at start until the
        worker first catches up), never for lines appended while followed."""
        return (self._history_reads,)

    def _sample_rate(self, at: float, progress: tuple[int, ...]) -> None:
        """One tok/s sample: the tokens the totals gained since the last sample, over the
        wall time between the states they were computed on. Tokens the backfill read in
        that time are history, not a rate (84,568,608 tok/s was shown once a big file's
        older part had been read): a sample over any backfill progress is left out and
        only restarts the count."""
        if not self.options.track_rate or self._totals is None:
            return
        if self._totals_query.narrows:
            # Totals of a filter or window: their change is rows coming and going, not a
            # rate. tok/s stays the whole stream's, sampled again from the next whole total.
            self._rate_last = None
            return
        requests = self._totals.requests
        tokens = float((requests.prompt_tokens or 0) + (requests.completion_tokens or 0))
        last = self._rate_last
        self._rate_last = (at, tokens, progress)
        if last is None or last[2] != progress:
            return
        dt = at - last[0]
        if self._log_speed is not None:  # a replay: per second of the log's own time
            dt *= self._log_speed()
        if dt > 0:
            self._rate.append(max(0.0, (tokens - last[1]) / dt))

    def _sample_quiet(self, now: float) -> bool:
        """While nothing new is read the totals are not computed again, so no sample
        would come and the last rate would stay on screen however long the file is
        quiet: take a sample of the unchanged totals (0 tok/s) once a quiet spell is
        as long as RATE_QUIET_S. Returns whether the rate changed."""
        last = self._rate_last
        if not self.options.track_rate or last is None or now - last[0] < RATE_QUIET_S:
            return False
        if self._rate and self._rate[-1] == 0.0:
            self._rate_last = (now, last[1], last[2])  # already 0: nothing new to show
            return False
        self._sample_rate(now, self._backfill_progress())
        return True

    def _freeze(self) -> FrozenExtractor:
        """The Extractor's state now, frozen (again only if anything changed)."""
        state = self._state
        if state is None or state.version != self._extractor.version:
            store = self._extractor.store
            # Rows below the store's dirty_from and the last freeze's length are the same
            # in the new freeze (the invariant freezing shares segments by): read before
            # freeze() resets it.
            changed_from = 0 if state is None else min(store.dirty_from, len(state.store))
            state = self._state = self._extractor.freeze()
            self._changes.append((state.version, changed_from))
        return state

    def _file_statuses(self, state: FrozenExtractor) -> tuple[FileStatus, ...]:
        """One status per path, adding up every part: each incarnation (a rotated-away file
        is not forgotten) and the older part of a backfilled one."""
        out: list[FileStatus] = []
        files = state.files
        for path, followed in self._followed.items():
            parts = [followed.first]
            incarnations = [1]
            done = total = 0
            backfill = self._backfill_of.get(path)
            if backfill is not None:
                parts.append(backfill.file)
                incarnations.append(1)
                done, total = backfill.done, backfill.end
            for n, file in enumerate(followed.incarnations[1:], start=2):
                parts.append(file)
                incarnations.append(n)
            by_kind: dict[str, int] = {}
            for part in parts:
                for kind, count in files[part].by_kind.items():
                    by_kind[kind] = by_kind.get(kind, 0) + count
            fmt = next(
                (files[p].format_name for p in reversed(parts) if files[p].family is not None),
                "unknown",
            )
            out.append(
                FileStatus(
                    path=path,
                    format=fmt,
                    lines=sum(files[p].lines_total for p in parts),
                    by_kind=by_kind,
                    backfill_done=done,
                    backfill_total=total,
                    parts=tuple(parts),
                    line_base=self._line_base.get(path, 0),
                    incarnations=tuple(incarnations),
                )
            )
        return tuple(out)


def _line_start_at_or_after(path: str, pos: int) -> int:
    """First line start at or after byte ``pos`` (the file's size if there is none)."""
    if pos <= 0:
        return 0
    with open(path, "rb") as f:
        f.seek(pos - 1)
        while True:
            piece = f.readline(1024 * 1024)
            if not piece or piece.endswith(b"\n"):
                return f.tell()


def _short(path: str) -> str:
    return os.path.basename(path) or path


def _size(n: int) -> str:
    value = float(n)
    for unit in ("B", "KB", "MB", "GB"):
        if value < 1024 or unit == "GB":
            return f"{value:.0f} {unit}" if unit == "B" else f"{value:.1f} {unit}"
        value /= 1024
    return f"{n} B"
