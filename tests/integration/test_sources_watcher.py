"""LogWatcher: several files, wait() wakes after changes, both with watchfiles and polling.

Nothing here asserts how long something took: a test waits for what it needs until a
deadline (``WAKE_LIMIT_S``) far above the usual wait and still below the stat polling these
tests set (60 s), so a wake-up before it is one a notification gave.
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Callable
from pathlib import Path

import pytest
from waiting import wait_for

from sparseety_tui.sources import FollowBatch, LogWatcher
from sparseety_tui.sources import _inotify as inotify

WAKE_LIMIT_S = 30.0


def drain(watcher: LogWatcher) -> dict[str, list[bytes]]:
    out: dict[str, list[bytes]] = {}
    for path, batch in watcher.poll_all():
        out.setdefault(path, []).extend(line.data for line in batch.lines)
    return out


def append(path: Path, data: bytes) -> None:
    with open(path, "ab") as f:
        f.write(data)


def within(predicate: Callable[[], object], seconds: float) -> bool:
    """Whether ``predicate()`` comes to hold within ``seconds`` (for what must not happen)."""
    try:
        wait_for(predicate, seconds, "it")
    except AssertionError:
        return False
    return True


def wait_for_lines(watcher: LogWatcher, path: Path, want: int) -> list[bytes]:
    """wait() + poll_all() until `want` lines of `path` arrived; fails after WAKE_LIMIT_S."""
    got: list[bytes] = []
    deadline = time.monotonic() + WAKE_LIMIT_S
    while len(got) < want:
        assert time.monotonic() < deadline, f"only {got!r} after {WAKE_LIMIT_S} s"
        watcher.wait(max(0.01, deadline - time.monotonic()))
        got += drain(watcher).get(str(path), [])
    return got


@pytest.mark.parametrize("poll", [False, True], ids=["watchfiles", "poll"])
def test_wait_returns_after_an_append(tmp_path: Path, poll: bool) -> None:
    p = tmp_path / "a.log"
    p.write_bytes(b"old\n")
    with LogWatcher([p], poll=poll) as watcher:
        assert watcher.backend == ("poll" if poll else "inotify")
        assert drain(watcher) == {str(p): [b"old"]}
        append(p, b"new\n")
        assert wait_for_lines(watcher, p, 1) == [b"new"]


@pytest.mark.parametrize("backend", ["inotify", "watchfiles"])
def test_notifications_alone_wake_wait(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, backend: str
) -> None:
    # Stat polling so rare that only a notification can wake wait() in time.
    if backend == "watchfiles":
        monkeypatch.setattr(inotify, "available", lambda: False)
    p = tmp_path / "a.log"
    p.write_bytes(b"")
    with LogWatcher([p], interval_s=60, safety_interval_s=60) as watcher:
        assert watcher.backend == backend
        wait_for(lambda: watcher.watching, WAKE_LIMIT_S, f"the watch ({watcher.fallback_reason})")
        drain(watcher)
        watcher.wait(0.05)  # consume the first, lazy signature check
        # Changes to unrelated files in the directory do not count as ours.
        (tmp_path / "other.txt").write_bytes(b"noise\n")
        assert watcher.wait(0.5) is False
        append(p, b"hello\n")
        assert watcher.wait(WAKE_LIMIT_S) is True
        assert wait_for_lines(watcher, p, 1) == [b"hello"]


@pytest.mark.parametrize("poll", [False, True], ids=["watchfiles", "poll"])
def test_wait_times_out_when_nothing_changes(tmp_path: Path, poll: bool) -> None:
    p = tmp_path / "a.log"
    p.write_bytes(b"x\n")
    with LogWatcher([p], poll=poll) as watcher:
        drain(watcher)
        watcher.wait(0.2)  # may wake once: the signature of the first read is taken lazily
        assert watcher.wait(0.2) is False


def test_wake_ends_a_wait_on_a_quiet_file(tmp_path: Path) -> None:
    """Another thread's work (the UI's new query) ends the ingest thread's idle wait: the
    wait returns True (a spurious wake its contract allows) instead of sleeping on."""
    p = tmp_path / "a.log"
    p.write_text("x\n")
    with LogWatcher([p], interval_s=60, safety_interval_s=60) as watcher:
        drain(watcher)
        watcher.wait(0.2)  # may wake once: the signature of the first read is taken lazily
        threading.Thread(target=watcher.wake).start()  # another thread, as the UI is
        assert watcher.wait(30.0) is True


def test_several_files_and_one_that_appears_later(tmp_path: Path) -> None:
    a, b, c = tmp_path / "a.log", tmp_path / "b.log", tmp_path / "sub" / "c.log"
    a.write_bytes(b"a1\n")
    b.write_bytes(b"b1\nb2\n")
    with LogWatcher([a, b, c, a]) as watcher:  # a listed twice is followed once
        assert len(watcher.followers) == 3
        first = dict(watcher.poll_all())
        assert {k: [ln.data for ln in v.lines] for k, v in first.items()} == {
            str(a): [b"a1"],
            str(b): [b"b1", b"b2"],
            str(c): [],
        }
        assert [e.kind for e in first[str(c)].events] == ["missing"]
        # c's directory does not exist yet: polling covers it until it does.
        c.parent.mkdir()
        append(c, b"c1\n")
        assert wait_for_lines(watcher, c, 1) == [b"c1"]
        append(b, b"b3\n")
        assert wait_for_lines(watcher, b, 1) == [b"b3"]


def test_rotation_is_seen_through_the_directory_watch(tmp_path: Path) -> None:
    p = tmp_path / "app.log"
    p.write_bytes(b"a1\n")
    with LogWatcher([p], rotated_quiet_s=0) as watcher:
        assert drain(watcher) == {str(p): [b"a1"]}
        append(p, b"a2\n")
        p.rename(tmp_path / "app.log.1")
        p.write_bytes(b"b1\n")
        got = wait_for_lines(watcher, p, 2)
        # The append, the rename and the create may be seen in one wake-up or several.
        assert got == [b"a2", b"b1"]


def test_watchfiles_failure_falls_back_to_polling(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import watchfiles

    def broken_watch(*args: object, **kwargs: object) -> object:
        raise OSError(28, "inotify watch limit reached")

    monkeypatch.setattr(watchfiles, "watch", broken_watch)
    monkeypatch.setattr(inotify, "available", lambda: False)
    p = tmp_path / "a.log"
    p.write_bytes(b"")
    with LogWatcher([p]) as watcher:
        wait_for(lambda: watcher.backend == "poll", WAKE_LIMIT_S, "the fall-back to polling")
        assert watcher.fallback_reason is not None
        assert "inotify watch limit" in watcher.fallback_reason
        drain(watcher)
        append(p, b"x\n")
        assert wait_for_lines(watcher, p, 1) == [b"x"]


def test_stop_ends_the_thread_quickly(tmp_path: Path) -> None:
    p = tmp_path / "a.log"
    p.write_bytes(b"")
    watcher = LogWatcher([p])
    thread = watcher._thread
    assert thread is not None and thread.is_alive()
    watcher.stop()
    assert not thread.is_alive()


def test_backlog_makes_wait_return_at_once(tmp_path: Path) -> None:
    p = tmp_path / "a.log"
    p.write_bytes(b"".join(f"line {i}\n".encode() for i in range(100)))
    with LogWatcher([p], poll=True, max_batch_bytes=100) as watcher:
        batches: list[FollowBatch] = [b for _, b in watcher.poll_all()]
        assert batches[0].more
        assert watcher.wait(WAKE_LIMIT_S) is True  # nothing changes: only the backlog wakes it


def test_inotify_failure_falls_back_to_watchfiles(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def broken(*args: object, **kwargs: object) -> None:
        raise inotify.InotifyError(28, "inotify watch limit reached")

    monkeypatch.setattr(inotify, "watch_directories", broken)
    p = tmp_path / "a.log"
    p.write_bytes(b"")
    with LogWatcher([p], interval_s=60, safety_interval_s=60) as watcher:
        wait_for(
            lambda: watcher.backend == "watchfiles" and watcher.watching,
            WAKE_LIMIT_S,
            f"the fall-back to watchfiles ({watcher.fallback_reason})",
        )
        drain(watcher)
        watcher.wait(0.05)
        append(p, b"y\n")
        assert wait_for_lines(watcher, p, 1) == [b"y"]


def test_inotify_reports_only_changes_that_matter(tmp_path: Path) -> None:
    """The thread's filter: our file and its rotated copies wake the waiter; other files
    in the directory do not; a queue overflow ("") does (anything may have changed)."""
    p = tmp_path / "app.log"
    p.write_bytes(b"")
    with LogWatcher([p], poll=True) as watcher:
        assert not watcher._changed_path(str(tmp_path / "other.txt"))
        assert not watcher._changed.is_set()
        assert watcher._changed_path(str(tmp_path / "app.log.1"))
        assert watcher._changed_path(str(p))
        assert watcher._changed_path("")


def test_inotify_thread_reads_no_more_until_its_news_is_taken(tmp_path: Path) -> None:
    """While a log streams, the worker reads the files at every snapshot without waiting:
    the thread's news is not taken, and it reads no more events (each a wake-up of a
    thread that takes the GIL) until it is; then it reads what the kernel kept meanwhile."""
    p = tmp_path / "app.log"
    p.write_bytes(b"")
    seen: list[str] = []
    taken = threading.Event()
    taken.set()
    ready = threading.Event()
    stop = threading.Event()
    wake_r, wake_w = os.pipe()

    def on_change(path: str) -> bool:
        taken.clear()
        seen.append(path)
        return True

    thread = threading.Thread(
        target=inotify.watch_directories,
        args=([str(tmp_path)], on_change, stop, wake_r, ready.set, 0.0, taken),
        daemon=True,
    )
    thread.start()
    try:
        assert ready.wait(WAKE_LIMIT_S)
        with open(p, "ab", buffering=0) as f:
            f.write(b"one\n")
            wait_for(lambda: seen, WAKE_LIMIT_S, "the first write to be seen")
            first = len(seen)
            for _ in range(5):
                f.write(b"more\n")
            # Something that must not happen has no condition to wait for: the thread gets
            # its chance to read (wrongly) the five writes' events while the news is not taken.
            assert not within(lambda: len(seen) > first, 0.2)
            taken.set()
            wait_for(lambda: len(seen) > first, WAKE_LIMIT_S, "the writes to be read")
        assert set(seen) == {str(p)}
    finally:
        stop.set()
        taken.set()
        os.write(wake_w, b"x")
        thread.join(WAKE_LIMIT_S)
        os.close(wake_r)
        os.close(wake_w)
    assert not thread.is_alive()
