"""Rotation handling: which Extractor file each incarnation of a followed path reads into.

A followed path may go through several file incarnations (rotation, truncation, rotated
copies read late): each gets its own Extractor file, so stored line locations never point
into the wrong file, and the status of the path adds them all up (``file_statuses``).
Source events (a rotation, a truncation) apply between the lines they came between
(``interleave``): a rotation opens the new incarnation's file before its lines come.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass

from sparseety_tui.core.extraction import Extractor
from sparseety_tui.core.store import FrozenExtractor
from sparseety_tui.ingest._backfill import Backfills
from sparseety_tui.ingest.snapshot import FileStatus
from sparseety_tui.sources import Chunk, FollowBatch, RawLine, SourceEvent

#: Source events the status line does not show (routine); the diagnostics list the rest.
ROUTINE_EVENTS = frozenset({"opened", "closed"})
#: Why a follower generation without an event got its own file.
NEW_FILE_REASON = "a new file at the path"


@dataclass
class _Followed:
    """One followed path: the Extractor file of each incarnation the follower read."""

    by_generation: dict[int, int]  # follower generation -> Extractor file
    incarnations: list[int]  # Extractor files, oldest first

    @property
    def first(self) -> int:
        """The file of the first incarnation (given before anything was read)."""
        return self.incarnations[0]

    @property
    def latest(self) -> int:
        return self.incarnations[-1]


@dataclass(frozen=True, slots=True)
class Lines:
    """Consecutive lines of one follower generation, to feed as they are."""

    generation: int
    lines: Sequence[RawLine | Chunk]


def interleave(batch: FollowBatch) -> Iterator[SourceEvent | Lines]:
    """The batch's lines and events in the order they happened: each event comes after
    the ``line_index`` lines it followed, and runs of lines are cut only where an event
    or a generation falls (the lines stay chunks, no per-line work)."""
    pending = deque(batch.events)
    done = 0  # lines of the batch before the current segment
    for segment in batch.segments:
        lines = segment.lines
        start = 0
        while True:
            while pending and pending[0].line_index <= done + start:
                yield pending.popleft()
            if start >= len(lines):
                break
            stop = len(lines)
            if pending:
                stop = min(stop, pending[0].line_index - done)
            yield Lines(segment.generation, lines[start:stop])
            start = stop
        done += len(lines)
    yield from pending


class Incarnations:
    """The Extractor files of every followed path's incarnations, oldest first."""

    def __init__(self, extractor: Extractor) -> None:
        self._extractor = extractor
        self._followed: dict[str, _Followed] = {}  # path -> its incarnations' files

    def __contains__(self, path: object) -> bool:
        return path in self._followed

    def follow(self, path: str) -> int:
        """Start a path (given at start, or a file that appeared in a followed directory);
        the Extractor file of its first incarnation."""
        file = self._extractor.add_file(path)
        self._followed[path] = _Followed({}, [file])
        return file

    def parts(self, path: str) -> list[int]:
        """The Extractor files of ``path``'s incarnations, oldest first."""
        return list(self._followed[path].incarnations)

    @property
    def paths(self) -> list[str]:
        return list(self._followed)

    def file_for(self, path: str, generation: int, reason: str, older: int | None = None) -> int:
        """The Extractor file of a follower generation of ``path`` (a new incarnation's
        file when the generation is new: generations only grow, so it follows the latest).
        ``older``: the file of the path's backfilled older part, superseded by a new
        incarnation (it belongs to the first one, which no longer lives at the path)."""
        followed = self._followed[path]
        file = followed.by_generation.get(generation)
        if file is not None:
            return file
        if generation <= 0 or not followed.by_generation:
            # Nothing read yet (a "missing" event), or the first incarnation.
            if generation > 0:
                followed.by_generation[generation] = followed.first
            return followed.first
        # Earlier rows keep pointing into their own incarnation's file.
        file = self._extractor.new_incarnation(followed.latest, reason)
        if older is not None:
            self._extractor.supersede(older, reason)
        followed.by_generation[generation] = file
        followed.incarnations.append(file)
        return file

    def apply(self, path: str, event: SourceEvent, older: int | None = None) -> bool:
        """Apply a source event to its incarnation's file; whether the status line shows
        it (it is not routine)."""
        file = self.file_for(path, event.generation, event.message, older)
        if event.kind == "closed":
            self._extractor.finish_file(file)  # no more lines will come to it
        if event.kind != "opened":
            self._extractor.note(file, event.message)
        return event.kind not in ROUTINE_EVENTS


def file_statuses(
    state: FrozenExtractor,
    incarnations: Incarnations,
    backfills: Backfills,
    line_base: Mapping[str, int | None],
) -> tuple[FileStatus, ...]:
    """One status per path, adding up every part: each incarnation (a rotated-away file
    is not forgotten) and the older part of a backfilled one."""
    out: list[FileStatus] = []
    files = state.files
    for path in incarnations.paths:
        first, *later = incarnations.parts(path)
        parts = [first]
        numbers = [1]
        done = total = 0
        backfill = backfills.of(path)
        if backfill is not None:
            parts.append(backfill.file)
            numbers.append(1)
            done, total = backfill.done, backfill.end
        for n, file in enumerate(later, start=2):
            parts.append(file)
            numbers.append(n)
        by_kind: dict[str, int] = {}
        for part in parts:
            for kind, count in files[part].by_kind.items():
                by_kind[kind] = by_kind.get(kind, 0) + count
        fmt = next(
            (files[p].format_name for p in reversed(parts) if files[p].family is not None),
            "unknown",
        )
        out.append(
            FileStatus(
                path=path,
                format=fmt,
                lines=sum(files[p].lines_total for p in parts),
                by_kind=by_kind,
                backfill_done=done,
                backfill_total=total,
                parts=tuple(parts),
                line_base=line_base.get(path, 0),
                incarnations=tuple(numbers),
            )
        )
    return tuple(out)
