"""The live tail reads new lines as chunks (``FileFollower(chunks=True)``,
``sources._live_chunks``) and feeds them to ``Extractor.feed_chunks``: the same lines, bytes,
offsets and incarnations as the line-by-line follower (the same store as the batch read,
through the live worker, is in tests/integration/test_live_chunks_worker.py).

Each test runs the two followers side by side over the same writes (a slow writer cutting
lines anywhere, CRLF endings, empty lines, lines longer than a chunk or than the cap,
rotation, truncation) and compares every line they report.
"""

from __future__ import annotations

import os
import random
from pathlib import Path

import pytest
from follow_helpers import FakeClock, appender

from sparseety_tui.sources import (
    LIVE_CHUNK_BYTES,
    Chunk,
    FileFollower,
    FollowBatch,
    RawLine,
    read_chunks,
    split_chunk,
)


def _lines(batch: FollowBatch, cap: int) -> list[tuple[int, RawLine]]:
    """(generation, line) of every line of a batch, chunks split as the Extractor splits them."""
    out: list[tuple[int, RawLine]] = []
    for segment in batch.segments:
        for item in segment.lines:
            if isinstance(item, Chunk):
                out.extend((segment.generation, line) for line in split_chunk(item, cap))
            else:
                out.append((segment.generation, item))
    return out


class _Pair:
    """A line follower and a chunk follower of one path, polled together."""

    def __init__(self, path: Path, **kwargs: object) -> None:
        self.cap = int(kwargs.get("max_line_bytes", 8 * 1024 * 1024))  # type: ignore[call-overload]
        self.by_line = FileFollower(path, **kwargs)  # type: ignore[arg-type]
        self.by_chunk = FileFollower(path, chunks=True, **kwargs)  # type: ignore[arg-type]
        self.lines: list[tuple[int, RawLine]] = []
        self.chunk_lines: list[tuple[int, RawLine]] = []
        self.kinds: list[str] = []
        self.chunk_kinds: list[str] = []
        self.saw_chunks = False

    def poll(self) -> None:
        for _ in range(100):  # a small byte budget: poll until caught up
            a = self.by_line.poll()
            self.lines += _lines(a, self.cap)
            self.kinds += [e.kind for e in a.events]
            if not a.more:
                break
        for _ in range(100):
            b = self.by_chunk.poll()
            self.saw_chunks |= any(isinstance(i, Chunk) for s in b.segments for i in s.lines)
            self.chunk_lines += _lines(b, self.cap)
            self.chunk_kinds += [e.kind for e in b.events]
            if not b.more:
                break
        assert self.chunk_lines == self.lines
        assert self.chunk_kinds == self.kinds

    def close(self) -> None:
        self.by_line.close()
        self.by_chunk.close()


def _random_text(rng: random.Random, cap: int) -> bytes:
    """Lines of every length that matters: empty, around the cap, longer than a chunk."""
    if cap < 1000:
        sizes = [0, 1, 5, 40, 200, cap - 1, cap, cap + 1, 3 * cap]
    else:  # the real cap: lines around and over a live chunk (1 MiB), now and then
        sizes = [0, 1, 5, 40, 200, 5000] * 8 + [LIVE_CHUNK_BYTES - 1, LIVE_CHUNK_BYTES + 7]
    lines = []
    for _ in range(rng.randint(1, 60)):
        body = bytes(rng.choices(b'ab \r{}":,x\x00\xff', k=rng.choice(sizes)))
        lines.append(body + rng.choice([b"\n", b"\r\n", b"\n", b"\n"]))
    return b"".join(lines)


@pytest.mark.parametrize("seed", range(12))
def test_chunks_report_the_same_lines_as_line_reading(tmp_path: Path, seed: int) -> None:
    """Random lines (empty, CRLF, bare CR, longer than the cap) written in random pieces,
    cut anywhere, polled between pieces: the same lines, offsets and truncation."""
    rng = random.Random(seed)
    cap = rng.choice([64, 300, 8 * 1024 * 1024])
    path = tmp_path / "live.log"
    path.write_bytes(b"")
    pair = _Pair(path, max_line_bytes=cap, max_batch_bytes=rng.choice([50, 4096, 1 << 24]))
    with appender(path) as w:
        for _ in range(6):
            text = _random_text(rng, cap)
            pos = 0
            while pos < len(text):
                step = rng.randint(1, max(1, len(text) // 3))
                w.write(text[pos : pos + step])
                pos += step
                pair.poll()
    pair.poll()
    assert pair.lines, "nothing read"
    assert pair.saw_chunks
    pair.close()


def test_a_partial_line_is_held_then_reported_once(tmp_path: Path) -> None:
    path = tmp_path / "live.log"
    path.write_bytes(b"first\nsec")
    with FileFollower(path, chunks=True) as fol:
        batch = fol.poll()
        assert batch.lines == [Chunk(0, b"first\n")]
        with appender(path) as w:
            w.write(b"ond\nthird\nfour")
        items = fol.poll().lines
        # The held line comes out whole (as one line), then the rest as a chunk.
        assert items == [RawLine(6, 7, b"second", False), Chunk(13, b"third\n")]
        assert fol.poll().lines == []
        with appender(path) as w:
            w.write(b"th\r\n")
        assert fol.poll().lines == [RawLine(19, 8, b"fourth", False)]


def test_a_line_across_two_reads_is_not_cut(tmp_path: Path) -> None:
    """A full read that ends inside a line leaves that line to the next read, whole."""
    path = tmp_path / "big.log"
    lines = [f"line {i:05d} ".encode() * (1 + i % 7) + b"\n" for i in range(3000)]
    path.write_bytes(b"".join(lines))
    with open(path, "rb") as f:
        from sparseety_tui.sources import LineAssembler

        asm = LineAssembler(f, 0, 8 * 1024 * 1024)
        out: list[RawLine | Chunk] = []
        read_chunks(asm, out, 1 << 30, chunk_bytes=1000)
    assert all(isinstance(i, Chunk) and i.data.endswith(b"\n") for i in out)
    assert b"".join(i.data for i in out if isinstance(i, Chunk)) == b"".join(lines)
    assert asm.pos == path.stat().st_size and asm.partial is None


def test_rotation_and_truncation_read_the_same_in_chunks(tmp_path: Path) -> None:
    clock = FakeClock()
    path = tmp_path / "app.log"
    path.write_bytes(b"a1\na2\npart")
    pair = _Pair(path, rotated_quiet_s=5.0, clock=clock)
    pair.poll()
    with appender(path) as w:
        w.write(b"ial\na3\n")
    os.rename(path, tmp_path / "app.log.1")
    path.write_bytes(b"b1\nb2\n")
    pair.poll()
    with open(tmp_path / "app.log.1", "ab") as old:
        old.write(b"a4 late\n")  # the old writer had not reopened yet
    pair.poll()
    clock.now += 10
    pair.poll()
    with open(path, "r+b") as f:  # copytruncate without a copy
        f.truncate(0)
    with appender(path) as w:
        w.write(b"c1\n")
    pair.poll()
    assert "rotated" in pair.kinds and "truncated" in pair.kinds
    assert [line.data for _, line in pair.chunk_lines] == [
        b"a1",
        b"a2",
        b"partial",
        b"a3",
        b"b1",
        b"b2",
        b"a4 late",
        b"c1",
    ]
    pair.close()
