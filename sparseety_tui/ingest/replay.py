"""Replay: a finished log played into the ingest worker as if it were being written now.

``tail --replay`` (and ``demo``, which replays ``sample_logs/``) reads the logs in place,
never copies or writes them: ``ReplaySource`` stands where the worker's ``LogWatcher``
stands (``poll_all``, ``wait``, ``wake``, ``stop``) and hands it each line, with its true
offset in the file, once the replay clock has reached the line's time. So everything
downstream is what ``tail`` does on a live log (the detail view re-reads the original
lines), and every panel moves as it did when the log was written.

**A line's time** is the time it carries (a trace record's ``ts``, else ``finished_ts``,
``first_token_ts``, ``received_ts``; a server line's leading stamp), else the time of the
line before it: lines are never reordered, and a line stamped earlier than the one before it
plays with that one. A file with no time at all plays one line per log second.

**The clock** (``ReplayClock``) runs at ``speed`` log seconds per wall second from
``start`` (``--from``: lines before it are read at once, as ``tail`` shows what a file
holds) and can be paused, stepped (to the next line's time) and sought. Several files
share one clock (an incident over several logs stays in step); ``align="each"`` starts
every file at the clock's start instead, the newest file's first time (the demo's unrelated
samples: their rows keep their own times).
"""

from __future__ import annotations

import bisect
import math
import os
import re
import threading
import time
from array import array
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

import orjson

from sparseety_tui.formats import LocalClock, parse_timestamp
from sparseety_tui.formats.vllm import stamp_year
from sparseety_tui.sources import Chunk, FollowBatch, LineSegment, iter_lines

_TS_KEYS = ("ts", "finished_ts", "first_token_ts", "received_ts")
#: ISO-like stamps near a line's start (after a level or wrapper prefix).
_ISO = re.compile(rb"(\d{4}-\d\d-\d\d)[T ](\d\d:\d\d:\d\d(?:[.,]\d{1,9})?)(Z|[+-]\d\d:?\d\d)?")
#: vLLM's ``INFO 11-30 12:00:01`` (no year: ``LineTimes`` infers it as the parser does).
_MONTH_DAY = re.compile(rb"\b(\d\d)-(\d\d) (\d\d:\d\d:\d\d)\b")
_HEAD_BYTES = 96
#: Bytes handed to the worker in one poll (as the follower's batch budget).
MAX_BATCH_BYTES = 16 << 20


class ReplayError(Exception):
    """Nothing to replay; the message says why."""


class LineTimes:
    """The time each line of one file carries (module docstring), unix seconds, read as
    the file's parser reads it: a trace record's times as the trace format says (no zone:
    UTC); a server line's stamp without a zone in the host's zone, and vLLM's ``MM-DD``
    stamps with the year its parser infers from the file's mtime (``reference``), so the
    replay clock shows the times the table shows and ``--from`` means the same."""

    def __init__(self, reference: float | None = None) -> None:
        self._reference = reference
        self._year: int | None = None
        self._last_month = 0
        self._local = LocalClock()

    def __call__(self, data: bytes) -> float | None:
        if data[:1] == b"{":
            try:
                obj = orjson.loads(data)
            except orjson.JSONDecodeError:
                obj = None
            if isinstance(obj, dict):
                for key in _TS_KEYS:
                    found = parse_timestamp(obj.get(key))
                    if found is not None:
                        return found
                return None
        head = data[:_HEAD_BYTES]
        iso = _ISO.search(head)
        if iso is not None:
            text = (iso.group(1) + b"T" + iso.group(2).replace(b",", b".")).decode()
            if iso.group(3):
                return parse_timestamp(text + iso.group(3).decode())
            year, month, day = (int(x) for x in iso.group(1).split(b"-"))
            return self._local_time(year, month, day, iso.group(2).replace(b",", b"."))
        month_day = _MONTH_DAY.search(head)
        if month_day is not None:
            month, day = int(month_day.group(1)), int(month_day.group(2))
            self._year = stamp_year(self._year, self._last_month, month, day, self._reference)
            self._last_month = month
            return self._local_time(self._year, month, day, month_day.group(3))
        return None

    def _local_time(self, year: int, month: int, day: int, clock: bytes) -> float | None:
        hour, minute, second = clock.split(b":")
        try:
            ts = self._local.to_unix(year, month, day, int(hour), int(minute), float(second))
        except ValueError:
            return None
        return None if ts != ts else ts  # NaN: no such local time


def line_time(data: bytes) -> float | None:
    """The time one line carries, out of any file (``LineTimes`` without a reference)."""
    return LineTimes()(data)


@dataclass
class ReplayFile:
    """One file's lines: where each starts (``offsets``, one more for the end) and when it
    plays (``times``, non-decreasing, on the clock's time line). Arrays of 8 bytes a line,
    not lists of Python numbers (~40 bytes a line each): a replay indexes every line."""

    path: str
    offsets: array[int]
    times: array[float]
    released: int = 0  # lines handed to the worker so far

    @property
    def lines(self) -> int:
        return len(self.times)

    def next_time(self) -> float | None:
        return self.times[self.released] if self.released < self.lines else None


def index_file(path: str) -> tuple[array[int], array[float]]:
    """Each line's start offset (plus the end) and own time (NaN: none): one read of the
    file."""
    offsets: array[int] = array("q")
    times: array[float] = array("d")
    end = 0
    time_of = LineTimes(os.stat(path).st_mtime)
    for line in iter_lines(path):
        offsets.append(line.offset)
        found = time_of(line.data)
        times.append(math.nan if found is None else found)
        end = line.offset + line.length
    offsets.append(end)
    return offsets, times


def play_times(own: Sequence[float | None]) -> array[float] | None:
    """The times lines play at (module docstring; ``own``: each line's time, None or NaN
    when it has none); None when no line has a time."""
    first = next((t for t in own if t is not None and t == t), None)
    if first is None:
        return None
    out: array[float] = array("d")
    last = first
    for t in own:
        if t is not None and t > last:  # NaN > x is False
            last = t
        out.append(last)
    return out


class ReplayClock:
    """Log time, running at ``speed`` log seconds a wall second; pausable, seekable.
    Thread-safe: the UI drives it, the ingest thread reads it."""

    def __init__(
        self, start: float, speed: float = 1.0, clock: Callable[[], float] = time.monotonic
    ) -> None:
        if not speed > 0:
            raise ReplayError("--speed must be > 0")
        self.wall = clock
        self._lock = threading.Lock()
        self._at = start  # log time at wall time self._since
        self._since = clock()
        self.speed = speed
        self.paused = False

    def now(self) -> float:
        with self._lock:
            return self._now()

    def _now(self) -> float:
        if self.paused:
            return self._at
        return self._at + (self.wall() - self._since) * self.speed

    def _rebase(self, at: float) -> None:
        self._at = at
        self._since = self.wall()

    def pause(self, paused: bool = True) -> None:
        with self._lock:
            self._rebase(self._now())
            self.paused = paused

    def toggle(self) -> bool:
        """Pause or resume; True when now paused."""
        self.pause(not self.paused)
        return self.paused

    def set_speed(self, speed: float) -> None:
        if not speed > 0:
            raise ReplayError("speed must be > 0")
        with self._lock:
            self._rebase(self._now())
            self.speed = speed

    def seek(self, at: float) -> None:
        with self._lock:
            self._rebase(at)

    def wall_until(self, at: float) -> float | None:
        """Wall seconds until log time ``at`` (0: due; None: never while paused)."""
        with self._lock:
            ahead = at - self._now()
            if ahead <= 0:
                return 0.0
            return None if self.paused else ahead / self.speed


class ReplaySource:
    """The worker's source for a replay: ``LogWatcher``'s interface over finished files
    (module docstring). ``followers``: the paths, each with a ``path`` attribute. Made by
    ``open_replay``."""

    def __init__(self, files: list[ReplayFile], clock: ReplayClock) -> None:
        self.files = files
        self.clock = clock
        self.origin = min((f.times[0] for f in files if f.times), default=clock.now())
        self.end = max((f.times[-1] for f in files if f.times), default=self.origin)
        self.followers = [_Follower(f.path) for f in files]
        self.needs_polling = False  # wait() knows when the next line is due
        self._wake = threading.Event()

    # -- what the UI drives ------------------------------------------------------------------

    def step(self) -> float | None:
        """Move the clock to the next line's time (those lines then play); the time, or
        None at the end."""
        due = [t for t in (f.next_time() for f in self.files) if t is not None]
        if not due:
            return None
        target = min(due)
        self.clock.seek(max(target, self.clock.now()))
        self.wake()
        return target

    def seek(self, at: float) -> None:
        """Play from log time ``at``. Forward: the lines up to it come at once. Backward
        cannot un-read lines: the caller starts a new worker (``rewound``)."""
        self.clock.seek(at)
        self.wake()

    def rewound(self, at: float) -> ReplaySource:
        """A fresh source over the same files from ``at`` (nothing read yet), with the
        same speed and pause state: what a backward seek starts a new worker with."""
        clock = ReplayClock(at, self.clock.speed, self.clock.wall)
        clock.paused = self.clock.paused
        return ReplaySource([ReplayFile(f.path, f.offsets, f.times) for f in self.files], clock)

    def status(self) -> dict[str, Any]:
        """What the status line shows: log time, speed, paused, done."""
        released = sum(f.released for f in self.files)
        return {
            "at": self.clock.now(),
            "speed": self.clock.speed,
            "paused": self.clock.paused,
            "lines": released,
            "of": sum(f.lines for f in self.files),
            "start": self.origin,
            "end": self.end,
        }

    # -- LogWatcher's interface, for the ingest thread -------------------------------------

    def poll_all(self) -> list[tuple[str, FollowBatch]]:
        now = self.clock.now()
        out = []
        for f in self.files:
            stop = bisect.bisect_right(f.times, now, f.released)
            if stop <= f.released:
                continue
            first = f.offsets[f.released]
            # One batch at most MAX_BATCH_BYTES (more: the worker polls again at once).
            limit = bisect.bisect_right(f.offsets, first + MAX_BATCH_BYTES, f.released + 1) - 1
            more = stop > limit > f.released
            if more:
                stop = limit
            data = _read(f.path, first, f.offsets[stop] - first)
            f.released = stop
            batch = FollowBatch(f.path, [LineSegment(1, [Chunk(first, data)])], [], more)
            out.append((f.path, batch))
        return out

    def wait(self, timeout_s: float | None) -> bool:
        """Sleep until the next line is due, a ``wake()``, or ``timeout_s``."""
        due = [t for t in (f.next_time() for f in self.files) if t is not None]
        delays = [d for d in (self.clock.wall_until(t) for t in due) if d is not None]
        wait = min([*delays, *([timeout_s] if timeout_s is not None else [])], default=None)
        woke = self._wake.wait(wait)
        self._wake.clear()
        return woke

    def wake(self) -> None:
        self._wake.set()

    def stop(self) -> None:
        self._wake.set()


@dataclass(frozen=True)
class _Follower:
    """What the worker reads of a follower: its path."""

    path: str


def _read(path: str, offset: int, length: int) -> bytes:
    """Bytes of a finished file, read-only (``O_RDONLY``, never written)."""
    fd = os.open(path, os.O_RDONLY)
    try:
        parts = []
        while length > 0:
            part = os.pread(fd, length, offset)
            if not part:
                break
            parts.append(part)
            offset += len(part)
            length -= len(part)
        return b"".join(parts)
    finally:
        os.close(fd)


def open_replay(
    paths: Sequence[str],
    speed: float = 1.0,
    start: float | None = None,
    align: Literal["shared", "each"] = "shared",
    clock: Callable[[], float] = time.monotonic,
) -> ReplaySource:
    """A replay of ``paths`` (each read once now, to index its lines and times) from log
    time ``start`` (None: the first line's); ``align`` as in the module docstring."""
    timed: list[ReplayFile] = []
    untimed: list[tuple[str, array[int]]] = []
    for path in paths:
        offsets, own = index_file(path)
        times = play_times(own)
        if times is None:
            untimed.append((path, offsets))
        else:
            timed.append(ReplayFile(path, offsets, times))
    if not timed and not untimed:
        raise ReplayError("no files to replay")
    origin = min((f.times[0] for f in timed), default=0.0)
    if align == "each":  # every file starts at the newest file's start (the clock's)
        origin = max(f.times[0] for f in timed) if timed else origin
        for f in timed:
            shift = origin - f.times[0]
            f.times = array("d", (t + shift for t in f.times))
    for path, offsets in untimed:  # one line a log second from the start
        seconds = array("d", (origin + i for i in range(len(offsets) - 1)))
        timed.append(ReplayFile(path, offsets, seconds))
    order = {path: i for i, path in enumerate(paths)}
    timed.sort(key=lambda f: order[f.path])
    return ReplaySource(timed, ReplayClock(origin if start is None else start, speed, clock))


# -- demo: a replay of the bundled samples ------------------------------------------------


def samples_dir() -> Path:
    env = os.environ.get("SPARSEETY_SAMPLES")
    if env:
        return Path(env)
    return Path(__file__).resolve().parents[2] / "sample_logs"


def sample_paths(directory: Path | None = None) -> list[str]:
    """The logs directly in ``sample_logs/`` (directory mode: its subdirectories, such as
    ``compare/``, are not read), in name order."""
    where = directory or samples_dir()
    if not where.is_dir():
        raise ReplayError(
            f"sample logs not found at {where} (the demo needs the repo's sample_logs/; "
            "run from a checkout or an editable install, or set SPARSEETY_SAMPLES)"
        )
    found = sorted(
        str(p) for p in where.iterdir() if p.is_file() and p.suffix in (".jsonl", ".log")
    )
    if not found:
        raise ReplayError(f"no sample logs in {where}")
    return found
