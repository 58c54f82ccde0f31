"""The native scanner of SGLang's common lines (native/sglang_scan.c), when it was built.

``scan_sglang`` is the family's ``ServerScanner`` (formats._base): it reads a run of the
lines ``SglangParser._fast`` would read (dated ``Prefill batch.`` / ``Decode batch.`` lines
and plain uvicorn access lines), resolves the run's minute stamps and rank texts with the
parser's own caches, and leaves the parser as parsing those lines one by one would have.
The run comes as a ``Batch`` (sparseety_tui.batch) whose stats rows are ``SglangRows``, which
core's applier adds to the engine series. ``SCANNER`` is None without the extension, or
when sparseety_tui.native says not to use it.
"""

from __future__ import annotations

import math
from array import array
from collections.abc import Callable, Sequence
from math import nan as NAN
from typing import Any, NamedTuple

from sparseety_tui.batch import Batch
from sparseety_tui.events import LineKind, StatsPayload
from sparseety_tui.formats._base import LineParser
from sparseety_tui.formats.sglang._kinds import DECODE, PREFILL
from sparseety_tui.formats.sglang._parser import SglangParser
from sparseety_tui.native import PURE_PYTHON

try:
    from sparseety_tui import _sglscan
except ImportError:  # built without a C compiler
    _sglscan = None  # type: ignore[assignment]
if PURE_PYTHON:
    _sglscan = None  # type: ignore[assignment]

#: Lines one scan may read: bounds its buffers (~60 B a line) in a huge chunk.
MAX_LINES = 1 << 20
KIND_PREFILL = 0
KIND_DECODE = 1


class SglangScan(NamedTuple):
    """A run read by the C module (``scan_sglang`` gives it as a ``Batch``); columns as
    native/sglang_scan.c lays them out, one row per stats line."""

    n: int  # lines read, from the start offset up to ``end``
    end: int
    next_end: int
    access: int  # access lines among them (the rest are the rows)
    kinds: bytes  # uint8 per row: KIND_PREFILL or KIND_DECODE
    minutes: bytes  # int32 per row: index into ``bases``
    secs: bytes  # uint8 per row: the stamp's seconds
    ranks: bytes  # uint8 per row: index into ``engines``
    ints: bytes  # int64 [new-seq, new-token, cached-token, running-req, queue-req][rows]
    floats: bytes  # float64 [token usage, gen throughput][rows]
    #: per minute entry: unix seconds of its minute (parser's ``_minute``), None: no date
    bases: list[float | None]
    #: per rank entry: the engine label the parser gives it ("" for none)
    engines: list[str]
    #: line index of the first prefill, decode and access line (-1: none of that kind)
    firsts: tuple[int, int, int]


def _nothing(data: bytes, start: int) -> SglangScan:
    """No line read: the line at ``start`` goes to the parser."""
    newline = data.find(b"\n", start)
    next_end = len(data) if newline < 0 else newline + 1
    return SglangScan(0, start, next_end, 0, b"", b"", b"", b"", b"", b"", [], [], (-1, -1, -1))


def scan_sglang(parser: LineParser, data: bytes, start: int, max_line_bytes: int) -> Batch:
    """``formats._base.ServerScanner`` for SGLang logs: the run of common lines of ``data``
    from ``start``, read only while ``parser`` is where ``parse`` takes its fast path."""
    if (
        _sglscan is None
        or type(parser) is not SglangParser
        or parser._wrap_held is not None
        or parser._held
        or parser._tb_open
    ):
        return _batch(_nothing(data, start))
    max_lines = MAX_LINES
    while True:
        (
            lines,
            end,
            next_end,
            access,
            last_minute,
            last_sec,
            kinds,
            minutes,
            secs,
            ranks,
            ints,
            floats,
            minute_texts,
            minute_lines,
            rank_texts,
            firsts,
        ) = _sglscan.scan(data, start, max_line_bytes, max_lines)
        if not lines:  # the lines up to next_end are all the parser's
            return Batch(0, start, next_end)
        # The minutes as the parser's own cache gives them, looked up in line order as
        # ``_second`` would. A stamp whose minute did not convert to a finite time (mktime
        # failed) is the per-line path's to report: the run ends before its first line.
        bases: list[float | None] = []
        cut = -1
        cache = parser._minutes
        for text, line in zip(minute_texts, minute_lines):
            entry = cache.get(text)
            base = (parser._minute(text) if entry is None else entry)[0]
            if base is not None and not math.isfinite(base):
                cut = line
                break
            bases.append(base)
        if cut < 0:
            break
        if cut == 0:
            return _batch(_nothing(data, start))
        max_lines = cut  # read again, up to that line
    engines = []
    known = parser._ranks
    for text in rank_texts:
        engine = known.get(text)
        engines.append(parser._rank_name(text) if engine is None else engine)
    # The state the last line leaves (``_fast``): its second, no warning open.
    stamp = minute_texts[last_minute] + b":%02d" % last_sec
    if stamp != parser._sec_key:
        parser._second(stamp)
    parser._in_warning = False
    return _batch(
        SglangScan(
            lines,
            end,
            next_end,
            access,
            kinds,
            minutes,
            secs,
            ranks,
            ints,
            floats,
            bases,
            engines,
            firsts,
        )
    )


SCANNER = scan_sglang if _sglscan is not None else None
#: ((field, kinds bit mask (1 << KIND_...), minute slot), ...): the order of ``accumulate``'s
#: sums (``SglangRows.sum_fields``).
SUM_FIELDS: tuple[tuple[str, int, int], ...] = () if _sglscan is None else _sglscan.SUM_FIELDS


def accumulate(
    kinds: bytes,
    ranks: bytes,
    ints: bytes,
    floats: bytes,
    minutes: bytes,
    secs: bytes,
    bases: object,
    rank: int,
    sums: object,
    own: Callable[[int], Any],
) -> tuple[int, int, int]:
    """native/sglang_scan.c ``accumulate``: a label's rows added in line order."""
    assert _sglscan is not None  # only scans made by the extension are applied
    return _sglscan.accumulate(kinds, ranks, ints, floats, minutes, secs, bases, rank, sums, own)


#: Columns of the scan (native/sglang_scan.c): ints, then floats.
_I_SEQ, _I_NEW, _I_CACHED, _I_RUNNING, _I_QUEUED = range(5)
_D_USAGE, _D_GEN = range(2)
#: The summed fields of each phase (KIND_PREFILL, KIND_DECODE), in the order ``_fast``
#: puts them in its payload.
PHASE_FIELDS = (
    ("batch_requests", "new_tokens", "cached_tokens", "kv_usage", "running", "queued"),
    ("running", "kv_usage", "generation_throughput", "queued"),
)
#: Each line kind's name, by ``firsts`` index: prefill, decode, access.
_KIND_NAMES = (PREFILL, DECODE, LineKind.ACCESS)


def _batch(scan: SglangScan) -> Batch:
    """The run as a batch: counted by kind, its stats lines as ``SglangRows``."""
    if not scan.n:
        return Batch(0, scan.end, scan.next_end)
    n_decode = scan.kinds.count(KIND_DECODE)
    counts = (len(scan.kinds) - n_decode, n_decode, scan.access)
    return Batch(
        scan.n,
        scan.end,
        scan.next_end,
        counts=tuple(
            (first, _KIND_NAMES[kind], counts[kind])
            for kind, first in enumerate(scan.firsts)
            if first >= 0
        ),
        stats=SglangRows(scan),
    )


class SglangRows:
    """The stats rows of one scan, in line order (``sparseety_tui.batch.StatsRows``): the
    scan's columns, and each row's payload made on demand."""

    phase_fields: Sequence[Sequence[str]] = PHASE_FIELDS

    def __init__(self, scan: SglangScan) -> None:
        self.scan = scan
        self.rows = len(scan.kinds)
        self.engines = scan.engines
        #: per minute entry, its unix seconds; NaN: no date (the ``ts`` is left out)
        self.bases = array("d", [NAN if base is None else base for base in scan.bases])

    @property
    def sum_fields(self) -> Sequence[tuple[str, int, int]]:
        return SUM_FIELDS

    def first_phase(self, label: int) -> int:
        scan = self.scan
        return scan.kinds[0] if label < 0 else scan.kinds[scan.ranks.index(label)]

    def accumulate(
        self, label: int, sums: Any, own: Callable[[int], Any]
    ) -> tuple[Sequence[int], int]:
        scan = self.scan
        n_prefill, n_decode, last = accumulate(
            scan.kinds,
            scan.ranks,
            scan.ints,
            scan.floats,
            scan.minutes,
            scan.secs,
            self.bases,
            label,
            sums,
            own,
        )
        return (n_prefill, n_decode), last

    def payloads(self, start: int, stop: int, source: str) -> list[StatsPayload]:
        """Rows ``start`` to ``stop`` as ``SglangParser._fast`` + the merge make them."""
        scan, rows = self.scan, self.rows
        ints = memoryview(scan.ints).cast("q")
        floats = memoryview(scan.floats).cast("d")
        minutes = memoryview(scan.minutes).cast("i")[start:stop].tolist()
        secs = scan.secs[start:stop]
        ranks = scan.ranks[start:stop]
        bases, engines = scan.bases, scan.engines
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
