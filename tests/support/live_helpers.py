"""Helpers for tests of the live ingest worker (imported by test modules of any tier:
pyproject.toml puts tests/support on sys.path)."""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

from sparseety_tui.core.extraction import Extractor
from sparseety_tui.core.figures import DEFAULT_SHAPE
from sparseety_tui.ingest.snapshot import LiveOptions, Snapshot
from sparseety_tui.ingest.worker import IngestWorker


class OffsetClock:
    """The monotonic clock plus an offset a test moves forward (to skip a quiet spell)."""

    def __init__(self) -> None:
        self.offset = 0.0

    def __call__(self) -> float:
        return time.monotonic() + self.offset


def wait_for(worker: IngestWorker, check: Any, tries: int = 50) -> Snapshot:
    """Drain until ``check(snapshot)`` holds (files change under the worker meanwhile)."""
    for _ in range(tries):
        worker.drain(2)
        if check(worker.snapshot):
            break
    return worker.snapshot


def record(i: int, **extra: object) -> str:
    """A JSONL request record numbered ``i``, with ``extra`` fields."""
    data = {
        "request_id": f"r{i:04d}",
        "prompt_tokens": 10 + i,
        "completion_tokens": i % 7,
        "latency_s": i / 10,
        "ts": 1_800_000_000 + i,
        **extra,
    }
    return json.dumps(data) + "\n"


def write(path: Path, lines: list[str], mode: str = "w") -> None:
    with path.open(mode) as f:
        f.writelines(lines)


def start(paths: list[Path], clock: OffsetClock | None = None, **options: object) -> IngestWorker:
    """A started worker on ``paths`` without rate tracking, on ``clock`` if one is given."""
    worker = IngestWorker(
        Extractor(),
        DEFAULT_SHAPE,
        LiveOptions(paths=tuple(str(p) for p in paths), track_rate=False, **options),  # type: ignore[arg-type]
        clock=clock or time.monotonic,
    )
    worker.start()
    return worker
