"""Grouping Python tracebacks spread over many physical lines into one error event.

Tracebacks arrive in three shapes (log-formats.md §1.1, §3.4; real_logs/):

- **logged** by vLLM: every line carries the full prefix again, e.g.
  ``(APIServer pid=1) ERROR 10-20 03:20:50 [async_llm.py:485]   File "...", line 444, in x``;
  all lines of one logging record share (level, timestamp, file:line): the *record*;
- **raw** on stderr: no level/timestamp, maybe a process prefix
  (``(EngineCore_DP0 pid=37501)   File "..."``) or nothing at all (SGLang, uvicorn's
  ``ERROR:    Exception in ASGI application`` followed by a plain traceback);
- **interleaved**: two processes writing at once (vLLM data parallel ``EngineCore_7`` and
  ``EngineCore_0``), so state is kept per *key* (the process prefix, or ``""``).

``TracebackTracker.feed`` is called for every line that has a message; it answers whether
the line belongs to a traceback. A traceback ends when, after its exception line, another
line of the same key arrives that is not part of it (or a different logging record), or
when it goes stale, or at ``finish()``; the grouped ``ErrorPayload`` (message, exception,
request_id when a request id appears in it, ts of its first line, number of lines) is
appended to the parser's ``pending`` list then.

``finish()`` (``close_all``) reports the open tracebacks but leaves them open, marked
reported: a live file is flushed after a quiet spell (``ingest.worker``), and when the
writer was only slow, the lines that carry on the same traceback must not make it a second
error. A reported traceback still takes its continuation lines (counted as traceback lines)
and ends without a second event; a new ``Traceback (most recent call last)`` starts a new
error.

A traceback's header line that precedes ``Traceback (most recent call last):`` as a
separate log line (vLLM ``Error in chat completion stream generator.``) cannot be known to
be one when it arrives; its text is remembered as the error's message context. Blank
lines after an exception line stay ``blank``; only a following chained-exception marker
keeps the traceback open.

An error *line* (``note_error``: an ERROR-level line that is no part of a traceback) is an
error of its own, but it is often that header (``logger.exception`` prints the message,
then the traceback): so its event is *held* for one line. If the next line the parser
reads begins a traceback that takes it as its message, the two are one error (the
traceback's, one line longer); otherwise the held error is reported after that line
(``settle_held``), or at ``close_all``. A parser tests ``held`` (a dict that never changes
identity) for emptiness on its hot path and calls ``settle_held`` only when it holds one.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Protocol

from sparseety_tui.events import ErrorPayload, Event, ParsedLine
from sparseety_tui.formats.shapes import TRACEBACK

TB_START = "Traceback (most recent call last)"
#: A frame line, the exception line, and a request id in either
#: (``shapes.tracebacks.TRACEBACK``).
_FRAME_RE = TRACEBACK.str_regex("frame")
_EXC_RE = TRACEBACK.str_regex("exception")
_REQ_ID_RE = TRACEBACK.str_regex("request_id")
_CHAIN_MARKERS = (
    "The above exception was the direct cause",
    "During handling of the above exception",
)

FRAMES = 0
AFTER_EXC = 1
#: An open traceback idle for this many lines (of any key) is closed.
STALE_FRAMES = 400
STALE_AFTER_EXC = 40


class _OpenTraceback:
    __slots__ = (
        "begun",
        "blank_run",
        "exception",
        "header",
        "last_seen",
        "lines",
        "message",
        "record",
        "reported",
        "request_id",
        "state",
        "tentative",
        "ts",
    )

    def __init__(self, header: str, record: bytes | None, ts: float | None, now: int) -> None:
        self.header = header
        self.record = record
        self.ts = ts
        self.lines = 0
        self.state = FRAMES
        self.exception: str | None = None
        self.message: str | None = None
        self.request_id: str | None = None
        self.last_seen = now
        #: The tracker's line count at its first line (its line is told from the count
        #: when it is reported: ``back``).
        self.begun = now
        self.blank_run = 0
        self.reported = False  # its error event was given already (close_all)
        #: Begun on a line that only may be a traceback's (``begin_tentative``): it is an
        #: error once a frame or an exception line follows, else nothing.
        self.tentative = False


def _is_indented(msg: str) -> bool:
    return msg[:1] in (" ", "\t")


def _caret_only(msg: str) -> bool:
    s = msg.strip()
    return bool(s) and all(c in "^~" for c in s)


class HasPending(Protocol):
    """The parser a tracker reports to: finished errors go to its ``pending`` list."""

    pending: list[Event]


class TracebackTracker:
    """Per-key traceback state for one file; see the module docstring.

    Errors are appended to ``owner.pending`` as it is *now*: the Extractor drains a
    parser's pending events by swapping in a new list, so holding the first list would
    lose every error after the first drain.
    """

    __slots__ = (
        "_context",
        "_count",
        "context_cleared",
        "context_first_pops",
        "context_touched",
        "held",
        "open_by_key",
        "owner",
        "stale_risk",
    )

    def __init__(self, owner: HasPending) -> None:
        self.owner = owner
        #: Open tracebacks by key. The dict object never changes, so a parser may keep a
        #: reference and test it for emptiness on its hot path (cheaper than ``active``).
        self.open_by_key: dict[str, _OpenTraceback] = {}
        self._context: dict[str, str] = {}
        #: Error lines whose event waits one line: key -> its error (see the module
        #: docstring). The dict object never changes (parsers test it on their hot path).
        self.held: dict[str, ErrorPayload] = {}
        self._count = 0
        # What a split reader (sparseety_tui.ingest.parallel) needs to know to prove that this
        # tracker, started fresh mid-file, said what one started at the top would have
        # (with ``active`` and ``context_items``: formats._base.TracebackEdges):
        #: a traceback stayed idle longer than its stale limit (closing it then depends
        #: on the absolute line count, which differs between the two);
        self.stale_risk = False
        #: keys whose remembered ERROR context was taken before this tracker set one;
        self.context_first_pops: set[str] = set()
        #: keys whose context this tracker set or took, and whether it ever cleared all.
        self.context_touched: set[str] = set()
        self.context_cleared = False

    @property
    def active(self) -> bool:
        """A traceback is open now."""
        return bool(self.open_by_key)

    def note_context(self, key: str, message: str) -> None:
        """Remember an ERROR line's text: a traceback that follows gets it as message."""
        if len(self._context) > 256:
            self._context.clear()
            self.context_cleared = True
        self.context_touched.add(key)
        self._context[key] = message[:500]

    def note_error(
        self, key: str, message: str, ts: float | None, request_id: str | None = None
    ) -> None:
        """An error line of ``key`` (not part of a traceback): its error is held for one
        line, since a traceback may follow that takes it as its message."""
        previous = self.held.pop(key, None)
        if previous is not None:
            previous["back"] = 1  # held since the line before, which was an error line too
            self.owner.pending.append(("error", previous))
        self.note_context(key, message)
        payload: ErrorPayload = {"message": message[:500], "lines": 1, "kind": "error"}
        if request_id is not None:
            payload["request_id"] = request_id
        if ts is not None:
            payload["ts"] = ts
        self.held[key] = payload

    def settle_held(self, parse: Callable[[bytes], ParsedLine], line: bytes) -> ParsedLine:
        """``parse(line)``, the line after held errors: each one that the line did not take
        as a traceback's message is reported after it."""
        earlier = list(self.held.items())
        try:
            return parse(line)
        finally:
            for key, payload in earlier:
                if self.held.get(key) is payload:  # neither taken nor replaced
                    del self.held[key]
                    payload["back"] = 1  # given after the line that follows it
                    self.owner.pending.append(("error", payload))

    def context_items(self) -> dict[str, str]:
        """The remembered ERROR contexts (a copy)."""
        return dict(self._context)

    def _take_context(self, key: str) -> tuple[str, ErrorPayload | None]:
        """The remembered ERROR text of ``key`` (``""`` if none), and the held error of
        that line when it was the line just before (the traceback is then that error)."""
        if key not in self.context_touched:
            self.context_first_pops.add(key)
            self.context_touched.add(key)
        return self._context.pop(key, ""), self.held.pop(key, None)

    def _note_idle(self, tb: _OpenTraceback) -> None:
        """Called whenever an open traceback is touched or closed: was it ever idle long
        enough that ``_expire`` could have closed it?"""
        limit = STALE_AFTER_EXC if tb.state == AFTER_EXC else STALE_FRAMES
        if self._count - tb.last_seen > limit:
            self.stale_risk = True

    def passed(self) -> None:
        """A line went by that is not fed and is no blank line (a process prefix with
        nothing after it): counted, so that a traceback's line numbers stay right."""
        self._count += 1

    def blank(self) -> None:
        """A blank line went by (kind ``blank``); it may separate chained exceptions."""
        self._count += 1
        for tb in self.open_by_key.values():
            if tb.state == AFTER_EXC:
                tb.blank_run += 1

    def feed(
        self,
        key: str,
        msg: str,
        record: bytes | None,
        ts: float | None,
        *,
        error_level: bool = False,
        interleavable: bool = False,
    ) -> bool:
        """True when the line ``msg`` (prefix removed) is part of a traceback.

        ``record`` identifies a logging record (None for raw lines); ``error_level`` says
        the line was logged at ERROR/CRITICAL (an indented message there is a traceback
        continuation even without a header); ``interleavable`` lines (prefixed lines of a
        family whose raw tracebacks carry no prefix) do not end an open traceback that is
        still listing frames.
        """
        self._count += 1
        if self.open_by_key and self._count & 63 == 0:
            self._expire()
        tb = self.open_by_key.get(key)
        if tb is not None and tb.reported and TB_START in msg:
            self._close(key)  # one already counted: this is a new one, not a chained part
            tb = None
        if tb is not None:
            self._note_idle(tb)
            if interleavable and record is not None:
                # A prefixed line inside a raw traceback: another writer, not its end,
                # unless the traceback already printed its exception line.
                if tb.state == FRAMES and TB_START not in msg:
                    return False
                self._close(key)
            elif self._continues(tb, msg, record):
                tb.lines += 1
                if tb.tentative and _FRAME_RE.match(msg):
                    tb.tentative = False
                tb.last_seen = self._count
                tb.blank_run = 0
                if tb.request_id is None:
                    m = _REQ_ID_RE.search(msg)
                    if m is not None:
                        tb.request_id = m.group("a") or m.group("b")
                return True
            else:
                self._close(key)
        if interleavable:
            record = None  # the continuation lines will be raw: never match them by record
        start = msg.find(TB_START)
        if start >= 0:
            header = msg[:start].rstrip(" :")
            if header:
                self._begin(key, header, record, ts)
            else:
                self._begin_after_context(key, record, ts)
            return True
        if (
            _FRAME_RE.match(msg)
            or (error_level and _is_indented(msg) and msg.strip())
            or (error_level and _caret_only(msg))
        ):
            # A traceback whose header we did not see (file starts mid-way, or pasted).
            self._begin_after_context(key, record, ts)
            return True
        return False

    def _begin_after_context(self, key: str, record: bytes | None, ts: float | None) -> None:
        """Begin a traceback without a header of its own: the last ERROR line of its key
        gives its message, and when that line came just before, the two are one error."""
        header, held = self._take_context(key)
        self._begin(key, header, record, ts)
        if held is not None:
            tb = self.open_by_key[key]
            tb.lines += 1
            tb.begun -= 1  # the error line (the line before) is its first
            if tb.ts is None and "ts" in held:
                tb.ts = held["ts"]
            if "request_id" in held:
                tb.request_id = held["request_id"]

    def begin_tentative(self, key: str, ts: float | None) -> None:
        """Begin a traceback on a line that may be the middle of one (a frame's source line
        or its ``^^^`` marker where a file begins): it becomes an error only if a frame or
        an exception line follows."""
        self._begin(key, "", None, ts)
        self.open_by_key[key].tentative = True

    def begin_header(self, key: str, header: str, record: bytes | None, ts: float | None) -> None:
        """Open a traceback at a line known to announce one (uvicorn's ASGI exception)."""
        if key in self.open_by_key:
            self._close(key)
        self._begin(key, header, record, ts)

    def _begin(self, key: str, header: str, record: bytes | None, ts: float | None) -> None:
        tb = _OpenTraceback(header, record, ts, self._count)
        tb.lines = 1
        self.open_by_key[key] = tb

    def _continues(self, tb: _OpenTraceback, msg: str, record: bytes | None) -> bool:
        if record is not None and record == tb.record:
            self._maybe_exception(tb, msg)
            return True
        if tb.state == AFTER_EXC:
            # A chained exception is announced by its marker; a new ``Traceback`` right
            # after an exception line is another error (tracebacks printed back to back).
            if any(m in msg for m in _CHAIN_MARKERS):
                tb.state = FRAMES
                return True
            if tb.blank_run:
                return False
            # an indented line here continues a multi-line exception message
            return _is_indented(msg) and bool(msg.strip())
        if not msg.strip():
            return False
        if _is_indented(msg) or _caret_only(msg) or TB_START in msg:
            return True
        if any(m in msg for m in _CHAIN_MARKERS):
            return True
        if record is None or tb.record is None:
            return self._maybe_exception(tb, msg)
        return False

    def _maybe_exception(self, tb: _OpenTraceback, msg: str) -> bool:
        if _is_indented(msg) or not msg.strip():
            return False
        if TB_START in msg or any(m in msg for m in _CHAIN_MARKERS):
            tb.state = FRAMES
            return False
        m = _EXC_RE.match(msg)
        if m is None:
            return False
        tb.exception = m.group("exc")
        tb.message = (m.group("msg") or "").strip() or None
        tb.state = AFTER_EXC
        return True

    def _expire(self) -> None:
        for key, tb in list(self.open_by_key.items()):
            limit = STALE_AFTER_EXC if tb.state == AFTER_EXC else STALE_FRAMES
            if self._count - tb.last_seen > limit:
                self.stale_risk = True
                self._close(key)

    def _close(self, key: str) -> None:
        tb = self.open_by_key.pop(key)
        self._note_idle(tb)
        if not tb.reported:
            self._report(tb)

    def _report(self, tb: _OpenTraceback) -> None:
        tb.reported = True
        if tb.tentative and tb.exception is None:
            return  # no frame, no exception: not shown to be a traceback, so no error
        # Every line since its first was counted (fed or blank) while it was open, so
        # the count tells how far back its first line is from the line being read now.
        payload: ErrorPayload = {
            "lines": tb.lines,
            "kind": "traceback",
            "back": self._count - tb.begun,
            # first to last line: more than ``lines`` when another writer's lines are
            # interleaved with it
            "span": max(tb.lines, tb.last_seen - tb.begun + 1),
        }
        if tb.exception is not None:
            payload["exception"] = tb.exception
        message = tb.message or tb.header or tb.exception or "traceback without exception line"
        payload["message"] = message
        if tb.request_id is not None:
            payload["request_id"] = tb.request_id
        if tb.ts is not None:
            payload["ts"] = tb.ts
        self.owner.pending.append(("error", payload))

    def end_all(self) -> None:
        """End every open traceback now (a line of the file's own format came: nothing
        after it continues them), reporting those not reported yet. That line was not
        fed: it is counted here."""
        self._count += 1
        for key in list(self.open_by_key):
            self._close(key)

    def close_all(self) -> None:
        """Report every open traceback and held error line now (end of a file, or a quiet
        spell of a live one); the tracebacks stay open, marked reported (see the module
        docstring)."""
        for payload in self.held.values():
            self.owner.pending.append(("error", payload))
        self.held.clear()
        for tb in self.open_by_key.values():
            if not tb.reported:
                self._report(tb)
