"""Running aggregates beside the store: the engine's stats series and layer heat counts.

Both are written by the one Extractor; readers in other threads get ``copy()``s (see
``core.frozen``). Merging the partial series of a file read in byte ranges (``ingest.
parallel``) is done here, so the rule for what a merged value is lives beside the type:
``HeatCounts`` counts add; an ``EngineSeries`` extended with a later range's
``RecordingEngineSeries`` ends with the same sums, bit for bit, as one series that had every
stats line added in order.
"""

from __future__ import annotations

import operator
from array import array
from collections import deque
from dataclasses import dataclass, field
from functools import reduce
from typing import Any

from sparseety_tui.events import StatsPayload

#: Engine stats points kept for sparklines (older points live on in per-minute buckets).
STATS_POINTS = 4096
#: Stats fields that name rather than measure.
_LABEL_FIELDS = frozenset({"ts", "engine", "phase"})
#: Stats fields kept per minute (the engine's time series in `summary`).
MINUTE_FIELDS = (
    "prompt_throughput",
    "generation_throughput",
    "new_tokens",
    "cached_tokens",
    "running",
    "waiting",
    "kv_usage",
)

#: field -> [sum, n]
Cells = dict[str, list[float]]


@dataclass
class EngineSeries:
    """Stats lines as a time series: recent points for sparklines, per-minute sums for all."""

    count: int = 0
    points: deque[StatsPayload] = field(default_factory=lambda: deque(maxlen=STATS_POINTS))
    # field -> [sum, n] over every stats line that carried it
    sums: Cells = field(default_factory=dict)
    # minute (unix seconds) -> field -> [sum, n], for the fields in MINUTE_FIELDS
    per_minute: dict[int, Cells] = field(default_factory=dict)
    last: StatsPayload = field(default_factory=lambda: StatsPayload())
    _minute: int = -1
    _bucket: Cells = field(default_factory=dict)

    def add(self, stats: StatsPayload) -> None:
        # Millions of stats lines in a big server log: one pass, no per-field type tests
        # after a field's first appearance. Its numbers are finite and int64-sized
        # (formats/numbers.py), so the sums cannot fail half-way.
        ts = stats.get("ts")
        minute = -1 if ts is None else int(ts // 60) * 60  # raises (a nan or inf ts) first
        self.count += 1
        self.points.append(stats)
        self.last = stats
        sums = self.sums
        for key, value in stats.items():
            acc = sums.get(key)
            if acc is None:
                if key in _LABEL_FIELDS or not isinstance(value, (int, float)):
                    continue
                acc = sums[key] = [0.0, 0]
            acc[0] += value  # type: ignore[operator]
            acc[1] += 1
        if ts is None:
            return
        if minute != self._minute:
            self._minute = minute
            self._bucket = self.per_minute.setdefault(minute, {})
        add_minute_fields(self._bucket, stats)

    def copy(self) -> EngineSeries:
        """An independent copy for another thread (stats payloads are never mutated once
        added, so the points are shared; every [sum, n] cell is copied)."""
        return EngineSeries(
            count=self.count,
            points=self.points.copy(),
            sums=_copy_cells(self.sums),
            per_minute={minute: _copy_cells(cells) for minute, cells in self.per_minute.items()},
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
        for key, acc in later.sums.items():
            mine = self.sums.get(key)
            if mine is None:
                mine = self.sums[key] = [0.0, 0]
            floats = later.floats.get(key) if later.record else None
            if floats is not None:
                mine[0] = reduce(operator.add, floats, mine[0])
            else:
                mine[0] += acc[0]
            mine[1] += acc[1]
        first = later.first_minute if later.record else None
        for minute, cells in later.per_minute.items():
            if minute != first:
                self.per_minute[minute] = cells
        if first is not None:
            bucket = self.per_minute.setdefault(first, {})
            for stats in later.first_minute_stats:
                add_minute_fields(bucket, stats)
        self._minute = -1  # the next add() looks its minute up again


class RecordingEngineSeries(EngineSeries):
    """An EngineSeries that also keeps what ``extend_exact`` needs: every float added to
    a whole-file sum, in order, and the stats lines of the series' first minute."""

    def __init__(self, record: bool) -> None:
        super().__init__()
        self.record = record
        self.floats: dict[str, array[float]] = {}
        #: A summed field that had an int and a float (replaying floats would not do).
        self.mixed = False
        self.first_minute: int | None = None
        self.first_minute_stats: list[StatsPayload] = []
        self._in_first_run = True

    def add(self, stats: StatsPayload) -> None:
        super().add(stats)
        if not self.record:
            return
        floats = self.floats
        for key, value in stats.items():
            if type(value) is float:
                values = floats.get(key)
                if values is not None:
                    values.append(value)
                    continue
                acc = self.sums.get(key)
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
        bucket = self.per_minute.get(self.first_minute, {})
        for key, cell in bucket.items():
            if cell[1] != sum(1 for stats in self.first_minute_stats if stats.get(key) is not None):
                return False
        return True


def add_minute_fields(bucket: Cells, stats: StatsPayload) -> None:
    """Add one stats line's MINUTE_FIELDS to a minute's [sum, n] cells."""
    for key in MINUTE_FIELDS:
        measured: Any = stats.get(key)
        if measured is not None:
            acc = bucket.get(key)
            if acc is None:
                bucket[key] = [measured, 1]
            else:
                acc[0] += measured
                acc[1] += 1


def _copy_cells(cells: Cells) -> Cells:
    return {key: list(cell) for key, cell in cells.items()}


#: Heat maps are dense tables, layer × index (expert or head). An id beyond any model's
#: (a corrupt or hostile line: expert 10**8) would add a cell for every index below it, so a
#: heat count holds layers below HEAT_LAYERS and indices below HEAT_INDICES only; the
#: others are counted in ``out_of_range`` (their slots still count as routed or skipped).
HEAT_LAYERS = 1024
HEAT_INDICES = 4096


@dataclass
class HeatCounts:
    """Counts per (layer, index): experts routed to, or heads skipped."""

    counts: dict[int, dict[int, int]] = field(default_factory=dict)
    #: Bumped by every ``add``: a reader's copy is current while this has not moved.
    revision: int = 0
    #: Counts not held because their layer or index was out of range (HEAT_LAYERS/INDICES).
    out_of_range: int = 0

    def add(self, layer: int, index: int, n: int = 1) -> None:
        self.revision += 1
        if not (0 <= layer < HEAT_LAYERS and 0 <= index < HEAT_INDICES):
            self.out_of_range += n
            return
        row = self.counts.get(layer)
        if row is None:
            row = self.counts[layer] = {}
        row[index] = row.get(index, 0) + n

    def total(self) -> int:
        return sum(sum(row.values()) for row in self.counts.values())

    def copy(self) -> HeatCounts:
        return HeatCounts(
            {layer: dict(row) for layer, row in self.counts.items()},
            self.revision,
            self.out_of_range,
        )

    def merge(self, other: HeatCounts) -> None:
        """Add another part's counts (counts add, whatever the order)."""
        for layer, row in other.counts.items():
            for index, count in row.items():
                self.add(layer, index, count)
        self.out_of_range += other.out_of_range
