"""Copytruncate raced by a writer thread, with and without --poll: the rotation comes
while the reader runs, and every line written is read once (tests/unit/test_sources_rotation.py
drives the same races step by step)."""

from __future__ import annotations

import os
import shutil
import threading
from pathlib import Path

import pytest
from follow_helpers import appender, datas
from waiting import wait_for

from sparseety_tui.sources import LogWatcher


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

        def read_all() -> bool:
            for _, batch in watcher.poll_all():
                got.extend(datas(batch))
            if len(got) >= 1000:
                first_read.set()
            if len(got) >= 3000:
                return True
            watcher.wait(0.1)
            return False

        wait_for(read_all, what="the 3000 lines written", every=0)
        t.join()
        for _, batch in watcher.poll_all():
            got += datas(batch)
    assert len(got) == 3000
    assert got == old + new
