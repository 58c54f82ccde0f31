"""What the Extractor knows of each file it reads: counts by line kind, the lines nobody
understood, the format, the parser. ``FileState`` is the writer's; ``FrozenFile`` is an
immutable copy for readers on other threads (``FileState.freeze``).
"""

from __future__ import annotations

from collections import deque
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from sparseety_tui.formats import FormatFamily, LineParser

#: How many unparsed lines per file keep their text and reason for the diagnostics screen.
DIAGNOSTIC_SAMPLES = 2000
#: Bytes of each line's head kept for format detection.
SNIFF_HEAD_BYTES = 4096


@dataclass(frozen=True)
class Diagnostic:
    """One line nobody understood: where it is, why, and its start."""

    line_no: int
    offset: int
    reason: str
    preview: str  # decoded with replacement; shown literally, never as markup


@dataclass(frozen=True)
class FrozenFile:
    """One file's state at one moment, read-only (``FileState.freeze``)."""

    path: str
    family: FormatFamily | None
    reference_time: float | None
    superseded: str | None
    lines_total: int
    by_kind: Mapping[str, int]
    diagnostics: tuple[Diagnostic, ...]
    ignored: Mapping[str, int]
    meta: Mapping[str, Any]
    events: tuple[str, ...]
    revision: int

    @property
    def format_name(self) -> str:
        return self.family.name if self.family is not None else "unknown"


@dataclass
class FileState:
    path: str
    forced_format: str | None = None
    family: FormatFamily | None = None
    parser: LineParser | None = None
    lines_total: int = 0
    by_kind: dict[str, int] = field(default_factory=dict)
    diagnostics: deque[Diagnostic] = field(default_factory=lambda: deque(maxlen=DIAGNOSTIC_SAMPLES))
    sniff_buffer: list[bytes] = field(default_factory=list)
    #: True while ``registry.FALLBACK`` reads the file only because no family was confident
    #: about its first lines yet: a family that becomes confident takes over.
    provisional: bool = False
    #: The file's mtime when it was added (None if it did not exist yet): the date that
    #: year-less timestamps (vLLM) are read against, the same in every parser of the file.
    reference_time: float | None = None
    meta: dict[str, Any] = field(default_factory=dict)
    events: deque[str] = field(default_factory=lambda: deque(maxlen=100))
    #: Set when the path now holds another file (rotated, replaced, truncated): offsets of
    #: this incarnation no longer point at its lines, so the detail view does not re-read.
    superseded: str | None = None
    #: Values left unknown in earlier byte ranges of this file (``append_part``); the
    #: parser counts its own (``LineParser.ignored``), ``ignored`` adds the two.
    ignored_in_parts: dict[str, int] = field(default_factory=dict)
    #: The physical lines of a record a wrapper split (Docker json-file, over 16 KiB)
    #: read so far, each with its piece taken apart, waiting for its last one
    #: (formats/_wrapped.py); not counted yet.
    wrap_held: list[Any] = field(default_factory=list)
    #: Bumped by the Extractor whenever anything above changes (a frozen copy made at the
    #: same revision is still current).
    revision: int = 0

    def keep_for_sniffing(self, line: bytes) -> None:
        """Keep a line's head for format detection (a blank line tells nothing)."""
        if line.strip():
            self.sniff_buffer.append(line[:SNIFF_HEAD_BYTES])

    @property
    def format_name(self) -> str:
        return self.family.name if self.family is not None else "unknown"

    @property
    def ignored(self) -> dict[str, int]:
        """Values lines had that were left unknown: ``"field: reason"`` -> how many."""
        counts = dict(self.ignored_in_parts)
        if self.parser is not None:
            add_counts(counts, self.parser.ignored)
        return counts

    def freeze(self, previous: FrozenFile | None) -> FrozenFile:
        """An immutable copy (``previous`` again when nothing changed since it was made)."""
        if previous is not None and previous.revision == self.revision:
            return previous
        return FrozenFile(
            path=self.path,
            family=self.family,
            reference_time=self.reference_time,
            superseded=self.superseded,
            lines_total=self.lines_total,
            by_kind=dict(self.by_kind),
            diagnostics=tuple(self.diagnostics),
            ignored=self.ignored,
            meta=dict(self.meta),
            events=tuple(self.events),
            revision=self.revision,
        )

    def append_part(
        self,
        lines_total: int,
        by_kind: Mapping[str, int],
        diagnostics: list[Diagnostic],
        ignored: Mapping[str, int],
        meta: Mapping[str, Any],
    ) -> int:
        """Add the counts of a later part of this file (read as a byte range); returns the
        number of lines before that part (what its line numbers are shifted by)."""
        shift = self.lines_total
        self.lines_total += lines_total
        add_counts(self.by_kind, by_kind)
        add_counts(self.ignored_in_parts, ignored)
        for d in diagnostics:
            self.diagnostics.append(Diagnostic(d.line_no + shift, d.offset, d.reason, d.preview))
        self.meta.update(meta)
        self.revision += 1
        return shift


def add_counts(into: dict[str, int], more: Mapping[str, int]) -> None:
    for key, count in more.items():
        into[key] = into.get(key, 0) + count
