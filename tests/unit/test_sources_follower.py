"""FileFollower: appends, partial lines, rotation, truncation, files that come and go."""

from __future__ import annotations

import os
import random
import shutil
import stat
from pathlib import Path

import pytest
from follow_helpers import FakeClock, appender, datas, kinds

from sparseety_tui.sources import FileFollower, RawLine


def test_line_cut_by_slow_writer_is_reported_once_complete(tmp_path: Path) -> None:
    p = tmp_path / "a.log"
    p.write_bytes(b"")
    with appender(p) as w, FileFollower(p) as fol:
        b = fol.poll()
        assert kinds(b) == ["opened"] and b.lines == []
        w.write(b"hel")
        assert datas(fol.poll()) == []
        w.write(b"lo\nwor")
        assert datas(fol.poll()) == [b"hello"]
        w.write(b"ld\r")  # a "\r\n" split across two polls is still one ending
        assert datas(fol.poll()) == []
        w.write(b"\nprogress 1%\rprogress 2%\n")
        b = fol.poll()
        assert datas(b) == [b"world", b"progress 1%\rprogress 2%"]
        assert [(ln.offset, ln.length) for ln in b.lines] == [(6, 7), (13, 24)]
        assert fol.poll().lines == []  # nothing new: nothing reported twice


def test_start_end_skips_existing_lines_but_finishes_the_current_one(tmp_path: Path) -> None:
    p = tmp_path / "a.log"
    p.write_bytes(b"old 1\nold 2\ncurr")
    with FileFollower(p, start="end") as fol:
        assert datas(fol.poll()) == []
        with appender(p) as w:
            w.write(b"ent\nnew\n")
        b = fol.poll()
        assert datas(b) == [b"current", b"new"]
        assert b.lines[0].offset == 12


@pytest.mark.parametrize(
    ("n", "expected"),
    [
        (0, []),
        (1, [b"l4"]),
        (2, [b"l3", b"l4"]),
        (5, [b"l0", b"l1", b"l2", b"l3", b"l4"]),
        (99, None),
    ],
)
def test_last_lines(tmp_path: Path, n: int, expected: list[bytes] | None) -> None:
    p = tmp_path / "a.log"
    p.write_bytes(b"l0\nl1\nl2\nl3\nl4\npartial")  # the unterminated tail is not one of the n
    with FileFollower(p, last_lines=n) as fol:
        got = datas(fol.poll())
        assert got == (expected if expected is not None else [b"l0", b"l1", b"l2", b"l3", b"l4"])
        with appender(p) as w:
            w.write(b" done\n")
        assert datas(fol.poll()) == [b"partial done"]


def test_last_lines_across_read_blocks(tmp_path: Path) -> None:
    p = tmp_path / "big.log"
    lines = [f"line {i:06d} ".encode() + b"x" * (i % 300) for i in range(3000)]  # ~500 KiB
    p.write_bytes(b"\n".join(lines) + b"\n")
    with FileFollower(p, last_lines=1234) as fol:
        assert datas(fol.poll()) == lines[-1234:]


def test_start_offset_resumes_at_a_line_start(tmp_path: Path) -> None:
    p = tmp_path / "a.log"
    p.write_bytes(b"aaa\nbbb\nccc\n")
    with FileFollower(p, start=4) as fol:
        assert datas(fol.poll()) == [b"bbb", b"ccc"]
    with FileFollower(p, start=5) as fol:  # mid-line: no half line
        assert datas(fol.poll()) == [b"ccc"]
    with FileFollower(p, start=100) as fol:  # the file shrank since: say so, read it all
        b = fol.poll()
        assert kinds(b) == ["opened", "truncated"]
        assert datas(b) == [b"aaa", b"bbb", b"ccc"]


def test_rename_and_create_rotation_loses_and_doubles_nothing(tmp_path: Path) -> None:
    p = tmp_path / "app.log"
    clock = FakeClock()
    w = appender(p)
    fol = FileFollower(p, rotated_quiet_s=2.0, clock=clock)
    w.write(b"a1\na2\n")
    first = fol.poll()
    assert datas(first) == [b"a1", b"a2"] and fol.generation == 1
    # Written just before the rotation, never polled: must not be lost.
    w.write(b"a3\na4\nhalf")
    os.rename(p, tmp_path / "app.log.1")
    w2 = appender(p)  # logrotate "create"
    w2.write(b"b1\n")
    b = fol.poll()
    assert kinds(b) == ["rotated"]
    assert b.events[0].message.endswith("file rotated, reopened")
    assert b.events[0].line_index == 2 and b.events[0].generation == 2
    assert [(s.generation, [ln.data for ln in s.lines]) for s in b.segments] == [
        (1, [b"a3", b"a4"]),
        (2, [b"b1"]),
    ]
    assert b.segments[1].lines[0].offset == 0  # offsets restart with the new incarnation
    # The writer has not reopened yet: it finishes its line and writes one more in the old
    # file. Read during the grace period, as old-generation lines.
    w.write(b"-done\na5\n")
    w2.write(b"b2\n")
    b = fol.poll()
    assert [(s.generation, [ln.data for ln in s.lines]) for s in b.segments] == [
        (1, [b"half-done", b"a5"]),
        (2, [b"b2"]),
    ]
    w.close()
    clock.now += 10
    assert fol.poll().lines == [] and not fol.draining
    w2.close()
    fol.close()


def test_rotation_tail_is_reported_when_grace_ends(tmp_path: Path) -> None:
    p = tmp_path / "app.log"
    clock = FakeClock()
    p.write_bytes(b"x1\nunterminated")
    with FileFollower(p, rotated_quiet_s=1.0, clock=clock) as fol:
        assert datas(fol.poll()) == [b"x1"]
        os.rename(p, tmp_path / "app.log.1")
        p.write_bytes(b"y1\n")
        assert datas(fol.poll()) == [b"y1"]
        clock.now += 0.5
        assert datas(fol.poll()) == []
        clock.now += 1.0
        b = fol.poll()
        assert [(s.generation, [ln.data for ln in s.lines]) for s in b.segments] == [
            (1, [b"unterminated"])
        ]
        assert b.lines[0].offset == 3


def test_rotation_without_grace_reports_tail_at_once(tmp_path: Path) -> None:
    p = tmp_path / "app.log"
    p.write_bytes(b"x1\nunterminated")
    with FileFollower(p, rotated_quiet_s=0) as fol:
        assert datas(fol.poll()) == [b"x1"]
        os.rename(p, tmp_path / "app.log.1")
        p.write_bytes(b"y1\n")
        b = fol.poll()
        assert datas(b) == [b"unterminated", b"y1"]
        assert kinds(b) == ["closed", "rotated"] and b.events[1].line_index == 1


def test_copytruncate_restarts_at_zero(tmp_path: Path) -> None:
    p = tmp_path / "app.log"
    w = appender(p)
    with FileFollower(p) as fol:
        w.write(b"a1\na2\nhal")
        assert datas(fol.poll()) == [b"a1", b"a2"]
        shutil.copyfile(p, tmp_path / "app.log.1")
        os.truncate(p, 0)  # the writer keeps its O_APPEND fd
        w.write(b"b1\n")
        b = fol.poll()
        assert kinds(b) == ["truncated"]
        # The held half line was complete data: reported once, as a line, then the file anew.
        assert [(s.generation, [ln.data for ln in s.lines]) for s in b.segments] == [
            (1, [b"hal"]),
            (2, [b"b1"]),
        ]
        assert b.lines[1].offset == 0 and fol.generation == 2
        w.write(b"b2\n")
        assert datas(fol.poll()) == [b"b2"]
    w.close()


def test_delete_and_recreate(tmp_path: Path) -> None:
    p = tmp_path / "app.log"
    w = appender(p)
    with FileFollower(p, rotated_quiet_s=0, deleted_quiet_s=0) as fol:
        w.write(b"a1\n")
        assert datas(fol.poll()) == [b"a1"]
        w.write(b"a2\n")
        os.unlink(p)
        b = fol.poll()  # gone from the directory, but the open file is still read
        assert kinds(b) == ["missing"] and datas(b) == [b"a2"]
        w.write(b"a3\n")  # a writer still holding the deleted file
        b = fol.poll()
        assert kinds(b) == [] and datas(b) == [b"a3"]
        w.close()
        p.write_bytes(b"b1\n")
        b = fol.poll()
        assert kinds(b) == ["closed", "replaced"] and datas(b) == [b"b1"]
        assert b.events[1].message.endswith("file deleted and recreated, reopened")


def test_file_that_appears_later(tmp_path: Path) -> None:
    p = tmp_path / "later.log"
    with FileFollower(p, start="end") as fol:
        b = fol.poll()
        assert kinds(b) == ["missing"] and fol.generation == 0
        assert not fol.poll()  # reported once, not on every poll
        p.write_bytes(b"first\nsecond\n")
        b = fol.poll()
        # A new file is read from its start, whatever `start` said for the first file.
        assert kinds(b) == ["appeared"] and datas(b) == [b"first", b"second"]
        assert fol.generation == 1


def test_huge_line_while_following_is_capped(tmp_path: Path) -> None:
    p = tmp_path / "huge.log"
    cap = 64 * 1024
    block = b"0123456789abcdef" * 65536  # 1 MiB, no newline
    with appender(p) as w, FileFollower(p, max_line_bytes=cap) as fol:
        w.write(b"before\n")
        assert datas(fol.poll()) == [b"before"]
        for _ in range(20):  # a 50 MB line arrives across many polls
            w.write(block * 2 + block[: 512 * 1024])
            assert fol.poll().lines == []
        w.write(b"\nafter\n")
        b = fol.poll()
        big, after = b.lines
        assert big.truncated and big.data == block[:cap] and big.offset == 7
        assert big.length == 20 * (2 * len(block) + 512 * 1024) + 1
        assert (after.data, after.offset) == (b"after", 7 + big.length)


def test_batch_budget_splits_catch_up_into_steps(tmp_path: Path) -> None:
    p = tmp_path / "a.log"
    lines = [f"line {i}".encode() for i in range(1000)]
    p.write_bytes(b"\n".join(lines) + b"\n")
    got: list[RawLine] = []
    with FileFollower(p, max_batch_bytes=1000) as fol:
        for _ in range(100):
            b = fol.poll()
            got += b.lines
            assert fol.has_backlog == b.more
            if not b.more:
                break
    assert [ln.data for ln in got] == lines
    assert got[-1].offset + got[-1].length == p.stat().st_size


def test_not_a_regular_file_is_an_event_not_an_exception(tmp_path: Path) -> None:
    d = tmp_path / "dir.log"
    d.mkdir()
    with FileFollower(d) as fol:
        b = fol.poll()
        assert kinds(b) == ["read_error"] and "not a regular file" in b.events[0].message
        assert not fol.poll()  # the same problem is reported once


def test_unreadable_new_file_after_rotation_is_reported_once(tmp_path: Path) -> None:
    p = tmp_path / "app.log"
    w = appender(p)
    with FileFollower(p, rotated_quiet_s=0) as fol:
        w.write(b"a1\n")
        assert datas(fol.poll()) == [b"a1"]
        p.rename(tmp_path / "app.log.1")
        p.mkdir()  # something we cannot follow now sits at the path
        events = []
        for i in range(5):
            w.write(f"a{i + 2}\n".encode())  # the old file is still followed meanwhile
            b = fol.poll()
            events += kinds(b)
            assert datas(b) == [f"a{i + 2}".encode()]
        assert events == ["read_error"]
        p.rmdir()
        p.write_bytes(b"b1\n")
        b = fol.poll()
        assert kinds(b) == ["closed", "rotated"] and datas(b) == [b"b1"]
    w.close()


def test_permission_denied_is_reported_then_recovers(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    p = tmp_path / "secret.log"
    p.write_bytes(b"hidden\n")
    p.chmod(0)
    if os.geteuid() == 0:
        # root reads files whatever their mode: refuse the open the way the kernel would
        real_open = os.open

        def refusing_open(path: object, flags: int, *args: object) -> int:
            if os.fspath(path) == str(p) and not os.stat(p).st_mode & 0o444:  # type: ignore[arg-type]
                raise PermissionError(13, "Permission denied", str(p))
            return real_open(path, flags, *args)  # type: ignore[arg-type]

        monkeypatch.setattr(os, "open", refusing_open)
    with FileFollower(p) as fol:
        b = fol.poll()
        assert kinds(b) == ["read_error"] and "permission denied" in b.events[0].message
        p.chmod(0o444)
        b = fol.poll()
        assert kinds(b) == ["opened"] and datas(b) == [b"hidden"]


def test_following_never_modifies_the_file(tmp_path: Path) -> None:
    p = tmp_path / "ro.log"
    p.write_bytes(b"a\nb\npartial")
    p.chmod(0o444)
    before = p.stat()
    with FileFollower(p, last_lines=1) as fol:
        assert datas(fol.poll()) == [b"b"]
        fol.poll()
    after = p.stat()
    assert p.read_bytes() == b"a\nb\npartial"
    assert stat.S_IMODE(after.st_mode) == 0o444
    assert (after.st_mtime_ns, after.st_size, after.st_ino) == (
        before.st_mtime_ns,
        before.st_size,
        before.st_ino,
    )
    assert sorted(os.listdir(tmp_path)) == ["ro.log"]


@pytest.mark.parametrize("seed", range(6))
def test_random_writes_rotations_and_polls_account_for_every_line(
    tmp_path: Path, seed: int
) -> None:
    """A writer cuts lines at random points and the file is rotated (rename + create, the
    writer reopening a little later) or deleted and recreated, while polls interleave at
    random. Every line written must come out exactly once, whole."""
    rng = random.Random(seed)
    p = tmp_path / "app.log"
    clock = FakeClock()
    written = [f"req {i} ".encode() + b"z" * rng.randrange(0, 50) for i in range(600)]
    stream = b"".join(line + rng.choice([b"\n", b"\r\n"]) for line in written)
    w = appender(p)
    fol = FileFollower(p, rotated_quiet_s=5.0, clock=clock, max_batch_bytes=700)
    got: list[bytes] = []
    pending_reopen = -1  # writes left before the writer notices a rotation
    rotations = 0
    pos = 0
    polled_since_rotation = True
    while pos < len(stream):
        n = min(rng.randrange(1, 40), len(stream) - pos)
        w.write(stream[pos : pos + n])
        pos += n
        at_line_end = stream[pos - 1] == 10
        if pending_reopen > 0:
            pending_reopen -= 1
        elif pending_reopen == 0 and at_line_end:  # loggers reopen between records
            w.close()
            w = appender(p)
            pending_reopen = -1
        r = rng.random()
        if r < 0.3:
            got += datas(fol.poll())
            polled_since_rotation = True
            clock.now += 0.01
        elif r < 0.34 and pending_reopen < 0 and polled_since_rotation:
            # A path-based follower can only see a rotation if it polls between two of them
            # (tail -F has the same limit), hence polled_since_rotation.
            rotations += 1
            if rng.random() < 0.7:
                os.rename(p, tmp_path / f"app.log.{rotations}")
                appender(p).close()  # logrotate creates the new file at once
                pending_reopen = rng.randrange(0, 4)
            elif at_line_end:
                os.unlink(p)
                w.close()
                w = appender(p)
            polled_since_rotation = False
    w.close()
    for _ in range(200):
        b = fol.poll()
        got += datas(b)
        if not b.more:
            break
    clock.now += 100  # grace over: rotated files' tails are reported
    got += datas(fol.poll())
    fol.close()
    assert rotations > 3
    assert sorted(got) == sorted(written)  # nothing lost, nothing twice, no line cut
    assert got == written  # and in order here, since the writer never went back
