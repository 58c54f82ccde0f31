"""The native scanner of simple request records (native/scan.c), when it was built.

``pip install`` compiles it where a C compiler is found; without one the package works
the same on the pure-Python block path (``decode_simple_block``), only slower on big
request logs. ``SCANNER`` is None then, or when sparseety_tui.native says not to use it.
``scan_batch`` gives a scan as the ``Batch`` of request records core's applier takes.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import NamedTuple

from sparseety_tui.batch import RECORD_COUNT_COLUMNS, Batch, IdBlob, Names, NewRows, RecordFields
from sparseety_tui.events import LineKind
from sparseety_tui.native import PURE_PYTHON

#: Records one scan may return: bounds the scanner's buffers (~100 B a record).
MAX_RECORDS = 1 << 16


class ScanResult(NamedTuple):
    """What ``scan_requests`` returns (native/scan.c documents the layout)."""

    n: int  # simple records scanned, from ``start`` up to ``end``
    end: int
    reason: int  # STOP_END, STOP_NOT_SIMPLE (the line at ``end`` is not) or STOP_FULL
    next_end: int  # end of the line at ``end``, ending included
    offsets: bytes  # int64 line starts, relative to the data
    lengths: bytes  # uint32, ending included
    counts: bytes  # int32 [COUNT_FIELDS][n], -1 unknown
    floats: bytes  # float64 [latency, ttft, ts, received, finished][n], NaN unknown
    names: bytes  # uint8 [model, state, kv_skip][n]: 1 + index in name_tables, 0 none
    cache_hit: bytes  # uint8: 0 unknown, 1 false, 2 true
    present: bytes  # uint32 bit mask of the fields a record has (even when null)
    id_blob: bytes
    id_ends: bytes  # int64 end of each id in id_blob
    id_hashes: bytes  # int64 hash(str) of each id
    name_tables: list[list[str]]  # [models, states, kv skips], first-seen order


Scanner = Callable[[bytes, int, int], ScanResult]

try:
    from sparseety_tui import _scan
except ImportError:  # built without a C compiler
    _scan = None  # type: ignore[assignment]
if PURE_PYTHON:
    _scan = None  # type: ignore[assignment]


def _scan_requests(data: bytes, start: int, max_line_bytes: int) -> ScanResult:
    assert _scan is not None
    return ScanResult(*_scan.scan_requests(data, start, MAX_RECORDS, max_line_bytes))


SCANNER: Scanner | None = _scan_requests if _scan is not None else None
#: Bits of ``present`` for "completion_tokens" and "latency_s": either says the request
#: reports an outcome, so a line without a state is a finished request.
OUTCOME_BITS = (
    0 if _scan is None else ((1 << _scan.FIELD_COMPLETION_TOKENS) | (1 << _scan.FIELD_LATENCY_S))
)


def batch_of(scan: ScanResult) -> Batch:
    """A scan's records as a batch of complete request records (one row a line)."""
    import numpy as np

    n = scan.n
    if not n:
        return Batch(0, scan.end, scan.next_end)
    counts = np.frombuffer(scan.counts, dtype=np.int32).reshape(len(RECORD_COUNT_COLUMNS), n)
    latency, ttft, ts, received, finished = np.frombuffer(scan.floats, dtype=np.float64).reshape(
        5, n
    )
    models, states, kv_skips = np.frombuffer(scan.names, dtype=np.uint8).reshape(3, n)
    model_names, state_names, kv_names = scan.name_tables
    record = RecordFields(
        counts=dict(zip(RECORD_COUNT_COLUMNS, counts)),
        times={
            "latency_s": latency,
            "ttft_s": ttft,
            "ts": ts,
            "received_ts": received,
            "finished_ts": finished,
        },
        model=Names(model_names, models),
        kv_skip=Names(kv_names, kv_skips),
        cache_hit=np.frombuffer(scan.cache_hit, dtype=np.uint8),
        reports_outcome=(np.frombuffer(scan.present, dtype=np.uint32) & OUTCOME_BITS) != 0,
    )
    ids = IdBlob(
        scan.id_blob,
        np.frombuffer(scan.id_ends, dtype=np.int64),
        np.frombuffer(scan.id_hashes, dtype=np.int64),
    )
    return Batch(
        n,
        scan.end,
        scan.next_end,
        offsets=np.frombuffer(scan.offsets, dtype=np.int64),
        lengths=np.frombuffer(scan.lengths, dtype=np.uint32),
        counts=((0, LineKind.TRACE_REQUEST, n),),
        rows=NewRows(ids, Names(state_names, states), {}, record),
    )


def _scan_batch(data: bytes, start: int, max_line_bytes: int) -> Batch:
    return batch_of(_scan_requests(data, start, max_line_bytes))


#: ``scanner(data, start, max_line_bytes)``: the records ``SCANNER`` reads, as a batch.
BATCH_SCANNER: Callable[[bytes, int, int], Batch] | None = (
    _scan_batch if _scan is not None else None
)
