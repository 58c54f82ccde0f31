"""The files a follower still reads after they left its path: incarnations renamed or
deleted away (read while they grow, closed once quiet or too many), and rotated copies that
came and went between two polls (found beside the path, read whole, oldest first).

It also remembers every inode seen, so that a rotated copy is read once, and the size of
each incarnation it closed, so that growth after the close is reported as ``lost``.
"""

from __future__ import annotations

import errno
import os
from collections.abc import Callable
from typing import BinaryIO

from ._follow_batch import FollowBatch
from ._incarnation import Incarnation, Key
from ._inputs import open_regular
from ._lines import READ_BUFFER_BYTES
from ._reads import PollReads
from ._rotated import oldest_first, rotated_siblings

_LOOKS = 10  # listings of the directory while rotation renames files under them
_KNOWN_KEPT = 4096  # inodes remembered as seen (ours and rotated copies)
_CLOSED_KEPT = 256  # closed incarnations remembered, to prove later growth was not read


class RotatedAway(PollReads):
    """Reads and closes the incarnations that left the path; opens new ones."""

    def __init__(
        self,
        path: str,
        *,
        max_line_bytes: int,
        max_batch_bytes: int,
        chunks: bool,
        rotated_quiet_s: float,
        deleted_quiet_s: float,
        max_retired: int,
        clock: Callable[[], float],
    ) -> None:
        super().__init__(path, max_line_bytes, max_batch_bytes, chunks)
        self._rotated_quiet = rotated_quiet_s
        self._deleted_quiet = deleted_quiet_s
        self._max_retired = max_retired
        self._clock = clock
        self._retired: list[Incarnation] = []
        #: Rotated copies found at a rotation that we never saw (oldest first), each with the
        #: generation it gets; read before the new file.
        self._skipped: list[tuple[str, os.stat_result, int]] = []
        self._skipping: Incarnation | None = None  # the one of them being read
        self._known: dict[Key, None] = {}
        self._closed: dict[Key, tuple[int, int]] = {}  # -> (size when closed, generation)

    def _new_incarnation(self, f: BinaryIO, st: os.stat_result, name: str) -> Incarnation:
        self.generation += 1
        inc = Incarnation(f, st, 0, self._cap, self.generation, name)
        self._remember(inc.key)
        return inc

    def _remember(self, key: Key) -> None:
        self._known[key] = None
        if len(self._known) > _KNOWN_KEPT:
            del self._known[next(iter(self._known))]

    def _look_around(self, batch: FollowBatch) -> list[tuple[str, os.stat_result]]:
        """The rotated copies beside the path that were not there at the last look (oldest
        first); all of them count as seen from now on. A copy we closed that has grown since
        is reported as ``lost``: those bytes were never read."""
        new: list[tuple[str, os.stat_result]] = []
        for _ in range(_LOOKS):
            siblings, settled = rotated_siblings(self.path)
            for name, st in siblings:
                key = (st.st_dev, st.st_ino)
                closed = self._closed.get(key)
                if closed is not None and st.st_size > closed[0]:
                    self._closed[key] = (st.st_size, closed[1])
                    self._event(
                        batch,
                        "lost",
                        f"{self.path}: {os.path.basename(name)} grew by "
                        f"{st.st_size - closed[0]:,} bytes after it was closed (quiet, or too "
                        "many rotated files open); those bytes were not read",
                        closed[1],
                    )
                if key not in self._known:
                    self._remember(key)
                    new.append((name, st))
            if settled:
                break  # else files were renamed under the listing: one may have slipped by
        return oldest_first(self.path, new)

    def _read_skipped(self, batch: FollowBatch) -> bool:
        """Read the rotated copies found at the last rotation, oldest first; False while the
        byte budget ran out before they were all read."""
        while self._skipping is not None or self._skipped:
            inc = self._skipping
            if inc is None:
                name, st, gen = self._skipped.pop(0)
                try:
                    name, f, st = self._open_sibling(name, (st.st_dev, st.st_ino))
                except OSError as e:
                    self._event(
                        batch,
                        "lost",
                        f"{self.path}: rotated more than once between two reads, and the "
                        f"rotated file {os.path.basename(name)} cannot be read "
                        f"({e.strerror or e}): its lines may be missing",
                        gen,
                    )
                    continue
                inc = self._skipping = Incarnation(f, st, 0, self._cap, gen, name)
                self._remember(inc.key)
                self._event(
                    batch,
                    "rotated",
                    f"{self.path}: rotated more than once between two reads; reading "
                    f"{os.path.basename(name)} too, a rotated file not read before",
                    gen,
                )
            if not self._read(batch, inc):
                self._skipping = None
                inc.close()
                continue
            if self._more:
                return False
            self._skipping = None
            if self._skipped:
                # A newer one exists: its writer moved on. Done with this one.
                self._flush_tail(batch, inc)
                self._forget(inc)
            else:
                self._retire(batch, inc)  # the newest may still be written to
        return True

    def _open_sibling(self, name: str, key: Key) -> tuple[str, BinaryIO, os.stat_result]:
        """Open the rotated copy ``key`` that was at ``name`` when the directory was listed.

        Rotation may have moved it on since (``app.log.3`` to ``app.log.4``), and another
        file may sit at that name now: reading that one instead would read it twice and
        lose this one. So the inode is checked, and looked for again under its new name.
        """
        for _ in range(_LOOKS):
            try:
                f, st = open_regular(name, READ_BUFFER_BYTES)
            except FileNotFoundError:
                pass
            else:
                if (st.st_dev, st.st_ino) == key:
                    return name, f, st
                f.close()
            siblings, settled = rotated_siblings(self.path)
            found = [n for n, sib in siblings if (sib.st_dev, sib.st_ino) == key]
            if found:
                name = found[0]
            elif settled:
                break  # a quiet listing without it: deleted, or moved elsewhere
        # Not found now; if it is still somewhere beside the path, a later look reads it.
        self._known.pop(key, None)
        raise FileNotFoundError(errno.ENOENT, "it was deleted or moved on", name)

    def _retire(self, batch: FollowBatch, inc: Incarnation) -> None:
        """Stop treating ``inc`` as the current file (it was rotated away or deleted).

        It stays open while it grows: a writer that has not reopened yet may still append to
        it (or finish the line it was writing). Its unterminated tail is reported when it is
        closed, so a line finished late is not cut in two.
        """
        inc.quiet_since = self._clock()
        self._retired.append(inc)
        self._poll_retired(batch, read=False)

    def _poll_retired(self, batch: FollowBatch, read: bool = True) -> None:
        """Read what was appended to rotated-away files; close those quiet long enough, and
        the oldest beyond ``max_retired`` once read to their end."""
        if not self._retired:
            return
        now = self._clock()
        keep: list[Incarnation] = []
        for inc in self._retired:
            try:
                st = os.fstat(inc.f.fileno())
            except OSError:
                self._close_retired(batch, inc, "it cannot be read any more")
                continue
            if read and not self._more:
                before = inc.asm.pos
                if not self._read(batch, inc):
                    self._close_retired(batch, inc, "it cannot be read any more")
                    continue
                if inc.asm.pos != before:
                    inc.quiet_since = now  # a writer is still there: give it more time
            at_end = inc.asm.pos >= st.st_size and not self._more
            # A renamed file may still be written; a deleted one only by a writer that had
            # it open already: it gets less time.
            quiet = self._rotated_quiet if st.st_nlink > 0 else self._deleted_quiet
            if inc.final and at_end:
                self._flush_tail(batch, inc)
                self._forget(inc)
            elif at_end and now - inc.quiet_since >= quiet:
                where = "renamed" if st.st_nlink > 0 else "deleted"
                self._close_retired(batch, inc, f"{where}, quiet for {quiet:g} s")
            else:
                keep.append(inc)
        while len(keep) > self._max_retired:
            oldest = keep[0]
            try:
                at_end = oldest.asm.pos >= os.fstat(oldest.f.fileno()).st_size
            except OSError:
                at_end = True
            if not at_end:
                break  # read it to its end first (next poll)
            keep.pop(0)
            self._close_retired(
                batch,
                oldest,
                f"more than {self._max_retired} rotated files open; lines still written "
                "there are not read",
            )
        self._retired = keep

    def _close_retired(self, batch: FollowBatch, inc: Incarnation, why: str) -> None:
        self._flush_tail(batch, inc)
        self._forget(inc)
        self._event(
            batch,
            "closed",
            f"{self.path}: stopped reading the rotated-away file (generation "
            f"{inc.generation}): {why}",
            inc.generation,
        )

    def _forget(self, inc: Incarnation) -> None:
        """Close an old incarnation, remembering its size to notice growth we missed."""
        try:
            size = os.fstat(inc.f.fileno()).st_size
        except OSError:
            size = inc.asm.pos
        inc.close()
        self._closed[inc.key] = (size, inc.generation)
        if len(self._closed) > _CLOSED_KEPT:
            del self._closed[next(iter(self._closed))]
