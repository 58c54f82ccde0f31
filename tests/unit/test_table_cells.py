"""The table's cells, drawn many rows at once (ui/widgets/table_cells.py), say what the
one-row readers say: ``FrozenStore.take`` the values of ``columns[name][row]``, and
``column_skip`` the skip figure ``row_skip`` gives the detail view, on every row of every
sample and real log, in store order and in any order."""

from __future__ import annotations

import json
import math
import random
from dataclasses import replace
from pathlib import Path

import pytest

from sparseety_tui.core.extraction._extractor import Extractor
from sparseety_tui.core.figures._costmodel import DEFAULT_SHAPE, ModelShape
from sparseety_tui.core.figures._figures import INPUT_COLUMNS, column_skip, row_skip
from sparseety_tui.core.store import SEGMENT_ROWS
from sparseety_tui.core.store._frozen import FrozenStore, numeric
from sparseety_tui.ingest.batch import ingest_file
from sparseety_tui.ui.widgets.table_cells import READS, cells_of

TESTS = Path(__file__).resolve().parents[1]
LOGS = sorted(
    p
    for p in [
        *(TESTS.parent / "sample_logs").glob("*.*"),
        *(TESTS / "data" / "real_logs").glob("*.*"),
    ]
    if p.suffix in (".log", ".jsonl", ".txt") and p.is_file()
)
#: A model with experts of its own (from a config): rows without expert counts take them.
MOE = replace(DEFAULT_SHAPE, name="moe", experts=64, topk=6, moe_layer_count=24, from_config=True)


def _store(path: Path) -> FrozenStore:
    extractor = Extractor()
    ingest_file(extractor, str(path))
    return extractor.freeze().store


def _same(a: object, b: object) -> bool:
    nan = isinstance(a, float) and isinstance(b, float) and math.isnan(a) and math.isnan(b)
    return a == b or nan


def _check(store: FrozenStore, shape: ModelShape, rows: list[int]) -> None:
    names = sorted({name for reads in READS.values() for name in reads} | {"state"})
    taken = store.take(rows, names)
    for name in names:
        got = taken[name].tolist()
        want = [store.columns[name][row] for row in rows]
        assert all(_same(g, w) for g, w in zip(got, want, strict=True)), name
    cols = {name: numeric(name, taken[name]) for name in INPUT_COLUMNS}
    extras = [(i, e) for i, row in enumerate(rows) if (e := store.extras.get(row)) is not None]
    skips = column_skip(store, shape, cols, extras)
    assert skips == [row_skip(store, shape, row) for row in rows]


@pytest.mark.parametrize("path", LOGS, ids=lambda p: p.name)
def test_cells_of_every_row_agree_with_the_one_row_readers(path: Path) -> None:
    store = _store(path)
    rows = list(range(len(store)))
    for shape in (DEFAULT_SHAPE, MOE):
        _check(store, shape, rows)
        shuffled = rows[:]
        random.Random(7).shuffle(shuffled)
        _check(store, shape, shuffled)


def test_rows_across_segments_and_out_of_order(tmp_path: Path) -> None:
    # Rows of several segments (a run crossing a segment's end, single rows, repeats),
    # with per-token routing extras on some: each value lands at its own index.
    log = tmp_path / "t.jsonl"
    lines = []
    for i in range(SEGMENT_ROWS * 2 + 10):
        record: dict[str, object] = {
            "request_id": f"r{i}",
            "prompt_tokens": i % 700,
            "completion_tokens": (i * 7) % 50 if i % 5 else None,
            "cached_tokens": i % 3 if i % 4 else None,
            "latency_s": i / 1000,
        }
        if i % 1000 == 3:
            record["sparse"] = {"topk_experts": 2, "total_experts": 8}
        lines.append(json.dumps({k: v for k, v in record.items() if v is not None}) + "\n")
    log.write_text("".join(lines))
    store = _store(log)
    n = len(store)
    assert n == SEGMENT_ROWS * 2 + 10
    rows = [
        *range(SEGMENT_ROWS - 5, SEGMENT_ROWS + 5),
        3,
        n - 1,
        3,
        *range(2 * SEGMENT_ROWS + 9, 2 * SEGMENT_ROWS - 3, -1),
        1003,
    ]
    _check(store, MOE, rows)
    cells = cells_of(store, MOE, rows, list(READS), "%H:%M:%S", ())
    assert [c.cells["prompt"][0] for c in cells] == [str(row % 700) for row in rows]
