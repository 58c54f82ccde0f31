"""Engine stats rows of a fast-path batch (``sparseety_tui.batch.StatsRows``) into the
engine series, as ``EngineSeries.add`` one line at a time would: each label's sums,
counts, per-minute cells, ``last`` payload, and the recent points (made when read).

Sums are bit-exact: each float sum is the sequential sum in line order starting from the
accumulator, done by the rows' own ``accumulate`` (a numpy ``sum`` is pairwise and would
not do).
"""

from __future__ import annotations

from array import array

from sparseety_tui.batch import StatsRows
from sparseety_tui.core.store import SOURCE_SEP, EngineSeries, LabelSeries
from sparseety_tui.events import StatsPayload


class _Points:
    """The rows as ``EngineSeries`` points (``core.store``'s ``PointRun``), tagged with
    the file's ``source``."""

    def __init__(self, stats: StatsRows, source: str) -> None:
        self.stats = stats
        self.source = source

    def payloads(self, start: int, stop: int) -> list[StatsPayload]:
        return self.stats.payloads(start, stop, self.source)


def add_stats(engine: EngineSeries, stats: StatsRows, source: str) -> None:
    """The rows (at least one) into ``engine`` (a plain ``EngineSeries``), in line order."""
    engines = stats.engines
    single = len(engines) == 1
    rows = stats.rows
    last_payload: StatsPayload | None = None
    for label_index, name in enumerate(engines):
        label = source + SOURCE_SEP + name
        series = engine.labels.get(label)
        if series is None:
            series = engine.labels[label] = LabelSeries()
        last = _add_label(series, stats, -1 if single else label_index)
        series.last = stats.payloads(last, last + 1, source)[0]
        if last == rows - 1:
            last_payload = series.last  # one dict for both, as the per-line path has
    engine.count += rows
    assert last_payload is not None  # the last row is some label's last
    engine.last = last_payload
    engine.add_run_points(_Points(stats, source), rows)


def _add_label(series: LabelSeries, stats: StatsRows, label: int) -> int:
    """The rows of label index ``label`` (-1: every row) into ``series`` in line order;
    returns the label's last row."""
    fields = stats.sum_fields
    cells = [series.sums.get(key) for key, _phases, _slot in fields]
    sums = array("d", [0.0 if cell is None else cell[0] for cell in cells])
    counts, last = stats.accumulate(label, sums, series.own)
    # The label's sums keys in the order the per-line path first meets them: the fields of
    # its first row's phase, then those of the others.
    first = stats.first_phase(label)
    phase_fields = stats.phase_fields
    for phase in (first, *(p for p in range(len(phase_fields)) if p != first)):
        if counts[phase]:
            for key in phase_fields[phase]:
                series._cell(key)
    for (key, mask, _slot), total in zip(fields, sums):
        n = 0
        for phase, count in enumerate(counts):
            if mask >> phase & 1:
                n += count
        if n:
            cell = series._cell(key)
            cell[0] = total
            cell[1] += n
    added = sum(counts)
    series.count += added
    series.main += added  # batch lines are never speculative ("spec") lines
    series._minute = -1  # ``add`` looks its minute's array up again
    return last
