"""The spool: the file the receivers append accepted spans to, one OTLP/JSON line each.

``tail`` and ``serve`` follow it as one more input file, read by the ``otlp`` format
family: the receivers never build rows themselves, so a span received live and the same
span in a Collector's file export are read by one reader.

Each accepted export's lines reach the file whole, in one ``os.writev`` with the exports
queued beside it, on an ``O_APPEND`` descriptor: a follower never sees half a line, and
lines of two exports never interleave. Writes happen on one writer thread, behind a queue bounded in bytes: an
export that does not fit is refused (the receiver answers 503 with ``Retry-After``), never
taken and then dropped.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import stat
import tempfile
import threading
from collections import deque
from collections.abc import Sequence
from typing import Literal

from sparseety_tui.core.text import quote
from sparseety_tui.sources import os_reason

#: Bytes of accepted lines waiting for the writer before further exports are refused.
DEFAULT_QUEUE_BYTES = 64 << 20
#: The spool's name inside the private directory made when no ``--otlp-spool`` is given.
SPOOL_NAME = "spans.otlp.jsonl"

#: Why ``Spool.offer`` refused an export.
Refusal = Literal["queue_full", "spool_failed", "closed"]
QUEUE_FULL: Refusal = "queue_full"
SPOOL_FAILED: Refusal = "spool_failed"
CLOSED: Refusal = "closed"


class SpoolError(Exception):
    """The spool cannot be opened; the message is one line."""


def joined(lines: Sequence[bytes]) -> bytes:
    """The lines as one block, each ending in exactly one newline."""
    return b"".join(line if line.endswith(b"\n") else line + b"\n" for line in lines)


class Spool:
    """Appends blocks of whole lines to ``path`` from one writer thread.

    Without ``path``, a private directory (mode 0700) is made and removed by ``close``; a
    given ``path`` is created if missing (mode 0600), appended to, never truncated, and
    kept. ``start=False`` leaves the writer stopped until ``start()`` (tests fill the queue
    with it).
    """

    def __init__(
        self,
        path: str | None = None,
        queue_bytes: int = DEFAULT_QUEUE_BYTES,
        start: bool = True,
    ) -> None:
        self._own_dir: str | None = None
        if path is None:
            self._own_dir = tempfile.mkdtemp(prefix="sparseety-otlp-")
            path = os.path.join(self._own_dir, SPOOL_NAME)
        self.path = path
        self._fd = _open_append(path)
        self._capacity = queue_bytes
        self._queue: deque[tuple[bytes, int]] = deque()
        self._pending = 0
        self._closing = False
        self._cond = threading.Condition()
        #: Why writing failed (the exports from then on are refused), None while it works.
        self.failure: str | None = None
        #: Spans in blocks that were accepted but could not be written (a write failed).
        self.lost_spans = 0
        self.written_bytes = 0
        self._thread = threading.Thread(target=self._run, name="sparseety-spool", daemon=True)
        if start:
            self.start()

    def start(self) -> None:
        self._thread.start()

    def offer(self, block: bytes, spans: int) -> Refusal | None:
        """Queue ``block`` (whole lines holding ``spans`` spans) for the writer: None when
        taken, else why not (``QUEUE_FULL``, ``SPOOL_FAILED``, ``CLOSED``). A block is
        always taken into an empty queue, however big, so no export is refused forever."""
        with self._cond:
            if self.failure is not None:
                return SPOOL_FAILED
            if self._closing:
                return CLOSED
            if self._pending and self._pending + len(block) > self._capacity:
                return QUEUE_FULL
            self._queue.append((block, spans))
            self._pending += len(block)
            self._cond.notify()
            return None

    def pending_bytes(self) -> int:
        with self._cond:
            return self._pending

    def close(self) -> None:
        """Write what was taken, close the file, remove the private directory if made (a
        second call does nothing more)."""
        with self._cond:
            self._closing = True
            self._cond.notify()
        if self._thread.is_alive():
            self._thread.join()
        elif self._thread.ident is None:
            self._run()  # never started: write what was taken now
        fd, self._fd = self._fd, -1  # closed once: a second close must not close a
        if fd >= 0:  # descriptor number opened again since for another file
            with contextlib.suppress(OSError):
                os.close(fd)
        if self._own_dir is not None:
            shutil.rmtree(self._own_dir, ignore_errors=True)

    def _run(self) -> None:
        while True:
            with self._cond:
                while not self._queue and not self._closing:
                    self._cond.wait()
                if not self._queue:
                    return
                blocks = list(self._queue)
                self._queue.clear()
            self._write(blocks)

    def _write(self, blocks: list[tuple[bytes, int]]) -> None:
        size = sum(len(block) for block, _ in blocks)
        writer = _BlockWriter([block for block, _ in blocks])
        try:
            if self.failure is None:
                writer.write_all(self._fd)
        except OSError as exc:
            with self._cond:
                self.failure = f"cannot write {quote(self.path)}: {os_reason(exc)}"
        written = writer.written
        lost = 0
        done = 0
        for block, spans in blocks:
            done += len(block)
            if done > written:
                lost += spans
        with self._cond:
            self._pending -= size
            self.written_bytes += written
            self.lost_spans += lost


#: Blocks given to one ``os.writev`` at most (the system's limit on its vector).
_IOV_MAX = min(os.sysconf("SC_IOV_MAX") if hasattr(os, "sysconf") else 16, 1024)


class _BlockWriter:
    """Every queued block in one ``os.writev`` (a regular file takes it whole): one
    system call, and one wait for the interpreter lock after it, however many exports
    queued meanwhile. A write per block waited for the lock once per block, and with
    the handler threads busy the writer fell behind and the queue filled. A short write,
    which only an error can cause there, is finished rather than left as half a line;
    ``written`` counts the bytes written, also when a write fails."""

    def __init__(self, blocks: list[bytes]) -> None:
        self.views = [memoryview(block) for block in blocks if block]
        self.written = 0

    def write_all(self, fd: int) -> None:
        views, at = self.views, 0
        while at < len(views):
            n = os.writev(fd, views[at : at + _IOV_MAX])
            self.written += n
            while at < len(views) and n >= len(views[at]):
                n -= len(views[at])
                at += 1
            if n:
                views[at] = views[at][n:]


def _open_append(path: str) -> int:
    flags = os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0)
    try:
        fd = os.open(path, flags, 0o600)
    except OSError as exc:
        raise SpoolError(f"--otlp-spool {quote(path)}: {os_reason(exc)}") from None
    if not stat.S_ISREG(os.fstat(fd).st_mode):
        os.close(fd)
        raise SpoolError(f"--otlp-spool {quote(path)}: not a regular file")
    os.set_blocking(fd, True)
    return fd
