"""Rotation races (issue #9, item 4): copytruncate followed at once by a bigger write,
rotations faster than the reader, writers that keep appending to a renamed file.

Each test drives the writes step by step (or from a writer thread) and checks exact line
counts: every line written is read once, or the loss is reported as an event.
"""

from __future__ import annotations

import logging
import logging.handlers
import os
import shutil
import threading
import time
from pathlib import Path

import pytest
from follow_helpers import FakeClock, appender, datas, kinds

from sparseety_tui.sources import FileFollower, LogWatcher


def numbered(prefix: str, n: int, start: int = 0) -> list[bytes]:
    return [f"{prefix} {i:06d} some log text".encode() for i in range(start, start + n)]


def joined(lines: list[bytes]) -> bytes:
    return b"".join(line + b"\n" for line in lines)


# -- copytruncate --------------------------------------------------------------------------


@pytest.mark.parametrize("poll", [False, True], ids=["watchfiles", "poll"])
def test_copytruncate_race_with_a_writer_thread(tmp_path: Path, poll: bool) -> None:
    """The same race driven by a writer thread, with and without --poll."""
    p = tmp_path / "app.log"
    old, new = numbered("old", 1000), numbered("new", 2000)
    p.write_bytes(b"")
    first_read = threading.Event()

    def writer() -> None:
        with appender(p) as w:
            w.write(joined(old))
            first_read.wait(10)
            shutil.copyfile(p, tmp_path / "app.log.1")
            os.truncate(p, 0)
            w.write(joined(new))

    got: list[bytes] = []
    with LogWatcher([p], poll=poll) as watcher:
        t = threading.Thread(target=writer, daemon=True)
        t.start()
        deadline = time.monotonic() + 20
        while len(got) < 3000 and time.monotonic() < deadline:
            for _, batch in watcher.poll_all():
                got += datas(batch)
            if len(got) >= 1000:
                first_read.set()
            watcher.wait(0.1)
        t.join()
        for _, batch in watcher.poll_all():
            got += datas(batch)
    assert len(got) == 3000
    assert got == old + new


# -- rename rotations faster than the reader ---------------------------------------------


def rotate_numbered(p: Path, keep: int = 20) -> None:
    """logrotate / RotatingFileHandler style: app.log.N-1 -> app.log.N, ..., app.log -> .1."""
    for i in range(keep - 1, 0, -1):
        src = p.with_name(f"{p.name}.{i}")
        if src.exists():
            os.rename(src, p.with_name(f"{p.name}.{i + 1}"))
    os.rename(p, p.with_name(f"{p.name}.1"))


def test_rotations_faster_than_the_reader_with_a_logging_handler(tmp_path: Path) -> None:
    """Python's RotatingFileHandler rotates every few lines while the reader polls only
    every 0.2 s (a busy ingest loop): every line is read exactly once."""
    p = tmp_path / "server.log"
    logger = logging.getLogger(f"rotation-test-{id(tmp_path)}")
    logger.propagate = False
    handler = logging.handlers.RotatingFileHandler(p, maxBytes=2000, backupCount=1000)
    logger.addHandler(handler)
    logger.setLevel(logging.INFO)
    written = [f"request {i:06d} finished in 12 ms" for i in range(3000)]
    done = threading.Event()

    def writer() -> None:
        for i, line in enumerate(written):
            logger.info(line)
            if i % 100 == 99:
                time.sleep(0.005)
        done.set()

    got: list[bytes] = []
    p.write_bytes(b"")
    with LogWatcher([p], poll=True) as watcher:
        watcher.poll_all()  # opened before the first rotation: what came before is history
        t = threading.Thread(target=writer, daemon=True)
        t.start()
        while not done.is_set():
            for _, batch in watcher.poll_all():
                got += datas(batch)
            time.sleep(0.2)
        t.join()
        for _ in range(5):
            for _, batch in watcher.poll_all():
                got += datas(batch)
    handler.close()
    logger.removeHandler(handler)
    assert len(list(tmp_path.iterdir())) > 20  # it did rotate, many times
    assert sorted(got) == sorted(line.encode() for line in written)
    assert len(got) == len(written)


# -- a writer that keeps writing to the renamed file -------------------------------------


def test_at_most_max_retired_rotated_files_stay_open(tmp_path: Path) -> None:
    p = tmp_path / "app.log"
    clock = FakeClock()
    writers = [appender(p)]
    with FileFollower(p, clock=clock, max_retired=3) as fol:
        fol.poll()
        events: list[str] = []
        for _ in range(5):
            rotate_numbered(p)
            writers.append(appender(p))
            events += kinds(fol.poll())
        assert sorted(events) == ["closed"] * 2 + ["rotated"] * 5
        assert fol.retired_count == 3
    for w in writers:
        w.close()
