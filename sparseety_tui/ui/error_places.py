"""Where an error is, as the errors view shows it: the file's short name, and its line
numbers in the whole file.

An ``ErrorRecord``'s line numbers count from the start of the Extractor file it was read
in. For most files that is the whole file. A big file read tail first
(``ingest.snapshot.BIG_FILE_BYTES``) has two: its tail part, numbered from the tail's
first line until the older part is counted (``FileStatus.line_base``), and the older part,
numbered from the file's start. A file that no longer lives at its path (rotated away,
truncated) cannot be read again there: its errors keep their message only.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from sparseety_tui.core.store import ErrorRecord
from sparseety_tui.ingest.snapshot import Snapshot


@dataclass(frozen=True)
class ErrorPlace:
    """Where an error is: ``short`` file name; ``line``..``last`` in the whole file (None:
    not known yet, a big file's tail before its older part is counted); ``path`` to read
    it again from (None: the lines are no longer there, ``why`` says why)."""

    short: str
    path: str | None
    line: int | None
    last: int | None
    tail_line: int  # the line counted from where reading began (shown when ``line`` is None)
    why: str = ""

    @property
    def where(self) -> str:
        """``line`` as shown: the number, or ``tail+N`` while the file's start is being
        counted."""
        return f"{self.line:,}" if self.line is not None else f"tail+{self.tail_line:,}"


def short_names(paths: Iterable[str]) -> dict[str, str]:
    """Each path's file name, with as many parent directories as tell it from the others
    (``a/app.log`` and ``b/app.log``)."""
    unique = sorted(set(paths))
    names: dict[str, str] = {}
    depth = 1
    pending = unique
    while pending:
        tails = {p: _tail(p, depth) for p in pending}
        counts: dict[str, int] = {}
        for tail in tails.values():
            counts[tail] = counts.get(tail, 0) + 1
        nxt = []
        for p, tail in tails.items():
            if counts[tail] == 1 or depth > 8:
                names[p] = tail
            else:
                nxt.append(p)
        pending, depth = nxt, depth + 1
    return names


def _tail(path: str, depth: int) -> str:
    parts = os.path.normpath(path).split(os.sep)
    return os.sep.join(parts[-depth:])


class Places:
    """The places of one snapshot's errors (built once per snapshot)."""

    def __init__(self, snapshot: Snapshot) -> None:
        state = snapshot.state
        self._files = state.files if state is not None else ()
        self._names = short_names(f.path for f in self._files)
        #: file index -> lines before it in the whole file (None: not counted yet)
        self._base: dict[int, int | None] = {}
        for status in snapshot.files:
            for part_no, part in enumerate(status.parts):
                tail = part_no == 0 and status.backfill_total > 0
                self._base[part] = status.line_base if tail else 0

    @property
    def names(self) -> Mapping[str, str]:
        return self._names

    def of(self, record: ErrorRecord) -> ErrorPlace:
        files = self._files
        if not 0 <= record.file < len(files):
            return ErrorPlace("?", None, None, None, record.line, "file not known")
        state = files[record.file]
        short = self._names.get(state.path, state.path)
        base = self._base.get(record.file, 0)
        if base is None:
            return ErrorPlace(
                short, None, None, None, record.line, "the file's start is still being counted"
            )
        line, last = record.line + base, record.last + base
        if state.superseded is not None:
            why = f"the file no longer lives at its path ({state.superseded})"
            return ErrorPlace(short, None, line, last, record.line, why)
        return ErrorPlace(short, state.path, line, last, record.line)
