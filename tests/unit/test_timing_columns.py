"""The request table's timing group of columns: what fits 80 columns, what the cells say
(``ui.widgets.table_columns``, ``ui.widgets.table_cells``), and the Time tab's bar."""

from __future__ import annotations

import math

import pytest

from sparseety_tui.ingest.batch import Options, ingest_paths, make_shape
from sparseety_tui.ui.screens.detail_time import bar_cells, parts_of
from sparseety_tui.ui.widgets.table_cells import cells_of
from sparseety_tui.ui.widgets.table_columns import COLUMNS, TIMING_KEYS, layout_columns


def keys(width: int, **kwargs: bool) -> list[str]:
    return [column.key for column, _ in layout_columns(width, **kwargs)]


def test_without_the_group_the_columns_are_as_they_were() -> None:
    for width in (60, 78, 91, 120, 200):
        assert not set(keys(width)) & set(TIMING_KEYS)
    assert keys(400) == [c.key for c in COLUMNS if c.key not in (*TIMING_KEYS, "file")]


def test_at_80_columns_the_time_figures_come_first() -> None:
    assert keys(78, timing=True) == [
        "time", "id", "state", "queue", "prefill", "decode", "ttft", "latency", "why",
    ]  # fmt: skip
    widths = layout_columns(78, timing=True)
    assert sum(w for _, w in widths) + len(widths) - 1 <= 78
    wide = keys(400, timing=True, with_file=True)
    assert wide[-6:] == ["queue", "prefill", "decode", "ttft", "latency", "why"]
    assert len(wide) == len(COLUMNS)


def test_cells_say_unknown_never_zero_and_the_dominant_part() -> None:
    state = ingest_paths(Options(), ["tests/app/data/timing.jsonl"]).freeze()
    store = state.store
    row = store.ids.index("chatcmpl-0020c")  # its latency alone
    spiked = store.ids.index("chatcmpl-0035f")
    drawn = cells_of(
        store,
        make_shape(Options()),
        [row, spiked],
        ["queue", "prefill", "decode", "why", "latency"],
        "%H:%M:%S",
        ["timing.jsonl"],
    )
    alone, queued = (d.cells for d in drawn)
    assert [alone[k][0] for k in ("queue", "prefill", "decode", "why")] == ["—"] * 4
    assert alone["latency"][0] == "2.86s"
    assert queued["why"][0] == "queue" and queued["queue"][0] == "7.18s"


def test_the_bar_is_in_proportion_and_keeps_small_parts() -> None:
    # The tiny part keeps a cell, taken from the largest.
    assert bar_cells([8.0, 0.01, 2.0], 10.0, 50) == [39, 1, 10]
    assert sum(bar_cells([1.0, 1.0, 1.0], 3.0, 10)) == 10
    assert bar_cells([math.nan, 1.0], 1.0, 10) == [0, 10]
    assert bar_cells([1.0], math.nan, 10) == [0]


def test_parts_other_is_the_rest_and_unknown_stays_unknown() -> None:
    parts, latency, total = parts_of(
        {"queue_s": 1.0, "prefill_s": None, "decode_s": 2.0, "latency_s": 4.0}
    )
    assert math.isnan(parts["prefill"]) and parts["other"] == pytest.approx(1.0)
    assert (latency, total) == (4.0, 4.0)
    # Parts adding to more than the latency (other clocks): no other, the bar their sum.
    parts, _, total = parts_of({"queue_s": 3.0, "decode_s": 2.0, "latency_s": 4.0})
    assert math.isnan(parts["other"]) and total == 5.0
    parts, latency, total = parts_of({"queue_s": 1.0})
    assert math.isnan(latency) and total == 1.0 and math.isnan(parts["other"])
