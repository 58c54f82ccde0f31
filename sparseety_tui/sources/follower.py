"""Follow one log file like ``tail -F``: appends, rotation, truncation, files that come and go.

Each call to ``FileFollower.poll()`` reads what is new since the previous call and returns the
complete lines plus ``SourceEvent``s describing what happened to the file. It never blocks on
the file system beyond a few ``stat``/``read`` calls and never raises for I/O trouble: that is
reported as a ``read_error`` event. Waiting for changes is ``LogWatcher``'s job.

A file *incarnation* is one inode read from offset 0 (or from the chosen start). Every new
incarnation (first open, rotation, delete-and-recreate, copytruncate) bumps ``generation``;
line offsets are only meaningful together with the generation they were read in.

Invariants (each has a test): every byte of every incarnation we saw is reported in exactly one
line; a line cut in two by a slow writer is reported once, complete; the file is only ever
opened read-only.
"""

from __future__ import annotations

import contextlib
import os
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import BinaryIO, Literal

from .inputs import open_regular
from .lines import (
    _BACK_BLOCK,
    DEFAULT_MAX_LINE_BYTES,
    READ_BUFFER_BYTES,
    LineAssembler,
    RawLine,
)

__all__ = [
    "DEFAULT_MAX_BATCH_BYTES",
    "DEFAULT_ROTATION_GRACE_S",
    "EventKind",
    "FileFollower",
    "FollowBatch",
    "LineSegment",
    "SourceEvent",
    "StartSpec",
]

EventKind = Literal[
    "opened", "missing", "appeared", "rotated", "truncated", "replaced", "read_error"
]

DEFAULT_MAX_BATCH_BYTES = 16 * 1024 * 1024
"""Bytes read by one ``poll()`` at most (at a line boundary), so catching up on a multi-GB file
is done in steps and the caller stays responsive; ``FollowBatch.more`` says there is more."""

DEFAULT_ROTATION_GRACE_S = 2.0
"""After a rotation, keep reading the old file this long for lines a writer that has not
reopened yet still appends there (logrotate ``create`` mode: rename, create, then signal)."""


@dataclass(frozen=True, slots=True)
class SourceEvent:
    """Something that happened to a followed file, worth telling the user about."""

    kind: EventKind
    path: str
    message: str
    """Human-readable, e.g. "file rotated, reopened"."""
    generation: int = 0
    """The follower's generation right after the event."""
    line_index: int = 0
    """How many of the batch's lines (``FollowBatch.lines``) came before this event."""


@dataclass(slots=True)
class LineSegment:
    """Consecutive lines of one file incarnation."""

    generation: int
    lines: list[RawLine] = field(default_factory=list)


@dataclass(slots=True)
class FollowBatch:
    """What one ``poll()`` found. Lines are in file order; after a rotation, the old file's
    last lines come first, in their own segment (their offsets belong to the old incarnation).
    """

    path: str
    segments: list[LineSegment] = field(default_factory=list)
    events: list[SourceEvent] = field(default_factory=list)
    more: bool = False
    """True if ``poll()`` stopped at its byte budget: call it again without waiting."""

    @property
    def lines(self) -> list[RawLine]:
        """All lines of the batch, in order (see ``segments`` for their generations)."""
        if len(self.segments) == 1:
            return self.segments[0].lines
        return [line for seg in self.segments for line in seg.lines]

    @property
    def line_count(self) -> int:
        return sum(len(seg.lines) for seg in self.segments)

    def __bool__(self) -> bool:
        return bool(self.events) or any(seg.lines for seg in self.segments)

    def _segment(self, generation: int) -> list[RawLine]:
        if not self.segments or self.segments[-1].generation != generation:
            self.segments.append(LineSegment(generation))
        return self.segments[-1].lines


class _Incarnation:
    """One open inode and the line state within it."""

    __slots__ = ("asm", "dev", "f", "generation", "ino", "retire_at", "size_seen")

    def __init__(self, f: BinaryIO, st: os.stat_result, pos: int, cap: int, gen: int) -> None:
        self.f = f
        self.dev = st.st_dev
        self.ino = st.st_ino
        self.asm = LineAssembler(f, pos, cap)
        self.generation = gen
        self.retire_at = 0.0
        self.size_seen = st.st_size

    def same_file(self, st: os.stat_result) -> bool:
        return st.st_ino == self.ino and st.st_dev == self.dev

    def close(self) -> None:
        with contextlib.suppress(OSError):
            self.f.close()


def _start_of_last_lines(f: BinaryIO, size: int, n: int) -> int:
    """Offset where the last ``n`` complete lines of the file begin (reading backwards).

    An unterminated tail is not one of the ``n``: it is still being written, and will be
    reported once complete. ``n == 0`` gives the start of that tail (or ``size``).
    """
    pos = size
    need = n + 1  # the "\n" that ends the line before the first one we keep
    while pos > 0:
        block_start = max(0, pos - _BACK_BLOCK)
        f.seek(block_start)
        block = f.read(pos - block_start)
        end = len(block)
        while True:
            i = block.rfind(b"\n", 0, end)
            if i < 0:
                break
            need -= 1
            if need == 0:
                return block_start + i + 1
            end = i
        pos = block_start
    return 0


_READ_FAILED = "read failed"

StartSpec = Literal["start", "end"] | int


class FileFollower:
    """Follow one path across appends, rotation, truncation, deletion and late creation."""

    def __init__(
        self,
        path: str | os.PathLike[str],
        *,
        start: StartSpec = "start",
        last_lines: int | None = None,
        max_line_bytes: int = DEFAULT_MAX_LINE_BYTES,
        max_batch_bytes: int = DEFAULT_MAX_BATCH_BYTES,
        rotation_grace_s: float = DEFAULT_ROTATION_GRACE_S,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        """``start``: ``"start"`` reads the whole file, ``"end"`` only what is written from now
        on (like ``tail -f``; a line being written right now is still reported once complete),
        an int resumes at that byte offset (moved forward to a line start). ``last_lines=N``
        starts N complete lines before the end (like ``tail -n N -f``) and overrides ``start``.
        The start applies to the file present at the first poll only: files that appear or
        replace it later are read from their beginning. ``clock`` (seconds, monotonic) times the
        rotation grace period; tests pass a fake one.
        """
        if isinstance(start, int) and not isinstance(start, bool):
            if start < 0:
                raise ValueError("start offset must be >= 0")
        elif start not in ("start", "end"):
            raise ValueError(f"start must be 'start', 'end' or an offset, not {start!r}")
        if last_lines is not None and last_lines < 0:
            raise ValueError("last_lines must be >= 0")
        if max_line_bytes < 1 or max_batch_bytes < 1:
            raise ValueError("max_line_bytes and max_batch_bytes must be >= 1")
        self.path = os.fspath(path)
        self._start: StartSpec = start
        self._last_lines = last_lines
        self._cap = max_line_bytes
        self._budget = max_batch_bytes
        self._grace = rotation_grace_s
        self._clock = clock
        self._cur: _Incarnation | None = None
        self._retired: list[_Incarnation] = []
        self.generation = 0
        """Incremented each time a new file incarnation is opened (0: nothing opened yet)."""
        self._ever_opened = False
        self._missing_reported = False
        self._error_reported: str | None = None
        self._more = False

    # -- public ------------------------------------------------------------------------------

    @property
    def has_backlog(self) -> bool:
        """True if the last poll stopped at its byte budget (poll again without waiting)."""
        return self._more

    @property
    def draining(self) -> bool:
        """True while rotated-away files are still read during their grace period."""
        return bool(self._retired)

    @property
    def position(self) -> int:
        """Bytes of the current incarnation consumed so far (0 if none is open)."""
        return self._cur.asm.pos if self._cur is not None else 0

    def poll(self) -> FollowBatch:
        """Read what is new; never raises for file-system trouble (see ``read_error``)."""
        batch = FollowBatch(self.path)
        self._more = False
        try:
            self._poll_into(batch)
        except OSError as e:  # the specific cases are handled below; this is the backstop
            self._report_error(batch, f"unexpected I/O error: {e}")
        batch.more = self._more
        return batch

    def _poll_into(self, batch: FollowBatch) -> None:
        self._poll_retired(batch)
        if self._cur is None:
            self._try_first_open(batch)
        budget = self._budget
        while self._cur is not None:
            cur = self._cur
            try:
                st = os.fstat(cur.f.fileno())
            except OSError as e:
                self._report_error(batch, f"cannot stat open file: {e.strerror or e}")
                break
            if st.st_size < cur.asm.pos:
                self._restart_truncated(batch, cur, st.st_size)
                cur = self._cur
                assert cur is not None
            before = cur.asm.pos
            if not self._read(batch, cur, budget):
                break
            budget -= cur.asm.pos - before
            if budget <= 0:
                self._more = True
                break
            # At end of file: is the path still this file?
            if not self._check_path(batch, cur):
                break

    def close(self) -> None:
        """Close open files. Unterminated tails are dropped: nothing more is reported."""
        for inc in self._retired:
            inc.close()
        self._retired.clear()
        if self._cur is not None:
            self._cur.close()
            self._cur = None

    def __enter__(self) -> FileFollower:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- internals ---------------------------------------------------------------------------

    def _event(self, batch: FollowBatch, kind: EventKind, message: str) -> None:
        batch.events.append(
            SourceEvent(kind, self.path, message, self.generation, batch.line_count)
        )

    def _report_error(self, batch: FollowBatch, message: str) -> None:
        # Once per distinct problem, not on every poll.
        if self._error_reported != message:
            self._error_reported = message
            self._event(batch, "read_error", f"{self.path}: {message}")

    def _open(self, batch: FollowBatch) -> _Incarnation | None:
        """Open the path as a new incarnation at offset 0, or report why not."""
        try:
            f, st = open_regular(self.path, READ_BUFFER_BYTES)
        except FileNotFoundError:
            if not self._missing_reported:
                self._missing_reported = True
                self._event(batch, "missing", f"{self.path}: file does not exist yet, waiting")
            return None
        except PermissionError:
            self._report_error(batch, "permission denied (cannot read the file)")
            return None
        except OSError as e:
            self._report_error(batch, f"cannot open: {e.strerror or e}")
            return None
        self._error_reported = None
        self.generation += 1
        return _Incarnation(f, st, 0, self._cap, self.generation)

    def _try_first_open(self, batch: FollowBatch) -> None:
        was_missing = self._missing_reported
        inc = self._open(batch)
        if inc is None:
            return
        self._cur = inc
        self._missing_reported = False
        if not self._ever_opened:
            self._ever_opened = True
            if was_missing:
                self._event(batch, "appeared", f"{self.path}: file appeared, reading it")
            else:
                try:
                    pos = self._initial_position(inc)
                except OSError as e:
                    self._report_error(batch, f"cannot read: {e.strerror or e}")
                    pos = 0
                inc.f.seek(pos)
                inc.asm.pos = pos
                where = "from the start" if pos == 0 else f"at byte {pos}"
                self._event(batch, "opened", f"{self.path}: opened, reading {where}")
                if isinstance(self._start, int) and self._start > inc.size_seen:
                    self._event(
                        batch,
                        "truncated",
                        f"{self.path}: file is shorter ({inc.size_seen} bytes) than the resume "
                        f"offset {self._start}; it was truncated or replaced, reading it from "
                        "the start",
                    )
        elif was_missing:
            self._event(batch, "appeared", f"{self.path}: file appeared, reading it")
        else:
            self._event(batch, "opened", f"{self.path}: opened")

    def _initial_position(self, inc: _Incarnation) -> int:
        size = inc.size_seen
        if self._last_lines is not None:
            return _start_of_last_lines(inc.f, size, self._last_lines)
        if self._start == "start":
            return 0
        if self._start == "end":
            return _start_of_last_lines(inc.f, size, 0)
        offset = int(self._start)
        if offset > size:
            return 0  # the file we were reading is gone (see the "truncated" event)
        if offset == 0:
            return 0
        inc.f.seek(offset - 1)
        if inc.f.read(1) == b"\n":
            return offset
        # Not a line start: move on to the next one, so no half line is reported.
        inc.f.seek(offset)
        while True:
            piece = inc.f.readline(1024 * 1024)
            if not piece or piece.endswith(b"\n"):
                return inc.f.tell()

    def _read(self, batch: FollowBatch, inc: _Incarnation, budget: int | None) -> bool:
        """Append ``inc``'s new complete lines to the batch; False on a read error."""
        out = batch._segment(inc.generation)
        try:
            out.extend(inc.asm.lines(budget=budget))
        except OSError as e:
            self._report_error(batch, f"{_READ_FAILED}: {e.strerror or e}")
            return False
        if self._error_reported is not None and self._error_reported.startswith(_READ_FAILED):
            self._error_reported = None  # reads work again: report the next failure
        if not out:
            batch.segments.pop()
        return True

    def _flush_tail(self, batch: FollowBatch, inc: _Incarnation) -> None:
        tail = inc.asm.flush_partial()
        if tail is not None:
            batch._segment(inc.generation).append(tail)

    def _restart_truncated(self, batch: FollowBatch, cur: _Incarnation, size: int) -> None:
        # copytruncate: the file shrank below what we read. The held tail was real data that
        # will never be completed: report it as a line, then read the file again from 0.
        old_pos = cur.asm.pos
        self._flush_tail(batch, cur)
        self.generation += 1
        cur.generation = self.generation
        cur.f.seek(0)
        cur.asm = LineAssembler(cur.f, 0, self._cap)
        self._event(
            batch,
            "truncated",
            f"{self.path}: file truncated (size {size} < {old_pos} bytes read), "
            "reading it again from the start",
        )

    def _check_path(self, batch: FollowBatch, cur: _Incarnation) -> bool:
        """At EOF of the current file: switch to a new file at the path if there is one.

        Returns True if a new incarnation was opened (the caller reads it on).
        """
        try:
            st = os.stat(self.path)
        except FileNotFoundError:
            # Renamed away or deleted, nothing new yet: keep reading the open file (a writer
            # may still append to it) until a new file shows up.
            if not self._missing_reported:
                self._missing_reported = True
                self._event(
                    batch,
                    "missing",
                    f"{self.path}: file was removed or renamed; still reading the open file "
                    "until a new one appears",
                )
            return False
        except OSError as e:
            self._report_error(batch, f"cannot stat: {e.strerror or e}")
            return False
        if cur.same_file(st):
            if self._missing_reported:
                self._missing_reported = False  # moved back, e.g. `mv a b; mv b a`
            return False
        # A different file now lives at the path: rotation (old file renamed, nlink > 0) or
        # replacement (old file deleted). Drained to EOF already; hand the tail over now.
        try:
            old_links = os.fstat(cur.f.fileno()).st_nlink
        except OSError:
            old_links = 0
        new = self._open(batch)
        if new is None:
            return False
        self._retire(batch, cur)
        self._cur = new
        self._missing_reported = False
        if old_links > 0:
            self._event(batch, "rotated", f"{self.path}: file rotated, reopened")
        else:
            self._event(batch, "replaced", f"{self.path}: file deleted and recreated, reopened")
        return True

    def _retire(self, batch: FollowBatch, inc: _Incarnation) -> None:
        """Stop treating ``inc`` as the current file (it was rotated away or deleted).

        With a grace period, it stays open for a while: a writer that has not reopened yet may
        still append to it (or finish the line it was writing). Its unterminated tail is
        reported when the grace period ends without new data, so a line finished late is not
        cut in two. Without a grace period, the tail is reported now.
        """
        if self._grace > 0:
            inc.retire_at = self._clock() + self._grace
            self._retired.append(inc)
        else:
            self._flush_tail(batch, inc)
            inc.close()

    def _poll_retired(self, batch: FollowBatch) -> None:
        """Pick up lines still appended to rotated-away files during their grace period."""
        if not self._retired:
            return
        now = self._clock()
        keep: list[_Incarnation] = []
        for inc in self._retired:
            before = inc.asm.pos
            self._read(batch, inc, None)
            if inc.asm.pos != before:
                # A writer is still there: give it more time, and do not cut its line.
                inc.retire_at = max(inc.retire_at, now + self._grace)
                keep.append(inc)
            elif now >= inc.retire_at:
                self._flush_tail(batch, inc)
                inc.close()
            else:
                keep.append(inc)
        self._retired = keep
