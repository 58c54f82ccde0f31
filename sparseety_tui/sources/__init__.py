"""File following and watching: bytes in, physical lines (with offsets) and source events out.

``iter_lines`` reads a finished file (or a byte range of it, for parallel workers);
``FileFollower`` follows one path like ``tail -F``; ``LogWatcher`` follows several and waits
for changes (inotify through watchfiles, or stat polling).
"""

from sparseety_tui.sources._inputs import InputPath, expand, open_regular, os_reason
from sparseety_tui.sources._lines import (
    READ_BUFFER_BYTES,
    Chunk,
    LineAssembler,
    iter_chunks,
    mtime_or_none,
    split_chunk,
)
from sparseety_tui.sources._live_chunks import LIVE_CHUNK_BYTES, read_chunks
from sparseety_tui.sources._numbered import FINDER, MAX_LINES, NumberedLine

from ._follower import (
    DEFAULT_DELETED_QUIET_S,
    DEFAULT_MAX_BATCH_BYTES,
    DEFAULT_MAX_RETIRED,
    DEFAULT_ROTATED_QUIET_S,
    EventKind,
    FileFollower,
    FollowBatch,
    LineSegment,
    SourceEvent,
    StartSpec,
)
from ._lines import (
    DEFAULT_MAX_LINE_BYTES,
    LineGoneError,
    RawLine,
    find_range_starts,
    iter_lines,
    read_line_at,
)
from ._watcher import LogWatcher

__all__ = [
    "DEFAULT_DELETED_QUIET_S",
    "DEFAULT_MAX_BATCH_BYTES",
    "DEFAULT_MAX_LINE_BYTES",
    "DEFAULT_MAX_RETIRED",
    "DEFAULT_ROTATED_QUIET_S",
    "FINDER",
    "LIVE_CHUNK_BYTES",
    "MAX_LINES",
    "READ_BUFFER_BYTES",
    "Chunk",
    "EventKind",
    "FileFollower",
    "FollowBatch",
    "InputPath",
    "LineAssembler",
    "LineGoneError",
    "LineSegment",
    "LogWatcher",
    "NumberedLine",
    "RawLine",
    "SourceEvent",
    "StartSpec",
    "expand",
    "find_range_starts",
    "iter_chunks",
    "iter_lines",
    "mtime_or_none",
    "open_regular",
    "os_reason",
    "read_chunks",
    "read_line_at",
    "split_chunk",
]
