"""Reading lines again by number (sources._numbered): every range of every small file,
read in tiny steps so that lines cross step boundaries, equals the file split by hand."""

from __future__ import annotations

import random
from pathlib import Path

import pytest

import sparseety_tui.sources._numbered as numbered


@pytest.mark.parametrize("seed", range(40))
def test_lines_by_number_equal_the_file_split(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, seed: int
) -> None:
    monkeypatch.setattr(numbered, "STEP_BYTES", 7)
    rng = random.Random(seed)
    lines = [
        rng.randbytes(rng.randint(0, 20)).replace(b"\n", b"x") for _ in range(rng.randint(0, 30))
    ]
    data = b"\n".join(lines) + (b"\n" if lines and rng.random() < 0.5 else b"")
    path = tmp_path / "log"
    path.write_bytes(data)
    expected = data.split(b"\n")[:-1] if data.endswith(b"\n") else data.split(b"\n")
    expected = expected if data else []
    finder = numbered.LineFinder()  # one finder: later reads start from remembered points
    for _ in range(8):
        first = rng.randint(1, 35)
        last = first + rng.randint(0, 10)
        got = [(line.number, line.data) for line in finder.read(str(path), first, last)]
        want = [
            (n + 1, expected[n].rstrip(b"\r")) for n in range(first - 1, min(last, len(expected)))
        ]
        assert got == want


def test_a_long_line_is_cut_and_says_so(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(numbered, "MAX_LINE_BYTES", 10)
    path = tmp_path / "log"
    path.write_bytes(b"a" * 25 + b"\nshort\n")
    got = numbered.LineFinder().read(str(path), 1, 2)
    assert [(line.data, line.cut) for line in got] == [(b"a" * 10, True), (b"short", False)]


def test_a_file_replaced_by_a_shorter_one_is_counted_again(tmp_path: Path) -> None:
    path = tmp_path / "log"
    path.write_bytes(b"".join(b"line %d\n" % i for i in range(1, 101)))
    finder = numbered.LineFinder()
    assert finder.read(str(path), 90, 90)[0].data == b"line 90"
    path.unlink()
    path.write_bytes(b"new 1\nnew 2\n")  # another inode
    assert [line.data for line in finder.read(str(path), 1, 5)] == [b"new 1", b"new 2"]
