"""The request table's cell texts for many rows at once.

A frame of a table that follows a busy log shows ~45 rows none of which it drew before.
Read cell by cell (a numpy ``.item()`` each, the skip figure through the cost model one
row at a time) they took about a third of the frame; here each column is gathered once
for all the rows (``FrozenStore.take``: a slice per run of consecutive rows) and the skip
figures are computed over the rows together (``core.figures.column_skip``, the same rules
as ``row_skip``). What a cell says is decided here only: the widget adds the id labels,
widths and styles.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from sparseety_tui.core.figures import COMPONENTS, INPUT_COLUMNS, ModelShape, column_skip, dominant
from sparseety_tui.core.store import STATES, FrozenStore, numeric
from sparseety_tui.formats import utc_text
from sparseety_tui.ui.fmt import fmt_count, fmt_seconds
from sparseety_tui.ui.safe_text import escape
from sparseety_tui.ui.widgets.counts import count_text

#: States shown otherwise than by name: "end_unlogged" does not fit the 8-cell column, and
#: ``state~unlogged`` finds what the table shows.
STATE_LABELS = {"unknown": "—", "end_unlogged": "unlogged"}
#: The store columns each table column reads ("id" is the widget's: its labels).
READS: Mapping[str, tuple[str, ...]] = {
    "time": ("received_ts", "finished_ts"),
    "model": ("model",),
    "file": ("file",),
    "state": (),
    "prompt": ("prompt_tokens", "prompt_source"),
    "completion": ("completion_tokens", "completion_source"),
    "cached": ("cached_tokens",),
    "skip": INPUT_COLUMNS,
    "experts": ("topk_experts", "total_experts"),
    "latency": ("latency_s",),
    "ttft": ("ttft_s",),
    "queue": ("queue_s",),
    "prefill": ("prefill_s",),
    "decode": ("decode_s",),
    "why": ("queue_s", "prefill_s", "decode_s", "latency_s"),
}
#: The timing columns that are a store column of seconds as it is.
SECONDS = {
    "latency": "latency_s",
    "ttft": "ttft_s",
    "queue": "queue_s",
    "prefill": "prefill_s",
    "decode": "decode_s",
}

#: How a cell is styled: the widget's own style, dimmed, the row's state's, the skip accent.
BASE, DIM, STATE, SKIP = "base", "dim", "state", "skip"


@dataclass(frozen=True)
class RowCells:
    state: str  # the row's state (core.store.STATES)
    cells: dict[str, tuple[str, str]]  # table column key -> (text, BASE/DIM/STATE/SKIP)


def cells_of(
    store: FrozenStore,
    shape: ModelShape,
    rows: Sequence[int],
    keys: Sequence[str],
    pattern: str,
    file_names: Sequence[str],
) -> list[RowCells]:
    """The cells of columns ``keys`` of store rows ``rows``; ``pattern``: how the
    ``received`` column writes a time; ``file_names``: each Extractor file's short name."""
    keys = [key for key in keys if key in READS]
    names = sorted({"state", *(name for key in keys for name in READS[key])})
    raw = store.take(rows, names)
    values: dict[str, list[Any]] = {name: raw[name].tolist() for name in names}
    skips: list[tuple[float | None, bool]] = []
    if "skip" in keys:
        cols = {name: numeric(name, raw[name]) for name in INPUT_COLUMNS}
        extras = store.extras
        skips = column_skip(
            store,
            shape,
            cols,
            [(i, e) for i, row in enumerate(rows) if (e := extras.get(row)) is not None],
        )
    if "why" in keys:
        # The part of each row's latency that dominated, as the ``why=`` filter finds it.
        codes = dominant(*(raw[name] for name in READS["why"]))[0].tolist()
        values["why"] = [COMPONENTS[c] if c >= 0 else "—" for c in codes]
    times: dict[float, str] = {}  # rows a frame shows are mostly in the same few seconds
    out = []
    for i in range(len(rows)):
        state = STATES[values["state"][i]]
        cells: dict[str, tuple[str, str]] = {}
        for key in keys:
            if key == "time":
                cells[key] = _time_cell(values, i, pattern, times)
            else:
                cells[key] = _cell(key, i, values, state, skips, store.models, file_names)
        out.append(RowCells(state, cells))
    return out


def _time_cell(
    v: Mapping[str, list[Any]], i: int, pattern: str, seen: dict[float, str]
) -> tuple[str, str]:
    ts = v["received_ts"][i]
    if math.isnan(ts):
        ts = v["finished_ts"][i]
    if ts != ts:
        return "—", DIM
    second = math.floor(ts) if math.isfinite(ts) else ts
    text = seen.get(second)
    if text is None:
        text = seen[second] = utc_text(ts, pattern) or "—"
    return text, DIM


def _cell(
    key: str,
    i: int,
    v: Mapping[str, list[Any]],
    state: str,
    skips: Sequence[tuple[float | None, bool]],
    models: Sequence[str],
    file_names: Sequence[str],
) -> tuple[str, str]:
    if key == "model":
        return escape(models[v["model"][i]]) or "—", DIM
    if key == "file":
        file = v["file"][i]
        return (file_names[file] if 0 <= file < len(file_names) else "—"), DIM
    if key == "state":
        return STATE_LABELS.get(state, state), DIM if state == "unknown" else STATE
    if key in ("prompt", "completion"):
        # "≥": the log cut the text or ids this was counted from (--max-log-len).
        return count_text(v[f"{key}_tokens"][i], v[f"{key}_source"][i]), BASE
    if key == "cached":
        return fmt_count(v["cached_tokens"][i]), BASE
    if key == "skip":
        ratio, lower = skips[i]
        if ratio is None:
            return "—", DIM
        return f"{'≥' if lower else ''}{ratio * 100:.1f}", SKIP if ratio > 0 else BASE
    if key == "experts":
        k, e = v["topk_experts"][i], v["total_experts"][i]
        if k < 0 and e < 0:
            return "—", DIM
        return f"{fmt_count(k)}/{fmt_count(e)}", BASE
    if key in SECONDS:
        return fmt_seconds(v[SECONDS[key]][i]), BASE
    if key == "why":
        why = v["why"][i]
        return why, DIM if why == "—" else BASE
    raise KeyError(key)


def copy_cells(
    store: FrozenStore,
    shape: ModelShape,
    row: int,
    columns: Sequence[Any],
    pattern: str,
    file_names: Sequence[str],
) -> list[tuple[str, str]]:
    """Store row ``row`` in ``columns`` (``table_columns.Column``) as (title, text) pairs,
    the id whole rather than shortened: what copying a row hands out."""
    (drawn,) = cells_of(store, shape, [row], [c.key for c in columns], pattern, file_names)
    return [
        (
            column.title.replace(" ", "_"),
            escape(store.ids[row]) if column.key == "id" else drawn.cells[column.key][0],
        )
        for column in columns
    ]
