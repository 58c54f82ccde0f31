"""``ReceiverProcess``: the ``Receivers`` in a child process of their own.

Turning a protobuf export into spool lines is pure Python, as is reading those lines
into rows. In one process both take the one interpreter lock, so the receivers' threads
and the ingest thread wait on each other, and a span reaches the screen later the more
spans come. In a child process (started with ``spawn``: no lock or thread state of the
parent is copied, and grpc does not support ``fork``) the receivers run beside the ingest
thread; they still write the spool, which the parent follows as before.

The parent talks to the child over one pipe, one request and one answer at a time (a
lock makes ``status`` safe from any thread): ``start``, ``status`` and ``close``. The
child closes its receivers (writing what they took) when told to, and also when the pipe
ends without being told (the parent died); its standard output and error go to
``/dev/null``, so nothing it might print lands in the terminal the UI draws, and it leaves
Ctrl-C, hangups and SIGTERM to the parent.
"""

from __future__ import annotations

import os
import signal
import threading
from typing import Any

from sparseety_tui.receive._receivers import (
    Endpoint,
    ReceiveError,
    Receivers,
    ReceiveSettings,
)

#: Seconds to wait for the child's first answer (it imports the receivers' modules first)
#: and for its answer to ``start`` and ``close`` (``close`` writes what it took).
SLOW_ANSWER_S = 60.0
#: Seconds to wait for its answer to ``status`` (read by a worker thread of the diagnostics
#: screen and by ``serve``).
STATUS_ANSWER_S = 5.0
#: Why a status says no spans are taken any more, when the child ended or fell silent.
GONE = "the OTLP receivers' process ended"


#: Signals a terminal or a service manager sends to the whole process group: the parent
#: handles them and closes the child in order, after the spans it took are written.
_LEFT_TO_THE_PARENT = ("SIGINT", "SIGHUP", "SIGTERM")


def _quiet() -> None:
    """Send the child's standard output and error to ``/dev/null``, and leave
    ``_LEFT_TO_THE_PARENT`` to the parent."""
    for name in _LEFT_TO_THE_PARENT:
        if hasattr(signal, name):
            signal.signal(getattr(signal, name), signal.SIG_IGN)
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, 1)
    os.dup2(devnull, 2)
    os.close(devnull)


def _answer(receivers: Receivers, request: str) -> tuple[str, Any]:
    if request == "start":
        try:
            receivers.start()
        except ReceiveError as exc:
            return "error", str(exc)
        return "started", (dict(receivers.bound), receivers.describe(), receivers.status())
    if request == "status":
        return "status", receivers.status()
    return "error", f"unknown request {request!r}"


def _child(settings: ReceiveSettings, conn: Any) -> None:
    """The child's whole life: open, answer requests, close."""
    _quiet()
    try:
        receivers = Receivers(settings)
    except ReceiveError as exc:
        conn.send(("error", str(exc)))
        return
    conn.send(("ready", (receivers.spool_path, receivers.status())))
    try:
        while True:
            try:
                request = conn.recv()
            except (EOFError, OSError):
                return  # the parent is gone: close below
            if request == "close":
                break
            conn.send(_answer(receivers, request))
    finally:
        receivers.close()
    conn.send(("closed", receivers.status()))


def _gone(last: dict[str, Any]) -> dict[str, Any]:
    """What a status says once the child is gone: the last counters it gave, nothing
    listening, and why."""
    status = dict(last)
    spool = dict(status["spool"])
    spool["failure"] = spool["failure"] or GONE
    status["spool"] = spool
    status["listening"] = {}
    return status


class ReceiverProcess:
    """``Receivers`` run by a child process, with the same face: the spool is opened (and
    its path known) when this returns, ``start`` binds, ``status`` and ``describe`` say
    what the child does, ``close`` stops it after it has written what it took. ``status``
    never raises: once the child is gone it gives the last counters it had, and why."""

    def __init__(self, settings: ReceiveSettings) -> None:
        import multiprocessing

        self.settings = settings
        context = multiprocessing.get_context("spawn")
        self._conn, child_end = context.Pipe()
        self._lock = threading.Lock()
        self._process = context.Process(
            target=_child, args=(settings, child_end), name="sparseety-otlp", daemon=True
        )
        self._process.start()
        child_end.close()
        #: Where each receiver listens, once started ("http", "grpc").
        self.bound: dict[str, Endpoint] = {}
        self._described: list[str] = []
        #: The status the child gave when closed.
        self._final: dict[str, Any] | None = None
        #: The pipe is no longer used.
        self._ended = False
        kind, value = self._ask(None, SLOW_ANSWER_S)
        if kind != "ready":
            self._end()
            raise ReceiveError(str(value))
        self._spool_path: str = value[0]
        #: The last status the child gave (with each answer, not only ``status``'s).
        self._last: dict[str, Any] = value[1]

    @property
    def spool_path(self) -> str:
        return self._spool_path

    def _ask(self, request: str | None, wait_s: float) -> tuple[str, Any]:
        """Send ``request`` (None: only read the next answer) and return the answer;
        ("gone", why) when the child ended or did not answer in ``wait_s`` (its pipe is
        not used again: a late answer would be taken for the next one's)."""
        with self._lock:
            if self._ended:
                return "gone", GONE
            try:
                if request is not None:
                    self._conn.send(request)
                if self._conn.poll(wait_s):
                    answer: tuple[str, Any] = self._conn.recv()
                    return answer
            except (EOFError, OSError):
                pass
            self._ended = True
            return "gone", GONE

    def start(self) -> None:
        kind, value = self._ask("start", SLOW_ANSWER_S)
        if kind != "started":
            self.close()
            raise ReceiveError(str(value))
        self.bound, self._described, self._last = value

    def describe(self) -> list[str]:
        """One line per receiver: where to point an exporter."""
        return list(self._described)

    def status(self) -> dict[str, Any]:
        """The child's ``Receivers.status``; after ``close``, the one it gave when closed;
        once it is gone otherwise, its last one (``_gone``)."""
        if self._final is not None:
            return dict(self._final)
        kind, value = self._ask("status", STATUS_ANSWER_S)
        if kind != "status":
            return _gone(self._last)
        self._last = value
        return dict(value)

    def close(self) -> None:
        """Stop taking exports, write what was taken, close the spool, end the child."""
        kind, value = self._ask("close", SLOW_ANSWER_S)
        if kind == "closed":
            self._final = value
        self._end()

    def _end(self) -> None:
        with self._lock:
            self._ended = True
            self._conn.close()
        self._process.join(SLOW_ANSWER_S)
        if self._process.is_alive():
            self._process.kill()  # (it ignores SIGTERM)
            self._process.join()
