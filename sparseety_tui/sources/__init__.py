"""File following and watching: bytes in, physical lines (with offsets) and source events out.

``iter_lines`` reads a finished file (or a byte range of it, for parallel workers);
``FileFollower`` follows one path like ``tail -F``; ``LogWatcher`` follows several and waits
for changes (inotify through watchfiles, or stat polling).
"""

from .follower import (
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
from .lines import (
    DEFAULT_MAX_LINE_BYTES,
    LineGoneError,
    RawLine,
    find_range_starts,
    iter_lines,
    read_line_at,
)
from .watcher import LogWatcher

__all__ = [
    "DEFAULT_DELETED_QUIET_S",
    "DEFAULT_MAX_BATCH_BYTES",
    "DEFAULT_MAX_LINE_BYTES",
    "DEFAULT_MAX_RETIRED",
    "DEFAULT_ROTATED_QUIET_S",
    "EventKind",
    "FileFollower",
    "FollowBatch",
    "LineGoneError",
    "LineSegment",
    "LogWatcher",
    "RawLine",
    "SourceEvent",
    "StartSpec",
    "find_range_starts",
    "iter_lines",
    "read_line_at",
]
