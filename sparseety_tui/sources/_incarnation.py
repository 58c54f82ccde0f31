"""One open file (inode) a follower reads, and the line state within it.

``FileFollower`` (``sources._follower``) decides what to read and when; an ``Incarnation`` is
what it reads from: the open file, its ``LineAssembler``, and what it remembers to notice the
file changing under it (``MARK_BYTES``).
"""

from __future__ import annotations

import contextlib
import os
from typing import BinaryIO

from ._lines import _BACK_BLOCK, READ_BUFFER_BYTES, Chunk, LineAssembler, RawLine

__all__ = [
    "MARK_BYTES",
    "Incarnation",
    "Key",
    "reread_from_start",
    "start_of_last_lines",
]

MARK_BYTES = 64
"""Bytes remembered from the end of what was read, to notice a file truncated and regrown past
our position between two polls (its size alone does not show it)."""

Key = tuple[int, int]  # (st_dev, st_ino)
_Sig = tuple[int, int, int]  # (size, mtime_ns, ctime_ns)


def _sig(st: os.stat_result) -> _Sig:
    return (st.st_size, st.st_mtime_ns, st.st_ctime_ns)


class Incarnation:
    """One open inode and the line state within it."""

    __slots__ = (
        "asm",
        "dev",
        "f",
        "final",
        "generation",
        "ino",
        "mark",
        "mark_off",
        "name",
        "quiet_since",
        "sig",
        "size_seen",
    )

    def __init__(
        self, f: BinaryIO, st: os.stat_result, pos: int, cap: int, gen: int, name: str
    ) -> None:
        self.f = f
        self.dev = st.st_dev
        self.ino = st.st_ino
        self.asm = LineAssembler(f, pos, cap)
        self.generation = gen
        self.name = name  # where it was found (for messages)
        self.quiet_since = 0.0  # clock time of its last growth, once retired
        self.final = False  # nobody writes it any more (a copy): close it at its end
        self.size_seen = st.st_size
        self.sig: _Sig | None = _sig(st)
        self.mark = b""  # the last bytes read (up to MARK_BYTES), ending at mark_off + len
        self.mark_off = 0

    @property
    def key(self) -> Key:
        return (self.dev, self.ino)

    def same_file(self, st: os.stat_result) -> bool:
        return st.st_ino == self.ino and st.st_dev == self.dev

    def changed(self, st: os.stat_result) -> bool:
        """Whether the file changed since the last call (size, mtime or ctime)."""
        sig = _sig(st)
        if sig == self.sig:
            return False
        self.sig = sig
        return True

    def note_read(self, lines: list[RawLine | Chunk], start: int) -> None:
        """Remember the last bytes of the lines just read (``lines[start:]``: ``RawLine``s,
        or ``Chunk``s of whole lines, which hold their bytes as they are in the file)."""
        last = lines[-1]
        if isinstance(last, Chunk):
            end = last.offset + len(last.data)
            if len(last.data) >= MARK_BYTES:  # the common case, on every poll
                self.mark = last.data[-MARK_BYTES:]
                self.mark_off = end - MARK_BYTES
                return
        else:
            end = last.offset + last.length
            data = last.data
            if not last.truncated and len(data) >= MARK_BYTES:
                # The common case, on every poll: the last line alone is long enough.
                ending = _ending(last)
                self.mark = data[len(ending) - MARK_BYTES :] + ending
                self.mark_off = end - MARK_BYTES
                return
        need = MARK_BYTES
        pieces: list[bytes] = []
        for i in range(len(lines) - 1, start - 1, -1):
            line = lines[i]
            if isinstance(line, Chunk):
                raw, length = line.data, len(line.data)
            elif line.truncated:
                break  # its data is not what is in the file: keep what we have
            else:
                raw, length = line.data[-need:] + _ending(line), line.length
            piece = raw[-need:]
            pieces.append(piece)
            need -= len(piece)
            if need <= 0 or len(piece) < length:
                break
        if pieces:
            self.mark = b"".join(reversed(pieces))
            self.mark_off = end - len(self.mark)

    def holds_mark(self, f: BinaryIO | None = None) -> bool:
        """Whether the file (or ``f``) still holds the bytes last read where they were."""
        if not self.mark:
            return True  # nothing to compare with: only a shorter size tells
        try:
            got = os.pread((f or self.f).fileno(), len(self.mark), self.mark_off)
        except OSError:
            return True  # cannot tell; a read error is reported by the read itself
        return got == self.mark

    def close(self) -> None:
        with contextlib.suppress(OSError):
            self.f.close()


def _ending(line: RawLine) -> bytes:
    """The bytes that ended a complete line in the file (its data has them stripped)."""
    return b"\r\n" if line.length - len(line.data) == 2 else b"\n"


def start_of_last_lines(f: BinaryIO, size: int, n: int) -> int:
    """Offset where the last ``n`` complete lines of the file begin (reading backwards).

    An unterminated tail is not one of the ``n``: it is still being written, and will be
    reported once complete. ``n == 0`` gives the start of that tail (or ``size``).
    """
    pos = size
    need = n + 1  # the "\n" that ends the line before the first one we keep
    while pos > 0:
        block_start = max(0, pos - _BACK_BLOCK)
        f.seek(block_start)
        block = f.read(pos - block_start)
        end = len(block)
        while True:
            i = block.rfind(b"\n", 0, end)
            if i < 0:
                break
            need -= 1
            if need == 0:
                return block_start + i + 1
            end = i
        pos = block_start
    return 0


def reread_from_start(f: BinaryIO) -> BinaryIO:
    """The same open file at offset 0 with an empty read buffer: a buffered ``seek(0)`` may
    keep serving the bytes it buffered before the file was truncated."""
    fd = os.dup(f.fileno())
    f.close()
    try:
        os.lseek(fd, 0, os.SEEK_SET)
        return os.fdopen(fd, "rb", buffering=READ_BUFFER_BYTES)
    except BaseException:
        os.close(fd)
        raise
