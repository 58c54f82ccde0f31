"""The live worker hands freed heap pages back once it has caught up (bench/tail_memory.py
measures the bytes per request; this holds the mechanism, without timing anything)."""

from __future__ import annotations

import json
from pathlib import Path

from sparseety_tui.core.extraction import Extractor
from sparseety_tui.core.figures import DEFAULT_SHAPE
from sparseety_tui.ingest.snapshot import LiveOptions
from sparseety_tui.ingest.worker import IngestWorker, MemoryTrim


def _write(path: Path, start: int, n: int) -> None:
    with path.open("a") as f:
        for i in range(start, start + n):
            record = {
                "request_id": f"r{i:08d}",
                "prompt_tokens": 100 + i % 900,
                "completion_tokens": 20 + i % 200,
                "latency_s": 0.5 + (i % 1000) / 1000,
                "ttft_s": 0.05,
                "state": "finished",
            }
            f.write(json.dumps(record) + "\n")


def test_the_live_worker_releases_freed_memory_once_caught_up(tmp_path: Path) -> None:
    calls: list[int] = []
    log = tmp_path / "live.jsonl"
    _write(log, 0, 5_000)
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
        _write(log, 5_000, 1_000)
        assert worker.drain()
        assert len(worker.snapshot.state.store) == 6_000
        assert len(calls) == 2
    finally:
        worker.stop()
