"""Running aggregates beside the store: the engines' stats lines as series per label.

Written by the one Extractor; readers in other threads get ``copy()``s (see
``FrozenExtractor``). Merging the partial series of a file read in byte ranges (``ingest.
parallel``) is done here, so the rule for what a merged value is lives beside the type: an
``EngineSeries`` extended with a later range's ``RecordingEngineSeries`` ends with the same
sums, bit for bit, as one series that had every stats line added in order. (The layer heat
counts beside it are ``_heat``'s.)
"""

from __future__ import annotations

import operator
from array import array
from collections import deque
from dataclasses import dataclass, field
from functools import reduce
from typing import Any, Protocol, TypeAlias

from sparseety_tui.events import StatsPayload

#: Engine stats points kept for sparklines (older points live on in per-minute buckets).
STATS_POINTS = 4096
#: Stats fields that name rather than measure (``aggregated_engines`` counts engines, it
#: measures nothing about them): never summed, never combined over engines.
LABEL_FIELDS = frozenset({"ts", "engine", "source", "phase", "aggregated_engines"})
#: Stats fields kept per minute (the engine's time series in `summary`), per engine label.
MINUTE_FIELDS = (
    "prompt_throughput",
    "generation_throughput",
    "new_tokens",
    "cached_tokens",
    "running",
    "waiting",
    "queued",
    "kv_usage",
    "preemptions",
)
#: (field, index of its sum in a minute's array; its count is at index + 1)
_MINUTE_SLOTS = tuple((key, 2 * i) for i, key in enumerate(MINUTE_FIELDS))
_SLOT = {key: at for key, at in _MINUTE_SLOTS}
_MINUTE_ZEROS = array("d", bytes(16 * len(MINUTE_FIELDS)))

#: field -> [sum, n]
Cells = dict[str, list[float]]
#: Between a stats line's source (its log's path) and its engine label in a series key.
SOURCE_SEP = "\x1f"


def label_key(stats: StatsPayload) -> str:
    """The series a stats line belongs to: its engine label, within its log (``source``,
    set by the Merger: ``Engine 000`` of two servers' logs are two engines)."""
    source = stats.get("source")
    label = stats.get("engine", "")
    return label if source is None else source + SOURCE_SEP + label


#: A minute of one label: [sum, n] of each MINUTE_FIELDS field, flat (an array of doubles
#: is a fraction of a dict of lists, and a many-rank server logs a minute per rank).
Minute: TypeAlias = "array[float]"


@dataclass
class LabelSeries:
    """The stats lines of one engine label (``Engine 001``, ``DP3 TP3``, or none):
    whole-file [sum, n] per field, per-minute sums, and the label's last line.

    Minutes are shared with copies (copy on write): ``copy`` hands the reader the same
    minute arrays, and the writer copies a minute again before its first write after
    that (``_owned`` holds the minutes it may write in place), so a copy costs a dict of
    references, not every cell."""

    count: int = 0
    #: lines that were not speculative-decoding lines (those carry no engine label)
    main: int = 0
    sums: Cells = field(default_factory=dict)
    per_minute: dict[int, Minute] = field(default_factory=dict)
    last: StatsPayload = field(default_factory=lambda: StatsPayload())
    _minute: int = -1
    _bucket: Minute = field(default_factory=lambda: array("d"))
    _owned: set[int] = field(default_factory=set)
    #: field -> (its cell in ``sums``, its MINUTE_FIELDS slot or -1)
    _index: dict[str, tuple[list[float], int]] = field(default_factory=dict)

    def add(self, stats: StatsPayload, minute: int) -> None:
        self.count += 1
        if stats.get("phase") != "spec":
            self.main += 1
        self.last = stats
        bucket = None
        if minute >= 0:
            if minute != self._minute:
                self._minute = minute
                self._bucket = self.own(minute)
            bucket = self._bucket
        # One pass over the line's fields feeds both the whole-file sums and the minute:
        # ``_index`` gives a field's [sum, n] cell and its minute slot in one lookup.
        index = self._index
        for key, value in stats.items():
            entry = index.get(key)
            if entry is None:
                if key in LABEL_FIELDS or not isinstance(value, (int, float)):
                    continue
                entry = index[key] = (self._cell(key), _SLOT.get(key, -1))
            acc, at = entry
            acc[0] += value  # type: ignore[operator]
            acc[1] += 1
            if at >= 0 and bucket is not None:
                bucket[at] += value  # type: ignore[operator]
                bucket[at + 1] += 1

    def _cell(self, key: str) -> list[float]:
        acc = self.sums.get(key)
        if acc is None:
            acc = self.sums[key] = [0.0, 0]
        return acc

    def own(self, minute: int) -> Minute:
        """The minute's array, private to this series (copied if a copy shares it)."""
        if minute in self._owned:
            return self.per_minute[minute]
        shared = self.per_minute.get(minute)
        bucket = array("d", shared if shared is not None else _MINUTE_ZEROS)
        self.per_minute[minute] = bucket
        self._owned.add(minute)
        return bucket

    def copy(self) -> LabelSeries:
        self._owned = set()  # every minute is shared with the copy from now on
        self._minute = -1
        return LabelSeries(
            count=self.count,
            main=self.main,
            sums=_copy_cells(self.sums),
            per_minute=dict(self.per_minute),
            last=self.last,
        )


class PointRun(Protocol):
    """Stats lines added as columns (``EngineSeries.add_run_points``, core.extraction):
    their payloads are made only when the points are read."""

    def payloads(self, start: int, stop: int) -> list[StatsPayload]:
        """The payloads of rows ``start`` to ``stop`` (line order), as the per-line path
        makes them (same keys in the same order, ``source`` included)."""
        ...


@dataclass
class EngineSeries:
    """Stats lines as time series per engine label: recent points (every label, in line
    order) for sparklines, and per label the sums and per-minute sums for all. How labels
    make engines and engines a fleet is ``core.figures``.

    ``points`` is made lazily: runs of lines added as columns (``add_run_points``) wait in
    ``_tail``, in line order with any line ``add``ed after them, until ``points`` is read
    (a dict per line for millions of lines would cost more than reading them)."""

    count: int = 0
    _points: deque[StatsPayload] = field(
        default_factory=lambda: deque(maxlen=STATS_POINTS), compare=False
    )
    #: engine label ("" for none) -> its series
    labels: dict[str, LabelSeries] = field(default_factory=dict)
    last: StatsPayload = field(default_factory=lambda: StatsPayload())
    #: Points not made yet, oldest first: (run, start, stop) or a line's payload.
    _tail: deque[tuple[PointRun, int, int] | StatsPayload] = field(
        default_factory=deque, compare=False
    )
    _tail_n: int = field(default=0, compare=False)

    @property
    def points(self) -> deque[StatsPayload]:
        """The last STATS_POINTS stats lines' payloads, in line order."""
        if self._tail:
            self._settle()
        return self._points

    def _settle(self) -> None:
        """Make the points that wait in ``_tail`` (only the last STATS_POINTS of them)."""
        points = self._points
        skip = self._tail_n - STATS_POINTS
        if skip >= 0:
            points.clear()  # every kept point is in the tail
        for item in self._tail:
            if isinstance(item, tuple):
                run, start, stop = item
                if skip > 0:
                    drop = min(skip, stop - start)
                    start, skip = start + drop, skip - drop
                if start < stop:
                    points.extend(run.payloads(start, stop))
            elif skip > 0:
                skip -= 1
            else:
                points.append(item)
        self._tail.clear()
        self._tail_n = 0

    def add_run_points(self, run: PointRun, rows: int) -> None:
        """Points for ``rows`` lines added as columns (their sums, counts and ``last`` are
        the caller's, the batch applier): made when ``points`` is read."""
        tail = self._tail
        start = max(0, rows - STATS_POINTS)
        tail.append((run, start, rows))
        self._tail_n += rows - start
        # Older waiting points that STATS_POINTS newer ones push out are dropped.
        while len(tail) > 1:
            first = tail[0]
            size = first[2] - first[1] if isinstance(first, tuple) else 1
            if self._tail_n - size < STATS_POINTS:
                break
            tail.popleft()
            self._tail_n -= size

    def add(self, stats: StatsPayload) -> None:
        # Millions of stats lines in a big server log: one pass, no per-field type tests
        # after a field's first appearance. Its numbers are finite and int64-sized
        # (formats/_numbers.py), so the sums cannot fail half-way.
        ts = stats.get("ts")
        minute = -1 if ts is None else int(ts // 60) * 60  # raises (a nan or inf ts) first
        label = label_key(stats)
        series = self.labels.get(label)
        if series is None:
            series = self.labels[label] = LabelSeries()
        self.count += 1
        if self._tail:
            self._tail.append(stats)  # after the runs still waiting to be made
            self._tail_n += 1
        else:
            self._points.append(stats)
        self.last = stats
        series.add(stats, minute)

    def minutes(self) -> set[int]:
        """Every minute some label has stats in."""
        out: set[int] = set()
        for series in self.labels.values():
            out.update(series.per_minute)
        return out

    def copy(self) -> EngineSeries:
        """An independent copy for another thread (stats payloads are never mutated once
        added, so the points are shared; sums are copied, minutes copied on write)."""
        return EngineSeries(
            count=self.count,
            _points=self.points.copy(),
            labels={label: series.copy() for label, series in self.labels.items()},
            last=self.last,
        )

    def extend(self, later: EngineSeries) -> None:
        """Append a series of stats lines that came after this one's (not bit-exact for
        float sums: see ``extend_exact``)."""
        for point in later.points:
            self.add(point)

    def extend_exact(self, later: RecordingEngineSeries) -> None:
        """Append a later range's series as if its stats lines had been added here one by
        one: integer sums add exactly; float sums and the range's first minute (which may
        continue this series' last minute) are replayed value by value in line order.
        The caller made sure no other minute is shared (``ingest.parallel``)."""
        if not later.count:
            return
        self.count += later.count
        self.points.extend(later.points)
        self.last = later.last
        first = later.first_minute if later.record else None
        for label, theirs in later.labels.items():
            mine = self.labels.get(label)
            if mine is None:
                mine = self.labels[label] = LabelSeries()
            mine.count += theirs.count
            mine.main += theirs.main
            mine.last = theirs.last
            floats = later.floats.get(label, {}) if later.record else {}
            for key, acc in theirs.sums.items():
                cell = mine._cell(key)
                values = floats.get(key)
                if values is not None:
                    cell[0] = reduce(operator.add, values, cell[0])
                else:
                    cell[0] += acc[0]
                cell[1] += acc[1]
            for minute, bucket in theirs.per_minute.items():
                if minute != first:
                    mine.per_minute[minute] = bucket
                    mine._owned.discard(minute)  # the later range's array: copied on write
            mine._minute = -1  # the next add() looks its minute up again
        if first is not None:
            for stats in later.first_minute_stats:
                series = self.labels[label_key(stats)]
                add_minute_fields(series.own(first), stats)


class RecordingEngineSeries(EngineSeries):
    """An EngineSeries that also keeps what ``extend_exact`` needs: every float added to
    a whole-file sum, in order, per label, and the stats lines of the series' first
    minute."""

    def __init__(self, record: bool) -> None:
        super().__init__()
        self.record = record
        #: label -> field -> every float summed, in line order
        self.floats: dict[str, dict[str, array[float]]] = {}
        #: A summed field that had an int and a float (replaying floats would not do).
        self.mixed = False
        self.first_minute: int | None = None
        self.first_minute_stats: list[StatsPayload] = []
        self._in_first_run = True

    def add(self, stats: StatsPayload) -> None:
        super().add(stats)
        if not self.record:
            return
        label = label_key(stats)
        floats = self.floats.get(label)
        if floats is None:
            floats = self.floats[label] = {}
        sums = self.labels[label].sums
        for key, value in stats.items():
            if type(value) is float:
                values = floats.get(key)
                if values is not None:
                    values.append(value)
                    continue
                acc = sums.get(key)
                if acc is not None:  # summed from now on (labels such as ts never are)
                    floats[key] = array("d", (value,))
                    if acc[1] > 1:
                        self.mixed = True  # ints were summed before this first float
            elif key in floats:
                self.mixed = True
        if self._in_first_run:
            ts = stats.get("ts")
            if ts is not None:
                minute = int(ts // 60) * 60
                if self.first_minute is None:
                    self.first_minute = minute
                if minute == self.first_minute:
                    self.first_minute_stats.append(stats)
                else:
                    self._in_first_run = False

    def first_minute_complete(self) -> bool:
        """Whether the recorded first run holds every stats line of the first minute (it
        does unless the minute came back later in the range)."""
        if self.first_minute is None:
            return True
        for label, series in self.labels.items():
            bucket = series.per_minute.get(self.first_minute)
            if bucket is None:
                continue
            mine = [stats for stats in self.first_minute_stats if label_key(stats) == label]
            for key, at in _MINUTE_SLOTS:
                if bucket[at + 1] != sum(1 for stats in mine if stats.get(key) is not None):
                    return False
        return True


def add_minute_fields(bucket: Minute, stats: StatsPayload) -> None:
    """Add one stats line's MINUTE_FIELDS to a minute's [sum, n] slots."""
    for key, at in _MINUTE_SLOTS:
        measured: Any = stats.get(key)
        if measured is not None:
            bucket[at] += measured
            bucket[at + 1] += 1


def minute_cells(bucket: Minute) -> Cells:
    """A minute's array as field -> [sum, n], for the fields it has values of."""
    return {key: [bucket[at], bucket[at + 1]] for key, at in _MINUTE_SLOTS if bucket[at + 1]}


def _copy_cells(cells: Cells) -> Cells:
    return {key: list(cell) for key, cell in cells.items()}
