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

__all__ = ["COMPRESSED_SUFFIXES", "is_rotated_name", "rotated_siblings"]

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


def rotated_siblings(path: str) -> list[tuple[str, os.stat_result]]:
    """The regular files beside ``path`` named like its rotated copies, oldest first.

    Age is the modification time; files written within the same clock tick (fast
    rotations) are ordered by their name: a bigger number is older (``app.log.2`` before
    ``app.log.1``), and dates sort as written. Unreadable directories give an empty list.
    """
    directory, base = os.path.split(path)
    try:
        names = os.listdir(directory or ".")
    except OSError:
        return []
    found: list[tuple[str, os.stat_result]] = []
    for name in names:
        if not is_rotated_name(base, name):
            continue
        full = os.path.join(directory, name)
        try:
            st = os.stat(full)
        except OSError:
            continue  # gone since the listing (rotated on): a later look finds it
        if stat.S_ISREG(st.st_mode):
            found.append((full, st))
    found.sort(key=lambda item: _age_key(base, item))
    return found


def _age_key(base: str, item: tuple[str, os.stat_result]) -> tuple[int, int, str]:
    name = os.path.basename(item[0])
    suffix = name[len(base) + 1 :]
    # (bounded: int() refuses thousands of digits, and a name can hold them)
    number = -int(suffix) if suffix.isascii() and suffix.isdigit() and len(suffix) < 19 else 0
    return (item[1].st_mtime_ns, number, name)
