"""Applying a run of SGLang lines read by the native scanner (formats/sglang/native.py)
as the per-line path would: each line counted in its kind, each stats line added to the
engine series (``Merger.on_event`` + ``EngineSeries.add``), without a dict per line.

Sums are bit-exact: each float sum is the sequential sum in line order starting from the
accumulator, done by the native ``accumulate`` (a numpy ``sum`` is pairwise and would not
do); an int is added as the double Python's ``float + int`` converts it to (round to
nearest), a row's minute is Python's ``int(ts // 60) * 60``.
"""

from __future__ import annotations

from array import array
from math import nan as NAN
from typing import TYPE_CHECKING

from sparseety_tui.core.store import SOURCE_SEP, EngineSeries, LabelSeries
from sparseety_tui.events import LineKind, StatsPayload
from sparseety_tui.formats.sglang.kinds import DECODE, PREFILL
from sparseety_tui.formats.sglang.native import (
    KIND_DECODE,
    KIND_PREFILL,
    SUM_FIELDS,
    SglangScan,
    accumulate,
)

if TYPE_CHECKING:
    from sparseety_tui.core.extraction._server_bulk import ServerTarget

#: Columns of the scan (native/sglang_scan.c): ints, then floats.
_I_SEQ, _I_NEW, _I_CACHED, _I_RUNNING, _I_QUEUED = range(5)
_D_USAGE, _D_GEN = range(2)
#: The summed fields of each kind, in the order ``_fast`` puts them in its payload:
#: (field, is an int column, column).
_PREFILL_FIELDS = (
    ("batch_requests", True, _I_SEQ),
    ("new_tokens", True, _I_NEW),
    ("cached_tokens", True, _I_CACHED),
    ("kv_usage", False, _D_USAGE),
    ("running", True, _I_RUNNING),
    ("queued", True, _I_QUEUED),
)
_DECODE_FIELDS = (
    ("running", True, _I_RUNNING),
    ("kv_usage", False, _D_USAGE),
    ("generation_throughput", False, _D_GEN),
    ("queued", True, _I_QUEUED),
)
_FIELDS = {KIND_PREFILL: _PREFILL_FIELDS, KIND_DECODE: _DECODE_FIELDS}


class SglangRows:
    """The stats rows of one scan, in line order (``core.series.PointRun``): the scan's
    columns, and each row's payload made on demand."""

    def __init__(self, scan: SglangScan, source: str) -> None:
        self.scan = scan
        self.rows = len(scan.kinds)
        self.source = source
        #: per minute entry, its unix seconds; NaN: no date (the ``ts`` is left out)
        self.bases = array("d", [NAN if base is None else base for base in scan.bases])

    def payloads(self, start: int, stop: int) -> list[StatsPayload]:
        """Rows ``start`` to ``stop`` as ``SglangParser._fast`` + ``Merger`` make them."""
        scan, rows = self.scan, self.rows
        ints = memoryview(scan.ints).cast("q")
        floats = memoryview(scan.floats).cast("d")
        minutes = memoryview(scan.minutes).cast("i")[start:stop].tolist()
        secs = scan.secs[start:stop]
        ranks = scan.ranks[start:stop]
        bases, engines, source = scan.bases, scan.engines, self.source
        out: list[StatsPayload] = []
        for i, kind in enumerate(scan.kinds[start:stop]):
            row = start + i
            payload: StatsPayload = {"phase": "prefill" if kind == KIND_PREFILL else "decode"}
            base = bases[minutes[i]]
            if base is not None:
                payload["ts"] = base + secs[i]  # as ``_second`` adds them
            engine = engines[ranks[i]]
            if engine:
                payload["engine"] = engine
            if kind == KIND_PREFILL:
                payload["batch_requests"] = ints[_I_SEQ * rows + row]
                payload["new_tokens"] = ints[_I_NEW * rows + row]
                payload["cached_tokens"] = ints[_I_CACHED * rows + row]
                payload["kv_usage"] = floats[_D_USAGE * rows + row]
                payload["running"] = ints[_I_RUNNING * rows + row]
                payload["queued"] = ints[_I_QUEUED * rows + row]
            else:
                payload["running"] = ints[_I_RUNNING * rows + row]
                payload["kv_usage"] = floats[_D_USAGE * rows + row]
                payload["generation_throughput"] = floats[_D_GEN * rows + row]
                payload["queued"] = ints[_I_QUEUED * rows + row]
            payload["source"] = source
            out.append(payload)
        return out


def apply_sglang_scan(target: ServerTarget, scan: SglangScan) -> None:
    """``core.server_bulk`` applier of an ``SglangScan``. Raises before changing anything
    when the engine series is not a plain ``EngineSeries`` (a subclass records or windows
    every line: the per-line path feeds it)."""
    merger = target.merger
    engine = merger.engine
    if type(engine) is not EngineSeries:
        raise TypeError(f"{type(engine).__name__} takes stats lines one by one")
    state = target.state
    rows = SglangRows(scan, merger.sources[target.file])
    # Counts, each kind's key made in the order its first line came (the per-line path's).
    n_decode = scan.kinds.count(KIND_DECODE)
    counts = (rows.rows - n_decode, n_decode, scan.access)
    by_kind = state.by_kind
    for first, kind in sorted(zip(scan.firsts, range(3))):
        if first >= 0:
            name = _KIND_NAMES[kind]
            by_kind[name] = by_kind.get(name, 0) + counts[kind]
    state.lines_total += scan.n
    if rows.rows:
        _add_stats(engine, rows)


_KIND_NAMES = (PREFILL, DECODE, LineKind.ACCESS)


def _add_stats(engine: EngineSeries, rows: SglangRows) -> None:
    """The run's stats rows into ``engine``, as ``EngineSeries.add`` one by one."""
    engines = rows.scan.engines
    single = len(engines) == 1
    last_payload: StatsPayload | None = None
    for rank, name in enumerate(engines):
        label = rows.source + SOURCE_SEP + name
        series = engine.labels.get(label)
        if series is None:
            series = engine.labels[label] = LabelSeries()
        last = _add_label(series, rows, -1 if single else rank)
        series.last = rows.payloads(last, last + 1)[0]
        if last == rows.rows - 1:
            last_payload = series.last  # one dict for both, as the per-line path has
    engine.count += rows.rows
    assert last_payload is not None  # the last row is some label's last
    engine.last = last_payload
    engine.add_run_points(rows, rows.rows)


def _add_label(series: LabelSeries, rows: SglangRows, rank: int) -> int:
    """The rows of label ``rank`` (-1: every row) into ``series`` in line order (native
    ``accumulate``); returns the label's last row."""
    cells = [series.sums.get(key) for key, _kinds, _slot in SUM_FIELDS]
    sums = array("d", [0.0 if cell is None else cell[0] for cell in cells])
    scan = rows.scan
    n_prefill, n_decode, last = accumulate(
        scan.kinds,
        scan.ranks,
        scan.ints,
        scan.floats,
        scan.minutes,
        scan.secs,
        rows.bases,
        rank,
        sums,
        series.own,
    )
    counts = (n_prefill, n_decode)
    # The label's sums keys in the order the per-line path first meets them.
    first = scan.kinds[0] if rank < 0 else scan.kinds[scan.ranks.index(rank)]
    for kind in (first, 1 - first):
        if counts[kind]:
            for key, _is_int, _at in _FIELDS[kind]:
                series._cell(key)
    for (key, mask, _slot), total in zip(SUM_FIELDS, sums):
        n = (n_prefill if mask & 1 else 0) + (n_decode if mask & 2 else 0)
        if n:
            cell = series._cell(key)
            cell[0] = total
            cell[1] += n
    series.count += n_prefill + n_decode
    series.main += n_prefill + n_decode  # batch lines are never speculative ("spec") lines
    series._minute = -1  # ``add`` looks its minute's array up again
    return last
