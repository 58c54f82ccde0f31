"""The one applier of fast-path batches (``sparseety_tui.batch.Batch``): a run of lines a
format's fast path read becomes store rows, engine series points, merged events and
counts of lines by kind, with the result the per-line path (``Extractor._run_lines``)
would have given. It names no format: what a batch holds says what to do.

Preconditions that need the store are checked here: every new row's id is new, and each
request end a batch carries commutes with its rows (``_rows.ends_commute``). A batch that
fails one is refused (nothing changed; its lines are then read by the per-line path), or,
when its family's parser already moved past its lines (``Batch.event_of``), merged line
by line with the events that parser gives them.
"""

from __future__ import annotations

from collections import deque
from typing import Any

from sparseety_tui.batch import CARRIED, COUNTED, Batch
from sparseety_tui.core.extraction._apply_lines import (
    UNPARSED_CODE,
    Target,
    is_request_event,
    merge_carried,
    unparsed,
)
from sparseety_tui.core.extraction._apply_rows import append_records, apply_opened
from sparseety_tui.core.extraction._apply_stats import add_stats
from sparseety_tui.core.store import EngineSeries, FileState
from sparseety_tui.events import LineKind
from sparseety_tui.formats import failure_reason


def apply_batch(target: Target, batch: Batch) -> bool:
    """Apply ``batch`` (``batch.n`` > 0) to ``target``, counting each of its lines once
    (``state.lines_total`` and ``state.by_kind``). False: refused, nothing changed."""
    if batch.ops is None:
        return _apply_counted(target, batch)
    _apply_ops(target, batch)
    return True


def _apply_counted(target: Target, batch: Batch) -> bool:
    """A batch counted by kind (``Batch.counts``): records, engine stats rows, or both."""
    merger, state = target.merger, target.state
    engine = merger.engine
    if batch.stats is not None and type(engine) is not EngineSeries:
        return False  # a subclass records or windows every line: the per-line path feeds it
    rows = batch.rows
    base = len(merger.store)
    if rows is not None:
        assert rows.record is not None  # opened rows come with their lines' ops
        offsets = batch.offsets if target.base_offset == 0 else batch.offsets + target.base_offset
        if not append_records(merger.store, rows, target.file, offsets, batch.lengths, state):
            return False
        meta = state.meta
        if meta:
            merger.apply_meta_defaults(meta, base, len(merger.store))
    by_kind = state.by_kind
    for _first, kind, count in sorted(batch.counts):
        by_kind[kind] = by_kind.get(kind, 0) + count
    state.lines_total += batch.n
    if batch.stats is not None and batch.stats.rows:
        add_stats(engine, batch.stats, merger.sources[target.file])
    return True


def _apply_ops(target: Target, batch: Batch) -> None:
    """A batch with an operation a line: its rows at once when the store allows, else
    line by line with the parser's events."""
    import numpy as np

    merger, state = target.merger, target.state
    line_kinds = batch.ops.copy()
    names = {**(batch.op_kinds or {}), UNPARSED_CODE: LineKind.UNPARSED}
    # The batch's diagnostics are collected, then kept in line order as line by line
    # (the bulk way makes those of updates before those of the carried lines).
    kept, state.diagnostics = state.diagnostics, deque()
    try:
        if not np.any(batch.ops < COUNTED):  # no row line: only carried lines
            for carried in batch.carried:
                merge_carried(target, batch, carried, line_kinds, names)
        elif merger._observer is not None or not apply_opened(target, batch, line_kinds, names):
            _apply_by_line(target, batch, line_kinds, names)
        else:
            # Their events cannot touch the batch's rows, but for the last line's, which
            # comes after all of them: merged after the rows. (The request ends were merged
            # at their places among the rows.)
            for carried in batch.carried:
                if not is_request_event(carried):
                    merge_carried(target, batch, carried, line_kinds, names)
    finally:
        made, state.diagnostics = state.diagnostics, kept
    kept.extend(sorted(made, key=lambda d: d.line_no))
    _count_lines(state, line_kinds, names)


def _count_lines(state: FileState, line_kinds: Any, names: dict[int, str]) -> None:
    """``lines_total`` and ``by_kind``, kinds first seen first (as line by line)."""
    kinds = line_kinds.tobytes()
    by_kind = state.by_kind
    seen = sorted((kinds.find(code), code) for code in set(kinds))
    for _first, code in seen:
        name = names[code]
        by_kind[name] = by_kind.get(name, 0) + kinds.count(code)
    state.lines_total += len(kinds)


def _apply_by_line(target: Target, batch: Batch, line_kinds: Any, names: dict[int, str]) -> None:
    """Every row line merged with the event the parser gives it, and every line the
    parser read with its event, in line order."""
    merger, state, file = target.merger, target.state, target.file
    event_of = batch.event_of
    assert event_of is not None  # a batch with row lines and ops says its lines' events
    meta = state.meta
    request = 0
    carried = iter(batch.carried)
    for line, op in enumerate(batch.ops.tolist()):
        if op == COUNTED:
            continue
        if op == CARRIED:
            merge_carried(target, batch, next(carried), line_kinds, names)
            continue
        event = event_of(line, request)
        request += 1
        offset = int(batch.offsets[line]) + target.base_offset
        length = int(batch.lengths[line])
        line_no = state.lines_total + 1 + line
        try:
            merger.on_event(event, file, meta, offset, length, line_no)
        except Exception as exc:  # the merge changed nothing (core.extraction)
            reason = failure_reason("not merged", exc)
            unparsed(target, batch, line, line_no, reason, line_kinds)
