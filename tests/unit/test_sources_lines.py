"""Batch line reading: endings, offsets, huge lines, byte ranges, read-only access."""

from __future__ import annotations

import os
import stat
import tracemalloc
from itertools import pairwise
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from sparseety_tui.sources import (
    LineGoneError,
    RawLine,
    find_range_starts,
    iter_lines,
    read_line_at,
)


def write(path: Path, data: bytes) -> Path:
    path.write_bytes(data)
    return path


def datas(path: Path, **kw: int) -> list[bytes]:
    return [line.data for line in iter_lines(path, **kw)]


def test_endings_lf_crlf_and_bare_cr(tmp_path: Path) -> None:
    p = write(tmp_path / "a.log", b"one\ntwo\r\nthree\rstill three\n\n\r\nlast\r\r\n")
    lines = list(iter_lines(p))
    assert [ln.data for ln in lines] == [
        b"one",
        b"two",
        b"three\rstill three",
        b"",
        b"",
        b"last\r",  # only one "\r" belongs to the ending
    ]
    # Offsets and lengths tile the file exactly, endings included.
    assert [ln.offset for ln in lines] == [0, 4, 9, 27, 28, 30]
    assert sum(ln.length for ln in lines) == p.stat().st_size
    assert not any(ln.truncated for ln in lines)
    assert all(isinstance(ln, RawLine) for ln in lines)


def test_last_line_without_newline_counts_in_batch_mode(tmp_path: Path) -> None:
    p = write(tmp_path / "a.log", b"a\nb\nno newline")
    lines = list(iter_lines(p))
    assert [ln.data for ln in lines] == [b"a", b"b", b"no newline"]
    assert lines[-1].offset == 4 and lines[-1].length == 10


def test_empty_file_and_single_newline(tmp_path: Path) -> None:
    assert list(iter_lines(write(tmp_path / "e.log", b""))) == []
    assert datas(write(tmp_path / "n.log", b"\n")) == [b""]
    assert datas(write(tmp_path / "r.log", b"\r")) == [b"\r"]  # a bare CR is data


def test_invalid_utf8_passes_through_unchanged(tmp_path: Path) -> None:
    raw = [b"\xff\xfe bad \xc3\x28", b"\x00nul\x00", "h\u00e9llo".encode("latin-1")]
    p = write(tmp_path / "bin.log", b"\n".join(raw) + b"\n")
    assert datas(p) == raw


def test_cap_boundaries(tmp_path: Path) -> None:
    # Lines of exactly cap, cap+1 data bytes, with LF and CRLF endings, and a CR at the cap.
    cap = 8
    lines = [b"x" * 8, b"y" * 9, b"z" * 8, b"w" * 7 + b"\r", b"v" * 20]
    p = write(
        tmp_path / "c.log",
        b"x" * 8
        + b"\n"
        + b"y" * 9
        + b"\n"
        + b"z" * 8
        + b"\r\n"
        + b"w" * 7
        + b"\r\r\n"
        + b"v" * 20
        + b"\r\n"
        + b"tail",
    )
    got = list(iter_lines(p, max_line_bytes=cap))
    assert [ln.data for ln in got] == [ln[:cap] for ln in lines] + [b"tail"]
    assert [ln.truncated for ln in got] == [False, True, False, False, True, False]
    assert [ln.length for ln in got] == [9, 10, 10, 10, 22, 4]
    assert sum(ln.length for ln in got) == p.stat().st_size


def test_huge_line_is_capped_and_next_line_intact(tmp_path: Path) -> None:
    huge = 50 * 1024 * 1024
    p = tmp_path / "huge.log"
    with p.open("wb") as f:
        f.write(b"before\n")
        block = b"0123456789abcdef" * 65536  # 1 MiB
        for _ in range(huge // len(block)):
            f.write(block)
        f.write(b"\r\nafter\n")
    cap = 1024 * 1024
    tracemalloc.start()
    try:
        lines = list(iter_lines(p, max_line_bytes=cap))
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 8 * cap, f"peak {peak} bytes: the 50 MB line was held whole"
    assert [ln.data for ln in lines[::2]] == [b"before", b"after"]
    big = lines[1]
    assert big.truncated
    assert len(big.data) == cap  # memory kept for the line is bounded by the cap
    assert big.data == block[:cap]
    assert big.offset == 7 and big.length == huge + 2
    assert lines[2].offset == 7 + huge + 2


def test_byte_range_belongs_to_line_start(tmp_path: Path) -> None:
    p = write(tmp_path / "r.log", b"aaa\nbbb\nccc\nddd")
    # Starts in the middle of "aaa": the range holds bbb (starts at 4) only.
    assert datas(p, start=2, end=8) == [b"bbb"]
    # A range that starts exactly at a line start includes it; a line that starts inside
    # the range is read to its end even past `end`.
    assert datas(p, start=4, end=5) == [b"bbb"]
    assert datas(p, start=5, end=8) == []
    assert datas(p, start=9, end=None) == [b"ddd"]
    assert datas(p, start=12, end=100) == [b"ddd"]
    assert datas(p, start=100) == []


def test_find_range_starts_small_cases(tmp_path: Path) -> None:
    assert find_range_starts(write(tmp_path / "e.log", b""), 4) == [0]
    p = write(tmp_path / "r.log", b"aaaa\nbbbb\ncccc\ndddd\n")
    assert find_range_starts(p, 1) == [0]
    assert find_range_starts(p, 4) == [0, 5, 10, 15]
    assert find_range_starts(p, 100) == [0, 5, 10, 15]
    with pytest.raises(ValueError):
        find_range_starts(p, 0)


def reference_split(content: bytes) -> list[bytes]:
    """Obviously-correct (and slow) version of the line rules."""
    pieces = content.split(b"\n")
    last = pieces.pop()  # after the last "\n": an unterminated line, or b""
    out = [p[:-1] if p.endswith(b"\r") else p for p in pieces]
    return [*out, last] if last else out


line_bytes = st.binary(max_size=40).map(lambda b: b.replace(b"\n", b"")) | st.sampled_from(
    [b"", b"\r", b"x\r", b"\xff\xfe", b"long" * 30]
)


@settings(
    max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    lines=st.lists(st.tuples(line_bytes, st.sampled_from([b"\n", b"\r\n"])), max_size=60),
    tail=st.binary(max_size=20).map(lambda b: b.replace(b"\n", b"")),
    n=st.integers(min_value=1, max_value=12),
    cuts=st.lists(st.integers(min_value=0, max_value=5000), max_size=6),
    cap=st.sampled_from([1, 3, 16, 1 << 20]),
)
def test_ranges_concatenate_to_whole_file(
    tmp_path: Path,
    lines: list[tuple[bytes, bytes]],
    tail: bytes,
    n: int,
    cuts: list[int],
    cap: int,
) -> None:
    content = b"".join(d + e for d, e in lines) + tail
    p = write(tmp_path / "h.log", content)
    whole = list(iter_lines(p, max_line_bytes=cap))
    # The whole-file read agrees with a naive reference split.
    assert [ln.data for ln in whole] == [d[:cap] for d in reference_split(content)]
    assert sum(ln.length for ln in whole) == len(content)

    # Aligned split points from find_range_starts ...
    starts = find_range_starts(p, n)
    assert starts[0] == 0 and starts == sorted(set(starts)) and len(starts) <= n
    assert set(starts) <= {0} | {ln.offset for ln in whole}
    bounds = [*starts, None]
    got = [ln for a, b in pairwise(bounds) for ln in iter_lines(p, a or 0, b, cap)]
    assert got == whole
    # ... and arbitrary, unaligned ones.
    points = sorted({0, *(c % (len(content) + 2) for c in cuts)})
    bounds = [*points, None]
    got = [ln for a, b in pairwise(bounds) for ln in iter_lines(p, a or 0, b, cap)]
    assert got == whole


def test_read_line_at_rereads_lines(tmp_path: Path) -> None:
    p = write(tmp_path / "a.log", b"first\r\nsecond\nthird")
    for ln in iter_lines(p):
        assert read_line_at(p, ln.offset, ln.length) == ln.data
    big = write(tmp_path / "b.log", b"x" * 100 + b"\n")
    assert read_line_at(big, 0, 101, max_line_bytes=10) == b"x" * 10
    p.write_bytes(b"short\n")
    with pytest.raises(LineGoneError):
        read_line_at(p, 7, 7)


def test_file_is_never_modified(tmp_path: Path) -> None:
    p = write(tmp_path / "ro.log", b"a\nb\r\nc")
    os.chmod(p, 0o444)  # reading must work on a read-only file: we open it read-only
    before = os.stat(p)
    assert datas(p) == [b"a", b"b", b"c"]
    find_range_starts(p, 3)
    read_line_at(p, 0, 2)
    after = os.stat(p)
    assert p.read_bytes() == b"a\nb\r\nc"
    assert stat.S_IMODE(after.st_mode) == 0o444
    assert (after.st_mtime_ns, after.st_size, after.st_ino) == (
        before.st_mtime_ns,
        before.st_size,
        before.st_ino,
    )
    assert sorted(os.listdir(tmp_path)) == ["ro.log"]  # no lock or index files created


def test_missing_file_raises(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError):
        list(iter_lines(tmp_path / "nope.log"))


# -- big chunks of whole lines (the batch commands' reader) -----------------------------

from hypothesis import given as _given  # noqa: E402
from hypothesis import settings as _settings  # noqa: E402
from hypothesis import strategies as _st  # noqa: E402

from sparseety_tui.sources import Chunk, iter_chunks, split_chunk  # noqa: E402

_LINE_BYTES = _st.lists(
    _st.sampled_from([b"a", b"\xff", b"\r", b"{}", b"x" * 40]), max_size=12
).map(b"".join)


@_settings(max_examples=150, deadline=None)
@_given(
    lines=_st.lists(_LINE_BYTES, max_size=40),
    endings=_st.lists(_st.sampled_from([b"\n", b"\r\n"]), min_size=40, max_size=40),
    tail=_st.booleans(),
    chunk_bytes=_st.integers(8, 200),
    cap=_st.integers(4, 100),
    cuts=_st.lists(_st.integers(0, 3000), max_size=3),
)
def test_chunks_cover_exactly_what_iter_lines_yields(
    tmp_path_factory: pytest.TempPathFactory,
    lines: list[bytes],
    endings: list[bytes],
    tail: bool,
    chunk_bytes: int,
    cap: int,
    cuts: list[int],
) -> None:
    content = b"".join(line + end for line, end in zip(lines, endings))
    if tail:
        content += b"no newline at the end"
    path = tmp_path_factory.mktemp("chunks") / "f.log"
    path.write_bytes(content)
    bounds = sorted({0, *(c % (len(content) + 1) for c in cuts)})
    ranges = list(zip(bounds, [*bounds[1:], None]))
    for start, end in ranges:
        expected = list(iter_lines(path, start, end, max_line_bytes=cap))
        got = []
        for item in iter_chunks(path, start, end, chunk_bytes=chunk_bytes, max_line_bytes=cap):
            got.extend(split_chunk(item, cap) if isinstance(item, Chunk) else [item])
        assert got == expected
