"""The live worker hands freed heap pages back once it has caught up (bench/tail_memory.py
measures the bytes per request; this holds the mechanism, without timing anything)."""

from __future__ import annotations

from pathlib import Path

from totals_helpers import append_finished

from sparseety_tui.core.extraction import Extractor
from sparseety_tui.core.figures import DEFAULT_SHAPE
from sparseety_tui.ingest.snapshot import LiveOptions
from sparseety_tui.ingest.worker import IngestWorker, MemoryTrim


def test_the_live_worker_releases_freed_memory_once_caught_up(tmp_path: Path) -> None:
    calls: list[int] = []
    log = tmp_path / "live.jsonl"
    append_finished(log, 0, 5_000)
    worker = IngestWorker(
        Extractor(),
        DEFAULT_SHAPE,
        LiveOptions(paths=(str(log),), track_rate=False),
        trim=MemoryTrim(interval_s=0.0, release=lambda: calls.append(1)),
    )
    worker.start()
    try:
        assert worker.drain()
        assert len(calls) == 1
        assert worker.drain()  # caught up again with nothing new: nothing to release
        assert len(calls) == 1
        append_finished(log, 5_000, 1_000)
        assert worker.drain()
        assert len(worker.snapshot.state.store) == 6_000
        assert len(calls) == 2
    finally:
        worker.stop()
