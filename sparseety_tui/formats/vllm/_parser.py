"""``VllmParser``: the per-file parser of vLLM server logs, and its line dispatch.

A line goes down an anchored fast path when it can (``Received`` / ``Added request``,
uvicorn access lines) or through ``_parse``, which removes wrappers and process prefixes,
finds the logging head and hands the message to the stats, request or traceback code.
Timestamps are ``YearClock``'s (clock.py), stats lines ``StatsLines``' (stats.py; rejoined
when a terminal wrapped them, wrap.py), request lines ``RequestLines``' (requests.py).
"""

from __future__ import annotations

import re

from sparseety_tui.events import LineKind, ParsedLine, RequestPayload
from sparseety_tui.formats._access import access_line, access_result
from sparseety_tui.formats._base import BoundaryNotes, YearState
from sparseety_tui.formats._clean import ACCESS_RE, UVICORN_RE, basic_clean, strip_wrappers
from sparseety_tui.formats._enginewarnings import engine_warning
from sparseety_tui.formats._errorlines import ERROR_HEADS
from sparseety_tui.formats._responses import read_response_body
from sparseety_tui.formats._serverlog import (
    BLANK,
    ERROR,
    EXC_HEADER,
    OTHER,
    RESPONSE,
    TRACEBACK,
    ServerLogParser,
    decode,
    emit_requests,
)
from sparseety_tui.formats._startup import startup_line
from sparseety_tui.formats._wrappers import unparsed_reason
from sparseety_tui.formats.vllm._clock import YearClock
from sparseety_tui.formats.vllm._kinds import REQUEST
from sparseety_tui.formats.vllm._patterns import (
    _FAST_PROC_RE,
    _OWN_PREFIX_RE,
    _RAY_REPEAT_RE,
    FAST_RE,
    FAST_REQUEST_RE,
    HEAD_RE,
    HEAD_SEARCH_RE,
    PROC_RE,
)
from sparseety_tui.formats.vllm._recent import RecentIds
from sparseety_tui.formats.vllm._requests import RECENT_IDS, RequestLines
from sparseety_tui.formats.vllm._wrap import WrappedStatsLines, starts_record


class VllmParser(YearClock, WrappedStatsLines, RequestLines, ServerLogParser):
    """Stateful per-file parser (year inference, open tracebacks, recent request ids).

    It is ``RangeAware`` (formats._base): a split reader may give it one range of a file.
    """

    def __init__(
        self,
        *,
        reference_time: float | None = None,
        num_layers: int | None = None,
        top_k: int | None = None,
        keep_token_ids: bool = False,
    ) -> None:
        super().__init__(num_layers=num_layers, top_k=top_k, keep_token_ids=keep_token_ids)
        self._reference = reference_time
        self._year: int | None = None
        self._last_month = 0
        #: The window of received ids (formats.vllm._recent).
        self._recent = RecentIds(RECENT_IDS)
        #: Set by a split reader (``begin_range``); None otherwise.
        self.boundary: BoundaryNotes | None = None
        self._last_stamp = b""
        self._last_ts: float | None = None

    # -- public -------------------------------------------------------------------------

    def parse(self, line: bytes) -> ParsedLine:
        try:
            if self._wrap_held is not None:  # after a wrapped stats head: formats._termwrap
                return self._settle_wrap(line)
            if self._held:  # the line after an error line: see formats._tracebacks
                return self._tb.settle_held(self._parse, line)
            if line[:1] in b"I(" and line and not self._tb_open:
                fm = FAST_REQUEST_RE.match(line)
                if fm is not None:
                    parsed = self._fast_request(line, fm)
                    if parsed is not None:
                        return parsed
                else:
                    parsed = self._fast_access(line)
                    if parsed is not None:
                        return parsed
            return self._parse(line)
        except Exception as exc:  # never raise on input; say why instead
            return self._failed(exc)

    # -- reading a range of a file (formats._base.RangeAware) ----------------------------
    # (``year_state`` and ``replay_year_probe`` are YearClock's.)

    def begin_range(self, year: YearState | None) -> BoundaryNotes:
        """Start recording ``BoundaryNotes`` (a split reader's range parser), from the year
        state ``year`` when given (the split reader's guess; checked)."""
        self.boundary = BoundaryNotes()
        if year is not None:
            self._year, self._last_month = year
            self._last_stamp = b""
        return self.boundary

    @property
    def remembered(self) -> int:
        """How many ids were ever remembered (evicted ones included)."""
        return self._recent.remembered

    def recent_ids(self) -> tuple[list[str], int]:
        """The window of received ids that engine-side ids are mapped against, oldest
        first, and how many ids were ever remembered."""
        return list(self._recent), self._recent.remembered

    # -- dispatch -----------------------------------------------------------------------

    def _parse(self, line: bytes) -> ParsedLine:
        if b"\r" in line or b"\x1b" in line:
            line = basic_clean(line)
        self._row_len = len(line)  # a wrapped stats head's row width (formats._termwrap)
        if not line or line.isspace():
            self._tb.blank()
            return BLANK
        key = ""
        rest = line
        if rest[:1] == b"(":
            m = FAST_RE.match(rest)
            if m is not None:
                key = rest[1 : m.end("pid")].decode("utf-8", "replace")
                return self._logged(rest, m, key, None)
            rest, key = self._strip_procs(rest)
        m = HEAD_RE.match(rest)
        wrap_ts: bytes | None = None
        if m is None and rest[:1] in b"IETWDC" and UVICORN_RE.match(rest):
            return self._raw(rest, key, None, line)  # uvicorn: no head, no wrapper
        if m is None:
            unwrapped, wrap_ts = strip_wrappers(rest, _OWN_PREFIX_RE)
            if unwrapped is not rest:
                self._row_len -= len(rest) - len(unwrapped)  # the wrapper's is no terminal's
                rest = unwrapped
                if rest[:1] == b"(":
                    rest, key2 = self._strip_procs(rest)
                    key = f"{key}|{key2}" if key else key2
                m = HEAD_RE.match(rest)
            if m is None and b"-" in rest and b":" in rest:
                m = HEAD_SEARCH_RE.search(rest)  # another writer's text in front of ours
        if m is not None:
            return self._logged(rest, m, key, wrap_ts)
        return self._raw(rest, key, wrap_ts, line)

    def _fast_request(self, line: bytes, fm: re.Match[bytes]) -> ParsedLine | None:
        """``Received request`` / ``Added request`` lines ``FAST_REQUEST_RE`` matched; None
        sends the line down the general path, which would treat it otherwise (text that
        looks like a traceback or a stats line inside a prompt, control characters)."""
        msg_at = fm.start(2)
        if (
            b"\r" in line
            or b"\x1b" in line
            or line.find(b"Avg prompt throughput", msg_at) >= 0
            or line.find(b"Traceback", msg_at) >= 0
            or line.find(b'File "', msg_at) >= 0
        ):
            return None
        stamp = fm.group(1)
        ts = self._last_ts if stamp == self._last_stamp else self._stamp_text(stamp)
        self._in_warning = False
        rid = fm.group(3)
        if rid is not None:
            return self._received(decode(rid), line[fm.end() :], ts)
        payload: RequestPayload = {
            "request_id": self._canonical(decode(fm.group(4))),
            "state": "running",
        }
        if ts is not None:
            payload["ts"] = ts
        return REQUEST, ("request", payload)

    def _fast_access(self, line: bytes) -> ParsedLine | None:
        """A uvicorn access line (no vLLM head), as ``_raw`` would see it; None otherwise."""
        rest = line
        if rest[:1] == b"(":
            pm = _FAST_PROC_RE.match(rest)
            if pm is None:
                return None
            rest = rest[pm.end() :]
        if (
            rest[:10] != b"INFO:     "
            or rest[-1:] == b"]"
            or b"\r" in line
            or b"\x1b" in line
            or b"Traceback" in rest
            or b'File "' in rest
        ):
            return None
        m = ACCESS_RE.match(rest)
        if m is None:
            return None
        self._in_warning = False
        return access_result(m, rest)

    def _strip_procs(self, rest: bytes) -> tuple[bytes, str]:
        names: list[str] = []
        for _ in range(4):
            pm = PROC_RE.match(rest)
            if pm is None:
                break
            names.append(decode(pm.group("proc")) + " pid=" + decode(pm.group("pid")))
            rest = rest[pm.end() :]
            if rest[:1] != b"(":
                break
        return rest, "|".join(names)

    def _logged(
        self, rest: bytes, m: re.Match[bytes], key: str, wrap_ts: bytes | None
    ) -> ParsedLine:
        msg = rest[m.end() :]
        level = m.group("level")
        error = level == b"ERROR" or level == b"CRITICAL"
        ts = self._stamp(m, wrap_ts)
        self._in_warning = False
        tb_open = self._tb.active
        if not tb_open and not error and b"Avg prompt throughput" in msg:
            return self._stats_line(msg, ts)  # the common line: no traceback checks needed
        if tb_open or error or b"Traceback" in msg or b'File "' in msg:
            record = m.group(0)
            if self._tb.feed(key, decode(msg), record, ts, error_level=error):
                return TRACEBACK
        if b"throughput: " in msg and b"Avg prompt throughput" in msg:
            return self._stats_line(msg, ts)
        if b" request" in msg or b"Request " in msg or b"Generated response" in msg:
            parsed = self._request(msg, ts)
            if parsed is not None:
                return parsed
        if b"metrics: " in msg or b"Prefix cache hit rate: GPU" in msg:
            parsed = self._spec_or_hit(msg, ts)
            if parsed is not None:
                return parsed
        if error and msg.strip():
            # An error of its own, or the message of a traceback that follows it.
            self._tb.note_error(key, decode(msg.strip()), ts)
            return ERROR
        if msg[:1] in b"EA" and starts_record(msg):  # its row ended before the record did
            return self._stats_line(msg, ts)
        warning = engine_warning(msg, ts)  # out of memory at WARNING level: an error too
        if warning is not None:
            return LineKind.NOISE, ("error", warning)
        return startup_line(msg) or OTHER  # the model it serves: for its tokenizer

    def _raw(self, rest: bytes, key: str, wrap_ts: bytes | None, orig: bytes) -> ParsedLine:
        """A line without the vLLM logging head."""
        if not rest or rest.isspace():
            if key:
                self._tb.passed()
                return OTHER
            return BLANK
        if rest[-1:] == b"]" and b"[repeated" in rest:
            rest = _RAY_REPEAT_RE.sub(b"", rest)
        continued = self._continuation(rest, key)
        if continued is not None:
            return continued
        access = access_line(rest)
        if access is not None:  # uvicorn's, or a proxy's in the common log format
            event = access[1]
            if event is not None and event[0] == "error" and wrap_ts is not None:
                stamp = self._wrap_ts(wrap_ts)  # a 5xx: its time, when a wrapper gave one
                if stamp is not None:
                    event[1]["ts"] = stamp
            return access
        if EXC_HEADER in rest and UVICORN_RE.match(rest):
            self._tb.begin_header(key, EXC_HEADER.decode(), None, self._wrap_ts(wrap_ts))
            return TRACEBACK
        ts = self._wrap_ts(wrap_ts)
        if rest[:1] in ERROR_HEADS or orig[:1] in ERROR_HEADS:
            error = self._any.error_line(rest, orig, ts, key)  # uvicorn ERROR:, logging...
            if error is not None:
                return error
        if UVICORN_RE.match(rest):
            return OTHER
        return self._raw_message(rest, key, orig, ts)

    def _raw_message(self, rest: bytes, key: str, orig: bytes, ts: float | None) -> ParsedLine:
        """A line without the vLLM logging head that is no access, traceback or error
        line: stats, request and response lines, startup and other known lines."""
        if b"Avg prompt throughput" in rest:
            start = rest.find(b"Engine ")
            if start < 0 or start > rest.find(b"Avg prompt throughput"):
                start = rest.find(b"Avg prompt throughput")
            return self._stats_line(rest[start:], ts)
        if b" request" in rest or b"Request " in rest or b"Generated response" in rest:
            parsed = self._request(rest, ts)
            if parsed is not None:
                return parsed
        if b"metrics: " in rest or b"Prefix cache hit rate: GPU" in rest:
            parsed = self._spec_or_hit(rest, ts)
            if parsed is not None:
                return parsed
        head = rest.lstrip()[:1]
        if head in (b"{", b"[") or rest.startswith((b"CompletionUsage(", b"Usage(")):
            recognised, payloads = read_response_body(decode(rest), self.routing, self.ignored)
            if recognised:
                return emit_requests(self.pending, payloads, RESPONSE, ts)
        startup = startup_line(rest)
        if startup is not None:
            return startup
        known = self._known_other(rest, orig, ts)
        if known is not None:
            return known
        if key:
            return OTHER  # a vLLM process prefix: ours, just nothing to extract
        self.last_reason = unparsed_reason(rest, "no vLLM prefix and no known message")
        return LineKind.UNPARSED, None
