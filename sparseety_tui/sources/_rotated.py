"""Rotated copies of a log file in its directory: ``app.log.1``, ``app.log-20250101``...

logrotate (numbered or ``dateext``), Python's ``RotatingFileHandler`` and
``TimedRotatingFileHandler`` all name a rotated file after the live one: its name, a
separator, then a number or a date. The follower looks at these names when the file it
follows was rotated or truncated, to find incarnations it never saw (rotations faster than
its polls) and the copy ``copytruncate`` made; a followed directory does not take them for
new logs.
"""

from __future__ import annotations

import os
import stat

__all__ = ["COMPRESSED_SUFFIXES", "is_rotated_name", "oldest_first", "rotated_siblings"]

#: Compressed rotated files are not text we can read: never followed, never re-read.
COMPRESSED_SUFFIXES = (".gz", ".bz2", ".xz", ".zst", ".lz4", ".lzma", ".lzo", ".z", ".zip")

_SEPARATORS = ".-_"
_DIGITS = "0123456789"  # not str.isdigit(): that also takes "¹" and other Unicode digits


def is_rotated_name(base: str, name: str) -> bool:
    """Whether ``name`` looks like a rotated copy of a file named ``base``: ``base``, one
    of ``.-_``, a digit, anything (``app.log.1``, ``app.log-20250101``,
    ``app.log.2025-01-01_12-00``), and not compressed."""
    rest = name[len(base) :]
    return (
        name.startswith(base)
        and len(rest) >= 2
        and rest[0] in _SEPARATORS
        and rest[1] in _DIGITS
        and not name.lower().endswith(COMPRESSED_SUFFIXES)
    )


def rotated_siblings(path: str) -> tuple[list[tuple[str, os.stat_result]], bool]:
    """The regular files beside ``path`` named like its rotated copies, oldest first (see
    ``oldest_first``), and whether the listing was settled.

    Rotation renames files while we look (``app.log.3`` to ``app.log.4``): a name may hold
    another file by the time it is looked at, and a file may then slip past the listing.
    When a name no longer holds the inode the listing gave (or is gone), the listing is not
    settled: the caller looks again. (Each file found is what ``stat`` said; on file systems
    whose listing gives other inode numbers than ``stat``, no listing is ever settled, and
    the caller's retries only cost a few listings.) Unreadable directories give
    ``([], True)``.
    """
    directory, base = os.path.split(path)
    try:
        with os.scandir(directory or ".") as entries:
            listed = [(e.name, e.path, e.inode()) for e in entries if is_rotated_name(base, e.name)]
    except OSError:
        return [], True
    found: list[tuple[str, os.stat_result]] = []
    settled = True
    for _, full, inode in listed:
        try:
            st = os.stat(full)
        except OSError:
            settled = False  # gone since the listing (rotated on): look again
            continue
        if st.st_ino != inode:
            settled = False  # another file took the name since the listing
        if stat.S_ISREG(st.st_mode):
            found.append((full, st))
    return oldest_first(path, found), settled


def oldest_first(
    path: str, items: list[tuple[str, os.stat_result]]
) -> list[tuple[str, os.stat_result]]:
    """Rotated copies of ``path`` sorted by age: modification time; files written within the
    same clock tick (fast rotations) by name: a bigger number is older (``app.log.2`` before
    ``app.log.1``), dates sort as written."""
    base = os.path.basename(path)
    return sorted(items, key=lambda item: _age_key(base, item))


def _age_key(base: str, item: tuple[str, os.stat_result]) -> tuple[int, int, str]:
    name = os.path.basename(item[0])
    suffix = name[len(base) + 1 :]
    # (bounded: int() refuses thousands of digits, and a name can hold them)
    number = -int(suffix) if suffix.isascii() and suffix.isdigit() and len(suffix) < 19 else 0
    return (item[1].st_mtime_ns, number, name)
