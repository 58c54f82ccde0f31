"""Which rows a snapshot says are unchanged since an older state (``Snapshot.changes``):
the request table keeps a row drawn from that state only below that bound, over a running
worker's freezes."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np

from sparseety_tui.core.extraction._extractor import Extractor
from sparseety_tui.core.figures._costmodel import DEFAULT_SHAPE
from sparseety_tui.ingest.snapshot import LiveOptions, Snapshot
from sparseety_tui.ingest.worker import IngestWorker


def _record(i: int, **extra: object) -> str:
    data = {"request_id": f"r{i:04d}", "prompt_tokens": 10 + i, "latency_s": i / 10}
    return json.dumps({**data, **extra}) + "\n"


def _rows(snap: Snapshot) -> list[tuple[object, ...]]:
    assert snap.state is not None
    store = snap.state.store
    names = sorted(store.columns)
    return [
        (store.ids[row], *(store.columns[name][row] for name in names)) for row in range(len(store))
    ]


def _same(a: object, b: object) -> bool:
    return a == b or (isinstance(a, float) and isinstance(b, float) and np.isnan(a) and np.isnan(b))


def test_rows_below_the_bound_are_the_same_and_a_changed_row_is_not_below_it(
    tmp_path: Path,
) -> None:
    log = tmp_path / "live.jsonl"
    log.write_text("".join(_record(i) for i in range(6)))
    worker = IngestWorker(
        Extractor(), DEFAULT_SHAPE, LiveOptions(paths=(str(log),), track_rate=False)
    )
    worker.start()
    try:
        assert worker.drain()
        before = worker.snapshot
        assert before.state is not None
        assert before.unchanged_below(before.state.version) == 6
        with log.open("a") as f:  # r0002 finishes later (changed in place), r0006 is new
            f.write(_record(2, completion_tokens=7) + _record(6))
        assert worker.drain()
        after = worker.snapshot
    finally:
        worker.stop()
    assert after.state is not None and after.lineage == before.lineage
    bound = after.unchanged_below(before.state.version)
    assert bound <= 2  # row 2 changed: not kept
    old, new = _rows(before), _rows(after)
    assert old[2] != new[2]
    for row in range(bound):
        assert all(_same(a, b) for a, b in zip(old[row], new[row]))


def test_bound_is_the_lowest_change_of_every_later_freeze(tmp_path: Path) -> None:
    log = tmp_path / "live.jsonl"
    log.write_text("".join(_record(i) for i in range(10)))
    worker = IngestWorker(
        Extractor(), DEFAULT_SHAPE, LiveOptions(paths=(str(log),), track_rate=False)
    )
    worker.start()
    try:
        assert worker.drain()
        state = worker.snapshot.state
    finally:
        worker.stop()
    assert state is not None and len(state.store) == 10
    v = state.version
    # The three freezes before this state's changed from rows 5, 2 and 7 on.
    snap = Snapshot(state=state, changes=((v - 3, 0), (v - 2, 5), (v - 1, 2), (v, 7)))
    assert snap.unchanged_below(v) == 10
    assert snap.unchanged_below(v - 1) == 7
    assert snap.unchanged_below(v - 2) == 2
    assert snap.unchanged_below(v - 3) == 2
    assert snap.unchanged_below(v - 4) == 0  # older than the changes kept
