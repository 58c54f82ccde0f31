"""Upkeep between live polls: quiet files' parsers flushed, freed memory handed back, and
how long the worker sleeps when nothing is due.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable

from sparseety_tui.ingest.batch import release_free_memory

#: A file without new lines for this long has its parser flushed, as at the end of a batch
#: file: what waits for a next line (a traceback's end) is taken as complete.
QUIET_FLUSH_S = 1.0
#: Longest the worker sleeps when nothing happens (it also wakes on file changes).
IDLE_WAIT_S = 0.5
#: Freed heap pages go back to the OS at most this often while the logs change...
TRIM_INTERVAL_S = 2.0
#: ...and at most once per this many times the trim's own cost (<= 2 % of a core).
TRIM_DUTY = 50.0


class QuietFiles:
    """When each file last got lines (not flushed since): a file quiet for
    ``QUIET_FLUSH_S`` is due for a flush (a traceback cut off by a dying server is then
    counted; if it goes on later it is not counted again)."""

    def __init__(self) -> None:
        self._fed_at: dict[int, float] = {}

    def fed(self, file: int, now: float) -> None:
        self._fed_at[file] = now

    def due(self, now: float) -> list[int]:
        """The files quiet long enough at ``now``, forgotten until they get lines again."""
        files = [file for file, at in self._fed_at.items() if now - at >= QUIET_FLUSH_S]
        for file in files:
            del self._fed_at[file]
        return files

    def next_due(self) -> float | None:
        return min(self._fed_at.values()) + QUIET_FLUSH_S if self._fed_at else None


class MemoryTrim:
    """Hands the heap's freed pages back to the OS when the worker catches up.

    Following a busy log allocates and frees millions of short-lived objects (lines,
    payloads, the last frozen segment, the totals' temporaries) and glibc keeps the freed
    pages (bench/tail_memory.py). A trim is not free, so it runs when the store changed,
    at most every ``max(interval_s, duty x its last cost)``.
    """

    def __init__(
        self,
        interval_s: float = TRIM_INTERVAL_S,
        duty: float = TRIM_DUTY,
        release: Callable[[], object] = release_free_memory,
    ) -> None:
        self._interval_s = interval_s
        self._duty = duty
        self._release = release
        self._due = -math.inf
        self._trimmed_version = 0

    def run(self, now: float, version: int) -> bool:
        """Trim if due at ``now`` for the store at ``version``; whether it ran."""
        if now < self._due or version == self._trimmed_version:
            return False
        started = time.perf_counter()
        self._release()
        cost = time.perf_counter() - started
        self._trimmed_version = version
        self._due = now + max(self._interval_s, self._duty * cost)
        return True

    def next_due(self, version: int) -> float | None:
        """When a trim is due for the store at ``version`` (None: trimmed since)."""
        return None if version == self._trimmed_version else self._due


def idle_wait(dues: list[float | None], now: float, needs_polling: bool) -> float | None:
    """How long to sleep with nothing to do: until the next thing due (a quiet flush, a
    quiet spell's 0 tok/s, a memory trim), at most ``IDLE_WAIT_S``; None (until a file
    changes) when nothing is and the watcher's notifications need no polling: an idle log
    costs no wake-ups."""
    times = [due for due in dues if due is not None]
    if not times and not needs_polling:
        return None
    wait = max(0.01, min(times) - now) if times else IDLE_WAIT_S
    return min(IDLE_WAIT_S, wait)
