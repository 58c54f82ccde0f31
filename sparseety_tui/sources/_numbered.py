"""Reading lines of a file again by their number (the errors view: a traceback in context).

An error is located by its file and line number, not by byte offset (a traceback ends at a
later line, when its lines' offsets are gone). Finding line N means counting newlines from
the file's start; ``LineFinder`` remembers where each MiB it counted began (the line
number and the offset), so the next look-up in the same file starts from the nearest such
point instead of the start. The file is opened through ``inputs.open_regular``
(``O_RDONLY``, regular files only) and read with ``pread``: nothing is ever written.

The remembered points are dropped when the file is no longer the one counted (another
inode, or shorter than a point): a rotated or truncated file is counted again.
"""

from __future__ import annotations

import os
import threading
from bisect import bisect_right
from dataclasses import dataclass, field

from sparseety_tui.sources._inputs import open_regular

#: Bytes read per step while counting newlines.
STEP_BYTES = 1 << 20
#: Bytes kept of one line read back (longer lines are cut, and say so).
MAX_LINE_BYTES = 64 * 1024
#: Lines given back at most per call.
MAX_LINES = 2000


@dataclass
class _Points:
    """Where counted MiB steps of one file began: ``lines[i]`` lines before ``offsets[i]``."""

    identity: tuple[int, int]
    lines: list[int] = field(default_factory=lambda: [0])
    offsets: list[int] = field(default_factory=lambda: [0])


@dataclass(frozen=True)
class NumberedLine:
    number: int  # 1-based
    data: bytes  # without its line ending; at most MAX_LINE_BYTES
    cut: bool  # the line was longer than MAX_LINE_BYTES


class LineFinder:
    """Reads numbered lines of files, remembering where it counted (thread-safe)."""

    def __init__(self) -> None:
        self._points: dict[str, _Points] = {}
        self._lock = threading.Lock()

    def read(self, path: str, first: int, last: int) -> list[NumberedLine]:
        """Lines ``first`` .. ``last`` (1-based, inclusive) of ``path``, as many as the file
        has (fewer near its end; at most ``MAX_LINES``). Raises ``OSError`` when the file
        cannot be opened."""
        first = max(1, first)
        last = min(last, first + MAX_LINES - 1)
        if last < first:
            return []
        f, st = open_regular(path, buffering=0)
        with f:
            fd = f.fileno()
            identity = (st.st_dev, st.st_ino)
            with self._lock:
                points = self._points.get(path)
                if points is None or points.identity != identity or points.offsets[-1] > st.st_size:
                    points = _Points(identity)
                    self._points[path] = points
                i = bisect_right(points.lines, first - 1) - 1
                line_no, offset = points.lines[i], points.offsets[i]
            return self._scan(fd, points, line_no, offset, first, last)

    def _scan(
        self, fd: int, points: _Points, line_no: int, offset: int, first: int, last: int
    ) -> list[NumberedLine]:
        """From ``offset``, the start of line ``line_no + 1``, count to line ``first`` and
        take the lines up to ``last``."""
        out: list[NumberedLine] = []
        kept = b""  # the line being taken, up to MAX_LINE_BYTES
        length = 0  # its whole length so far
        at_line_start = True
        while True:
            chunk = os.pread(fd, STEP_BYTES, offset)
            if not chunk:
                break
            if at_line_start:
                with self._lock:
                    if offset > points.offsets[-1]:
                        points.lines.append(line_no)
                        points.offsets.append(offset)
            pos, size = 0, len(chunk)
            if line_no + 1 < first:  # still counting: whole steps at C speed
                need = first - 1 - line_no
                newlines = chunk.count(b"\n")
                if newlines < need:
                    line_no += newlines
                    offset += size
                    at_line_start = chunk.endswith(b"\n")
                    continue
                for _ in range(need):
                    pos = chunk.index(b"\n", pos) + 1
                line_no += need
            while pos < size:
                end = chunk.find(b"\n", pos)
                piece = chunk[pos:] if end < 0 else chunk[pos:end]
                if len(kept) < MAX_LINE_BYTES:
                    kept += piece[: MAX_LINE_BYTES - len(kept)]
                length += len(piece)
                if end < 0:
                    break
                line_no += 1
                out.append(_numbered(line_no, kept, length))
                kept, length = b"", 0
                if line_no >= last:
                    return out
                pos = end + 1
            offset += size
            at_line_start = chunk.endswith(b"\n")
        if length and line_no + 1 >= first:
            out.append(_numbered(line_no + 1, kept, length))  # the last, without a newline
        return out


def _numbered(number: int, data: bytes, length: int) -> NumberedLine:
    if data.endswith(b"\r"):
        data = data[:-1]
    return NumberedLine(number, data, length > MAX_LINE_BYTES)


#: The finder the UI shares (its points serve every screen).
FINDER = LineFinder()
