"""Helpers for the follower tests (imported by test modules of any tier: pyproject.toml
puts tests/support on sys.path)."""

from __future__ import annotations

from pathlib import Path
from typing import BinaryIO

from sparseety_tui.sources import FollowBatch


class FakeClock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def datas(batch: FollowBatch) -> list[bytes]:
    return [line.data for line in batch.lines]


def kinds(batch: FollowBatch) -> list[str]:
    return [e.kind for e in batch.events]


def appender(path: Path) -> BinaryIO:
    """A writer like a logging process: unbuffered appends to one open file."""
    return open(path, "ab", buffering=0)
