"""A big file's older part, read in small steps after its tail: the backfill policy.

A file of more than ``big_file_bytes`` is shown from its last ``tail_window_bytes`` first
(``tail_cut``); the lines before that cut are read afterwards, about 1 MiB of whole lines a
step, between live polls (``Backfills.step``), so the UI stays usable throughout.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from dataclasses import dataclass

from sparseety_tui.core.extraction import Extractor
from sparseety_tui.sources import Chunk, RawLine, iter_chunks


@dataclass
class Backfill:
    """The older part of one followed path."""

    path: str
    file: int  # extractor file index of the older part
    end: int  # bytes of the older part
    items: Iterator[Chunk | RawLine]  # ~1 MiB of whole lines a step (the batch reader)
    done: int = 0
    finished: bool = False


def tail_cut(path: str, big_file_bytes: int, tail_window_bytes: int) -> tuple[int, int] | None:
    """Where the shown tail of ``path`` starts and the file's size, for a file bigger than
    ``big_file_bytes`` (the first line start in its last ``tail_window_bytes``); None when
    the file is read whole (small, missing, or one line)."""
    try:
        size = os.stat(path).st_size
    except OSError:
        return None  # missing: the follower reports it and waits
    if size <= big_file_bytes:
        return None
    cut = _line_start_at_or_after(path, max(0, size - tail_window_bytes))
    if cut <= 0 or cut >= size:
        return None
    return cut, size


class Backfills:
    """The older parts still to read (or read), in the order they were added."""

    def __init__(self) -> None:
        self._all: list[Backfill] = []
        self._of: dict[str, Backfill] = {}

    def add(self, path: str, file: int, cut: int) -> Backfill:
        """Read the lines of ``path`` starting before byte ``cut`` into extractor ``file``."""
        backfill = Backfill(path, file, cut, iter_chunks(path, 0, cut))
        self._all.append(backfill)
        self._of[path] = backfill
        return backfill

    def of(self, path: str) -> Backfill | None:
        return self._of.get(path)

    @property
    def any(self) -> bool:
        """Whether any file was backfilled: store order is then not log order."""
        return bool(self._all)

    @property
    def settled(self) -> bool:
        """Every older part has been read."""
        return all(b.finished for b in self._all)

    @property
    def files(self) -> frozenset[int]:
        """The extractor files of the older parts."""
        return frozenset(b.file for b in self._all)

    def step(self, extractor: Extractor) -> Backfill | None:
        """Feed the next step of the first unfinished older part; the backfill stepped
        (``finished`` once its whole part is in: its file is then finished too), None when
        there is nothing left to read."""
        for backfill in self._all:
            if backfill.finished:
                continue
            item = next(backfill.items, None)
            if item is not None:
                # Chunks, as the batch commands read: request records take the native
                # scanner, so a big request log's older part loads several times faster.
                extractor.feed_chunks(backfill.file, [item])
                end = item.offset + (len(item.data) if isinstance(item, Chunk) else item.length)
                backfill.done = min(backfill.end, end)
            else:
                backfill.finished = True
                backfill.done = backfill.end
                extractor.finish_file(backfill.file)
            return backfill
        return None


def _line_start_at_or_after(path: str, pos: int) -> int:
    """First line start at or after byte ``pos`` (the file's size if there is none)."""
    if pos <= 0:
        return 0
    with open(path, "rb") as f:
        f.seek(pos - 1)
        while True:
            piece = f.readline(1024 * 1024)
            if not piece or piece.endswith(b"\n"):
                return f.tell()


def size_text(n: int) -> str:
    """``n`` bytes for the status line (``12.3 MB``)."""
    value = float(n)
    for unit in ("B", "KB", "MB", "GB"):
        if value < 1024 or unit == "GB":
            return f"{value:.0f} {unit}" if unit == "B" else f"{value:.1f} {unit}"
        value /= 1024
    return f"{n} B"
