"""Applying a run of SGLang lines read by the native scanner (formats/sglang/native.py)
as the per-line path would: each line counted in its kind, each stats line added to the
engine series (``Merger.on_event`` + ``EngineSeries.add``), without a dict per line.

Sums are bit-exact: each float sum is the sequential sum in line order starting from the
accumulator, done by the native ``accumulate`` (a numpy ``sum`` is pairwise and would not
do); an int is added as the double Python's ``float + int`` converts it to (round to
nearest). The rows' times and minutes are numpy's, with Python's float arithmetic.
"""

from __future__ import annotations

from array import array
from typing import TYPE_CHECKING

import numpy as np
import numpy.typing as npt

from sparseety_tui.core.series import SOURCE_SEP, EngineSeries, LabelSeries, Minute
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
    from sparseety_tui.core.server_bulk import ServerTarget

Floats = npt.NDArray[np.float64]

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
    """The stats rows of one scan, in line order (``core.series.PointRun``): columns, and
    each row's payload made on demand."""

    def __init__(self, scan: SglangScan, source: str) -> None:
        rows = len(scan.kinds)
        self.rows = rows
        self.source = source
        self.engines = scan.engines
        self.kinds_raw, self.ranks_raw = scan.kinds, scan.ranks
        self.ints_raw, self.floats_raw = scan.ints, scan.floats
        self.kinds = np.frombuffer(scan.kinds, np.uint8)
        self.ranks = np.frombuffer(scan.ranks, np.uint8)
        self.ints = np.frombuffer(scan.ints, np.int64).reshape(5, rows)
        self.floats = np.frombuffer(scan.floats, np.float64).reshape(2, rows)
        bases = np.array([np.nan if b is None else b for b in scan.bases], np.float64)
        minutes = np.frombuffer(scan.minutes, np.int32)
        # ts = base + seconds, as ``_second`` adds them (a double plus a small int).
        self.ts: Floats = bases[minutes] + np.frombuffer(scan.secs, np.uint8)
        self.has_ts = ~np.isnan(self.ts)  # bases are finite or None (formats.sglang.native)
        # ``EngineSeries.add``'s int(ts // 60) * 60 (numpy's float floor division is
        # Python's); -1: in no minute.
        minute = np.floor_divide(np.where(self.has_ts, self.ts, 0.0), 60.0).astype(np.int64) * 60
        # ``LabelSeries.add`` keeps minutes >= 0 only (a year-0 stamp is before 1970).
        self.minute = np.where(self.has_ts & (minute >= 0), minute, -1)

    def payloads(self, start: int, stop: int) -> list[StatsPayload]:
        """Rows ``start`` to ``stop`` as ``SglangParser._fast`` + ``Merger`` make them."""
        kinds = self.kinds[start:stop].tolist()
        ts = self.ts[start:stop].tolist()
        has_ts = self.has_ts[start:stop].tolist()
        engines = self.engines
        ranks = self.ranks[start:stop].tolist()
        seq, new, cached, running, queued = (col.tolist() for col in self.ints[:, start:stop])
        usage, gen = (col.tolist() for col in self.floats[:, start:stop])
        source = self.source
        out: list[StatsPayload] = []
        for i, kind in enumerate(kinds):
            payload: StatsPayload
            payload = {"phase": "prefill" if kind == KIND_PREFILL else "decode"}
            if has_ts[i]:
                payload["ts"] = ts[i]
            engine = engines[ranks[i]]
            if engine:
                payload["engine"] = engine
            if kind == KIND_PREFILL:
                payload["batch_requests"] = seq[i]
                payload["new_tokens"] = new[i]
                payload["cached_tokens"] = cached[i]
                payload["kv_usage"] = usage[i]
                payload["running"] = running[i]
                payload["queued"] = queued[i]
            else:
                payload["running"] = running[i]
                payload["kv_usage"] = usage[i]
                payload["generation_throughput"] = gen[i]
                payload["queued"] = queued[i]
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
    n_decode = int(np.count_nonzero(rows.kinds))
    counts = (rows.rows - n_decode, n_decode, scan.access)
    names = (PREFILL, DECODE, LineKind.ACCESS)
    by_kind = state.by_kind
    for first, kind in sorted(zip(scan.firsts, range(3))):
        if first >= 0:
            by_kind[names[kind]] = by_kind.get(names[kind], 0) + counts[kind]
    state.lines_total += scan.n
    if rows.rows:
        _add_stats(engine, rows)


def _add_stats(engine: EngineSeries, rows: SglangRows) -> None:
    """The run's stats rows into ``engine``, as ``EngineSeries.add`` one by one."""
    single = len(rows.engines) == 1
    for rank, name in enumerate(rows.engines):
        label = rows.source + SOURCE_SEP + name
        series = engine.labels.get(label)
        if series is None:
            series = engine.labels[label] = LabelSeries()
        last = _add_label(series, rows, None if single else rank)
        series.last = rows.payloads(last, last + 1)[0]
    engine.count += rows.rows
    engine.last = rows.payloads(rows.rows - 1, rows.rows)[0]
    engine.add_run_points(rows, rows.rows)


def _add_label(series: LabelSeries, rows: SglangRows, rank: int | None) -> int:
    """The rows of label ``rank`` (None: every row is that label's) into ``series``, in
    line order (native ``accumulate``); returns the label's last row."""
    if rank is None:
        minute = rows.minute
        first_row, last_row = 0, rows.rows - 1
    else:
        mine = np.flatnonzero(rows.ranks == rank)
        minute = rows.minute[mine]
        first_row, last_row = int(mine[0]), int(mine[-1])
    # The label's minutes, each array made (``own``) in the order the rows first meet it.
    uniq, first, inverse = np.unique(minute, return_index=True, return_inverse=True)
    if uniq[0] < 0:  # rows without a time: in no minute
        uniq, first, inverse = uniq[1:], first[1:], inverse - 1
    seen = np.argsort(first, kind="stable").tolist()
    owned = [series.own(int(uniq[j])) for j in seen]
    buckets: list[Minute] = list(owned)
    for bucket, j in zip(owned, seen):
        buckets[j] = bucket
    if rank is None:
        slots = inverse.astype(np.int64)
    else:
        slots = np.full(rows.rows, -1, np.int64)
        slots[mine] = inverse
    # The label's sums keys in the order the per-line path first meets them.
    kinds = (KIND_PREFILL, KIND_DECODE)
    if rows.kinds[first_row] == KIND_DECODE:
        kinds = (KIND_DECODE, KIND_PREFILL)
    cells = [series.sums.get(key) for key, _kinds, _slot in SUM_FIELDS]
    sums = array("d", [0.0 if cell is None else cell[0] for cell in cells])
    counts = accumulate(
        rows.kinds_raw,
        rows.ranks_raw,
        rows.ints_raw,
        rows.floats_raw,
        slots,
        -1 if rank is None else rank,
        sums,
        buckets,
    )
    for kind in kinds:
        if counts[kind]:
            for key, _is_int, _at in _FIELDS[kind]:
                series._cell(key)
    for (key, mask, _slot), total in zip(SUM_FIELDS, sums):
        n = sum(counts[kind] for kind in kinds if mask >> kind & 1)
        if n:
            cell = series._cell(key)
            cell[0] = total
            cell[1] += n
    series.count += counts[0] + counts[1]
    series.main += counts[0] + counts[1]  # batch lines are never speculative ("spec") lines
    series._minute = -1  # ``add`` looks its minute's array up again
    return last_row
