"""The reading half of a follower: one poll's byte budget, the events and read errors it
reports, and the new lines of an incarnation read within that budget.

``PollReads`` holds no file: ``sources._follower.FileFollower`` (through
``sources._rotated_away``) decides which incarnations to read, and reads each through here.
"""

from __future__ import annotations

from ._follow_batch import EventKind, FollowBatch, SourceEvent
from ._incarnation import Incarnation
from ._live_chunks import read_chunks

_READ_FAILED = "read failed"


class PollReads:
    """The state every read of a poll shares: the budget left, whether it ran out, the
    generation of the newest incarnation and the last error reported."""

    def __init__(self, path: str, max_line_bytes: int, max_batch_bytes: int, chunks: bool) -> None:
        self.path = path
        self._cap = max_line_bytes
        self._budget = max_batch_bytes
        self._chunks = chunks
        self.generation = 0
        """Incremented each time a new file incarnation is opened (0: nothing opened yet)."""
        self._error_reported: str | None = None
        self._more = False
        self._left = 0  # bytes this poll may still read

    def _event(
        self, batch: FollowBatch, kind: EventKind, message: str, generation: int | None = None
    ) -> None:
        gen = self.generation if generation is None else generation
        batch.events.append(SourceEvent(kind, self.path, message, gen, batch.line_count))

    def _report_error(self, batch: FollowBatch, message: str) -> None:
        # Once per distinct problem, not on every poll.
        if self._error_reported != message:
            self._error_reported = message
            self._event(batch, "read_error", f"{self.path}: {message}")

    def _read(self, batch: FollowBatch, inc: Incarnation) -> bool:
        """Append ``inc``'s new complete lines to the batch, within this poll's byte budget
        (``_more`` says when it ran out); False on a read error."""
        out = batch._segment(inc.generation)
        start = len(out)
        before = inc.asm.pos
        try:
            if self._chunks:
                read_chunks(inc.asm, out, self._left)
            else:
                out.extend(inc.asm.lines(budget=self._left))
        except OSError as e:
            self._report_error(batch, f"{_READ_FAILED}: {e.strerror or e}")
            return False
        finally:
            self._left -= inc.asm.pos - before
            if self._left <= 0:
                self._more = True
            if len(out) > start:
                inc.note_read(out, start)
            if not out:
                batch.segments.pop()
        if self._error_reported is not None and self._error_reported.startswith(_READ_FAILED):
            self._error_reported = None  # reads work again: report the next failure
        return True

    def _flush_tail(self, batch: FollowBatch, inc: Incarnation) -> None:
        tail = inc.asm.flush_partial()
        if tail is not None:
            batch._segment(inc.generation).append(tail)
