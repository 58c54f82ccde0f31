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
from pathlib import Path

import pytest
from follow_helpers import FakeClock, appender, datas, kinds

from sparseety_tui.sources import FileFollower, FollowBatch, LogWatcher


def numbered(prefix: str, n: int, start: int = 0) -> list[bytes]:
    return [f"{prefix} {i:06d} some log text".encode() for i in range(start, start + n)]


def joined(lines: list[bytes]) -> bytes:
    return b"".join(line + b"\n" for line in lines)


def poll_until_quiet(fol: FileFollower, clock: FakeClock | None = None) -> FollowBatch:
    """Every batch until the follower has nothing more (lines and events merged)."""
    out = FollowBatch(fol.path)
    for _ in range(1000):
        b = fol.poll()
        out.segments += b.segments
        out.events += b.events
        if not b.more:
            break
    return out


# -- copytruncate --------------------------------------------------------------------------


def test_copytruncate_then_a_bigger_write_at_once_loses_nothing(tmp_path: Path) -> None:
    """The file regrew past what was read before the next poll: its size alone does not show
    the truncation (the old follower went on at its old offset and lost the new start)."""
    p = tmp_path / "app.log"
    old, new = numbered("old", 1000), numbered("new", 2000)
    with appender(p) as w, FileFollower(p) as fol:
        w.write(joined(old))
        got = datas(fol.poll())
        assert got == old
        shutil.copyfile(p, tmp_path / "app.log.1")
        os.truncate(p, 0)
        w.write(joined(new))  # at once: bigger than everything read so far
        b = poll_until_quiet(fol)
        assert kinds(b) == ["truncated"]
        assert "regrown" in b.events[0].message
        got += datas(b)
    assert len(got) == 3000
    assert got == old + new


def test_copytruncate_reads_the_unread_rest_from_the_copy(tmp_path: Path) -> None:
    """Lines written after the last read and before the truncation are still in the copy
    logrotate made: they are read from there, not lost."""
    p = tmp_path / "app.log"
    old, unread, new = numbered("old", 1000), numbered("late", 10), numbered("new", 2000)
    with appender(p) as w, FileFollower(p) as fol:
        w.write(joined(old) + b"half of a line ")
        got = datas(fol.poll())
        w.write(b"finished\n" + joined(unread))  # never polled before the rotation
        shutil.copyfile(p, tmp_path / "app.log.1")
        os.truncate(p, 0)
        w.write(joined(new))
        b = poll_until_quiet(fol)
        got += datas(b)
        assert kinds(b) == ["truncated"]
        assert "app.log.1" in b.events[0].message and "missing" not in b.events[0].message
        # The old incarnation's lines (from the copy) come first, in their own generation.
        assert [s.generation for s in b.segments] == [1, 2]
    assert got == [*old, b"half of a line finished", *unread, *new]


def test_truncation_without_a_copy_says_how_many_bytes_may_be_missing(tmp_path: Path) -> None:
    p = tmp_path / "app.log"
    old, new = numbered("old", 100), numbered("new", 300)
    p.write_bytes(joined(old))
    with appender(p) as w, FileFollower(p, max_batch_bytes=1000) as fol:
        b = fol.poll()  # stops at its byte budget: the rest is known to be there
        assert b.more
        got = datas(b)
        unread = p.stat().st_size - sum(len(x) + 1 for x in got)
        os.truncate(p, 0)  # no copy anywhere
        w.write(joined(new))
        b = poll_until_quiet(fol)
        assert kinds(b) == ["truncated"]
        message = b.events[0].message
        assert f"file truncated and regrown: {unread:,} bytes may be missing" in message
        got += datas(b)
    assert got == old[: len(got) - len(new)] + new


@pytest.mark.parametrize("ending", [b"\n", b"\r\n"])
@pytest.mark.parametrize("width", [0, 30, 200])
def test_a_regrown_file_is_noticed_whatever_its_lines_look_like(
    tmp_path: Path, ending: bytes, width: int
) -> None:
    """Short lines (the remembered bytes span several) and long ones, either ending."""
    p = tmp_path / "app.log"
    old = [b"o%03d" % i + b"x" * width for i in range(50)]
    new = [b"n%03d" % i + b"y" * width for i in range(200)]
    with appender(p) as w, FileFollower(p) as fol:
        w.write(b"".join(line + ending for line in old))
        assert datas(fol.poll()) == old
        os.truncate(p, 0)
        w.write(b"".join(line + ending for line in new))
        b = poll_until_quiet(fol)
        assert kinds(b) == ["truncated"] and "regrown" in b.events[0].message
        assert datas(b) == new


def test_shrunk_file_without_a_copy_also_reports_what_may_be_missing(tmp_path: Path) -> None:
    p = tmp_path / "app.log"
    old = numbered("old", 100)
    p.write_bytes(joined(old))
    with appender(p) as w, FileFollower(p, max_batch_bytes=1000) as fol:
        got = datas(fol.poll())
        unread = p.stat().st_size - sum(len(x) + 1 for x in got)
        os.truncate(p, 0)
        w.write(b"new 1\n")
        b = poll_until_quiet(fol)
        assert kinds(b) == ["truncated"]
        assert f"{unread:,} bytes may be missing" in b.events[0].message
        assert datas(b) == [b"new 1"]


# -- rename rotations faster than the reader ---------------------------------------------


def rotate_numbered(p: Path, keep: int = 20) -> None:
    """logrotate / RotatingFileHandler style: app.log.N-1 -> app.log.N, ..., app.log -> .1."""
    for i in range(keep - 1, 0, -1):
        src = p.with_name(f"{p.name}.{i}")
        if src.exists():
            os.rename(src, p.with_name(f"{p.name}.{i + 1}"))
    os.rename(p, p.with_name(f"{p.name}.1"))


def test_several_rotations_between_two_polls_lose_no_file(tmp_path: Path) -> None:
    p = tmp_path / "app.log"
    (tmp_path / "app.log.1").write_bytes(b"history from before we started\n")
    clock = FakeClock()
    parts = [numbered(f"file{k}", 50) for k in range(5)]
    p.write_bytes(joined(parts[0]))
    with FileFollower(p, clock=clock) as fol:
        got = datas(fol.poll())
        for k in range(1, 5):  # four rotations, no poll in between
            rotate_numbered(p)
            p.write_bytes(joined(parts[k]))
        b = poll_until_quiet(fol)
        got += datas(b)
        assert kinds(b) == ["rotated"] * 4
        assert "app.log.3" in b.events[0].message  # the skipped files are named
        clock.now += 3600
        got += datas(poll_until_quiet(fol))
    assert got == [line for part in parts for line in part]


# -- a writer that keeps writing to the renamed file -------------------------------------


def test_renamed_file_is_read_while_it_grows_after_a_quiet_spell(tmp_path: Path) -> None:
    """A writer that never reopens (stdout redirected, a FileHandler) writes to the renamed
    file long after the rotation; the old follower stopped reading it after 2 s."""
    p = tmp_path / "app.log"
    clock = FakeClock()
    with appender(p) as w, FileFollower(p, clock=clock) as fol:
        w.write(b"a1\n")
        assert datas(fol.poll()) == [b"a1"]
        os.rename(p, tmp_path / "app.log.1")
        p.write_bytes(b"b1\n")
        assert datas(fol.poll()) == [b"b1"]
        clock.now += 2.5
        assert datas(fol.poll()) == []  # quiet for a while...
        w.write(b"a2\n")  # ...then the old writer logs again
        clock.now += 30
        b = fol.poll()
        assert [(s.generation, datas_of(s.lines)) for s in b.segments] == [(1, [b"a2"])]
        assert fol.draining


def datas_of(lines: list[object]) -> list[bytes]:
    return [line.data for line in lines]  # type: ignore[attr-defined]


def test_renamed_file_is_closed_after_going_quiet_and_later_growth_is_reported(
    tmp_path: Path,
) -> None:
    p = tmp_path / "app.log"
    clock = FakeClock()
    with appender(p) as w, FileFollower(p, clock=clock, rotated_quiet_s=60) as fol:
        w.write(b"a1\n")
        fol.poll()
        os.rename(p, tmp_path / "app.log.1")
        p.write_bytes(b"b1\n")
        fol.poll()
        clock.now += 61
        b = fol.poll()
        assert kinds(b) == ["closed"] and not fol.draining
        late = b"a2 written after we stopped reading\n"
        w.write(late)
        # The next rotation looks at the rotated files again: the growth is proof of loss.
        rotate_numbered(p)
        p.write_bytes(b"c1\n")
        b = poll_until_quiet(fol)
        assert kinds(b) == ["lost", "rotated"]
        assert f"grew by {len(late)} bytes" in b.events[0].message
        assert "app.log.2" in b.events[0].message
        assert datas(b) == [b"c1"]


def test_deleted_rotated_file_is_closed_soon_to_free_its_space(tmp_path: Path) -> None:
    p = tmp_path / "app.log"
    clock = FakeClock()
    with appender(p) as w, FileFollower(p, clock=clock) as fol:
        w.write(b"a1\n")
        fol.poll()
        os.unlink(p)
        p.write_bytes(b"b1\n")
        assert kinds(fol.poll()) == ["replaced"]
        assert fol.draining
        clock.now += 15  # far less than a renamed file's quiet period
        assert kinds(fol.poll()) == ["closed"] and not fol.draining


def test_a_rotated_copy_followed_beside_its_log_is_not_read_again(tmp_path: Path) -> None:
    """``tail DIR`` follows app.log and app.log.1. After a rotation app.log.1 holds what was
    app.log: read already, by app.log's follower; its lines must not count twice."""
    history, a, b = numbered("history", 10), numbered("a", 10), numbered("b", 10)
    (tmp_path / "app.log.1").write_bytes(joined(history))
    p = tmp_path / "app.log"
    p.write_bytes(joined(a))
    got: list[bytes] = []
    with LogWatcher([p, tmp_path / "app.log.1"], poll=True) as watcher:
        for _, batch in watcher.poll_all():
            got += datas(batch)
        rotate_numbered(p)
        p.write_bytes(joined(b))
        for _ in range(3):
            for _, batch in watcher.poll_all():
                got += datas(batch)
    assert sorted(got) == sorted(history + a + b)


def test_rotations_faster_than_the_reader_with_a_logging_handler(tmp_path: Path) -> None:
    """Python's RotatingFileHandler rotates every few lines (about 50) while the reader
    polls only every 1000 lines (a busy ingest loop): every line is read exactly once."""
    p = tmp_path / "server.log"
    logger = logging.getLogger(f"rotation-test-{id(tmp_path)}")
    logger.propagate = False
    handler = logging.handlers.RotatingFileHandler(p, maxBytes=2000, backupCount=1000)
    logger.addHandler(handler)
    logger.setLevel(logging.INFO)
    written = [f"request {i:06d} finished in 12 ms" for i in range(3000)]
    got: list[bytes] = []
    p.write_bytes(b"")
    with LogWatcher([p], poll=True) as watcher:
        watcher.poll_all()  # opened before the first rotation: what came before is history
        for start in range(0, len(written), 1000):
            for line in written[start : start + 1000]:
                logger.info(line)
            for _, batch in watcher.poll_all():
                got += datas(batch)
        for _ in range(5):
            for _, batch in watcher.poll_all():
                got += datas(batch)
    handler.close()
    logger.removeHandler(handler)
    assert len(list(tmp_path.iterdir())) > 20  # it did rotate, many times
    assert sorted(got) == sorted(line.encode() for line in written)
    assert len(got) == len(written)


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
