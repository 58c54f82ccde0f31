"""Chunks of whole lines through a family's fast path (the batch commands' reader, and the
live path): each run the scanner reads comes as a batch for the applier (``_apply``);
each line it stops at, and each batch the applier refuses, goes through the per-line
path, so every line still gets exactly one kind."""

from __future__ import annotations

from typing import TYPE_CHECKING

from sparseety_tui.core.extraction._apply import apply_batch
from sparseety_tui.core.extraction._apply_lines import Target
from sparseety_tui.core.store import FileState
from sparseety_tui.formats import RecordScanner, ServerScanner
from sparseety_tui.sources import DEFAULT_MAX_LINE_BYTES, Chunk, split_chunk

if TYPE_CHECKING:
    from sparseety_tui.core.extraction._extractor import Extractor

#: Lines per block on the bulk path, and the fewest worth trying it on.
BULK_BLOCK_LINES = 2048
BULK_MIN_LINES = 32


class _Refused(Exception):
    """The applier refused a server batch: its lines go through the per-line path."""


def _end_of_lines(data: bytes, start: int, count: int) -> int:
    """Where the ``count`` lines of ``data`` from ``start`` end (or the end of data)."""
    pos = start
    for _ in range(count):
        newline = data.find(b"\n", pos)
        if newline < 0:
            return len(data)
        pos = newline + 1
    return pos


def run_chunk_scanned(
    x: Extractor, state: FileState, file: int, chunk: Chunk, scanner: RecordScanner
) -> None:
    """A chunk through the family's record scanner: runs of simple request records
    become rows in one step (``core.extraction``'s applier); each line it stops at (and a run too short to be worth a block) goes
    through the per-line path, so every line still gets exactly one kind."""
    data = chunk.data
    pos = 0
    odd_lines_in_a_row = 0
    while pos < len(data):
        try:
            scan = scanner(data, pos, DEFAULT_MAX_LINE_BYTES)
            taken = scan.n >= BULK_MIN_LINES and apply_batch(
                Target(x._merger, state, file, chunk.offset), scan
            )
        except Exception:  # nothing was applied (the applier): the rest goes by line
            x._run_lines(state, file, split_chunk(Chunk(chunk.offset + pos, data[pos:])))
            return
        if taken:
            pos, odd_lines_in_a_row = scan.end, 0
            continue
        stop = scan.next_end
        if scan.n == 0:
            # A file of records the scanner never takes (escaped or non-ASCII text,
            # per-token data): give the Python block path whole blocks of them.
            odd_lines_in_a_row += 1
            if odd_lines_in_a_row > 1:
                stop = _end_of_lines(data, pos, BULK_BLOCK_LINES)
        lines = split_chunk(Chunk(chunk.offset + pos, data[pos:stop]))
        if len(lines) >= BULK_MIN_LINES:
            x._run_block(state, file, lines)
        else:
            x._run_lines(state, file, lines)
        pos = stop


def run_chunk_server(
    x: Extractor, state: FileState, file: int, chunk: Chunk, scanner: ServerScanner
) -> None:
    """A chunk of a server log through its family's scanner: each run of lines it
    reads is applied at once (``core.extraction``'s applier); each line it stops at
    goes through the per-line path, so every line still gets exactly one kind."""
    data = chunk.data
    pos = 0
    odd_lines_in_a_row = 0
    while pos < len(data):
        parser = state.parser
        assert parser is not None  # chunks are sniffed first
        try:
            scan = scanner(parser, data, pos, DEFAULT_MAX_LINE_BYTES)
            if scan.n:
                if not apply_batch(Target(x._merger, state, file, chunk.offset), scan):
                    raise _Refused
                if parser.pending:  # completed by the run's last line, which it read
                    x._drain_pending(state, file)
        except Exception:  # nothing was applied (the applier): the rest goes by line
            x._run_lines(state, file, split_chunk(Chunk(chunk.offset + pos, data[pos:])))
            return
        if scan.n:
            pos, odd_lines_in_a_row = scan.end, 0
        stop = scan.next_end
        if stop <= pos:
            continue
        if scan.n == 0:
            # Lines the scanner never reads (a traceback, start-up lines): a block of
            # them at a time, not one scanner call each.
            odd_lines_in_a_row += 1
            if odd_lines_in_a_row > 1:
                stop = max(stop, _end_of_lines(data, pos, BULK_MIN_LINES))
        x._run_lines(state, file, split_chunk(Chunk(chunk.offset + pos, data[pos:stop])))
        pos = stop
