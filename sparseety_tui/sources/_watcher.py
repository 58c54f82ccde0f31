"""Follow several log files and wait, cheaply, until one of them may have changed.

Change notification: inotify on the files' parent directories (``sources._inotify``, on
Linux), so files that are created, renamed or deleted are seen too, read by a background
thread that sets a ``threading.Event``. The thread blocks in the kernel until an event comes:
no wake-ups at all while the logs are quiet, a change reported within microseconds; while a
log is written every millisecond it wakes at most once per ``WATCH_COALESCE_MS``.

Elsewhere (or if inotify cannot be set up) ``watchfiles`` does the same job: its defaults
batch changes for longer (perf baseline §5); we use ``debounce=10, step=5``: a change is
reported within a few milliseconds, and the Rust loop, which wakes every ``step`` ms even
when idle, costs a third of what ``step=1`` does.

Notifications can be missed (overflowing inotify queues, odd mounts), so ``wait()`` also
compares a cheap ``stat`` signature of every path (and of the rotated-away files still read,
and of followed directories) every ``safety_interval_s``. With ``poll=True`` (NFS, FUSE,
containers' bind mounts), when a parent directory does not exist, or when watchfiles cannot
start, it polls ``stat`` every ``interval_s`` instead.

Followed directories (``tail DIR``): files that appear in them later are followed too, from
their start. A rotated copy of a followed file (``app.log.1``, ``sources._rotated``) is not a
new log: its follower reads it if it has to.
"""

from __future__ import annotations

import logging
import math
import os
import threading
import time
from collections.abc import Callable, Iterable
from pathlib import Path

from . import _inotify as inotify
from ._follower import (
    DEFAULT_MAX_BATCH_BYTES,
    DEFAULT_ROTATED_QUIET_S,
    FileFollower,
    FollowBatch,
    StartSpec,
)
from ._inputs import log_files_in
from ._lines import DEFAULT_MAX_LINE_BYTES
from ._rotated import is_rotated_name

__all__ = ["LogWatcher"]

log = logging.getLogger(__name__)

WATCH_DEBOUNCE_MS = 10
WATCH_STEP_MS = 5
#: After a change that matters, the inotify thread waits this long, and then until the
#: waiter took the news (``wait()``), before it reads more (the kernel merges what comes
#: meanwhile): while a log streams the worker reads the files at each snapshot without
#: waiting, so a writer's many appends a second cost the thread no wake-ups at all (it
#: woke every 5 ms when it only slept).
WATCH_COALESCE_MS = 5
_RUST_TIMEOUT_MS = 200  # idle wake-ups of the thread; the first one proves the watch is up

#: A followed directory is listed again at least this often, even when its mtime did not
#: change (a file created within the clock tick of the last listing leaves it unchanged).
RESCAN_S = 1.0

_Signature = tuple[int, int, int, int] | None


def _signature(path: str) -> _Signature:
    """What we compare to notice a change: inode, device, size, mtime (None if absent)."""
    try:
        st = os.stat(path)
    except OSError:
        return None
    return (st.st_ino, st.st_dev, st.st_size, st.st_mtime_ns)


def _copy_of(path: str, others: Iterable[str]) -> bool:
    """Whether ``path`` is named like a rotated copy of one of ``others`` (same directory)."""
    directory, name = os.path.split(path)
    return any(
        os.path.dirname(other) == directory and is_rotated_name(os.path.basename(other), name)
        for other in others
    )


class LogWatcher:
    """One ``FileFollower`` per path plus a blocking ``wait()`` for "something may have changed".

    Typical ingest loop::

        with LogWatcher(paths) as watcher:
            while running:
                for path, batch in watcher.poll_all():
                    ...
                watcher.wait(0.5)
    """

    def __init__(
        self,
        paths: Iterable[str | os.PathLike[str]],
        *,
        directories: Iterable[str | os.PathLike[str]] = (),
        list_directory: Callable[[str], list[str]] = log_files_in,
        poll: bool = False,
        interval_s: float = 0.05,
        safety_interval_s: float = 0.5,
        start: StartSpec = "start",
        last_lines: int | None = None,
        max_line_bytes: int = DEFAULT_MAX_LINE_BYTES,
        max_batch_bytes: int = DEFAULT_MAX_BATCH_BYTES,
        rotated_quiet_s: float = DEFAULT_ROTATED_QUIET_S,
        chunks: bool = False,
    ) -> None:
        """``start``, ``last_lines``, ``max_line_bytes``, ``max_batch_bytes`` and
        ``rotated_quiet_s`` are passed to every ``FileFollower`` of ``paths``; ``chunks``
        to every follower (batches of ``Chunk``s, see ``FileFollower``).

        ``directories``: files that appear in them later (as ``list_directory`` lists them)
        are followed too, from their start; their followers are added to ``followers`` and
        show up in ``poll_all``. The files a directory holds now belong in ``paths``.
        """
        if interval_s <= 0 or safety_interval_s <= 0:
            raise ValueError("intervals must be > 0")
        self.followers: list[FileFollower] = []
        self._seen: set[str] = set()
        self._max_line_bytes = max_line_bytes
        self._max_batch_bytes = max_batch_bytes
        self._rotated_quiet_s = rotated_quiet_s
        self.chunks = chunks
        given = [os.path.abspath(os.fspath(p)) for p in paths]
        for path in given:
            self._add(path, start=start, last_lines=last_lines, reopen=not _copy_of(path, given))
        self._list_directory = list_directory
        self._dirs: dict[str, tuple[_Signature, float]] = {}  # -> (signature, listed at)
        for d in directories:
            directory = os.path.abspath(os.fspath(d))
            self._dirs[directory] = (_signature(directory), time.monotonic())
        self.interval_s = interval_s
        self.safety_interval_s = safety_interval_s
        self._signatures: dict[str, object] = {}
        self._stat_changed()
        self._changed = threading.Event()
        #: Clear while the inotify thread's last news is not taken (see WATCH_COALESCE_MS).
        self._taken = threading.Event()
        self._taken.set()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._watching = False  # watchfiles thread alive (set by the thread)
        self._unwatched = False  # some path's directory is not watched: poll fast
        self.fallback_reason: str | None = None
        """Why we poll instead of watching (None while watchfiles works or poll was asked)."""
        self._wake_pipe: tuple[int, int] | None = None  # ends an inotify thread's poll()
        if poll:
            self.backend = "poll"
        else:
            self.backend = "inotify" if inotify.available() else "watchfiles"
            self._start_thread()

    # -- public ------------------------------------------------------------------------------

    @property
    def watching(self) -> bool:
        """True once the watchfiles thread is confirmed running (until then, and whenever it
        is not, ``wait()`` polls every ``interval_s``)."""
        return self._watching

    @property
    def paths(self) -> list[str]:
        """The followed paths (absolute), in the order their followers were added."""
        return [f.path for f in self.followers]

    def poll_all(self) -> list[tuple[str, FollowBatch]]:
        """Poll every follower; returns ``(path, batch)`` for those with lines or events."""
        self._scan_directories()
        out: list[tuple[str, FollowBatch]] = []
        for follower in self.followers:
            batch = follower.poll()
            if batch or batch.more:
                out.append((follower.path, batch))
        return out

    @property
    def needs_polling(self) -> bool:
        """Whether ``wait()`` must also look at the files now and then: anything but inotify
        watching every file's directory, with no rotated-away file still read (it may have
        been moved where nobody watches) and no followed directory (a file created within
        the clock tick of its last listing leaves the directory's signature unchanged)."""
        return (
            self.backend != "inotify"
            or not self._watching
            or self._unwatched
            or bool(self._dirs)
            or any(f.draining for f in self.followers)
        )

    def wait(self, timeout_s: float | None) -> bool:
        """Block until a file may have changed (True) or ``timeout_s`` passes (False; None:
        no time limit).

        Returns at once if a follower still has a backlog (its last poll stopped at its byte
        budget). Spurious True returns are possible; a change is never missed for longer than
        the safety interval (with inotify and nothing that ``needs_polling``, the kernel's
        notifications alone wake it: an idle wait has no wake-ups).
        """
        deadline = math.inf if timeout_s is None else time.monotonic() + timeout_s
        if any(f.has_backlog for f in self.followers):
            return True
        next_stat = 0.0  # check signatures on entry: a change may predate this call
        while True:
            if self._changed.is_set():
                self._changed.clear()
                self._taken.set()
                return True
            now = time.monotonic()
            if now >= next_stat:
                if self._stat_changed():
                    return True
                next_stat = now + self._stat_interval() if self.needs_polling else math.inf
            remaining = deadline - now
            if remaining <= 0:
                return False
            timeout = min(remaining, max(0.0, next_stat - now))
            self._changed.wait(None if timeout == math.inf else timeout)

    def wake(self) -> None:
        """End a ``wait()`` now (another thread has work for the waiter: a new query)."""
        self._changed.set()

    def stop(self) -> None:
        """Stop the watch thread (waits for it) and close the files."""
        self._stop.set()
        self._taken.set()
        if self._wake_pipe is not None:
            os.write(self._wake_pipe[1], b"x")
        thread = self._thread
        if thread is not None:
            thread.join(timeout=5.0)
            if thread.is_alive():
                log.warning("watch thread did not stop within 5 s")
            self._thread = None
        if self._wake_pipe is not None and (thread is None or not thread.is_alive()):
            for fd in self._wake_pipe:
                os.close(fd)
            self._wake_pipe = None
        for follower in self.followers:
            follower.close()

    def __enter__(self) -> LogWatcher:
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    # -- internals ---------------------------------------------------------------------------

    def _add(
        self,
        path: str,
        start: StartSpec = "start",
        last_lines: int | None = None,
        reopen: bool = True,
    ) -> None:
        path = os.path.abspath(path)
        if path in self._seen:
            return  # the same file twice would count every line twice
        self._seen.add(path)
        self.followers.append(
            FileFollower(
                path,
                start=start,
                last_lines=last_lines,
                max_line_bytes=self._max_line_bytes,
                max_batch_bytes=self._max_batch_bytes,
                rotated_quiet_s=self._rotated_quiet_s,
                reopen=reopen,
                chunks=self.chunks,
            )
        )

    def _scan_directories(self) -> None:
        """Follow the files that appeared in followed directories since the last look."""
        now = time.monotonic()
        for directory, (old_sig, listed_at) in self._dirs.items():
            sig = _signature(directory)
            if sig == old_sig and now - listed_at < RESCAN_S:
                continue
            self._dirs[directory] = (sig, now)
            try:
                candidates = self._list_directory(directory)
            except OSError:
                continue  # gone or unreadable for now: the next look tries again
            for path in candidates:
                path = os.path.abspath(path)
                if path not in self._seen and not self._is_history(path):
                    self._add(path)

    def _is_history(self, path: str) -> bool:
        """A rotated copy of a followed file, or a file a follower already holds open: not
        a new log (reading it would count its lines again)."""
        if _copy_of(path, self.paths):
            return True
        try:
            st = os.stat(path)
        except OSError:
            return False
        return any(f.holds(st) for f in self.followers)

    def _stat_interval(self) -> float:
        if self.backend == "poll" or not self._watching or self._unwatched:
            return self.interval_s
        return self.safety_interval_s

    def _stat_changed(self) -> bool:
        changed = False
        current: dict[str, object] = {}
        for follower in self.followers:
            # Rotated-away files still read may live where nobody watches: their sizes too.
            current[follower.path] = (_signature(follower.path), follower.retired_sizes())
        for directory in self._dirs:
            current[directory] = _signature(directory)
        if current != self._signatures:
            self._signatures = current
            changed = True
        return changed

    def _start_thread(self) -> None:
        dirs: list[str] = list(self._dirs)
        for path in self.paths:
            parent = os.path.dirname(path)
            if not os.path.isdir(parent):
                self._unwatched = True  # stat polling covers it until the directory exists
            elif parent not in dirs:
                dirs.append(parent)
        if not dirs:
            self._fall_back("none of the files' directories exist yet")
            return
        if self.backend == "inotify":
            self._wake_pipe = os.pipe()
        self._thread = threading.Thread(
            target=self._watch_loop, args=(dirs,), name="sparseety-watch", daemon=True
        )
        self._thread.start()

    def _fall_back(self, reason: str) -> None:
        self.fallback_reason = reason
        self.backend = "poll"
        self._watching = False
        log.info("file watching falls back to polling: %s", reason)

    def _relevant(self, _change: object, changed_path: str) -> bool:
        # Our files, and files named like their rotated copies (server.log.1, server.log-2025…):
        # a writer may still append to a rotated file while its follower reads it. Anything
        # in a followed directory: it may be a new log.
        directory, name = os.path.split(changed_path)
        return directory in self._dirs or any(
            name.startswith(os.path.basename(p)) for p in self.paths
        )

    def _changed_path(self, path: str) -> bool:
        """A change the inotify thread saw: wake the waiter if it is ours ("" after a
        queue overflow: anything may have changed)."""
        if path and not self._relevant(None, path):
            return False
        # Cleared before the news is set, never after: the waiter sets it again once it
        # takes the news, so the thread cannot be left waiting for news nobody will take.
        self._taken.clear()
        self._changed.set()
        return True

    def _watching_now(self) -> None:
        self._watching = True

    def _watch_loop(self, dirs: list[str]) -> None:
        if self._wake_pipe is not None:
            try:
                inotify.watch_directories(
                    dirs,
                    self._changed_path,
                    self._stop,
                    self._wake_pipe[0],
                    self._watching_now,
                    WATCH_COALESCE_MS / 1000,
                    self._taken,
                )
            except OSError as e:  # watchfiles may still work (it says why not if not)
                log.info("inotify failed, using watchfiles: %s", e)
                self.backend = "watchfiles"
            else:
                self._watching = False
                self._changed.set()
                return
        try:
            import watchfiles

            for changes in watchfiles.watch(
                *[Path(d) for d in dirs],
                watch_filter=self._relevant,
                debounce=WATCH_DEBOUNCE_MS,
                step=WATCH_STEP_MS,
                stop_event=self._stop,
                rust_timeout=_RUST_TIMEOUT_MS,
                yield_on_timeout=True,
                raise_interrupt=False,
                recursive=False,
                ignore_permission_denied=True,
            ):
                # The first yield (often an idle timeout) proves the watch is set up.
                self._watching = True
                if changes:
                    self._changed.set()
        except Exception as e:  # any failure means: poll instead, and say why
            self._fall_back(f"watchfiles failed: {type(e).__name__}: {e}")
        else:
            if not self._stop.is_set():
                self._fall_back("watchfiles stopped unexpectedly")
        finally:
            self._watching = False
            self._changed.set()  # wake a waiter so it re-evaluates how to wait
