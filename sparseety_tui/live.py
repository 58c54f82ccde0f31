"""The ingest worker of the TUI: one thread that follows the logs and owns the Extractor.

Data flows one way (DESIGN.md): ``LogWatcher`` -> ``Extractor.feed`` -> an immutable
``Snapshot`` that the UI picks up on its own timer (about 10 Hz). The worker is the only
writer of the store; the UI reads a snapshot (one attribute read, atomic under the GIL) and
may read cells of rows ``< snapshot.rows`` directly from the store's arrays.

Costs are kept off the hot path:

- After every fed batch a *light* snapshot is published (row count, file counters,
  source events): O(files), so the table shows new rows within one UI tick.
- Totals (``core.totals.compute_totals``, O(n) numpy over the store) are recomputed at most
  every ``totals_interval_s`` and never more often than 10x their own cost, so a store of
  millions of requests is summed about once a second, not on every batch.
- A sorted or filtered view of the table is an index array computed here, with numpy over
  ``RequestStore.numeric_view()`` (which only the writer may call), on the same throttle.
  Without a sort or filter the view is the identity and costs nothing.

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
import re
import threading
import time
from collections import deque
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any, Literal

from sparseety_tui.core.costmodel import ModelShape
from sparseety_tui.core.extractor import Diagnostic, EngineSeries, Extractor, HeatCounts
from sparseety_tui.core.store import STATE_CODE, STATES
from sparseety_tui.events import StatsPayload
from sparseety_tui.sources import FileFollower, LogWatcher, RawLine, SourceEvent
from sparseety_tui.sources.lines import Chunk, iter_chunks

if TYPE_CHECKING:
    import numpy as np

#: Files up to this size are read whole at start; bigger ones show their tail first.
BIG_FILE_BYTES = 64 * 1024 * 1024
#: How much of a big file's end is read first, before the backfill of the older part.
TAIL_WINDOW_BYTES = 8 * 1024 * 1024
#: Longest the worker sleeps when nothing happens (it also wakes on file changes).
IDLE_WAIT_S = 0.5
#: Longest it sleeps while a view change or a heavy recompute is pending.
BUSY_WAIT_S = 0.05
#: Points of the tokens-per-second history kept for the sparkline.
RATE_POINTS = 60
#: Engine stats points copied into each snapshot for sparklines.
ENGINE_POINTS = 120
#: A publish after this long without one wakes the UI (``IngestWorker(on_wake=...)``).
WAKE_AFTER_S = 0.25
#: Totals and views are recomputed at most once per this many times their own cost (their
#: thread then uses at most ~1/HEAVY_DUTY of a core), and never more often than
#: ``LiveOptions.totals_interval_s``.
HEAVY_DUTY = 5.0

StartMode = Literal["default", "start", "last"]

# -- the view query: filter and sort --------------------------------------------------------

#: Sortable columns, in the order ``s`` cycles through them (None: arrival order).
SORT_COLUMNS: tuple[str, ...] = (
    "time",
    "id",
    "model",
    "state",
    "prompt",
    "completion",
    "cached",
    "skip",
    "experts",
    "latency",
    "ttft",
)

#: Filter field names (and aliases) -> store column or derived figure.
FILTER_FIELDS: dict[str, str] = {
    "skip": "skip",
    "latency": "latency",
    "lat": "latency",
    "ttft": "ttft",
    "prompt": "prompt",
    "completion": "completion",
    "compl": "completion",
    "cached": "cached",
    "k": "experts",
    "experts": "experts",
    "state": "state",
    "model": "model",
    "id": "id",
}

_CLAUSE = re.compile(r"^(!?)([a-z_]+)\s*(>=|<=|!=|=|>|<|~)\s*(.+)$")
_NUMBER = re.compile(r"^(-?\d+(?:\.\d+)?)\s*(ms|s|%)?$")


class FilterError(ValueError):
    """A filter expression that cannot be understood; the message says why."""


@dataclass(frozen=True)
class Clause:
    """One filter condition. ``field`` is a FILTER_FIELDS value, or "" for free text."""

    field: str
    op: str  # one of > >= < <= = != ~
    value: str | float
    negate: bool = False


@dataclass(frozen=True)
class ViewQuery:
    """What the table shows: the rows matching every clause, in ``sort`` order."""

    text: str = ""
    clauses: tuple[Clause, ...] = ()
    sort: str | None = None
    reverse: bool = False
    serial: int = 0

    @property
    def is_identity(self) -> bool:
        return not self.clauses and self.sort is None and not self.reverse


def parse_filter(text: str) -> tuple[Clause, ...]:
    """Parse ``skip>0.5 latency>2 state=finished llama`` into clauses (all must hold).

    Fields: skip (ratio 0-1, or ``50%``), latency / ttft (seconds, or ``300ms``), prompt,
    completion, cached, experts (k), state, model, id. Operators ``> >= < <= = != ~`` (``~``
    contains). A word that is not a comparison matches request ids and model names
    (case-insensitive substring). ``!`` before a clause negates it.
    """
    clauses: list[Clause] = []
    for word in _split_words(text):
        match = _CLAUSE.match(word.lower() if "=" not in word and "~" not in word else word)
        if match is None:
            negate = word.startswith("!") and len(word) > 1
            clauses.append(Clause("", "~", (word[1:] if negate else word).lower(), negate))
            continue
        negate_mark, name, op, raw = match.groups()
        name = name.lower()
        fld = FILTER_FIELDS.get(name)
        if fld is None:
            known = ", ".join(sorted(set(FILTER_FIELDS)))
            raise FilterError(f"unknown field {name!r} (known: {known})")
        value: str | float
        if fld in ("state", "model", "id"):
            if op not in ("=", "!=", "~"):
                raise FilterError(f"{name} takes =, != or ~, not {op}")
            value = raw.strip().lower()
            if fld == "state" and op != "~" and value not in STATE_CODE:
                raise FilterError(f"unknown state {raw!r} (known: {', '.join(STATES[1:])})")
        else:
            if op == "~":
                raise FilterError(f"{name} is a number: use > >= < <= = !=")
            number = _NUMBER.match(raw.strip().lower())
            if number is None:
                raise FilterError(f"{name}{op}{raw}: {raw!r} is not a number")
            value = float(number.group(1))
            unit = number.group(2)
            if unit == "ms":
                value /= 1000.0
            elif unit == "%":
                value /= 100.0
        clauses.append(Clause(fld, op, value, bool(negate_mark)))
    return tuple(clauses)


def _split_words(text: str) -> list[str]:
    # "latency > 2" is one clause: glue operators to their neighbours first.
    glued = re.sub(r"\s*(>=|<=|!=|=|>|<|~)\s*", r"\1", text.strip())
    return [w for w in glued.split() if w]


def _compare(values: Any, op: str, target: float) -> Any:
    if op == ">":
        return values > target
    if op == ">=":
        return values >= target
    if op == "<":
        return values < target
    if op == "<=":
        return values <= target
    if op == "=":
        return values == target
    return values != target


# -- snapshots ------------------------------------------------------------------------------


@dataclass(frozen=True)
class FileStatus:
    """One followed path as the UI shows it (both parts of a backfilled file together)."""

    path: str
    format: str
    lines: int
    by_kind: Mapping[str, int]
    backfill_done: int = 0  # bytes of the older part read so far
    backfill_total: int = 0  # bytes of the older part (0: no backfill)
    parts: tuple[int, ...] = ()  # extractor file indices: (tail,) or (tail, older part)
    line_base: int | None = 0  # lines before the tail part (None: not counted yet)

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
    rows: int = 0  # store rows complete and safe to read: 0 .. rows-1
    files: tuple[FileStatus, ...] = ()
    events: tuple[str, ...] = ()  # recent source events ("file rotated, reopened"), newest last
    totals: Mapping[str, Any] | None = None
    totals_rows: int = 0  # rows the totals cover
    rate: tuple[float, ...] = ()  # tokens/s samples (wall clock), oldest first
    engine_points: tuple[StatsPayload, ...] = ()
    query: ViewQuery = field(default_factory=ViewQuery)
    view: np.ndarray[Any, Any] | None = None  # row indices; None = identity over rows
    view_rows: int = 0  # store rows the view was computed over
    settled: bool = False  # nothing read is waiting to be fed, no backfill running
    error: str | None = None  # the worker died: why

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


@dataclass(frozen=True)
class LiveOptions:
    paths: tuple[str, ...]
    start: StartMode = "default"
    last_lines: int | None = None
    poll: bool = False
    big_file_bytes: int = BIG_FILE_BYTES
    tail_window_bytes: int = TAIL_WINDOW_BYTES
    totals_interval_s: float = 0.25
    track_rate: bool = True  # False in snapshot tests: the rate depends on the wall clock


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
    ) -> None:
        """``on_wake`` is called (from the worker thread; it must not block) when a snapshot
        is published after a quiet spell, so an idle UI can poll rarely and still show the
        first new line at once. Never called more than once per ``WAKE_AFTER_S``."""
        self.extractor = extractor
        self._on_wake = on_wake
        self._last_publish_at = -math.inf
        self.shape = shape
        self.options = options
        self._clock = clock
        self._snapshot = Snapshot()
        self._query = ViewQuery()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._watcher: LogWatcher | None = None
        self._file_of: dict[str, int] = {}  # path -> extractor file index (tail part)
        self._backfills: list[_Backfill] = []
        self._backfill_of: dict[str, _Backfill] = {}
        self._line_base: dict[str, int | None] = {}
        self._events: deque[str] = deque(maxlen=50)
        self._rate: deque[float] = deque(maxlen=RATE_POINTS)
        self._rate_last: tuple[float, float] | None = None
        self._totals: Mapping[str, Any] | None = None
        self._totals_rows = 0
        self._totals_at = -math.inf
        self._totals_cost = 0.0
        self._view: np.ndarray[Any, Any] | None = None
        self._view_query = ViewQuery()
        self._view_rows = 0
        self._view_at = -math.inf
        self._view_cost = 0.0
        self._fed_version = -1
        self._published_version = 0
        self._backlog = False
        self._idle = threading.Event()  # set when the worker has nothing left to do
        self._last_publish_key: tuple[Any, ...] = ()
        self._heavy = _HeavyWorker()

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
        self._heavy.stop()
        if self._thread is not None:
            self._thread.join(timeout)
            self._thread = None

    def set_query(self, query: ViewQuery) -> None:
        """Ask for another filter/sort; the next snapshots carry it once computed."""
        self._query = query
        self._idle.clear()

    def drain(self, timeout: float = 10.0) -> bool:
        """Block until everything readable now is fed and published (tests, benchmarks).

        Returns False on timeout. Files must not be growing meanwhile.
        """
        deadline = time.monotonic() + timeout
        self._idle.clear()
        while time.monotonic() < deadline:
            if self._idle.wait(0.02):
                snap = self._snapshot
                if snap.settled and snap.query is self._query:
                    return True
                self._idle.clear()
            if self._thread is None or not self._thread.is_alive():
                return self._snapshot.error is None and self._snapshot.settled
        return False

    def diagnostics(self, file: int) -> list[Diagnostic]:
        """A copy of one extractor file's unparsed-line samples (safe from the UI thread)."""
        for _ in range(5):
            try:
                return list(self.extractor.files[file].diagnostics)
            except RuntimeError:  # deque mutated while copying: try again
                continue
        return []

    # -- the thread ----------------------------------------------------------------------------

    def _main(self) -> None:
        try:
            self._open()
            while not self._stop.is_set():
                worked = self._poll_live()
                if not self._backlog:
                    worked = self._backfill_step() or worked
                self._publish(force=False)
                if self._stop.is_set():
                    break
                if worked or self._backlog:
                    continue
                if self._pending_heavy():
                    self._idle.clear()
                    assert self._watcher is not None
                    self._watcher.wait(BUSY_WAIT_S)
                    continue
                self._idle.set()
                assert self._watcher is not None
                self._watcher.wait(IDLE_WAIT_S)
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

    def _open(self) -> None:
        options = self.options
        start: Literal["start", "end"] = "start"
        watcher = LogWatcher(
            options.paths,
            poll=options.poll,
            start=start,
            last_lines=options.last_lines if options.start == "last" else None,
        )
        self._watcher = watcher
        for i, follower in enumerate(watcher.followers):
            path = follower.path
            self._file_of[path] = self.extractor.add_file(path)
            self._line_base[path] = 0
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
            watcher.followers[i] = FileFollower(path, start=cut)
            older = self.extractor.add_file(path)
            backfill = _Backfill(path, older, cut, iter_chunks(path, 0, cut))
            self._backfills.append(backfill)
            self._backfill_of[path] = backfill
            self._line_base[path] = None
            self._events.append(f"{_short(path)}: {_size(size)}, showing the last "
                                f"{_size(size - cut)} first, reading the rest in the background")

    def _poll_live(self) -> bool:
        assert self._watcher is not None
        worked = False
        backlog = False
        for path, batch in self._watcher.poll_all():
            backlog = backlog or batch.more
            pending = deque(batch.events)
            done = 0  # lines of the batch before the current segment
            for segment in batch.segments:
                lines = segment.lines
                start = 0
                while True:
                    # Events apply between lines: rotation resets the parser before new lines.
                    while pending and pending[0].line_index <= done + start:
                        self._on_event(path, pending.popleft())
                    if start >= len(lines):
                        break
                    stop = len(lines)
                    if pending:
                        stop = min(stop, pending[0].line_index - done)
                    self.extractor.feed(self._file_of[path], lines[start:stop])
                    worked = True
                    start = stop
                done += len(lines)
            while pending:
                self._on_event(path, pending.popleft())
            worked = worked or bool(batch.events)
        self._backlog = backlog
        return worked

    def _on_event(self, path: str, event: SourceEvent) -> None:
        file = self._file_of[path]
        if event.kind in ("rotated", "replaced", "truncated"):
            # New lines belong to a new incarnation: earlier rows keep pointing at theirs.
            file = self._file_of[path] = self.extractor.new_incarnation(file, event.message)
        self.extractor.note(file, event.message)
        if event.kind != "opened":  # the status line shows what changed, not the routine
            self._events.append(event.message)

    def _backfill_step(self) -> bool:
        for backfill in self._backfills:
            if backfill.finished:
                continue
            item = next(backfill.items, None)
            if item is not None:
                # Chunks, as the batch commands read: request records take the native
                # scanner, so a big request log's older part loads several times faster.
                self.extractor.feed_chunks(backfill.file, [item])
                end = item.offset + (len(item.data) if isinstance(item, Chunk) else item.length)
                backfill.done = min(backfill.end, end)
            else:
                backfill.finished = True
                backfill.done = backfill.end
                self.extractor.finish_file(backfill.file)
                self._line_base[backfill.path] = self.extractor.files[backfill.file].lines_total
                self._events.append(f"{_short(backfill.path)}: older part read")
            return True
        return False

    def _pending_heavy(self) -> bool:
        """A recompute is due but throttled: wake up soon to do it."""
        rows = len(self.extractor.store)
        return (
            self._heavy.busy
            or self._query is not self._view_query
            or self._totals_rows != rows
            or self._fed_version != self.extractor.version
            or (self._needs_view(self._query) and self._view_rows != rows)
        )

    def _needs_view(self, query: ViewQuery) -> bool:
        """Whether the table needs an index array: a filter or sort, or a big log whose
        older part was read after its tail (store order is then not log order)."""
        return not query.is_identity or bool(self._backfills)

    # -- publishing ----------------------------------------------------------------------------

    def _publish(self, force: bool) -> None:
        extractor = self.extractor
        rows = len(extractor.store)
        now = self._clock()
        settled = not self._backlog and all(b.finished for b in self._backfills)
        heavy_changed = self._apply_heavy_result(now, settled)

        query = self._query
        if query is not self._view_query and not self._needs_view(query):
            # Back to arrival order: nothing to compute.
            self._view, self._view_query, self._view_rows = None, query, rows
            heavy_changed = True
        if not self._heavy.busy:
            totals_due = (self._totals_rows != rows or extractor.version != self._fed_version) and (
                force or now - self._totals_at
                >= max(self.options.totals_interval_s, HEAVY_DUTY * self._totals_cost))
            view_due = query is not self._view_query or (
                self._needs_view(query) and self._view_rows != rows and (
                    force or now - self._view_at
                    >= max(self.options.totals_interval_s, HEAVY_DUTY * self._view_cost)))
            if totals_due or view_due:
                # Copy what the computation reads here (the writer thread), compute elsewhere:
                # ingest never waits for an O(n) pass over the store.
                frozen = _freeze(extractor)
                self._heavy.submit(_HeavyJob(
                    frozen, self.shape, len(frozen.store), extractor.version,
                    totals=totals_due or self._totals is None,
                    query=query if view_due else None,
                    older_files=frozenset(b.file for b in self._backfills),
                ))
                if totals_due:
                    self._totals_at = now
                if view_due:
                    self._view_at = now

        totals_current = self._totals_rows == rows and self._fed_version == extractor.version
        view_current = self._view_query is query and (
            not self._needs_view(query) or self._view_rows == rows
        )
        settled = settled and totals_current and view_current and not self._heavy.busy
        key = (extractor.version, rows, settled, heavy_changed, len(self._events))
        if key == self._last_publish_key and not heavy_changed:
            return
        self._last_publish_key = key
        self._published_version += 1
        engine = extractor.engine
        self._snapshot = Snapshot(
            version=self._published_version,
            rows=rows,
            files=self._file_statuses(),
            events=tuple(self._events),
            totals=self._totals,
            totals_rows=self._totals_rows,
            rate=tuple(self._rate),
            engine_points=tuple(itertools.islice(
                reversed(engine.points), ENGINE_POINTS))[::-1] if engine.count else (),
            query=self._view_query,
            view=self._view,
            view_rows=self._view_rows,
            settled=settled,
        )
        if self._on_wake is not None and now - self._last_publish_at > WAKE_AFTER_S:
            self._on_wake()
        self._last_publish_at = now

    def _apply_heavy_result(self, now: float, settled: bool) -> bool:
        result = self._heavy.take()
        if result is None:
            return False
        job = result.job
        if result.error is not None:
            raise RuntimeError(f"totals/view computation failed: {result.error}")
        if job.totals:
            self._totals = result.totals
            self._totals_cost = result.totals_cost
            self._totals_rows = job.rows
            self._fed_version = job.version
            self._sample_rate(now, settled)
        if job.query is not None:
            self._view = result.view
            self._view_cost = result.view_cost
            self._view_query = job.query
            self._view_rows = job.rows
        return True

    def _sample_rate(self, now: float, settled: bool) -> None:
        if not self.options.track_rate or self._totals is None:
            return
        requests = self._totals.get("requests", {})
        tokens = float((requests.get("prompt_tokens") or 0) + (requests.get("completion_tokens")
                                                                or 0))
        last = self._rate_last
        self._rate_last = (now, tokens)
        if last is None or not all(b.finished for b in self._backfills):
            return  # backfilled history is not a rate
        dt = now - last[0]
        if dt > 0:
            self._rate.append(max(0.0, (tokens - last[1]) / dt))

    def _file_statuses(self) -> tuple[FileStatus, ...]:
        out: list[FileStatus] = []
        files = self.extractor.files
        for path, index in self._file_of.items():
            state = files[index]
            by_kind = dict(state.by_kind)
            lines = state.lines_total
            parts: tuple[int, ...] = (index,)
            done = total = 0
            backfill = self._backfill_of.get(path)
            if backfill is not None:
                older = files[backfill.file]
                for kind, count in older.by_kind.items():
                    by_kind[kind] = by_kind.get(kind, 0) + count
                lines += older.lines_total
                parts = (index, backfill.file)
                done, total = backfill.done, backfill.end
            fmt = state.format_name
            if fmt == "unknown" and backfill is not None:
                fmt = files[backfill.file].format_name
            out.append(FileStatus(
                path=path,
                format=fmt,
                lines=lines,
                by_kind=by_kind,
                backfill_done=done,
                backfill_total=total,
                parts=parts,
                line_base=self._line_base.get(path, 0),
            ))
        return tuple(out)


# -- heavy computations off the ingest thread ----------------------------------------------


class _FrozenStore:
    """What ``compute_totals`` / ``compute_view`` read from a store, copied at one instant.

    Taken by the writer (the only thread allowed ``numeric_view``); the row extras are a
    shallow copy (their counters may move on meanwhile, as they would a moment later).
    """

    def __init__(self, store: Any) -> None:
        self._cols: dict[str, Any] = store.numeric_view()
        self._n = len(next(iter(self._cols.values()))) if self._cols else 0
        self.extras = dict(store.extras)
        self.models = list(store.models)
        self.ids = store.ids  # append-only: rows below _n never change

    def numeric_view(self, start: int = 0, stop: int | None = None) -> dict[str, Any]:
        if start == 0 and (stop is None or stop >= self._n):
            return self._cols
        return {name: values[start:stop] for name, values in self._cols.items()}

    def __len__(self) -> int:
        return self._n


class _FrozenExtractor:
    def __init__(self, extractor: Extractor) -> None:
        self.store = _FrozenStore(extractor.store)
        self.expert_load = _copy_heat(extractor.expert_load)
        self.dropped = _copy_heat(extractor.dropped)
        self.head_skips = _copy_heat(extractor.head_skips)
        engine = extractor.engine
        self.engine = EngineSeries(count=engine.count,
                                   sums={k: list(v) for k, v in engine.sums.items()},
                                   last=dict(engine.last))  # type: ignore[arg-type]
        self.errors = deque(extractor.errors, maxlen=extractor.errors.maxlen)
        self.error_count = extractor.error_count


def _copy_heat(heat: HeatCounts) -> HeatCounts:
    return HeatCounts({layer: dict(row) for layer, row in heat.counts.items()})


def _freeze(extractor: Extractor) -> _FrozenExtractor:
    return _FrozenExtractor(extractor)


@dataclass
class _HeavyJob:
    frozen: _FrozenExtractor
    shape: ModelShape
    rows: int
    version: int
    totals: bool
    query: ViewQuery | None
    #: Files holding the older part of a big log, read after its tail (see compute_view).
    older_files: frozenset[int] = frozenset()


@dataclass
class _HeavyResult:
    job: _HeavyJob
    totals: Mapping[str, Any] | None = None
    totals_cost: float = 0.0
    view: np.ndarray[Any, Any] | None = None
    view_cost: float = 0.0
    error: str | None = None


class _HeavyWorker:
    """One thread computing totals and views from frozen copies, one job at a time."""

    def __init__(self) -> None:
        self._cv = threading.Condition()
        self._job: _HeavyJob | None = None
        self._result: _HeavyResult | None = None
        self._busy = False
        self._stopped = False
        self._thread = threading.Thread(target=self._run, name="sparseety-totals",
                                        daemon=True)

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

    def submit(self, job: _HeavyJob) -> None:
        with self._cv:
            self._job = job
            self._busy = True
            self._cv.notify()

    def take(self) -> _HeavyResult | None:
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
            result = _HeavyResult(job)
            try:
                frozen: Any = job.frozen
                if job.totals:
                    t0 = time.perf_counter()
                    result.totals = compute_totals_safe(frozen, job.shape)
                    result.totals_cost = time.perf_counter() - t0
                if job.query is not None:
                    t0 = time.perf_counter()
                    result.view = compute_view(frozen, job.shape, job.query, job.rows,
                                               job.older_files)
                    result.view_cost = time.perf_counter() - t0
            except Exception as exc:  # reported by the ingest thread, never swallowed
                result.error = f"{type(exc).__name__}: {exc}"
            with self._cv:
                self._result = result


def compute_totals_safe(extractor: Extractor, shape: ModelShape) -> Mapping[str, Any]:
    from sparseety_tui.core.totals import compute_totals

    return compute_totals(extractor, shape)


def compute_view(
    extractor: Extractor,
    shape: ModelShape,
    query: ViewQuery,
    rows: int,
    older_files: frozenset[int] = frozenset(),
) -> np.ndarray[Any, Any]:
    """Row indices (int64) matching ``query.clauses``, in ``query.sort`` order.

    Without a sort, rows are in log order: the store holds a big log's tail before its
    older part (``older_files``, read in the background), so those rows move first.
    Writer thread only (uses ``numeric_view``). Unknown values never match a numeric
    comparison and sort last.
    """
    import numpy as np

    store = extractor.store
    cols = {k: v[:rows] for k, v in store.numeric_view().items()}
    derived: dict[str, Any] = {}

    def column(name: str) -> Any:
        if name in derived:
            return derived[name]
        value: Any
        if name == "skip":
            from sparseety_tui.core.figures import column_figures

            value = np.asarray(column_figures(store, shape, cols)["skip_ratio"], dtype=np.float64)
        elif name == "latency":
            value = cols["latency_s"].astype(np.float64)
        elif name == "ttft":
            value = cols["ttft_s"].astype(np.float64)
        elif name == "prompt":
            value = cols["prompt_tokens"]
        elif name == "completion":
            value = cols["completion_tokens"]
        elif name == "cached":
            value = cols["cached_tokens"]
        elif name == "experts":
            value = cols["topk_experts"]
        elif name == "time":
            value = np.where(np.isnan(cols["received_ts"]), cols["finished_ts"],
                             cols["received_ts"])
        elif name == "state":
            value = cols["state"].astype(np.int64)
        elif name == "model":
            names = store.models
            order = {code: rank for rank, code in
                     enumerate(sorted(range(len(names)), key=lambda c: names[c].lower()))}
            ranks = np.array([order[c] for c in range(len(names))], dtype=np.int64)
            value = ranks[cols["model"].astype(np.int64)]
        elif name == "id":
            ids = store.ids[:rows]
            value = np.empty(rows, dtype=np.int64)
            value[np.array(sorted(range(rows), key=ids.__getitem__), dtype=np.int64)] = (
                np.arange(rows, dtype=np.int64))
        else:
            raise KeyError(name)
        derived[name] = value
        return value

    mask = np.ones(rows, dtype=bool)
    for clause in query.clauses:
        mask &= _clause_mask(store, cols, clause, column, rows)
    index = np.nonzero(mask)[0]
    if query.sort is not None:
        keys = column(query.sort)[index]
        if keys.dtype.kind == "f":
            unknown = np.isnan(keys)
            order = np.argsort(np.where(unknown, np.inf, keys), kind="stable")
            if query.reverse:
                # Reverse the known part only: unknown values stay last.
                known_order = order[~unknown[order]][::-1]
                order = np.concatenate([known_order, order[unknown[order]]])
        else:
            order = np.argsort(keys, kind="stable")
            if query.reverse:
                order = order[::-1]
        index = index[order]
    else:
        if older_files:
            later = ~np.isin(cols["file"][index].astype(np.int64), list(older_files))
            index = index[np.argsort(later, kind="stable")]
        if query.reverse:
            index = index[::-1]
    return index.astype(np.int64)


def _clause_mask(
    store: Any, cols: dict[str, Any], clause: Clause, column: Callable[[str], Any], rows: int
) -> Any:
    import numpy as np

    fld, op, value = clause.field, clause.op, clause.value
    if fld == "":
        needle = str(value)
        ids = store.ids[:rows]
        models = [m.lower() for m in store.models]
        model_hit = np.array([needle in m for m in models], dtype=bool)
        mask = model_hit[cols["model"].astype(np.int64)]
        mask |= np.fromiter((needle in rid.lower() for rid in ids), dtype=bool, count=rows)
    elif fld == "id":
        ids = store.ids[:rows]
        needle = str(value)
        if op == "~":
            mask = np.fromiter((needle in rid.lower() for rid in ids), dtype=bool, count=rows)
        else:
            mask = np.fromiter((rid.lower() == needle for rid in ids), dtype=bool, count=rows)
            if op == "!=":
                mask = ~mask
    elif fld == "model":
        needle = str(value)
        names = [m.lower() for m in store.models]
        if op == "~":
            hit = np.array([needle in m for m in names], dtype=bool)
        else:
            hit = np.array([m == needle for m in names], dtype=bool)
            if op == "!=":
                hit = ~hit
        mask = hit[cols["model"].astype(np.int64)]
    elif fld == "state":
        needle = str(value)
        if op == "~":
            hit = np.array([needle in s for s in STATES], dtype=bool)
        else:
            hit = np.array([s == needle for s in STATES], dtype=bool)
            if op == "!=":
                hit = ~hit
        mask = hit[cols["state"].astype(np.int64)]
    else:
        values = column(fld)
        with np.errstate(invalid="ignore"):
            mask = _compare(values, op, float(value)) & ~np.isnan(values)
    return ~mask if clause.negate else mask


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
