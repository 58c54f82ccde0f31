"""tok/s in the totals strip is a rate of lines appended while followed: a big file's
older part read in the background is history, and a quiet file's rate falls to 0
(issue #11 item 8: 84,568,608 tok/s was shown after a backfill, and kept while quiet)."""

from __future__ import annotations

import json
from pathlib import Path

from live_helpers import OffsetClock, wait_for
from waiting import wait_for as wait_for_condition

from sparseety_tui.core.extraction._extractor import Extractor
from sparseety_tui.core.figures._costmodel import DEFAULT_SHAPE
from sparseety_tui.ingest.snapshot import LiveOptions
from sparseety_tui.ingest.worker import RATE_QUIET_S, IngestWorker


def record(i: int) -> str:
    return json.dumps({"request_id": f"r{i:05d}", "prompt_tokens": 1000, "completion_tokens": 10})


def write(path: Path, first: int, count: int, mode: str = "w") -> None:
    with path.open(mode) as f:
        f.writelines(record(i) + "\n" for i in range(first, first + count))


def start(path: Path, clock: OffsetClock, **options: object) -> IngestWorker:
    worker = IngestWorker(
        Extractor(),
        DEFAULT_SHAPE,
        LiveOptions(paths=(str(path),), track_rate=True, **options),  # type: ignore[arg-type]
        clock=clock,
    )
    worker.start()
    return worker


def test_backfill_is_not_a_rate_and_a_quiet_file_falls_to_zero(tmp_path: Path) -> None:
    log = tmp_path / "big.jsonl"
    write(log, 0, 20_000)
    size = log.stat().st_size
    clock = OffsetClock()
    worker = start(log, clock, big_file_bytes=size // 2, tail_window_bytes=size // 20)
    try:
        snap = wait_for(worker, lambda s: s.settled and s.rows == 20_000)
        assert snap.rows == 20_000 and not snap.files[0].backfilling
        # Nothing was appended while followed: every sample so far is 0 (the backfill
        # read 20 M tokens in well under a minute).
        assert all(r == 0 for r in snap.rate), snap.rate

        write(log, 20_000, 50, mode="a")
        snap = wait_for(worker, lambda s: s.rows == 20_050 and s.rate and s.rate[-1] > 0)
        assert snap.rate and snap.rate[-1] > 0  # live appends are a rate

        clock.offset += 10 * RATE_QUIET_S  # a quiet spell
        snap = wait_for(worker, lambda s: s.rate[-1] == 0)
        assert snap.rate[-1] == 0  # was: the last rate, kept however long it is quiet
    finally:
        worker.stop()


def test_first_screens_of_a_big_file_are_its_newest_rows(tmp_path: Path) -> None:
    # While the older part loads behind, the table's end (where follow puts the cursor)
    # is the file's last line, and its rows are the newest ones in log order. Before:
    # the first screens, published before the first view was computed, showed rows in
    # store order with older-part chunks at the end ("r14363" where "r149999" is last).
    log = tmp_path / "big.jsonl"
    write(log, 0, 150_000)  # 10 MB: the older part is read in 1 MiB chunks
    size = log.stat().st_size
    worker = start(log, OffsetClock(), big_file_bytes=size // 2, tail_window_bytes=size // 20)
    seen_loading = 0

    def loaded() -> bool:
        """Every screen published while the older part loads shows the newest rows last."""
        nonlocal seen_loading
        snap = worker.snapshot
        if snap.error or (snap.settled and snap.rows == 150_000):
            return True
        if snap.rows and snap.state is not None and snap.files[0].backfilling:
            seen_loading += 1
            store = snap.state.store
            tail = [store.ids[snap.row_at(p)] for p in range(snap.visible - 50, snap.visible)]
            assert tail == [f"r{i:05d}" for i in range(149_950, 150_000)]
        return False

    try:
        wait_for_condition(loaded, 60, "the whole file to load", every=0.001)
        assert seen_loading  # a screen while the older part was loading was looked at
        assert worker.drain(30) and worker.snapshot.rows == 150_000
    finally:
        worker.stop()
