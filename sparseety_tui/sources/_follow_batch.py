"""What a follower's ``poll()`` returns: the lines it read, by file incarnation
(``FollowBatch``, ``LineSegment``), and the ``SourceEvent``s of what happened to the file; and
the follower's default limits.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

from ._lines import Chunk, RawLine

EventKind = Literal[
    "opened",
    "missing",
    "appeared",
    "rotated",
    "truncated",
    "replaced",
    "read_error",
    "closed",
    "lost",
]
"""``closed``: an old incarnation is no longer read (quiet, or too many open); ``lost``:
proof that bytes were never read (a rotated file grew after it was closed, or one could not
be opened)."""

DEFAULT_MAX_BATCH_BYTES = 16 * 1024 * 1024
"""Bytes read by one ``poll()`` at most (at a line boundary), so catching up on a multi-GB file
is done in steps and the caller stays responsive; ``FollowBatch.more`` says there is more."""

DEFAULT_ROTATED_QUIET_S = 300.0
"""A renamed-away file is read until it has not grown for this long. A writer that never
reopens its log (output redirected to the file, a plain ``FileHandler``) keeps writing to the
renamed file, maybe only every few minutes on an idle server."""

DEFAULT_DELETED_QUIET_S = 10.0
"""A deleted file is read until it has not grown for this long: shorter, since holding it
open keeps its disk space allocated."""

DEFAULT_MAX_RETIRED = 8
"""Old incarnations kept open at most (the oldest is closed first)."""


@dataclass(frozen=True, slots=True)
class SourceEvent:
    """Something that happened to a followed file, worth telling the user about."""

    kind: EventKind
    path: str
    message: str
    """Human-readable, e.g. "file rotated, reopened"."""
    generation: int = 0
    """The incarnation the event is about: the new one for ``opened``, ``appeared``,
    ``rotated``, ``replaced`` and ``truncated``; the one closed for ``closed`` and ``lost``;
    the current one otherwise."""
    line_index: int = 0
    """How many of the batch's lines (``FollowBatch.lines``) came before this event."""


@dataclass(slots=True)
class LineSegment:
    """Consecutive lines of one file incarnation: ``RawLine``s, or with
    ``FileFollower(chunks=True)`` ``Chunk``s of whole lines (and a ``RawLine`` for a line
    held across polls or longer than a chunk; ``sources._live_chunks``)."""

    generation: int
    lines: list[RawLine | Chunk] = field(default_factory=list)


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
    def lines(self) -> list[RawLine | Chunk]:
        """All lines of the batch, in order (see ``segments`` for their generations)."""
        if len(self.segments) == 1:
            return self.segments[0].lines
        return [line for seg in self.segments for line in seg.lines]

    @property
    def line_count(self) -> int:
        return sum(len(seg.lines) for seg in self.segments)

    def __bool__(self) -> bool:
        return bool(self.events) or any(seg.lines for seg in self.segments)

    def _segment(self, generation: int) -> list[RawLine | Chunk]:
        if not self.segments or self.segments[-1].generation != generation:
            self.segments.append(LineSegment(generation))
        return self.segments[-1].lines


StartSpec = Literal["start", "end"] | int
