"""Physical lines of a log file, with their byte offsets.

A physical line ends at ``\\n``; ``\\r\\n`` is one ending (both bytes are stripped), a bare
``\\r`` inside a line (progress bars) does not end it and is kept. A last line without ``\\n``
counts as a line only once the caller says the file is finished (batch mode: end of file).

Speed: CPython's buffered ``readline`` is implemented in C, and plain binary line iteration
beats chunk-and-split readers (the perf baseline, §2). We call ``readline(limit)`` through
``iter(partial(...), b"")`` (also all C) so that a single huge line never makes us hold more
than ``max_line_bytes + 1`` bytes at once, at the cost of ``for line in f``. The per-line work
(slice off the ending, build a tuple) dominates, so it is kept minimal and ``RawLine`` tuples
are built with ``tuple.__new__`` directly, not through the NamedTuple constructor, which is a
Python-level function.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from functools import partial
from itertools import accumulate, repeat
from typing import BinaryIO, NamedTuple

from ._inputs import open_regular

__all__ = [
    "DEFAULT_MAX_LINE_BYTES",
    "Chunk",
    "LineGoneError",
    "RawLine",
    "find_range_starts",
    "iter_chunks",
    "iter_lines",
    "mtime_or_none",
    "read_line_at",
    "split_chunk",
]

DEFAULT_MAX_LINE_BYTES = 8 * 1024 * 1024
"""Bytes of one line kept in memory; the rest of a longer line is skipped (``truncated``)."""

_SKIP_CHUNK = 1024 * 1024
"""Read size while skipping past the kept part of a huge line (bounds memory)."""

READ_BUFFER_BYTES = 64 * 1024
"""Buffer of the file objects we read through: the default (8 KiB or st_blksize) makes bare
line reading ~25% slower than 64 KiB on the project machine; 1 MiB gains little more."""

_BACK_BLOCK = 64 * 1024
"""Block size when reading a file backwards (``last_lines``)."""

_NL = 10  # b"\n"[0]
_CR = 13  # b"\r"[0]


class RawLine(NamedTuple):
    """One physical line as read from a file."""

    offset: int
    """Byte offset of the line's first byte in the file (incarnation) it was read from."""
    length: int
    """Bytes the line occupies in the file, ending included (the true length, even if truncated)."""
    data: bytes
    """The line without its ending; at most ``max_line_bytes`` bytes (see ``truncated``)."""
    truncated: bool
    """True if the line was longer than ``max_line_bytes`` and ``data`` holds only its start."""


_new_tuple = tuple.__new__


def _make_line(offset: int, length: int, data: bytes, truncated: bool) -> RawLine:
    return _new_tuple(RawLine, (offset, length, data, truncated))


def mtime_or_none(path: str | os.PathLike[str]) -> float | None:
    """A file's modification time, or None if it cannot be had (missing, unreadable)."""
    try:
        return os.stat(path).st_mtime
    except OSError:
        return None


class LineGoneError(OSError):
    """A line can no longer be read where it was (the file shrank or was replaced)."""


class PartialLine:
    """A line being assembled from several reads (a huge line, or a tail without ``\\n`` yet).

    Keeps at most ``cap`` bytes of the line whatever its true length: that is what bounds
    memory for a 50 MB line.
    """

    __slots__ = ("cap", "kept", "last_byte", "length", "offset", "prev_byte")

    def __init__(self, offset: int, cap: int) -> None:
        self.offset = offset
        self.cap = cap
        self.kept = bytearray()
        self.length = 0
        # The last two bytes seen, to recognise a "\r\n" ending split across two reads.
        self.last_byte = -1
        self.prev_byte = -1

    def add(self, piece: bytes) -> None:
        if not piece:
            return
        room = self.cap - len(self.kept)
        if room > 0:
            self.kept += piece[:room]
        self.length += len(piece)
        self.prev_byte = piece[-2] if len(piece) >= 2 else self.last_byte
        self.last_byte = piece[-1]

    def finish(self) -> RawLine:
        """The line so far as a complete line; its ending, if any, is the last bytes added."""
        ending = 0
        if self.last_byte == _NL:
            ending = 2 if self.prev_byte == _CR else 1
        data_len = self.length - ending
        keep = min(data_len, self.cap)
        return _make_line(self.offset, self.length, bytes(self.kept[:keep]), data_len > self.cap)


class LineAssembler:
    """Line-splitting state over a binary buffered file object, shared by batch and follow.

    ``pos`` is the offset of the next byte to read; ``partial`` holds an unterminated line
    read up to ``pos`` (``None`` when ``pos`` is a line start).
    """

    __slots__ = ("cap", "f", "partial", "pos")

    def __init__(self, f: BinaryIO, pos: int, cap: int) -> None:
        if cap < 1:
            raise ValueError("max_line_bytes must be at least 1")
        self.f = f
        self.pos = pos
        self.cap = cap
        self.partial: PartialLine | None = None

    def lines(self, stop: int | None = None, budget: int | None = None) -> Iterator[RawLine]:
        """Yield complete lines from ``pos`` on.

        Stops at end of file (an unterminated tail stays in ``partial``), before a line that
        starts at or after ``stop``, or once about ``budget`` bytes were consumed (at a line
        boundary). ``pos`` is up to date whenever the generator is suspended or done.
        """
        limit_pos = stop
        if budget is not None:
            limit_pos = self.pos + budget if stop is None else min(stop, self.pos + budget)
        if self.partial is not None:
            line = self._continue_partial()
            if line is None:
                return
            yield line
            if limit_pos is not None and self.pos >= limit_pos:
                return
        cap = self.cap
        lim = cap + 1  # a complete line of up to cap data bytes + "\n" fits in one read
        off = self.pos
        try:
            for piece in iter(partial(self.f.readline, lim), b""):
                n = len(piece)
                if piece[-1] == _NL:
                    data = piece[:-2] if n > 1 and piece[-2] == _CR else piece[:-1]
                    line = _new_tuple(RawLine, (off, n, data, False))
                    off += n
                    yield line
                    if limit_pos is not None and off >= limit_pos:
                        return
                else:
                    # Rare: a line longer than the limit, or an unterminated tail at EOF.
                    part = PartialLine(off, cap)
                    part.add(piece)
                    off += n
                    self.partial = part
                    if n < lim:
                        return  # end of file: the tail waits for its "\n"
                    self.pos = off
                    line = self._continue_partial()
                    off = self.pos
                    if line is None:
                        return
                    yield line
                    if limit_pos is not None and off >= limit_pos:
                        return
        finally:
            self.pos = off

    def _continue_partial(self) -> RawLine | None:
        """Read on until the held partial line ends; None if end of file comes first."""
        part = self.partial
        assert part is not None
        readline = self.f.readline
        while True:
            piece = readline(_SKIP_CHUNK)
            if not piece:
                return None
            part.add(piece)
            self.pos += len(piece)
            if piece[-1] == _NL:
                self.partial = None
                return part.finish()

    def flush_partial(self) -> RawLine | None:
        """Emit the held unterminated tail as a complete line (finished file, rotation)."""
        part = self.partial
        if part is None:
            return None
        self.partial = None
        return part.finish()


def iter_lines(
    path: str | os.PathLike[str],
    start: int = 0,
    end: int | None = None,
    max_line_bytes: int = DEFAULT_MAX_LINE_BYTES,
) -> Iterator[RawLine]:
    """Yield every line that starts in the byte range ``[start, end)`` of a finished file.

    ``start`` and ``end`` need not be line starts: a line belongs to the range where it starts,
    so adjacent ranges ``[a, b)`` and ``[b, c)`` together yield each line exactly once. A line
    that starts inside the range is read to its end even past ``end``. A last line without
    ``\\n`` is yielded as a line (the file is treated as finished). The file is opened
    read-only and never modified.
    """
    if start < 0:
        raise ValueError("start must be >= 0")
    if end is not None and end <= start:
        return
    f, _st = open_regular(path, READ_BUFFER_BYTES)
    with f:
        pos = _align_to_line_start(f, start)
        if end is not None and pos >= end:
            return
        asm = LineAssembler(f, pos, max_line_bytes)
        yield from asm.lines(stop=end)
        # If reading stopped at EOF, a tail without "\n" is the finished file's last line; it
        # starts before end (the loop stops before any line that starts at or after end).
        tail = asm.flush_partial()
        if tail is not None:
            yield tail


def _align_to_line_start(f: BinaryIO, pos: int) -> int:
    """Seek ``f`` to the first line start at or after ``pos`` and return it."""
    if pos == 0:
        f.seek(0)
        return 0
    f.seek(pos - 1)
    # The byte before pos decides: if it is "\n", pos is a line start. Otherwise skip to the
    # next "\n", in bounded pieces so a huge line does not get loaded whole.
    while True:
        piece = f.readline(_SKIP_CHUNK)
        if not piece:
            return f.tell()
        if piece[-1] == _NL:
            return f.tell()


def find_range_starts(path: str | os.PathLike[str], n: int) -> list[int]:
    """Split a file into at most ``n`` byte ranges that each begin at a line start.

    Returns the sorted, distinct range starts (the first is always 0); range ``i`` is
    ``[starts[i], starts[i + 1])`` and the last one runs to end of file (``end=None`` for
    ``iter_lines``). Fewer than ``n`` starts come back when the file has fewer lines than that
    (or a huge line spans several split points).
    """
    if n < 1:
        raise ValueError("n must be >= 1")
    starts = [0]
    f, st = open_regular(path, READ_BUFFER_BYTES)
    with f:
        size = st.st_size
        for i in range(1, n):
            target = size * i // n
            if target <= starts[-1]:
                continue
            pos = _align_to_line_start(f, target)
            if pos >= size:
                break
            if pos > starts[-1]:
                starts.append(pos)
    return starts


def read_line_at(
    path: str | os.PathLike[str],
    offset: int,
    length: int,
    max_line_bytes: int = DEFAULT_MAX_LINE_BYTES,
) -> bytes:
    """Re-read the line at ``offset`` (``length`` bytes, ending included) and return its data.

    The ending is stripped as in ``RawLine.data`` and at most ``max_line_bytes`` bytes come
    back. Raises ``LineGoneError`` if the file is now too short to hold that line (it was
    truncated or replaced since the line was read); the caller should tell the user.
    """
    if offset < 0 or length < 0:
        raise ValueError("offset and length must be >= 0")
    want = min(length, max_line_bytes + 2)
    # O_NONBLOCK: a file replaced by a FIFO must not hang the open (pread then fails).
    flags = os.O_RDONLY | getattr(os, "O_CLOEXEC", 0) | getattr(os, "O_NONBLOCK", 0)
    fd = os.open(path, flags)
    try:
        chunks: list[bytes] = []
        got = 0
        while got < want:
            chunk = os.pread(fd, want - got, offset + got)
            if not chunk:
                break
            chunks.append(chunk)
            got += len(chunk)
    finally:
        os.close(fd)
    data = b"".join(chunks)
    if got < want:
        raise LineGoneError(
            f"{os.fspath(path)}: line at byte {offset} is gone (file is shorter now; "
            "it was truncated or replaced)"
        )
    if want == length:
        if data.endswith(b"\r\n"):
            data = data[:-2]
        elif data.endswith(b"\n"):
            data = data[:-1]
    return data[:max_line_bytes]


class Chunk(NamedTuple):
    """Whole lines read in one piece: ``data`` starts at byte ``offset`` of the file and ends
    right after a ``\\n`` (or at the end of the file, for a last line without one)."""

    offset: int
    data: bytes


def iter_chunks(
    path: str | os.PathLike[str],
    start: int = 0,
    end: int | None = None,
    chunk_bytes: int = 1 << 20,  # ~3k lines: the parse working set stays in cache
    max_line_bytes: int = DEFAULT_MAX_LINE_BYTES,
) -> Iterator[Chunk | RawLine]:
    """The lines starting in ``[start, end)`` of a finished file, as big ``Chunk``s of whole
    lines (for a columnar parser), or as a ``RawLine`` for a line too long for a chunk
    (capped at ``max_line_bytes`` like everywhere else, so memory stays bounded).

    Together, the chunks and lines cover exactly what ``iter_lines(path, start, end)``
    yields, in order.
    """
    if start < 0:
        raise ValueError("start must be >= 0")
    if end is not None and end <= start:
        return
    f, _st = open_regular(path)
    with f:
        pos = _align_to_line_start(f, start)
        while end is None or pos < end:
            data, asked = _read_whole_lines(f, pos, chunk_bytes)
            if not data:
                return
            if end is not None and pos + len(data) >= end:
                # Keep the lines that start before `end`: up to the first "\n" at or after
                # end - 1 (the line holding byte end - 1 started before end).
                cut = data.find(b"\n", end - 1 - pos)
                if cut != -1:
                    yield Chunk(pos, data[: cut + 1])
                    return
            cut = data.rfind(b"\n")
            if cut == -1:
                if len(data) < asked:  # the file's last line, without "\n"
                    yield Chunk(pos, data)
                    return
                # One line longer than a chunk: read it the bounded way.
                asm = LineAssembler(f, pos, max_line_bytes)
                f.seek(pos)
                line = next(asm.lines(), None) or asm.flush_partial()
                if line is None:
                    return
                yield line
                pos = line.offset + line.length
                continue
            yield Chunk(pos, data[: cut + 1])
            pos += cut + 1
            if len(data) < asked and cut + 1 == len(data):
                return


#: Bytes read first at the end of a chunk's span to find its last newline (at most a
#: quarter of the span; ``_read_whole_lines``).
_PROBE_BYTES = 4096


def _read_whole_lines(f: BinaryIO, pos: int, chunk_bytes: int) -> tuple[bytes, int]:
    """Up to ``chunk_bytes`` of ``f`` from ``pos``, ending at the last newline in them when
    one is in their last few KiB: a small read there finds it first, so the big read is
    the chunk itself, and ``data[: cut + 1]`` is ``data`` (cutting a 1 MiB read at its
    last newline copied all of it: 2 % of reading a big log). Otherwise (a file's end, a
    long last line, no ``pread``) the whole span, as one read gives it. Returns the data
    and how many bytes were asked for (fewer came: the file ended)."""
    probe_bytes = min(_PROBE_BYTES, chunk_bytes // 4)
    if probe_bytes > 0 and hasattr(os, "pread"):
        fd = f.fileno()
        probe = os.pread(fd, probe_bytes, pos + chunk_bytes - probe_bytes)
        cut = probe.rfind(b"\n")
        if len(probe) == probe_bytes and cut >= 0:
            asked = chunk_bytes - probe_bytes + cut + 1
            return os.pread(fd, asked, pos), asked
    f.seek(pos)
    return f.read(chunk_bytes), chunk_bytes


def split_chunk(chunk: Chunk, max_line_bytes: int = DEFAULT_MAX_LINE_BYTES) -> list[RawLine]:
    """A chunk's lines as RawLines, exactly as ``iter_lines`` would give them.

    Splitting, lengths, offsets and the tuples are all made by C loops (split, map,
    accumulate, zip): a few hundred nanoseconds a line less than reading line by line.
    """
    data = chunk.data
    bodies = data.split(b"\n")
    lengths = [n + 1 for n in map(len, bodies)]
    if bodies[-1]:
        lengths[-1] -= 1  # the file's last line, without "\n"
    else:
        bodies.pop()  # the chunk ends with "\n": nothing after it
        lengths.pop()
    if b"\r" in data:  # strip the "\r" of "\r\n" endings (a bare "\r" stays in the line)
        ended = len(bodies) - (0 if data.endswith(b"\n") else 1)
        bodies = [b[:-1] if i < ended and b.endswith(b"\r") else b for i, b in enumerate(bodies)]
    if bodies and max(map(len, bodies)) > max_line_bytes:
        return _split_capped(chunk.offset, bodies, lengths, max_line_bytes)
    starts = list(accumulate(lengths, initial=chunk.offset))[:-1]
    return list(map(_new_tuple, repeat(RawLine), zip(starts, lengths, bodies, repeat(False))))


def _split_capped(offset: int, bodies: list[bytes], lengths: list[int], cap: int) -> list[RawLine]:
    out: list[RawLine] = []
    for body, n in zip(bodies, lengths):
        out.append(_new_tuple(RawLine, (offset, n, body[:cap], len(body) > cap)))
        offset += n
    return out
