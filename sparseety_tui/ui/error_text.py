"""An error's lines read again from its file (the errors view and its context screen).

Reading is by line number (``sources._numbered``): cheap for a small file or a line near
one already found; on a big file far from any, counting newlines takes a while, so the
screens do it off the UI thread (``needs_thread``).
"""

from __future__ import annotations

import os
from dataclasses import dataclass

from sparseety_tui.sources import FINDER, MAX_LINES, NumberedLine
from sparseety_tui.ui.error_places import ErrorPlace

#: Files up to this size are read on the UI thread (a few ms); bigger ones in a worker.
SYNC_READ_BYTES = 16 * 1024 * 1024


@dataclass(frozen=True)
class ErrorLines:
    """Lines ``first``..``last`` around an error, and which of them are the error's
    (``error_first``..``error_last``); ``note`` says why there are none, or what is
    missing."""

    lines: tuple[NumberedLine, ...]
    error_first: int
    error_last: int
    note: str = ""


def needs_thread(place: ErrorPlace) -> bool:
    if place.path is None:
        return False
    try:
        return os.stat(place.path).st_size > SYNC_READ_BYTES
    except OSError:
        return False


def read_error(place: ErrorPlace, context: int = 0) -> ErrorLines:
    """The error's lines (and ``context`` lines either side) as the file holds them now.
    A traceback longer than ``MAX_LINES`` is shown by its end (its last line matters)."""
    if place.path is None or place.line is None or place.last is None:
        return ErrorLines((), 0, 0, place.why or "its lines cannot be read again")
    first, last = place.line, place.last
    note = ""
    if last - first + 1 + 2 * context > MAX_LINES:
        first = max(first, last - MAX_LINES + 1 + 2 * context)
        note = f"the first {first - place.line:,} lines of the error are not shown"
    try:
        lines = FINDER.read(place.path, first - context, last + context)
    except OSError as exc:
        return ErrorLines((), first, last, f"cannot read the file again: {exc.strerror or exc}")
    if not any(first <= line.number <= last for line in lines):
        note = "the file is shorter now (truncated or replaced): the lines are gone"
    return ErrorLines(tuple(lines), first, last, note)
