"""The native scanner of vLLM server lines (native/vllm_scan.c), when it was built.

``scan_vllm`` is the family's ``ServerScanner`` (formats.base): the C module reads the run
of ``Received request`` / ``Added request`` / access lines that ``VllmParser.parse`` takes
on its fast paths; this module then moves the parser's state on exactly as parsing those
lines one by one would have (the year clock, the window of recent received ids, the
warning flag) and hands the columns to ``core.vllm_bulk``. A line the C module is unsure
of ends the run; so does a time stamp the clock cannot read (the parser says why).

``SCANNER`` is None without the C module or with ``SPARSEETY_TUI_PURE_PYTHON=1``.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from sparseety_tui.formats.base import LineParser
from sparseety_tui.formats.base import ServerScanner as _ServerScanner
from sparseety_tui.formats.vllm.parser import VllmParser
from sparseety_tui.formats.vllm.requests import RECENT_IDS
from sparseety_tui.native import PURE_PYTHON

try:
    from sparseety_tui import _vllmscan
except ImportError:  # built without a C compiler
    _vllmscan = None  # type: ignore[assignment]
if PURE_PYTHON:
    _vllmscan = None  # type: ignore[assignment]

#: Lines one scan may return (bounds its buffers, ~40 B a line).
MAX_LINES = 1 << 16
#: Line kinds in ``VllmScan.kinds`` (native/vllm_scan.c).
RECEIVED, ADDED, ACCESS = 0, 1, 2


@dataclass(frozen=True)
class VllmScan:
    """A run of lines the scanner read (``formats.base.ServerScan``), as columns.

    Per line: ``kinds``, ``offsets`` (relative to ``data``) and ``lengths`` (the newline
    counted). Per request line (Received and Added, in order): ``ids`` (an Added line's
    mapped back as ``VllmParser._canonical`` does) and ``ts``. Per Received line:
    ``prompt_tokens`` (counted ids), ``max_tokens``, ``sampling_n`` (-1 unknown),
    ``temperature``, ``top_p`` (NaN unknown, as the columns hold them) and ``prompts``,
    the prompt's [begin, end) in ``data`` (-1: none).
    """

    n: int
    end: int
    next_end: int
    data: bytes
    kinds: np.ndarray
    offsets: np.ndarray
    lengths: np.ndarray
    ids: list[str]
    ts: np.ndarray
    prompt_tokens: np.ndarray
    max_tokens: np.ndarray
    sampling_n: np.ndarray
    temperature: np.ndarray
    top_p: np.ndarray
    prompts: np.ndarray


def _empty(data: bytes, start: int, next_end: int) -> VllmScan:
    none = np.zeros(0, dtype=np.int64)
    return VllmScan(
        0, start, next_end, data, none, none, none, [], none, none, none, none, none, none, none
    )


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


def scan_vllm(parser: LineParser, data: bytes, start: int, max_line_bytes: int) -> VllmScan:
    """``formats.base.ServerScanner`` for vLLM logs (see the module docstring)."""
    assert _vllmscan is not None
    if not isinstance(parser, VllmParser) or not _takes_fast_paths(parser):
        return _empty(data, start, _line_end(data, start))
    (
        n,
        end,
        _reason,
        next_end,
        kinds_b,
        offsets_b,
        lengths_b,
        ids,
        seg_starts_b,
        seg_stamps,
        ints_b,
        floats_b,
        spans_b,
    ) = _vllmscan.scan_vllm(data, start, MAX_LINES, max_line_bytes)
    if n == 0:
        return _empty(data, start, next_end)
    kinds = np.frombuffer(kinds_b, dtype=np.uint8)
    offsets = np.frombuffer(offsets_b, dtype=np.int64)
    lengths = np.frombuffer(lengths_b, dtype=np.uint32)
    seg_starts = np.frombuffer(seg_starts_b, dtype=np.int32)
    requests = len(ids)
    # The year clock, one call per new stamp as ``_fast_request`` makes them.
    seg_ts: list[float] = []
    for stamp in seg_stamps:
        if stamp == parser._last_stamp:
            ts = parser._last_ts
        else:
            try:
                ts = parser._stamp_text(stamp)
            except Exception:  # the parser says why, on that line
                ts = None
        if ts is None or ts != ts:  # unknown or NaN: the per-line path's own case
            break
        seg_ts.append(ts)
    if len(seg_ts) < len(seg_stamps):
        cut_request = int(seg_starts[len(seg_ts)])
        request_lines = np.flatnonzero(kinds != ACCESS)
        n = int(request_lines[cut_request])
        if n == 0:
            return _empty(data, start, _line_end(data, start))
        kinds, offsets, lengths = kinds[:n], offsets[:n], lengths[:n]
        end = next_end = int(offsets[n - 1] + lengths[n - 1])
        next_end = _line_end(data, end)
        del ids[cut_request:]
        requests = cut_request
        seg_starts = seg_starts[: len(seg_ts)]
    bounds = np.append(seg_starts, requests)
    ts_of = np.repeat(np.array(seg_ts, dtype=np.float64), np.diff(bounds))
    request_kinds = kinds.tobytes().translate(None, bytes([ACCESS]))
    received = request_kinds.count(RECEIVED)
    k_all = len(ints_b) // 12  # Received lines the C module returned (before a cut)
    ints = np.frombuffer(ints_b, dtype=np.int32).reshape(3, k_all)[:, :received]
    floats = np.frombuffer(floats_b, dtype=np.float64).reshape(2, k_all)[:, :received]
    spans = np.frombuffer(spans_b, dtype=np.int64).reshape(2, k_all)[:, :received]
    _remember_ids(parser, request_kinds, ids)
    parser._in_warning = False
    return VllmScan(
        n,
        end,
        next_end,
        data,
        kinds,
        offsets,
        lengths,
        ids,
        ts_of,
        ints[0],
        ints[1],
        ints[2],
        floats[0],
        floats[1],
        spans,
    )


def _remember_ids(parser: VllmParser, request_kinds: bytes, ids: list[str]) -> None:
    """The recent-ids window as ``_remember`` / ``_canonical`` keep it, line by line (an
    Added id is mapped against the window as it is at its line); Added ids in ``ids``
    become what ``_canonical`` gives."""
    recent = parser._recent
    remembered = parser.remembered
    for i, (kind, rid) in enumerate(zip(request_kinds, ids)):
        if kind == RECEIVED:
            if rid not in recent:
                recent[rid] = None
                remembered += 1
                if len(recent) > RECENT_IDS:
                    recent.popitem(last=False)
        elif rid not in recent and rid[-9:-8] == "-":
            ids[i] = parser._canonical(rid)
    parser.remembered = remembered


SCANNER: _ServerScanner | None = scan_vllm if _vllmscan is not None else None
