"""Follow one log file like ``tail -F``: appends, rotation, truncation, files that come and go.

Each call to ``FileFollower.poll()`` reads what is new since the previous call and returns the
complete lines plus ``SourceEvent``s describing what happened to the file. It never blocks on
the file system beyond a few ``stat``/``read`` calls and never raises for I/O trouble: that is
reported as a ``read_error`` event. Waiting for changes is ``LogWatcher``'s job.

A file *incarnation* is one inode read from offset 0 (or from the chosen start). Every new
incarnation (first open, rotation, delete-and-recreate, copytruncate) bumps ``generation``;
line offsets are only meaningful together with the generation they were read in.

What the follower does about each way a log changes (docs/ARCHITECTURE.md, "Rotation"):

- **Rename** (logrotate ``create``, ``RotatingFileHandler``): the old file stays open and is
  read while it grows (a writer that has not reopened yet, or never will); it is closed once
  quiet for ``rotated_quiet_s``. At most ``max_retired`` old files stay open.
- **Rotations faster than the polls**: at each rotation the directory is searched for rotated
  copies (``sources._rotated``) that appeared since the last look; each is read whole, in
  order, as its own incarnation, before the new file.
- **Copytruncate**: noticed when the file is shorter than what was read, or when the bytes
  last read are no longer where they were (the file regrew past our position before we
  looked). The rest of the old content is read from the copy beside it when one holds those
  same bytes; otherwise the event says how many bytes may be missing.
- **Delete and recreate**: the deleted file is read until quiet for ``deleted_quiet_s``
  (short: holding it keeps its disk space).

Invariants (each has a test): every byte of every incarnation we saw is reported in exactly one
line; a line cut in two by a slow writer is reported once, complete; the file is only ever
opened read-only.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from typing import BinaryIO

from ._follow_batch import (
    DEFAULT_DELETED_QUIET_S,
    DEFAULT_MAX_BATCH_BYTES,
    DEFAULT_MAX_RETIRED,
    DEFAULT_ROTATED_QUIET_S,
    EventKind,
    FollowBatch,
    LineSegment,
    SourceEvent,
    StartSpec,
)
from ._incarnation import Incarnation, reread_from_start, start_of_last_lines
from ._inputs import open_regular
from ._lines import DEFAULT_MAX_LINE_BYTES, READ_BUFFER_BYTES
from ._rotated_away import RotatedAway

__all__ = [
    "DEFAULT_DELETED_QUIET_S",
    "DEFAULT_MAX_BATCH_BYTES",
    "DEFAULT_MAX_RETIRED",
    "DEFAULT_ROTATED_QUIET_S",
    "EventKind",
    "FileFollower",
    "FollowBatch",
    "LineSegment",
    "SourceEvent",
    "StartSpec",
]

_MAX_STEPS = 64  # incarnations one poll moves through at most (then: more next poll)


class FileFollower(RotatedAway):
    """Follow one path across appends, rotation, truncation, deletion and late creation.

    What it reads from files that left the path (renamed, deleted, rotated copies) is
    ``sources._rotated_away``; how a read keeps to the poll's byte budget and reports its
    events, ``sources._reads``. This class decides, at each poll, what the path now holds.
    """

    def __init__(
        self,
        path: str | os.PathLike[str],
        *,
        start: StartSpec = "start",
        last_lines: int | None = None,
        max_line_bytes: int = DEFAULT_MAX_LINE_BYTES,
        max_batch_bytes: int = DEFAULT_MAX_BATCH_BYTES,
        rotated_quiet_s: float = DEFAULT_ROTATED_QUIET_S,
        deleted_quiet_s: float = DEFAULT_DELETED_QUIET_S,
        max_retired: int = DEFAULT_MAX_RETIRED,
        reopen: bool = True,
        chunks: bool = False,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        """``start``: ``"start"`` reads the whole file, ``"end"`` only what is written from now
        on (like ``tail -f``; a line being written right now is still reported once complete),
        an int resumes at that byte offset (moved forward to a line start). ``last_lines=N``
        starts N complete lines before the end (like ``tail -n N -f``) and overrides ``start``.
        The start applies to the file present at the first poll only: files that appear or
        replace it later are read from their beginning.

        ``rotated_quiet_s`` / ``deleted_quiet_s``: how long a rotated-away file (renamed /
        deleted) is still read after its last growth (0: not at all, its unterminated tail is
        reported at once); ``max_retired``: how many such files stay open at most.
        ``reopen=False``: follow only the file present now (what is appended to it), never a
        new file at the path: for a rotated copy (``app.log.1``) followed beside its live file,
        whose path receives the live file's older incarnations, read by the live file's
        follower already. ``chunks=True``: batches hold ``Chunk``s of whole lines rather
        than one ``RawLine`` a line (``sources._live_chunks``: the same bytes, for
        ``Extractor.feed_chunks``); an event's ``line_index`` then counts those items.
        ``clock`` (seconds, monotonic) times the quiet periods; tests pass a fake one.
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
        if max_retired < 1:
            raise ValueError("max_retired must be >= 1")
        super().__init__(
            os.fspath(path),
            max_line_bytes=max_line_bytes,
            max_batch_bytes=max_batch_bytes,
            chunks=chunks,
            rotated_quiet_s=rotated_quiet_s,
            deleted_quiet_s=deleted_quiet_s,
            max_retired=max_retired,
            clock=clock,
        )
        self._start: StartSpec = start
        self._last_lines = last_lines
        self._reopen = reopen
        self._cur: Incarnation | None = None
        self._cur_event: tuple[EventKind, str] | None = None  # said once the skipped are read
        self._ever_opened = False
        self._missing_reported = False

    # -- public ------------------------------------------------------------------------------

    @property
    def has_backlog(self) -> bool:
        """True if the last poll stopped at its byte budget (poll again without waiting)."""
        return self._more

    @property
    def draining(self) -> bool:
        """True while rotated-away files are still read (until each goes quiet)."""
        return bool(self._retired or self._skipped or self._skipping)

    @property
    def retired_count(self) -> int:
        """Rotated-away files still open."""
        return len(self._retired)

    @property
    def position(self) -> int:
        """Bytes of the current incarnation consumed so far (0 if none is open)."""
        return self._cur.asm.pos if self._cur is not None else 0

    def holds(self, st: os.stat_result) -> bool:
        """Whether the file ``st`` describes is one this follower reads (now or still)."""
        incs = [self._cur, self._skipping, *self._retired]
        return any(inc is not None and inc.same_file(st) for inc in incs)

    def retired_sizes(self) -> tuple[int, ...]:
        """The sizes of the rotated-away files still read: a change here is a change to read
        (they may live in a directory nobody watches)."""
        sizes: list[int] = []
        for inc in self._retired:
            try:
                sizes.append(os.fstat(inc.f.fileno()).st_size)
            except OSError:
                sizes.append(-1)
        return tuple(sizes)

    def poll(self) -> FollowBatch:
        """Read what is new; never raises for file-system trouble (see ``read_error``)."""
        batch = FollowBatch(self.path)
        self._more = False
        self._left = self._budget
        try:
            self._poll_into(batch)
        except OSError as e:  # the specific cases are handled below; this is the backstop
            self._report_error(batch, f"unexpected I/O error: {e}")
        batch.more = self._more
        return batch

    def _poll_into(self, batch: FollowBatch) -> None:
        self._poll_retired(batch)
        if self._cur is None and not self._more:
            self._try_first_open(batch)
        for _ in range(_MAX_STEPS):
            if self._more:
                return
            # Older incarnations first: the lines come out in the order they were written.
            if (self._skipping is not None or self._skipped) and not self._read_skipped(batch):
                break
            if self._cur_event is not None:
                kind, message = self._cur_event
                self._cur_event = None
                self._event(batch, kind, message)
            cur = self._cur
            if cur is None:
                break
            try:
                st = os.fstat(cur.f.fileno())
            except OSError as e:
                self._report_error(batch, f"cannot stat open file: {e.strerror or e}")
                break
            if st.st_size < cur.asm.pos or (cur.changed(st) and not cur.holds_mark()):
                self._restart_truncated(batch, cur, st)
                self._poll_retired(batch)  # the rest of the old content, from its copy
                continue
            cur.size_seen = st.st_size
            if not self._read(batch, cur) or self._more:
                break
            # At end of file: is the path still this file?
            if not self._check_path(batch, cur):
                break
        else:
            self._more = True  # rotated again and again while we read: go on next poll

    def close(self) -> None:
        """Close open files. Unterminated tails are dropped: nothing more is reported."""
        for inc in self._retired:
            inc.close()
        self._retired.clear()
        if self._skipping is not None:
            self._skipping.close()
            self._skipping = None
        self._skipped.clear()
        if self._cur is not None:
            self._cur.close()
            self._cur = None

    def __enter__(self) -> FileFollower:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- opening -----------------------------------------------------------------------------

    def _open(self, batch: FollowBatch) -> tuple[BinaryIO, os.stat_result] | None:
        """Open the path read-only, or report why not."""
        try:
            opened = open_regular(self.path, READ_BUFFER_BYTES)
        except FileNotFoundError:
            if not self._missing_reported:
                self._missing_reported = True
                self._event(batch, "missing", f"waiting for {self.path} to appear")
            return None
        except PermissionError:
            self._report_error(batch, "permission denied (cannot read the file)")
            return None
        except OSError as e:
            self._report_error(batch, f"cannot open: {e.strerror or e}")
            return None
        self._error_reported = None
        return opened

    def _try_first_open(self, batch: FollowBatch) -> None:
        was_missing = self._missing_reported
        opened = self._open(batch)
        if opened is None:
            return
        inc = self._cur = self._new_incarnation(*opened, self.path)
        self._missing_reported = False
        # Rotated copies present now are history, not incarnations we missed.
        self._look_around(batch)
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

    def _initial_position(self, inc: Incarnation) -> int:
        size = inc.size_seen
        if self._last_lines is not None:
            return start_of_last_lines(inc.f, size, self._last_lines)
        if self._start == "start":
            return 0
        if self._start == "end":
            return start_of_last_lines(inc.f, size, 0)
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

    # -- copytruncate ------------------------------------------------------------------------

    def _restart_truncated(self, batch: FollowBatch, cur: Incarnation, st: os.stat_result) -> None:
        """The file was truncated (copytruncate): shorter than what we read, or regrown past
        it with other bytes. Finish the old content from the copy beside it if there is one,
        then read the file again from the start as a new incarnation."""
        old_pos = cur.asm.pos
        unread = max(0, cur.size_seen - old_pos)
        if st.st_size < old_pos:
            what = f"file truncated (size {st.st_size:,} < {old_pos:,} bytes read)"
        else:  # longer than what we read, but not with the bytes we read
            what = "file truncated and regrown"
        copy = self._find_copy(batch, cur)
        if copy is not None:
            name, copy_f, copy_st = copy
            # The old incarnation goes on in the copy (same bytes, same offsets): its unread
            # rest, and the line it was in the middle of, are read from there.
            retired = Incarnation(copy_f, copy_st, old_pos, self._cap, cur.generation, name)
            retired.asm = cur.asm
            retired.asm.f = copy_f
            copy_f.seek(old_pos)
            retired.final = True
            self._retired.append(retired)
            rest = copy_st.st_size - old_pos
            said = (
                f"the {rest:,} bytes not read yet are read from its copy "
                f"{os.path.basename(name)}, then"
                if rest
                else "everything before it was read;"
            )
            message = f"{self.path}: {what} (copytruncate); {said} reading it again"
        else:
            self._flush_tail(batch, cur)
            missing = (
                f"{unread:,} bytes may be missing"
                if unread
                else "bytes written after the last read may be missing"
            )
            message = f"{self.path}: {what}: {missing}; reading it again"
        message += " from the start"
        self._cur = self._new_incarnation(reread_from_start(cur.f), st, self.path)
        self._event(batch, "truncated", message)

    def _find_copy(
        self, batch: FollowBatch, cur: Incarnation
    ) -> tuple[str, BinaryIO, os.stat_result] | None:
        """The copy copytruncate made of the file: a rotated copy not seen before that is at
        least as long as what we read and holds the bytes we read last, where we read them."""
        for name, st in reversed(self._look_around(batch)):  # the newest first
            if st.st_size < cur.asm.pos or not cur.mark:
                continue
            try:
                f, st = open_regular(name, READ_BUFFER_BYTES)
            except OSError:
                continue
            if st.st_size >= cur.asm.pos and cur.holds_mark(f):
                return name, f, st
            f.close()
        return None

    # -- rotation ----------------------------------------------------------------------------

    def _check_path(self, batch: FollowBatch, cur: Incarnation) -> bool:
        """At EOF of the current file: switch to a new file at the path if there is one.

        Returns True if a new incarnation was opened (the caller reads it on).
        """
        try:
            st = os.stat(self.path)
        except FileNotFoundError:
            # Renamed away or deleted, nothing new yet: keep reading the open file (a writer
            # may still append to it) until a new one shows up.
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
        if not self._reopen:
            if not self._missing_reported:
                self._missing_reported = True
                self._event(
                    batch,
                    "missing",
                    f"{self.path}: now holds an older file of the log it is a rotated copy "
                    "of (read as that log); still reading the file it held",
                )
            return False
        # A different file now lives at the path: rotation (old file renamed, nlink > 0) or
        # replacement (old file deleted). Drained to EOF already; hand the tail over now.
        try:
            old_links = os.fstat(cur.f.fileno()).st_nlink
        except OSError:
            old_links = 0
        opened = self._open(batch)
        if opened is None:
            return False
        f, new_st = opened
        if cur.same_file(new_st):
            f.close()  # moved back between the stat and the open
            return False
        self._remember((new_st.st_dev, new_st.st_ino))
        self._retire(batch, cur)
        # Rotated copies that appeared since the last look, and that we never read, are
        # incarnations that came and went between two polls: read them before the new file.
        for name, sib_st in self._look_around(batch):
            self.generation += 1
            self._skipped.append((name, sib_st, self.generation))
        self._cur = self._new_incarnation(f, new_st, self.path)
        self._missing_reported = False
        if old_links > 0:
            self._cur_event = ("rotated", f"{self.path}: file rotated, reopened")
        else:
            self._cur_event = ("replaced", f"{self.path}: file deleted and recreated, reopened")
        return True
