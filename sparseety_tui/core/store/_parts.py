"""A file read in byte ranges: each range's store sent back as a ``StorePart`` and merged.

``export_part`` gives a store's rows in a picklable form; ``merge_part`` appends a later
part's rows to a store as if its lines had been fed there, in order. Only requests that
straddle a range boundary are in both: those rows are merged with the store's one rule
(``RequestStore.merge_row``: a known value wins), every other row is appended in bulk.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol

from sparseety_tui.core.store._idindex import IdIndex
from sparseety_tui.core.store._layout import ROW_LAYOUT, TIMING_FROM, RowExtras
from sparseety_tui.core.store._lazy import Column
from sparseety_tui.core.store._line_table import LineTable, MoreLines
from sparseety_tui.core.store._segments import RowTable, SegmentedColumn

if TYPE_CHECKING:
    import numpy as np


@dataclass
class StorePart:
    """A store's rows in a picklable form: what a reader of one byte range of a file sends
    back to be merged (``RequestStore.export_part`` / ``merge_part``)."""

    ids: IdIndex
    columns: dict[str, bytes]
    offsets: bytes
    lengths: bytes
    models: list[str]
    extras: dict[int, RowExtras]
    more_lines: dict[int, MoreLines]
    #: Rows a span made under an engine-side id, by the API id (``RequestStore``).
    span_aliases: dict[str, int] = field(default_factory=dict)


class _Store(Protocol):
    """What a part is exported from and merged into: a ``RequestStore``'s columns, ids,
    line places and extras, and its rule for merging a row (``merge_row``)."""

    ids: IdIndex
    models: list[str]
    columns: dict[str, Column]
    offset: SegmentedColumn
    length: SegmentedColumn
    extras: RowTable[RowExtras]
    more_lines: LineTable
    span_aliases: dict[str, int]

    def __len__(self) -> int: ...
    def model_code(self, name: str) -> int: ...
    def add_line(self, row: int, file: int, offset: int, length: int) -> None: ...
    def merge_row(self, row: int, values: tuple[Any, ...]) -> None: ...
    def extras_for(self, row: int) -> RowExtras: ...


def export_part(store: _Store) -> StorePart:
    """The store's rows, to be merged into another store (``merge_part``)."""
    return StorePart(
        ids=store.ids,
        columns={name: col.tobytes() for name, col in store.columns.items()},
        offsets=store.offset.tobytes(),
        lengths=store.length.tobytes(),
        models=store.models,
        extras=dict(store.extras.items()),
        more_lines=dict(store.more_lines.items()),
        span_aliases=dict(store.span_aliases),
    )


def merge_part(
    store: _Store,
    part: StorePart,
    file: int,
    line_shift: int,
    renames: Mapping[str, str] | None,
) -> None:
    """Append the rows of a later part of file ``file`` (whose first line is line
    ``line_shift + 1``) to ``store``, as if its lines had been fed there: a request id
    already there (or renamed to one by ``renames``) is merged with ``merge_row``'s rule, a
    known value wins; every other row is appended, in order. A span's row and its
    request's lines in different parts are one row too (``_span_renames``)."""
    if part.span_aliases or store.span_aliases:
        renames = _span_renames(store, part, renames)
    incoming = _incoming_columns(store, part, file, line_shift)
    if not renames and not store.ids.shares_ids_with(part.ids):
        _append_all(store, part, incoming, file)
        _keep_aliases(store, part, list(part.ids) if part.span_aliases else [])
        return
    # Most rows are new here too (only requests that straddle a boundary are shared):
    # new rows are appended in bulk, in order; shared rows merged one by one.
    part_ids = list(part.ids)
    if renames:
        part_ids = [renames.get(rid, rid) for rid in part_ids]
    find = store.ids.find
    shared = [i for i, rid in enumerate(part_ids) if find(rid) is not None]
    _append_new(store, part, incoming, file, part_ids, shared)
    _merge_shared(store, part, incoming, file, part_ids, shared)
    _keep_aliases(store, part, part_ids)


def _keep_aliases(store: _Store, part: StorePart, part_ids: list[str]) -> None:
    """The part's span rows whose request is still to come, by their rows here."""
    find = store.ids.find
    for base, row in part.span_aliases.items():
        found = find(part_ids[row])
        if found is not None and find(base) is None:
            store.span_aliases.setdefault(base, found)


def _span_renames(
    store: _Store, part: StorePart, renames: Mapping[str, str] | None
) -> dict[str, str]:
    """``renames`` and the ids a span joins across parts: a part's request whose span
    made a row of the store under its engine-side id, and a part's span row (engine-side
    id) whose request the store has under its API id."""
    out = dict(renames or {})
    ids = part.ids
    for base, row in store.span_aliases.items():
        if ids.find(base) is not None:
            out.setdefault(base, store.ids[row])
    for base, row in part.span_aliases.items():
        if store.ids.find(base) is not None and ids.find(base) is None:
            out.setdefault(ids[row], base)
    return out


def _incoming_columns(
    store: _Store, part: StorePart, file: int, line_shift: int
) -> dict[str, np.ndarray[Any, Any]]:
    """The part's columns as numpy arrays in this store's terms: its model codes mapped to
    this store's, its rows in file ``file``, its line numbers counted from the file's
    first line."""
    import numpy as np

    model_map = np.array([store.model_code(name) for name in part.models], dtype=np.uint16)
    incoming: dict[str, Any] = {}
    for name, raw in part.columns.items():
        incoming[name] = np.frombuffer(raw, dtype=np.dtype(store.columns[name].typecode)).copy()
    if len(model_map):
        incoming["model"] = model_map[incoming["model"]]
    incoming["file"][:] = file
    incoming["line_no"] += line_shift
    return incoming


def _append_all(store: _Store, part: StorePart, incoming: Mapping[str, Any], file: int) -> None:
    """Append every row of a part that shares no request with the store."""
    base = len(store)
    for name, values in incoming.items():
        store.columns[name].frombytes(values.tobytes())
    store.offset.frombytes(part.offsets)
    store.length.frombytes(part.lengths)
    store.ids.extend_from(part.ids)
    for row, extras in part.extras.items():
        store.extras[base + row] = extras
    for row, more in part.more_lines.items():
        store.more_lines[base + row] = _in_file(more, file)


def _append_new(
    store: _Store,
    part: StorePart,
    incoming: Mapping[str, Any],
    file: int,
    part_ids: list[str],
    shared: list[int],
) -> None:
    """Append the part's rows but those of ``shared`` (requests the store has), in order."""
    import numpy as np

    base = len(store)
    keep = np.ones(len(part_ids), dtype=bool)
    keep[shared] = False
    for name, values in incoming.items():
        store.columns[name].frombytes(values[keep].tobytes())
    offsets = np.frombuffer(part.offsets, dtype=np.int64)
    lengths = np.frombuffer(part.lengths, dtype=np.uint32)
    store.offset.frombytes(offsets[keep].tobytes())
    store.length.frombytes(lengths[keep].tobytes())
    store.ids.extend([part_ids[i] for i in np.flatnonzero(keep).tolist()])
    new_row = np.cumsum(keep) - 1 + base
    for i, extras in part.extras.items():
        if keep[i]:
            store.extras[int(new_row[i])] = extras
    for i, more in part.more_lines.items():
        if keep[i]:
            store.more_lines[int(new_row[i])] = _in_file(more, file)


def _merge_shared(
    store: _Store,
    part: StorePart,
    incoming: Mapping[str, Any],
    file: int,
    part_ids: list[str],
    shared: list[int],
) -> None:
    """Merge the part's rows of ``shared`` into the store's rows of the same requests: their
    lines are added, their values merged (``merge_row``), their extras added."""
    import numpy as np

    offsets = np.frombuffer(part.offsets, dtype=np.int64)
    lengths = np.frombuffer(part.lengths, dtype=np.uint32)
    layout = [incoming[name] for name in ROW_LAYOUT]
    find = store.ids.find
    for i in shared:
        found = find(part_ids[i])
        assert found is not None
        row = found
        store.add_line(row, file, int(offsets[i]), int(lengths[i]))
        for _f, offset, length in part.more_lines.get(i, ()):
            store.add_line(row, file, offset, length)
        store.merge_row(row, tuple(values[i].item() for values in layout))
        _timing_sources(store, incoming, i, row)
        part_extras = part.extras.get(i)
        if part_extras is not None:
            store.extras_for(row).add(part_extras)


def _timing_sources(store: _Store, incoming: Mapping[str, Any], i: int, row: int) -> None:
    """A later part's timing value said as its file says (code 0) is the row's now: its
    source too, which ``merge_row`` leaves (it writes no code 0)."""
    for name, code_name in TIMING_FROM.items():
        value = incoming[name][i].item()
        if incoming[code_name][i] == 0 and value == value and value != -1:
            codes = store.columns[code_name]
            if codes[row] != 0:
                codes[row] = 0


def _in_file(more: MoreLines, file: int) -> MoreLines:
    """A part's line locations pointed at file ``file``."""
    return tuple([(file, offset, length) for _f, offset, length in more])
