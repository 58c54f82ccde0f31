"""The native scanner of vLLM server lines (native/vllm_scan.c), when it was built.

``scan_vllm`` is the family's ``ServerScanner`` (formats._base): the C module reads the run
of ``Received request`` / ``Added request`` / access lines that ``VllmParser.parse`` takes
on its fast paths; this module then moves the parser's state on exactly as parsing those
lines one by one would have (the year clock, the window of recent received ids, the
warning flag) and hands the run over as a ``Batch`` (sparseety_tui.batch): Received lines
make new rows, Added lines update them, access lines are counted.

A line the C module does not read (a stats line, a 5xx access line, a warning, the end
of a request: ~1 % of a busy log) is parsed here, by the parser, at its place, and the run
goes on past it when the parser is back on its fast paths and the line's event cannot
touch a request row (``_carries``): its kind and event ride along in ``Batch.carried``
and the applier merges them in line order. Any other line ends the run, as the run's last
line when it was parsed already. So a run is a chunk, not the ~50 lines between two stats
lines, and what a run costs once (numpy calls, 40 column appends) is paid ~15 times less
often. A time stamp the clock cannot read also ends the run (the parser says why).

``SCANNER`` is None without the C module or with ``SPARSEETY_TUI_PURE_PYTHON=1``.
"""

from __future__ import annotations

from itertools import compress
from typing import Any

import numpy as np

from sparseety_tui.batch import (
    CARRIED,
    COUNTED,
    NEW_ROW,
    UPDATE_ROW,
    Batch,
    CarriedLine,
    IdBlob,
    Names,
    NewRows,
    RowUpdates,
)
from sparseety_tui.events import Event, LineKind, RequestPayload, SamplingInfo
from sparseety_tui.formats._base import LineParser
from sparseety_tui.formats._base import ServerScanner as _ServerScanner
from sparseety_tui.formats.vllm._kinds import REQUEST
from sparseety_tui.formats.vllm._parser import VllmParser
from sparseety_tui.formats.vllm._requests import may_be_engine_side
from sparseety_tui.native import PURE_PYTHON

try:
    from sparseety_tui import _vllmscan
except ImportError:  # built without a C compiler
    _vllmscan = None  # type: ignore[assignment]
if PURE_PYTHON:
    _vllmscan = None  # type: ignore[assignment]

#: Lines one scan may return (bounds its buffers, ~40 B a line).
MAX_LINES = 1 << 16
#: Line kinds of a scan: the C module's (native/vllm_scan.c), and a line it does not read
#: that the parser read in the run (a carried line). They are the batch's line operations.
RECEIVED, ADDED, ACCESS, OTHER = NEW_ROW, UPDATE_ROW, COUNTED, CARRIED
#: The kind each operation's lines are counted in.
_OP_KINDS = {RECEIVED: REQUEST, ADDED: REQUEST, ACCESS: LineKind.ACCESS}


def _empty(start: int, next_end: int) -> Batch:
    return Batch(0, start, next_end)


def _line_end(data: bytes, start: int) -> int:
    newline = data.find(b"\n", start)
    return len(data) if newline < 0 else newline + 1


def _takes_fast_paths(parser: VllmParser) -> bool:
    """Whether ``parse`` would take its fast paths now: nothing held open (a wrapped
    stats line, an error line's follower, a traceback), no split read's notes to keep,
    no id lists to return."""
    return (
        parser._wrap_held is None
        and not parser._held
        and not parser._tb_open
        and parser.boundary is None
        and not parser.keep_token_ids
    )


#: Request states a line may end a request with and still ride inside a run.
ENDS = ("aborted", "finished")


def _carries(kind: str, event: Event | None) -> bool:
    """Whether a parsed line can ride inside a run: its event, merged after the run's
    rows (core's batch applier), has the effect it has at its place. True for no event, a
    5xx access line's error (no request id: it only counts), a stats line that cannot
    close open rows (``core.extraction.Lifecycle.stats`` closes them only at an idle
    engine line), and the end of one request (``Aborted request x.``), which the applier
    takes after the rows only when its row is there before it and no later line of the
    run names it (else it reads the run line by line)."""
    if kind == LineKind.UNPARSED:
        return False
    if event is None:
        return True
    if event[0] == "request":
        return event[1].get("state") in ENDS
    if event[0] == "error":
        return "request_id" not in event[1]
    if event[0] == "stats":
        p = event[1]
        if p.get("phase") != "engine":
            return True
        running, waiting = p.get("running"), p.get("waiting")
        if running is None or waiting is None:
            return True
        return not (running == 0 and waiting == 0 and not p.get("swapped"))
    return False


def scan_vllm(parser: LineParser, data: bytes, start: int, max_line_bytes: int) -> Batch:
    """``formats._base.ServerScanner`` for vLLM logs (see the module docstring)."""
    assert _vllmscan is not None
    if not isinstance(parser, VllmParser) or not _takes_fast_paths(parser):
        return _empty(start, _line_end(data, start))
    raw = _vllmscan.scan_vllm(data, start, MAX_LINES, max_line_bytes, True)
    if raw[0] == 0:
        return _empty(start, raw[3])
    return _Walk(parser, data, raw).run()


class _Walk:
    """One C scan's lines taken in line order: the clock at each new stamp, the parser at
    each OTHER line (ending the run where it must), the window of recent ids in bulk."""

    def __init__(self, parser: VllmParser, data: bytes, raw: tuple[Any, ...]) -> None:
        (
            n,
            self.end,
            _reason,
            self.next_end,
            kinds_b,
            offsets_b,
            lengths_b,
            self.ids,
            seg_starts_b,
            self.stamps,
            ints_b,
            floats_b,
            spans_b,
            refs_b,
            self.received_ids,
            self.received_blob,
            received_ends_b,
            received_hashes_b,
        ) = raw
        self.parser, self.data, self.n = parser, data, n
        self.kinds = np.frombuffer(kinds_b, dtype=np.uint8)
        self.offsets = np.frombuffer(offsets_b, dtype=np.int64)
        self.lengths = np.frombuffer(lengths_b, dtype=np.uint32)
        self.request_lines = np.flatnonzero(self.kinds < ACCESS)
        self.is_received = self.kinds[self.request_lines] == RECEIVED
        # Received lines before each request line, and before each line.
        self.received_before = np.cumsum(self.is_received) - self.is_received
        self.seg_starts = np.frombuffer(seg_starts_b, dtype=np.int32)
        k = len(ints_b) // 12
        self.ints = np.frombuffer(ints_b, dtype=np.int32).reshape(3, k)
        self.floats = np.frombuffer(floats_b, dtype=np.float64).reshape(2, k)
        self.spans = np.frombuffer(spans_b, dtype=np.int64).reshape(2, k)
        self.refs = np.frombuffer(refs_b, dtype=np.int32)
        self.received_ends = np.frombuffer(received_ends_b, dtype=np.int64)
        self.received_hashes = np.frombuffer(received_hashes_b, dtype=np.int64)
        self.others: list[CarriedLine] = []
        self.seg_ts: list[float] = []
        self.bulk = False  # the window took the scan's ids in bulk (``run``)

    def run(self) -> Batch:
        parser = self.parser
        recent = parser._recent
        bulk = self.bulk = self._remember_in_bulk()
        forgotten = False
        done = 0  # request lines whose ids the window has taken (the by-line way)
        other_lines = np.flatnonzero(self.kinds == OTHER).tolist()
        self._stamp_after(other_lines)
        seg_lines = self.request_lines[self.seg_starts].tolist()
        last = -1  # the last OTHER line read
        o = s = 0
        cut: int | None = None  # the run ends before this line
        while o < len(other_lines) or s < len(seg_lines):
            if s < len(seg_lines) and (o == len(other_lines) or seg_lines[s] < other_lines[o]):
                ts = self._clock(self.stamps[s])
                if ts is None:
                    cut = seg_lines[s]
                    break
                self.seg_ts.append(ts)
                s += 1
                continue
            line = other_lines[o]
            o += 1
            requests_before = int(np.searchsorted(self.request_lines, line))
            if not bulk:
                self._remember_by_line(done, requests_before)
                done = requests_before
            else:  # the window as it is at this line
                recent.look_back(self.received_ids[self._received_at(requests_before) :])
            if line > last + 1:
                parser._in_warning = False  # as the lines since the last one set it
            last = line
            carries = self._read_other(line)
            if bulk and recent.horizon is None:
                forgotten = True  # the line remembered an id: the ids after it went first
            recent.look_ahead()
            if not carries:
                cut = line + 1
                break
        if cut is None:
            cut = self.n
            if last != self.n - 1:
                parser._in_warning = False
        requests = int(np.searchsorted(self.request_lines, cut))
        if bulk:
            kept = self._received_at(requests)
            if kept < len(self.received_ids) and not forgotten:
                recent.forget(self.received_ids[kept:])  # the lines not in the run
        else:
            self._remember_by_line(done, requests)
        return self._scan(cut, requests)

    def _stamp_after(self, other_lines: list[int]) -> None:
        """Make the first request line after each OTHER line start a run of one stamp
        too: that line moved the parser's clock, and line by line the next request line
        compares its stamp with the clock's last again (and may read it anew)."""
        if not other_lines:
            return
        requests = len(self.request_lines)
        after = np.searchsorted(self.request_lines, other_lines)
        after = np.unique(after[after < requests]).astype(np.int32)
        if not len(after):
            return
        starts = np.union1d(self.seg_starts, after).astype(np.int32)
        of = np.searchsorted(self.seg_starts, starts, side="right") - 1  # its C run
        self.stamps = [self.stamps[i] for i in of.tolist()]
        self.seg_starts = starts

    def _received_at(self, request: int) -> int:
        """Received lines among the first ``request`` request lines."""
        if request >= len(self.request_lines):
            return len(self.received_ids)
        return int(self.received_before[request])

    def _clock(self, stamp: bytes) -> float | None:
        """The year clock, one call per new stamp as ``_fast_request`` makes them."""
        parser = self.parser
        if stamp == parser._last_stamp:
            ts = parser._last_ts
        else:
            try:
                ts = parser._stamp_text(stamp)
            except Exception:  # the parser says why, on that line
                ts = None
        return None if ts is None or ts != ts else ts  # unknown or NaN: the per-line path's

    def _read_other(self, line: int) -> bool:
        """The parser reads OTHER line ``line``; whether the run can go on past it."""
        parser = self.parser
        begin = int(self.offsets[line])
        text = self.data[begin : begin + int(self.lengths[line])]
        if text.endswith(b"\n"):
            text = text[:-1]
            if text.endswith(b"\r"):  # as sources._lines.split_chunk gives the line
                text = text[:-1]
        kind, event = parser.parse(text)
        reason = parser.last_reason if kind == LineKind.UNPARSED else ""
        self.others.append(CarriedLine(line, kind, event, reason, text))
        return _takes_fast_paths(parser) and not parser.pending and _carries(kind, event)

    def _remember_in_bulk(self) -> bool:
        """The window takes every Received id of the scan at once, when that gives what
        ``_remember`` / ``_canonical`` give line by line: none of the ids is in the window
        or repeats, and no Added id would be mapped (it is in the window at its line, or
        has no ``-`` where an engine-side suffix starts). In the window at its line: its
        Received line in the scan (``refs``, from C) is among the ``size`` last before it,
        or its serial from before is above the floor at that line."""
        recent = self.parser._recent
        added = np.flatnonzero(~self.is_received)
        if len(added):
            before = self.received_before[added]
            j = self.refs[added]
            in_window = (j >= 0) & (j < before) & (before <= j + recent.size)
            outside = np.flatnonzero(~in_window).tolist()
            if outside:
                floor = recent.remembered - recent.size
                for i in outside:
                    rid = self.ids[int(added[i])]
                    serial = recent.serial_of(rid)
                    in_window = serial > 0 and serial > floor + before[i]
                    if may_be_engine_side(rid) and not in_window:
                        return False  # _canonical would look for its front-end id
        return recent.remember_new(self.received_ids)

    def _remember_by_line(self, first: int, stop: int) -> None:
        """Request lines [first, stop) through the window as ``_remember`` /
        ``_canonical`` take them; Added ids in ``ids`` become what ``_canonical`` gives."""
        parser, ids = self.parser, self.ids
        recent = parser._recent
        for i in range(first, stop):
            rid = ids[i]
            if self.is_received[i]:
                recent.remember(rid)
            elif rid not in recent and may_be_engine_side(rid):
                ids[i] = parser._canonical(rid)

    def _scan(self, n: int, requests: int) -> Batch:
        """The run of the first ``n`` lines (``requests`` request lines), as a batch."""
        end = int(self.offsets[n - 1] + self.lengths[n - 1])
        if n == self.n:
            next_end = self.next_end
        elif self.kinds[n - 1] == OTHER:
            next_end = end  # it ended at a line the parser read: what follows is read anew
        else:
            next_end = _line_end(self.data, end)  # a stamp the clock cannot read
        received = self._received_at(requests)
        del self.ids[requests:]
        refs = None
        is_received = self.is_received[:requests]
        if self.bulk:  # (the ids are as read: the C module's references hold)
            refs = self.refs[:requests][~is_received]
        bounds = np.append(self.seg_starts[: len(self.seg_ts)], requests)
        ts = np.repeat(np.array(self.seg_ts, dtype=np.float64), np.diff(bounds))
        received_ids = self.received_ids[:received]
        ints, floats = self.ints[:, :received], self.floats[:, :received]
        rows = NewRows(
            IdBlob(
                self.received_blob[: int(self.received_ends[received - 1]) if received else 0],
                self.received_ends[:received],
                self.received_hashes[:received],
                received_ids,
            ),
            Names(("received",), np.ones(received, dtype=np.uint8)),
            {
                "prompt_tokens": ints[0],
                "max_tokens": ints[1],
                "sampling_n": ints[2],
                "temperature": floats[0],
                "top_p": floats[1],
                "received_ts": ts[is_received].copy(),
            },
            prompt_ids_logged=True,
        )
        ids = self.ids
        updates = RowUpdates(
            list(compress(ids, (~is_received).tolist())), "running", ts[~is_received], refs
        )
        return Batch(
            n,
            end,
            next_end,
            self.data,
            self.offsets[:n],
            self.lengths[:n],
            self.kinds[:n],
            _OP_KINDS,
            rows=rows,
            updates=updates,
            carried=self.others,
            event_of=_Events(self.data, ids, ts, is_received, rows, self.spans[:, :received]).event,
        )


class _Events:
    """The event ``VllmParser.parse`` gives each request line of a run (the i-th of its
    Received and Added lines), for a run the applier merges line by line."""

    def __init__(
        self,
        data: bytes,
        ids: list[str],
        ts: np.ndarray,
        is_received: np.ndarray,
        rows: NewRows,
        prompts: np.ndarray,
    ) -> None:
        self.data, self.ids, self.ts, self.prompts = data, ids, ts, prompts
        self.columns = rows.columns
        self._is_received = is_received
        # Made on the first call (most runs are applied at once, never asked).
        self.is_received: list[bool] = []
        #: per request line, its index among the Received lines (if it is one)
        self.received_index: list[int] = []

    def event(self, line: int, i: int) -> Event:
        if not self.is_received:
            self.is_received = self._is_received.tolist()
            self.received_index = (np.cumsum(self._is_received) - 1).tolist()
        rid = self.ids[i]
        ts = float(self.ts[i])
        if not self.is_received[i]:
            running: RequestPayload = {"request_id": rid, "state": "running", "ts": ts}
            return ("request", running)
        r = self.received_index[i]
        payload: RequestPayload = {"request_id": rid, "state": "received", "received_ts": ts}
        begin, end = (int(x) for x in self.prompts[:, r])
        if begin >= 0:
            payload["prompt"] = self.data[begin:end].decode("utf-8", "replace")
        sampling = self._sampling(r)
        if sampling:
            payload["sampling"] = sampling
        count = int(self.columns["prompt_tokens"][r])
        payload["prompt_tokens"] = count
        payload["prompt_ids_logged"] = count
        payload["ts"] = ts
        return ("request", payload)

    def _sampling(self, r: int) -> SamplingInfo:
        columns = self.columns
        info: SamplingInfo = {}
        n, max_tokens = int(columns["sampling_n"][r]), int(columns["max_tokens"][r])
        temperature, top_p = float(columns["temperature"][r]), float(columns["top_p"][r])
        if n >= 0:
            info["n"] = n
        if temperature == temperature:
            info["temperature"] = temperature
        if top_p == top_p:
            info["top_p"] = top_p
        if max_tokens >= 0:
            info["max_tokens"] = max_tokens
        return info


SCANNER: _ServerScanner | None = scan_vllm if _vllmscan is not None else None
