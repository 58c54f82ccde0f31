"""Applying a run of vLLM lines the native scanner read (``formats.vllm.native.VllmScan``)
with the result ``Extractor._run_lines`` would have given: the same store rows (columns,
ids, line locations, extras, ``dirty_from``), lifecycle bookkeeping, meta defaults and
counts of lines by kind.

The common run is applied in bulk: its Received ids are all new, so they become new rows
in one ``extend_rows``; an Added line of such a row (after its Received line) only makes
it ``running`` at the Added line's time and records the line. An Added line of an older
row is merged by ``Merger.on_event`` at its place in the run, as the per-line path would.
Any other run (a re-received id, an Added line of an id never received, an observer that
must see each payload) goes line by line through ``Merger.on_event`` with the payload the
parser would have given.
"""

from __future__ import annotations

from array import array
from collections import deque
from itertools import compress, repeat
from typing import TYPE_CHECKING, Any

import numpy as np

from sparseety_tui.core.extraction._lifecycle import OPEN_CODES
from sparseety_tui.core.extraction._merge import Merger
from sparseety_tui.core.store import (
    COUNT_IDS_LOWER_BOUND,
    COUNT_REPORTED,
    ROW_LAYOUT,
    STATE_CODE,
    UNKNOWN,
    Diagnostic,
    EncodedIds,
)
from sparseety_tui.events import LineKind, RequestPayload, SamplingInfo
from sparseety_tui.formats.base import failure_reason
from sparseety_tui.formats.vllm.kinds import REQUEST
from sparseety_tui.formats.vllm.native import ACCESS, ADDED, OTHER, RECEIVED, Carried, VllmScan

if TYPE_CHECKING:
    from sparseety_tui.core.extraction._server_bulk import ServerTarget
    from sparseety_tui.core.store import FileState

#: The per-line path's kind of each line kind of the scan.
_UNPARSED = 255
_KIND_NAMES = {
    RECEIVED: REQUEST,
    ADDED: REQUEST,
    ACCESS: LineKind.ACCESS,
    _UNPARSED: LineKind.UNPARSED,
}
#: Meta keys that default a row's columns (``Merger.apply_meta_defaults``).
_META_DEFAULT_KEYS = frozenset(("topk_experts", "total_experts", "total_attention_heads"))
_RUNNING = STATE_CODE["running"]
_RECEIVED = STATE_CODE["received"]
#: Characters of an unparsed line kept for display (``core.extractor.PREVIEW_CHARS``).
_PREVIEW_CHARS = 300


def apply_vllm_scan(target: ServerTarget, scan: VllmScan) -> None:
    """``core.server_bulk`` applier of ``VllmScan`` runs."""
    merger, state = target.merger, target.state
    line_kinds = scan.kinds.copy()
    names = dict(_KIND_NAMES)
    # The run's diagnostics are collected, then kept in line order as line by line
    # (the bulk way makes those of Added lines before those of the carried lines).
    kept, state.diagnostics = state.diagnostics, deque()
    try:
        if not np.any(scan.kinds < ACCESS):  # no request line: only carried lines
            for carried in scan.others:
                _merge_carried(target, scan, carried, line_kinds, names)
        elif merger._observer is not None or not _apply_bulk(target, scan, line_kinds, names):
            _apply_by_line(target, scan, line_kinds, names)
        else:
            # Their events cannot touch the run's rows (formats.vllm.native._carries),
            # but for the last line's, which comes after all of them: merged after the
            # rows. (The request ends were merged at their places among the rows.)
            for carried in scan.others:
                if not _is_end(carried):
                    _merge_carried(target, scan, carried, line_kinds, names)
    finally:
        made, state.diagnostics = state.diagnostics, kept
    kept.extend(sorted(made, key=lambda d: d.line_no))
    _count_lines(state, line_kinds, names)


def _merge_carried(
    target: ServerTarget,
    scan: VllmScan,
    carried: Carried,
    line_kinds: np.ndarray,
    names: dict[int, str],
) -> None:
    """A line the parser read in the run, as ``Extractor._run_lines`` takes it: its event
    merged, its kind counted (unparsed, with a diagnostic, when parsing or merging it
    failed)."""
    merger, state = target.merger, target.state
    line = carried.line
    line_no = state.lines_total + 1 + line
    kind, reason = carried.kind, carried.reason
    if carried.event is not None:
        offset = int(scan.offsets[line]) + target.base_offset
        try:
            merger.on_event(
                carried.event, target.file, state.meta, offset, int(scan.lengths[line]), line_no
            )
        except Exception as exc:  # the merge changed nothing (core.merge)
            kind, reason = LineKind.UNPARSED, failure_reason("not merged", exc)
    if kind == LineKind.UNPARSED:
        _unparsed(target, scan, line, line_no, reason, line_kinds, carried.text)
        return
    code = _code_of(names, kind)
    line_kinds[line] = code


def _code_of(names: dict[int, str], kind: str) -> int:
    """The code of line kind ``kind`` among a run's ``names`` (one more when new)."""
    for code, name in names.items():
        if name == kind and code > ACCESS:
            return code
    code = max(c for c in names if c != _UNPARSED) + 1
    names[code] = kind
    return code


def _count_lines(state: FileState, line_kinds: np.ndarray, names: dict[int, str]) -> None:
    """``lines_total`` and ``by_kind``, kinds first seen first (as line by line)."""
    kinds = line_kinds.tobytes()
    by_kind = state.by_kind
    seen = sorted((kinds.find(code), code) for code in set(kinds))
    for _first, code in seen:
        name = names[code]
        by_kind[name] = by_kind.get(name, 0) + kinds.count(code)
    state.lines_total += len(kinds)


# -- the bulk way ---------------------------------------------------------------------


def _apply_bulk(
    target: ServerTarget, scan: VllmScan, line_kinds: np.ndarray, names: dict[int, str]
) -> bool:
    """The common run in bulk; False (nothing changed) when it is not one."""
    merger, state, file = target.merger, target.state, target.file
    store = merger.store
    request_lines = np.flatnonzero(scan.kinds < ACCESS)
    is_received = scan.kinds[request_lines] == RECEIVED
    received_ids = scan.received_ids
    added_ids = list(compress(scan.ids, (~is_received).tolist()))
    received_at = np.flatnonzero(is_received)  # request index of each Received line
    added_at = np.flatnonzero(~is_received)
    k = len(received_ids)
    encoded = EncodedIds(scan.received_blob, scan.received_ends, scan.received_hashes)
    if not store.ids.all_new(encoded):
        return False  # a re-received id (or two ids of one hash): merged line by line
    if not _ends_commute(target, scan, request_lines):
        return False  # a request's end that only line by line merges as it should
    base = len(store)
    if scan.added_refs is not None:  # the Received line of each Added line, from C
        rows = np.where(scan.added_refs >= 0, scan.added_refs.astype(np.int64) + base, -1)
    else:
        new_rows = dict(zip(received_ids, range(base, base + k)))
        rows = np.fromiter(
            map(new_rows.get, added_ids, repeat(-1)), dtype=np.int64, count=len(added_ids)
        )
    # (An id with no Received line before it in the run: an older row, or a new one.)
    for i in np.flatnonzero(rows < 0).tolist():
        older = store.ids.find(added_ids[i])
        if older is None:
            return False  # an Added line makes a new row: line by line
        rows[i] = older
    new = rows >= base
    if np.any(received_at[rows[new] - base] > added_at[new]):
        return False  # Added before its Received line: line by line

    meta = state.meta
    line_nos = state.lines_total + 1 + request_lines
    received_lines = request_lines[is_received]
    ts = scan.ts
    received_ts = ts[is_received].copy()
    states = np.full(k, _RECEIVED, dtype=np.uint8)
    added_new = rows[new] - base
    added_ts = ts[~is_received][new]
    states[added_new] = _RUNNING
    # merge_row writes an Added line's time unless it reads as unknown (-1); the last wins.
    known = added_ts != UNKNOWN
    last_rows, last_at = np.unique(added_new[known][::-1], return_index=True)
    received_ts[last_rows] = added_ts[known][::-1][last_at]
    prompt = scan.prompt_tokens
    cut = meta.get("max_log_len") if meta else None
    source = np.full(k, COUNT_REPORTED, dtype=np.uint8)
    if type(cut) is int and cut > 0:
        source[prompt >= cut] = COUNT_IDS_LOWER_BOUND
    columns: dict[str, Any] = {}
    columns["prompt_tokens"] = prompt
    columns["max_tokens"] = scan.max_tokens
    columns["sampling_n"] = scan.sampling_n
    columns["temperature"] = scan.temperature
    columns["top_p"] = scan.top_p
    columns["received_ts"] = received_ts
    columns["state"] = states
    columns["prompt_source"] = source
    offsets = scan.offsets + target.base_offset
    store.extend_rows(
        encoded,
        columns,
        file,
        offsets[received_lines],
        scan.lengths[received_lines],
        line_nos[is_received],
        unknown=[name for name in ROW_LAYOUT if name not in columns],  # no line says them
    )
    # (New rows need no ``store.touch``: they are at or above ``dirty_from``, which is at
    # most the store's length before them.)
    added_lines = request_lines[~is_received]
    _added_lines(target, scan, rows, added_ids, added_lines, ts[~is_received], line_kinds, names)
    if meta and not _META_DEFAULT_KEYS.isdisjoint(meta):
        merger.apply_meta_defaults(meta, base, base + k)
    return True


def _ends_commute(target: ServerTarget, scan: VllmScan, request_lines: np.ndarray) -> bool:
    """Whether each request end the run carries (``formats.vllm.native.ENDS``) can be
    merged after the run's rows with the effect it has at its line: its row is there
    before its line (an older row, or one a Received line of the run makes before it) and
    no later line of the run names it (so it changes the row the last, at either place).
    An end of an id with no row would make a new row at its place among the run's. (The
    ends are merged among the opening of the run's rows in line order, ``_added_lines``:
    a compaction of the open rows drops those that ended before it.)"""
    ends = _ends(scan)
    if not ends:
        return True
    store = target.merger.store
    # (A few ends a run: list searches in C, not a dict of every id of the run.)
    ids, received_ids = scan.ids, scan.received_ids
    received_lines = request_lines[scan.kinds[request_lines] == RECEIVED]
    for i, carried in enumerate(ends):
        assert carried.event is not None and carried.event[0] == "request"
        rid = carried.event[1]["request_id"]
        line = carried.line
        later = ids[int(np.searchsorted(request_lines, line)) :]
        if rid in later or any(_request_id(c) == rid for c in ends[i + 1 :]):
            return False
        made = rid in received_ids and received_lines[received_ids.index(rid)] < line
        if not made and store.ids.find(rid) is None:
            return False
    return True


def _is_end(carried: Carried) -> bool:
    return carried.event is not None and carried.event[0] == "request"


def _ends(scan: VllmScan) -> list[Carried]:
    """The request ends the run carries (its only carried request events)."""
    return [c for c in scan.others if _is_end(c)]


def _request_id(carried: Carried) -> object:
    event = carried.event
    return event[1]["request_id"] if event is not None and event[0] == "request" else None


def _added_lines(
    target: ServerTarget,
    scan: VllmScan,
    rows: np.ndarray,
    ids: list[str],
    lines: np.ndarray,
    times: np.ndarray,
    line_kinds: np.ndarray,
    names: dict[int, str],
) -> None:
    """Each Added line at its place: recorded on its row (new rows), or merged as the
    per-line path does (older rows); new rows are opened (``core.lifecycle``) in line
    order with the older rows an Added line opens again and the request ends the run
    carries (a compaction of the open rows drops those ended before it)."""
    merger, state, file = target.merger, target.state, target.file
    store = merger.store
    base = len(store) - int(np.count_nonzero(scan.kinds == RECEIVED))
    received_lines = np.flatnonzero(scan.kinds == RECEIVED)
    more_lines = store.more_lines
    opened = 0  # new rows opened so far
    absolute = scan.offsets + target.base_offset
    order = np.argsort(rows, kind="stable")
    ascending = rows[order]
    if not len(rows) or (ascending[0] >= base and bool(np.all(np.diff(ascending) > 0))):
        # The common run: one Added line for each of some new rows (their first more
        # line), kept in arrays (core.line_table), no object a row.
        added = lines[order]
        more_lines.add_singles(ascending, file, absolute[added], scan.lengths[added])
        for end in _ends(scan):
            upto = int(np.searchsorted(received_lines, end.line))
            _open_rows(merger, range(base + opened, base + upto), file)
            opened = upto
            _merge_carried(target, scan, end, line_kinds, names)
        _open_rows(merger, range(base + opened, len(store)), file)
        return
    offsets = absolute[lines].tolist()
    lengths = scan.lengths[lines].tolist()
    row_list = rows.tolist()
    ends = _ends(scan)
    in_order = sorted(
        [(int(line), 0, j) for j, line in enumerate(lines.tolist())]
        + [(end.line, 1, i) for i, end in enumerate(ends)]
    )
    for line, is_end, j in in_order:
        if is_end:
            upto = int(np.searchsorted(received_lines, line))
            _open_rows(merger, range(base + opened, base + upto), file)
            opened = upto
            _merge_carried(target, scan, ends[j], line_kinds, names)
            continue
        row = row_list[j]
        if row >= base:
            store.add_line(row, file, offsets[j], lengths[j])
            continue
        upto = int(np.searchsorted(received_lines, line))
        _open_rows(merger, range(base + opened, base + upto), file)
        opened = upto
        ts = float(times[j])
        payload: RequestPayload = {"request_id": ids[j], "state": "running", "ts": ts}
        line_no = state.lines_total + 1 + line
        try:
            merger.on_event(("request", payload), file, state.meta, offsets[j], lengths[j], line_no)
        except Exception as exc:  # the merge changed nothing (core.merge)
            _unparsed(target, scan, line, line_no, failure_reason("not merged", exc), line_kinds)
    _open_rows(merger, range(base + opened, len(store)), file)


def _open_rows(merger: Merger, rows: range, file: int) -> None:
    """``Lifecycle.opened`` for each of ``rows`` in turn, its list extended a stretch at a
    time: compacted exactly when one call per row would have compacted it."""
    if not rows:
        return
    lifecycle = merger.lifecycle
    track = lifecycle._track(file)
    state = merger.store.state
    start = rows.start
    while start < rows.stop:
        room = track.compact_at - len(track.open_rows)
        stop = min(rows.stop, start + max(room, 1))
        track.open_rows.extend(range(start, stop))
        start = stop
        if len(track.open_rows) >= track.compact_at:
            # (Lifecycle.opened's compaction, over arrays: the same rows, in order.)
            open_rows = np.frombuffer(track.open_rows, dtype=np.int32)
            states = state.values(0, len(state))[open_rows]
            kept = open_rows[np.isin(states, OPEN_CODES)]
            track.open_rows = array("i", kept.tobytes())
            track.compact_at = max(1024, 2 * len(track.open_rows))


# -- line by line ---------------------------------------------------------------------


def _apply_by_line(
    target: ServerTarget, scan: VllmScan, line_kinds: np.ndarray, names: dict[int, str]
) -> None:
    """Every request line merged with the payload the parser gives it, and every line
    the parser read with its event, in line order."""
    merger, state, file = target.merger, target.state, target.file
    meta = state.meta
    request = 0
    received = 0
    data = scan.data
    carried = iter(scan.others)
    for line, kind in enumerate(scan.kinds.tolist()):
        if kind == ACCESS:
            continue
        if kind == OTHER:
            _merge_carried(target, scan, next(carried), line_kinds, names)
            continue
        rid = scan.ids[request]
        ts = float(scan.ts[request])
        request += 1
        payload: RequestPayload
        if kind == RECEIVED:
            payload = {"request_id": rid, "state": "received", "received_ts": ts}
            begin, end = (int(x) for x in scan.prompts[:, received])
            if begin >= 0:
                payload["prompt"] = data[begin:end].decode("utf-8", "replace")
            sampling = _sampling(scan, received)
            if sampling:
                payload["sampling"] = sampling
            count = int(scan.prompt_tokens[received])
            payload["prompt_tokens"] = count
            payload["prompt_ids_logged"] = count
            payload["ts"] = ts
            received += 1
        else:
            payload = {"request_id": rid, "state": "running", "ts": ts}
        offset = int(scan.offsets[line]) + target.base_offset
        length = int(scan.lengths[line])
        line_no = state.lines_total + 1 + line
        try:
            merger.on_event(("request", payload), file, meta, offset, length, line_no)
        except Exception as exc:  # the merge changed nothing (core.merge)
            _unparsed(target, scan, line, line_no, failure_reason("not merged", exc), line_kinds)


def _sampling(scan: VllmScan, i: int) -> SamplingInfo:
    info: SamplingInfo = {}
    n, max_tokens = int(scan.sampling_n[i]), int(scan.max_tokens[i])
    temperature, top_p = float(scan.temperature[i]), float(scan.top_p[i])
    if n >= 0:
        info["n"] = n
    if temperature == temperature:
        info["temperature"] = temperature
    if top_p == top_p:
        info["top_p"] = top_p
    if max_tokens >= 0:
        info["max_tokens"] = max_tokens
    return info


def _unparsed(
    target: ServerTarget,
    scan: VllmScan,
    line: int,
    line_no: int,
    reason: str,
    kinds: np.ndarray,
    text: bytes | None = None,
) -> None:
    """A line not parsed, or whose event could not be merged: counted unparsed, with a
    diagnostic (as ``Extractor._run_lines`` / ``_diagnose`` do). ``text``: the line as the
    per-line path holds it (default: its bytes without the newline)."""
    kinds[line] = _UNPARSED
    state, base_offset = target.state, target.base_offset
    start = int(scan.offsets[line])
    if text is None:
        text = scan.data[start : start + int(scan.lengths[line])]
        if text.endswith(b"\n"):
            text = text[:-1]
    preview = text[: _PREVIEW_CHARS * 4].decode("utf-8", errors="replace")
    if len(preview) > _PREVIEW_CHARS:
        preview = preview[:_PREVIEW_CHARS] + "…"
    state.diagnostics.append(Diagnostic(line_no, base_offset + start, reason, preview))
