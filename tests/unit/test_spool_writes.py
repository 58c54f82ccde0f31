"""The spool's writer: every queued export in one ``os.writev``, short writes finished
(never half a line), and the bytes written known when a write fails, so the spans lost
are counted, not guessed."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from sparseety_tui.receive import _spool
from sparseety_tui.receive._spool import Spool


def _blocks(count: int) -> list[bytes]:
    return [b"".join(b'{"span":%d,"line":%d}\n' % (i, j) for j in range(3)) for i in range(count)]


def test_queued_exports_go_out_in_one_writev_each_whole(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    calls: list[int] = []
    real = os.writev

    def counted(fd: int, views: list[memoryview]) -> int:
        calls.append(len(views))
        return real(fd, views)

    monkeypatch.setattr(_spool.os, "writev", counted)
    spool = Spool(str(tmp_path / "s.jsonl"), start=False)  # the writer waits: all queue
    blocks = _blocks(40)
    for block in blocks:
        assert spool.offer(block, 3) is None
    spool.start()
    spool.close()
    assert calls == [40]  # one system call for the 40 exports queued
    assert (tmp_path / "s.jsonl").read_bytes() == b"".join(blocks)
    assert spool.written_bytes == sum(map(len, blocks)) and spool.lost_spans == 0


def test_short_writes_are_finished(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    real = os.writev

    def short(fd: int, views: list[memoryview]) -> int:
        first = bytes(views[0])
        return real(fd, [first[: max(1, len(first) // 3)]])  # a third of one block at most

    monkeypatch.setattr(_spool.os, "writev", short)
    spool = Spool(str(tmp_path / "s.jsonl"), start=False)
    blocks = _blocks(5)
    for block in blocks:
        spool.offer(block, 3)
    spool.close()
    assert (tmp_path / "s.jsonl").read_bytes() == b"".join(blocks)


def test_a_failed_write_counts_the_spans_it_lost(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    real = os.writev
    blocks = _blocks(4)

    def full_disk(fd: int, views: list[memoryview]) -> int:
        if os.fstat(fd).st_size >= len(blocks[0]):
            raise OSError(28, "No space left on device")
        return real(fd, [bytes(views[0])])  # the first block only, then the disk is full

    monkeypatch.setattr(_spool.os, "writev", full_disk)
    spool = Spool(str(tmp_path / "s.jsonl"), start=False)
    for block in blocks:
        spool.offer(block, 3)
    spool.close()
    assert (tmp_path / "s.jsonl").read_bytes() == blocks[0]
    assert spool.written_bytes == len(blocks[0])
    assert spool.lost_spans == 9  # the three blocks not written, three spans each
    assert spool.failure is not None and "no space left" in spool.failure
