"""Helpers for tests of the live ingest worker (imported by test modules of any tier:
pyproject.toml puts tests/support on sys.path)."""

from __future__ import annotations

import time
from typing import Any

from sparseety_tui.ingest.snapshot import Snapshot
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
