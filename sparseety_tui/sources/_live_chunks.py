"""A followed file's new complete lines as big ``Chunk``s, for the columnar parsers.

``LineAssembler.lines`` makes one ``RawLine`` per line (a ``readline`` and a tuple each).
The live tail feeds the Extractor through ``feed_chunks`` instead, as the batch commands
do (``sources._lines.iter_chunks``): request JSONL then takes the native scanner and server
logs their family's ``scan_server``, and the lines are split in C. ``read_chunks`` reads the
same bytes as ``lines`` would, in the same order, with the same state left behind (``pos``,
the held ``partial`` line), so the follower's guarantees hold in both modes:

- a chunk is whole lines only: an unterminated tail at end of file is held in ``partial``,
  exactly as ``lines`` holds it, until its ``\\n`` comes (or the follower flushes it);
- a line that straddles the end of a full read is not cut: the next read starts at its
  first byte;
- a line longer than a chunk is read the bounded way (``LineAssembler``, at most
  ``max_line_bytes`` kept) and comes out as one ``RawLine``, like a line that was held
  partial across polls.

Every line of a chunk is shorter than ``chunk_bytes``, itself at most the assembler's cap,
so none is ``truncated``: the Extractor splits a chunk exactly as ``lines`` would have.
"""

from __future__ import annotations

from ._lines import Chunk, LineAssembler, PartialLine, RawLine

__all__ = ["LIVE_CHUNK_BYTES", "read_chunks"]

LIVE_CHUNK_BYTES = 1 << 20
"""Bytes read at once (~4k request lines): the batch reader's chunk size, whose parse
working set stays in cache; a poll at 20k lines/s reads far less than this."""

_NL = b"\n"


def read_chunks(
    asm: LineAssembler,
    out: list[RawLine | Chunk],
    budget: int,
    chunk_bytes: int = LIVE_CHUNK_BYTES,
) -> None:
    """Append the complete lines from ``asm.pos`` on to ``out``, as ``Chunk``s (and a
    ``RawLine`` for a line continued from ``partial`` or longer than a chunk).

    Stops at end of file, or once about ``budget`` bytes were consumed (at a line
    boundary, at most one chunk past it). ``asm.pos`` is up to date when this returns or
    raises (an ``OSError`` from a read): what was appended before is consistent with it.
    """
    chunk_bytes = max(1, min(chunk_bytes, asm.cap))
    limit = asm.pos + budget
    f = asm.f
    if asm.partial is not None:
        line = asm._continue_partial()
        if line is None:
            return
        out.append(line)
    while asm.pos < limit:
        start = asm.pos
        data = f.read(chunk_bytes)
        if not data:
            return
        full = len(data) == chunk_bytes  # short: end of file (a regular file's read)
        cut = data.rfind(_NL) + 1
        if cut == len(data):
            out.append(Chunk(start, data))
            asm.pos = start + cut
            if not full:
                return
            continue
        if cut:
            out.append(Chunk(start, data[:cut]))
            asm.pos = start + cut
            if full:
                # The last line goes on past this read: read it whole next time.
                f.seek(asm.pos)
                continue
        # No "\n" after ``cut``: an unterminated tail (end of file) or a line longer than
        # a chunk. Both are held as the assembler holds them, bounded by its cap.
        part = PartialLine(asm.pos, asm.cap)
        part.add(data[cut:])
        asm.pos = start + len(data)
        asm.partial = part
        if not full:
            return  # end of file: the tail waits for its "\n"
        line = asm._continue_partial()
        if line is None:
            return
        out.append(line)
