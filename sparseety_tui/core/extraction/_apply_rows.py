"""The rows of a fast-path batch (``sparseety_tui.batch.NewRows``), made in one step.

Two kinds of rows. Complete request records (``append_records``): the rules that combine
a record's fields are those ``Merger._on_request`` applies to one record line, computed a
column at a time. Opened requests with the lines that update them (``apply_opened``): new
rows whose columns are given, then each update line at its place (its row is made
running at its time, its line recorded), the rows opened (``core.extraction``) in line
order with the request ends the batch carries.

A batch is taken only when the store allows it (every new id is new; each carried end
commutes with the rows); otherwise nothing changes and the caller reads it line by line.
"""

from __future__ import annotations

import math
from array import array
from itertools import repeat
from typing import Any

from sparseety_tui.batch import NEW_ROW, UPDATE_ROW, Batch, CarriedLine, IdBlob, Names, NewRows
from sparseety_tui.core.extraction._apply_lines import (
    Target,
    is_request_event,
    merge_carried,
    unparsed,
)
from sparseety_tui.core.extraction._lifecycle import OPEN_CODES
from sparseety_tui.core.extraction._merge import Merger
from sparseety_tui.core.store import (
    COUNT_IDS_LOWER_BOUND,
    COUNT_REPORTED,
    FLOAT32_MAX,
    KV_SKIP_NAMES,
    PHASE_COLUMNS,
    ROW_LAYOUT,
    STATE_CODE,
    TIMING_FROM,
    TRACE_COLUMNS,
    UNKNOWN,
    EncodedIds,
    FileState,
    RequestStore,
    unknown_of,
)
from sparseety_tui.events import RequestPayload
from sparseety_tui.formats import TIME_END, failure_reason

_FINISHED = STATE_CODE["finished"]
_FINISHING = ("finished", "aborted")
_STARTING = ("received", "running")
#: Store columns that only a per-line merge sets for a record: sampling parameters (a
#: record with ``sampling`` is not simple), the bound core.extraction gives an unlogged end,
#: the timing a span gives and its ids (a record with them is not simple either), and where
#: its times come from (code 0: as its file says).
_NOT_IN_RECORDS = (
    "max_tokens",
    "sampling_n",
    "temperature",
    "top_p",
    "ended_by_ts",
    "preemptions",
    *PHASE_COLUMNS,
    *TIMING_FROM.values(),
    *TRACE_COLUMNS,
)
#: Meta keys that default a row's columns (``Merger.apply_meta_defaults``).
_META_DEFAULT_KEYS = frozenset(("topk_experts", "total_experts", "total_attention_heads"))


def _encoded(ids: list[str] | IdBlob) -> list[str] | EncodedIds:
    return EncodedIds(ids.blob, ids.ends, ids.hashes) if isinstance(ids, IdBlob) else ids


def _all_new(store: RequestStore, ids: list[str] | EncodedIds) -> bool:
    """Whether every id is new to the store and to the others (and names no row a span
    made under its engine-side id: that one joins it, on the per-line path)."""
    if store.span_aliases and not store.span_aliases.keys().isdisjoint(ids):
        return False
    if isinstance(ids, EncodedIds):
        return store.ids.all_new(ids)
    return len(set(ids)) == len(ids) and "" not in ids and not store.ids.any_present(ids)


def _name_codes(names: Names, table: dict[str, int]) -> Any:
    """Store codes of a names column (0: none, or a name the store does not know)."""
    import numpy as np

    codes = np.array([0, *(table.get(name, 0) for name in names.table)], dtype=np.uint8)
    return codes[names.codes]


def _name_flags(names: Names, flagged: tuple[str, ...], none: bool) -> Any:
    """Per row, whether its name is one of ``flagged`` (``none`` for no name)."""
    import numpy as np

    return np.array([none, *(name in flagged for name in names.table)])[names.codes]


def append_records(
    store: RequestStore,
    rows: NewRows,
    file: int,
    offsets: Any,
    lengths: Any,
    state: FileState,
) -> bool:
    """Append one row per record (lines numbered on from ``state.lines_total``); False
    (nothing changed) when an id repeats or is already known."""
    import numpy as np

    record = rows.record
    assert record is not None
    ids = _encoded(rows.ids)
    if not _all_new(store, ids):
        return False
    n = len(ids)
    times = record.times
    # Index 0 of every lookup is "absent or null"; models are named in first-seen order.
    models = np.array([0, *map(store.model_code, record.model.table)], dtype=np.uint16)
    out: dict[str, Any] = dict(record.counts)
    # Beyond float32 a duration would be stored as infinity: unknown, as per line.
    latency = np.where(times["latency_s"] <= FLOAT32_MAX, times["latency_s"], math.nan)
    out["latency_s"] = latency
    out["ttft_s"] = np.where(times["ttft_s"] <= FLOAT32_MAX, times["ttft_s"], math.nan)
    out["kv_skip"] = _name_codes(record.kv_skip, KV_SKIP_NAMES)
    # A line that reports an outcome and no state is a finished request (as per line).
    states = _name_codes(rows.state, STATE_CODE)
    out["state"] = np.where((states == 0) & record.reports_outcome, _FINISHED, states)
    ts = times["ts"]
    finishing = _name_flags(rows.state, _FINISHING, True)
    starting = _name_flags(rows.state, _STARTING, False)
    finished = np.where(np.isnan(times["finished_ts"]) & finishing, ts, times["finished_ts"])
    received = np.where(np.isnan(times["received_ts"]) & starting, ts, times["received_ts"])
    # The per-line path derives the start from the float32 latency it stored: do the same.
    derived = finished - latency.astype(np.float32).astype(np.float64)
    derived[~((derived >= 0) & (derived < TIME_END))] = math.nan  # no date: no start
    out["received_ts"] = np.where(np.isnan(received), derived, received)
    out["finished_ts"] = finished
    out["cache_hit"] = record.cache_hit
    out["prompt_source"] = np.where(out["prompt_tokens"] >= 0, COUNT_REPORTED, 0)
    out["completion_source"] = np.where(out["completion_tokens"] >= 0, COUNT_REPORTED, 0)
    out["model"] = models[record.model.codes]
    for name in _NOT_IN_RECORDS:
        column = store.columns[name]
        out[name] = np.full(n, unknown_of(column.typecode), dtype=column.typecode)
    first = state.lines_total + 1
    store.extend_rows(
        ids,
        {name: out[name] for name in ROW_LAYOUT},
        file,
        offsets,
        lengths,
        np.arange(first, first + n, dtype=np.int32),
    )
    return True


# -- opened requests and their updates ---------------------------------------------------


def apply_opened(target: Target, batch: Batch, line_kinds: Any, names: dict[int, str]) -> bool:
    """The batch's new rows and updates at once; False (nothing changed) when the store
    does not allow it (a known id, an update of a row made after it or never...)."""
    import numpy as np

    merger, state = target.merger, target.state
    store = merger.store
    rows, updates = batch.rows, batch.updates
    ops = batch.ops
    request_lines = np.flatnonzero(ops <= UPDATE_ROW)
    is_new = ops[request_lines] == NEW_ROW
    update_ids = updates.ids if updates is not None else []
    k = int(np.count_nonzero(is_new))
    if rows is not None and rows.record is not None:
        return False  # complete records take no updates
    new_ids = _new_id_strings(rows)
    encoded = _encoded(rows.ids) if rows is not None else []
    if rows is not None and not _all_new(store, encoded):
        return False  # a known id (or two ids of one hash): merged line by line
    new_at = np.flatnonzero(is_new)  # request index of each new row's line
    update_at = np.flatnonzero(~is_new)
    if not ends_commute(target, batch, request_lines, new_ids, update_ids):
        return False  # a request's end that only line by line merges as it should
    base = len(store)
    update_rows = _update_rows(store, updates, new_ids, base)
    if update_rows is None:
        return False  # an update makes a new row: line by line
    new = update_rows >= base
    if np.any(new_at[update_rows[new] - base] > update_at[new]):
        return False  # an update before its row's line: line by line
    if updates is not None and updates.state not in _STARTING:
        return False  # only a start sets the received time: line by line
    meta = state.meta
    if k:
        assert rows is not None
        _extend_opened(target, batch, rows, encoded, request_lines[is_new], update_rows, new)
    update_lines = request_lines[~is_new]
    ts = updates.ts if updates is not None else np.zeros(0)
    _update_lines(target, batch, update_rows, update_ids, update_lines, ts, line_kinds, names)
    if meta and k and not _META_DEFAULT_KEYS.isdisjoint(meta):
        merger.apply_meta_defaults(meta, base, base + k)
    return True


def _new_id_strings(rows: NewRows | None) -> list[str]:
    if rows is None:
        return []
    ids = rows.ids
    if isinstance(ids, IdBlob):
        return ids.strings if ids.strings is not None else list(_encoded(ids))
    return ids


def _update_rows(store: RequestStore, updates: Any, new_ids: list[str], base: int) -> Any | None:
    """The row of each update: a new row of the batch (its last before it), or an older
    one; None when an update names a row that does not exist."""
    import numpy as np

    if updates is None:
        return np.zeros(0, dtype=np.int64)
    ids = updates.ids
    if updates.refs is not None:  # the new row of each update, from the fast path
        rows = np.where(updates.refs >= 0, updates.refs.astype(np.int64) + base, -1)
    else:
        made = dict(zip(new_ids, range(base, base + len(new_ids))))
        rows = np.fromiter(map(made.get, ids, repeat(-1)), dtype=np.int64, count=len(ids))
    for i in np.flatnonzero(rows < 0).tolist():
        older = store.ids.find(ids[i])
        if older is None:
            return None
        rows[i] = older
    return rows


def _extend_opened(
    target: Target,
    batch: Batch,
    rows: NewRows,
    encoded: list[str] | EncodedIds,
    new_lines: Any,
    update_rows: Any,
    new: Any,
) -> None:
    """The new rows, in one ``extend_rows``: their columns as given, the state and
    received time the batch's updates of them leave."""
    import numpy as np

    store, state = target.merger.store, target.state
    updates = batch.updates
    base = len(store)
    k = len(new_lines)
    columns: dict[str, Any] = dict(rows.columns)
    states = _name_codes(rows.state, STATE_CODE)
    if updates is not None and np.any(new):
        received_ts = columns["received_ts"].copy()
        added_new = update_rows[new] - base
        added_ts = updates.ts[new]
        states[added_new] = STATE_CODE[updates.state]
        # merge_row writes an update's time unless it reads as unknown (-1); the last wins.
        known = added_ts != UNKNOWN
        last_rows, last_at = np.unique(added_new[known][::-1], return_index=True)
        received_ts[last_rows] = added_ts[known][::-1][last_at]
        columns["received_ts"] = received_ts
    columns["state"] = states
    if "prompt_tokens" in columns:
        prompt = columns["prompt_tokens"]
        source = np.where(prompt >= 0, COUNT_REPORTED, 0).astype(np.uint8)
        cut = state.meta.get("max_log_len") if state.meta else None
        if rows.prompt_ids_logged and type(cut) is int and cut > 0:
            source[prompt >= cut] = COUNT_IDS_LOWER_BOUND
        columns["prompt_source"] = source
    offsets = batch.offsets + target.base_offset
    store.extend_rows(
        encoded,
        columns,
        target.file,
        offsets[new_lines],
        batch.lengths[new_lines],
        state.lines_total + 1 + new_lines,
        unknown=[name for name in ROW_LAYOUT if name not in columns],  # no line says them
    )
    # (New rows need no ``store.touch``: they are at or above ``dirty_from``, which is at
    # most the store's length before them.)
    assert len(store) == base + k


def ends_commute(
    target: Target, batch: Batch, request_lines: Any, new_ids: list[str], update_ids: list[str]
) -> bool:
    """Whether each request end the batch carries can be merged after the batch's rows
    with the effect it has at its line: its row is there before its line (an older row,
    or one a line of the batch makes before it) and no later line of the batch names it
    (so it changes the row the last, at either place). An end of an id with no row would
    make a new row at its place among the batch's. (The ends are merged among the
    opening of the batch's rows in line order, ``_update_lines``: a compaction of the
    open rows drops those that ended before it.)"""
    import numpy as np

    ends = _ends(batch)
    if not ends:
        return True
    store = target.merger.store
    # (A few ends a batch: list searches in C, not a dict of every id of the batch.)
    ops = batch.ops
    new_lines = request_lines[ops[request_lines] == NEW_ROW]
    update_lines = request_lines[ops[request_lines] == UPDATE_ROW]
    for i, carried in enumerate(ends):
        assert carried.event is not None and carried.event[0] == "request"
        rid = carried.event[1]["request_id"]
        line = carried.line
        if (
            rid in new_ids[int(np.searchsorted(new_lines, line)) :]
            or rid in update_ids[int(np.searchsorted(update_lines, line)) :]
            or any(_request_id(c) == rid for c in ends[i + 1 :])
        ):
            return False
        made = rid in new_ids and new_lines[new_ids.index(rid)] < line
        if not made and store.ids.find(rid) is None:
            return False
    return True


def _ends(batch: Batch) -> list[CarriedLine]:
    """The request ends the batch carries (its only carried request events)."""
    return [c for c in batch.carried if is_request_event(c)]


def _request_id(carried: CarriedLine) -> object:
    event = carried.event
    return event[1]["request_id"] if event is not None and event[0] == "request" else None


def _update_lines(
    target: Target,
    batch: Batch,
    rows: Any,
    ids: list[str],
    lines: Any,
    times: Any,
    line_kinds: Any,
    names: dict[int, str],
) -> None:
    """Each update line at its place: recorded on its row (new rows), or merged as the
    per-line path does (older rows); new rows are opened (``core.extraction``) in line
    order with the older rows an update opens again and the request ends the batch
    carries (a compaction of the open rows drops those ended before it)."""
    import numpy as np

    merger, state, file = target.merger, target.state, target.file
    store = merger.store
    new_lines = np.flatnonzero(batch.ops == NEW_ROW)
    base = len(store) - len(new_lines)
    opened = 0  # new rows opened so far
    absolute = batch.offsets + target.base_offset
    order = np.argsort(rows, kind="stable")
    ascending = rows[order]
    ends = _ends(batch)
    if not len(rows) or (ascending[0] >= base and bool(np.all(np.diff(ascending) > 0))):
        # The common batch: one update for each of some new rows (their first more
        # line), kept in arrays (core.store), no object a row.
        added = lines[order]
        store.more_lines.add_singles(ascending, file, absolute[added], batch.lengths[added])
        for end in ends:
            upto = int(np.searchsorted(new_lines, end.line))
            _open_rows(merger, range(base + opened, base + upto), file)
            opened = upto
            merge_carried(target, batch, end, line_kinds, names)
        _open_rows(merger, range(base + opened, len(store)), file)
        return
    offsets = absolute[lines].tolist()
    lengths = batch.lengths[lines].tolist()
    row_list = rows.tolist()
    in_order = sorted(
        [(int(line), 0, j) for j, line in enumerate(lines.tolist())]
        + [(end.line, 1, i) for i, end in enumerate(ends)]
    )
    assert batch.updates is not None
    update_state = batch.updates.state
    for line, is_end, j in in_order:
        if not is_end and row_list[j] >= base:
            store.add_line(row_list[j], file, offsets[j], lengths[j])
            continue
        upto = int(np.searchsorted(new_lines, line))
        _open_rows(merger, range(base + opened, base + upto), file)
        opened = upto
        if is_end:
            merge_carried(target, batch, ends[j], line_kinds, names)
            continue
        payload: RequestPayload = {
            "request_id": ids[j],
            "state": update_state,
            "ts": float(times[j]),
        }
        line_no = state.lines_total + 1 + line
        try:
            merger.on_event(("request", payload), file, state.meta, offsets[j], lengths[j], line_no)
        except Exception as exc:  # the merge changed nothing (core.extraction)
            unparsed(target, batch, line, line_no, failure_reason("not merged", exc), line_kinds)
    _open_rows(merger, range(base + opened, len(store)), file)


def _open_rows(merger: Merger, rows: range, file: int) -> None:
    """``Lifecycle.opened`` for each of ``rows`` in turn, its list extended a stretch at a
    time: compacted exactly when one call per row would have compacted it."""
    import numpy as np

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
