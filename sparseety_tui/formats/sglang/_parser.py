"""``SglangParser``: the per-file parser of SGLang server logs, and its line dispatch.

Most lines of a big log take one anchored match of the whole line (``_fast``); the rest go
through ``_parse``, which finds the prefix (anchored, behind wrappers, or mid-line) and
hands the message to the batch, request or traceback code. Timestamps are
``DateClock``'s (clock.py), batch lines ``BatchLines``' (stats.py; rejoined when a terminal
wrapped them, wrap.py), request lines ``RequestLines``' (requests.py).
"""

from __future__ import annotations

import re

from sparseety_tui.events import LineKind, ParsedLine, StatsPayload
from sparseety_tui.formats._access import access_line, access_result
from sparseety_tui.formats._base import YearProbe, YearState
from sparseety_tui.formats._clean import (
    ACCESS_RE,
    UVICORN_RE,
    basic_clean,
    strip_wrappers,
    wrapper_time,
)
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
from sparseety_tui.formats.sglang._clock import DateClock
from sparseety_tui.formats.sglang._failures import MARKER, pd_failure
from sparseety_tui.formats.sglang._kinds import _EXPERT, DECODE, PREFILL, expert_count_row
from sparseety_tui.formats.sglang._patterns import (
    _CSV_HEADER,
    _CSV_ROW_RE,
    _VLLM_STYLE_RE,
    BATCH_RE,
    FAST_RE,
    GPU_PREFIX_RE,
    PREFIX_RE,
    PREFIX_SEARCH_RE,
)
from sparseety_tui.formats.sglang._requests import RequestLines
from sparseety_tui.formats.sglang._wrap import WrappedBatchLines

#: The ranks of a TP group report one PD failure within this many seconds of each other
#: (real: 14 reports in one second, sglang slurmv4 log); a later failure of the same
#: request and stage is a new one. The last PD_REPORTS_KEPT failures are remembered.
PD_REPORTS_WITHIN_S = 30.0
PD_REPORTS_KEPT = 256


class SglangParser(DateClock, WrappedBatchLines, RequestLines, ServerLogParser):
    """Stateful per-file parser (last date for time-only prefixes, open tracebacks).

    It is ``RangeAware`` (formats._base): a split reader may give it one range of a file.
    """

    def __init__(
        self,
        *,
        num_layers: int | None = None,
        top_k: int | None = None,
        keep_token_ids: bool = False,
    ) -> None:
        super().__init__(num_layers=num_layers, top_k=top_k, keep_token_ids=keep_token_ids)
        #: The last dated prefix's ``YYYY-MM-DD HH:MM:SS`` and its (ts, date, hour); valid
        #: only while ``_date``/``_last_hour`` still hold that entry's values (a time-only
        #: line resets it).
        self._sec_key = b""
        self._sec_entry: tuple[float | None, tuple[int, int, int], int] = (None, (0, 0, 0), 0)
        self._date: tuple[int, int, int] | None = None
        self._minutes: dict[bytes, tuple[float | None, tuple[int, int, int], int]] = {}
        self._ranks: dict[bytes, str] = {}
        self._last_hour = 0
        #: PD failures (stage, request id) reported lately -> the time of the first report:
        #: every rank of a TP group reports the same failure, in any order and with other
        #: lines between, and it is one error (formats/sglang/_failures.py).
        self._pd_seen: dict[tuple[str, str], float | None] = {}

    def parse(self, line: bytes) -> ParsedLine:
        try:
            if self._wrap_held is not None:  # after a wrapped batch head: formats._termwrap
                return self._settle_wrap(line)
            if self._held:
                return self._after_error(line)
            # Fast path (most lines of a big log): one anchored match of the whole line.
            if line[:1] == b"[" and not self._tb_open:
                fm = FAST_RE.match(line)
                if fm is not None:
                    parsed = self._fast(line, fm)
                    if parsed is not None:
                        return parsed
            return self._parse(line)
        except Exception as exc:  # never raise on input; say why instead
            return self._failed(exc)

    def _after_error(self, line: bytes) -> ParsedLine:
        """The line after an error line (its error is held, formats._tracebacks): the
        general path, which gives what the fast path would."""
        return self._tb.settle_held(self._parse, line)

    def _pd_failure(self, msg: bytes, ts: float | None) -> ParsedLine | None:
        """A PD transfer/bootstrap failure: an error and a failed request, once per
        failure however many ranks report it (within PD_REPORTS_WITHIN_S); None if ``msg`` is not one."""
        found = pd_failure(msg, ts)
        if found is None:
            return None
        key, request, error = found
        seen = self._pd_seen
        if key in seen:
            first = seen[key]
            if first is None or ts is None or ts - first <= PD_REPORTS_WITHIN_S:
                return ERROR  # another rank's report of the failure just counted
        seen[key] = ts
        if len(seen) > PD_REPORTS_KEPT:
            del seen[next(iter(seen))]  # the oldest
        self.pending.append(("error", error))
        return LineKind.ERROR, ("request", request)

    # -- reading a range of a file (formats._base.RangeAware) ----------------------------

    def begin_range(self, year: YearState | None) -> None:
        """No notes: across a record start (a dated prefix, see ingest.parallel) only the
        tracebacks carry state; the date of time-only prefixes is set again by every
        dated one. ``year`` is ignored: dated prefixes carry the year."""
        return None

    def year_state(self) -> None:
        """None: no year is inferred."""
        return None

    def replay_year_probe(self, probe: YearProbe, state: YearState) -> None:
        """None: no year is inferred."""
        return None

    def recent_ids(self) -> None:
        """None: request ids are not mapped."""
        return None

    # -- dispatch -----------------------------------------------------------------------

    def _parse(self, line: bytes) -> ParsedLine:
        if b"\r" in line or b"\x1b" in line:
            line = basic_clean(line)
        self._row_len = len(line)  # a wrapped batch head's row width (formats._termwrap)
        if not line or line.isspace():
            self._tb.blank()
            return BLANK
        m = PREFIX_RE.match(line) if line[:1] == b"[" else None
        rest = line
        if m is None:
            if line[:5] == b"[gpu=" or line[:8] == b"[gpu_id=":
                gm = GPU_PREFIX_RE.match(line)
                if gm is not None:
                    return self._message(line[gm.end() :], None)
            unwrapped, wrap_ts = strip_wrappers(line, PREFIX_RE)
            if unwrapped is not line:
                self._row_len = len(unwrapped)  # the wrapper's prefix is no terminal's
                rest = unwrapped
                m = PREFIX_RE.match(rest)
            if m is None and b"[" in rest:
                m = PREFIX_SEARCH_RE.search(rest)
                if m is not None and rest[: m.start()].strip() and not self._plausible(rest, m):
                    m = None
            if m is None:
                return self._raw(rest, wrap_ts, line)
        return self._message(rest[m.end() :], m)

    def _fast(self, line: bytes, fm: re.Match[bytes]) -> ParsedLine | None:
        """A line ``FAST_RE`` matched; None sends it down the general path (an access-like
        line that is not one). The date state and the payloads are those ``_message``
        would give: same fields, same order, same float arithmetic."""
        (
            stamp,
            raw_ranks,
            seq,
            new,
            cached,
            usage,
            running,
            queued,
            d_running,
            d_usage,
            d_gen,
            d_queued,
        ) = fm.groups()
        if stamp != self._sec_key:
            self._second(stamp)
        ts = self._sec_entry[0]
        self._in_warning = False
        if seq is None and d_running is None:
            msg = line[fm.end() :]
            am = ACCESS_RE.match(msg)
            if am is None or b" batch" in msg or b"Traceback" in msg:
                return None
            if b"\r" in msg or b"\x1b" in msg:
                return None
            return access_result(am, msg, ts)
        ranks = self._ranks.get(raw_ranks)
        if ranks is None:
            ranks = self._rank_name(raw_ranks)
        payload: StatsPayload
        if seq is not None:
            kind = PREFILL
            payload = {
                "phase": "prefill",
                "ts": ts,  # type: ignore[typeddict-item]  # None: no date known yet
                "engine": ranks,
                "batch_requests": int(seq),
                "new_tokens": int(new),
                "cached_tokens": int(cached),
                "kv_usage": float(usage),
                "running": int(running),
                "queued": int(queued),
            }
        else:
            kind = DECODE
            payload = {
                "phase": "decode",
                "ts": ts,  # type: ignore[typeddict-item]  # None: no date known yet
                "engine": ranks,
                "running": int(d_running),
                "kv_usage": float(d_usage),
                "generation_throughput": float(d_gen),
                "queued": int(d_queued),
            }
        # The common line has both; without them the fields are absent, never null.
        if ts is None:
            del payload["ts"]
        if not ranks:
            del payload["engine"]
        return kind, ("stats", payload)

    def _rank_name(self, raw: bytes) -> str:
        ranks = decode(raw.strip())
        if len(self._ranks) < 4096:
            self._ranks[raw] = ranks
        return ranks

    @staticmethod
    def _plausible(rest: bytes, m: re.Match[bytes]) -> bool:
        """A prefix found mid-line must carry a date (a bare ``[12:00:00]`` inside text is
        too weak)."""
        return m.group("y") is not None

    def _message(self, msg: bytes, m: re.Match[bytes] | None) -> ParsedLine:
        """A line with the SGLang prefix (``m``; None for ``[gpu=0]``)."""
        ts = self._stamp(m)
        self._in_warning = False
        if (self._tb.active or b"Traceback" in msg) and self._tb.feed(
            "", decode(msg), b"sgl", ts, interleavable=True
        ):
            return TRACEBACK
        if b" batch" in msg:
            parsed = self._batch_message(msg, m, ts)
            if parsed is not None:
                return parsed
        if msg[:4] == b"Rece" or msg[:7] == b"Finish:":
            parsed = self._request_line(msg, ts)
            if parsed is not None:
                return parsed
        if MARKER in msg:
            parsed = self._pd_failure(msg, ts)
            if parsed is not None:
                return parsed
        access = self._access_message(msg, ts)
        if access is not None:
            return access
        if msg[:1] in ERROR_HEADS:
            error = self._any.error_line(msg, None, ts)  # uvicorn ERROR:, vLLM-style ERROR
            if error is not None:
                return error
        warning = engine_warning(msg, ts)  # a retraction, out of memory: an error besides
        if warning is not None:
            return LineKind.NOISE, ("error", warning)
        return startup_line(msg) or OTHER  # the model it serves: for its tokenizer

    def _batch_message(
        self, msg: bytes, m: re.Match[bytes] | None, ts: float | None
    ) -> ParsedLine | None:
        """A batch line after the prefix ``m`` (its ranks name the engine), or None."""
        bm = BATCH_RE.match(msg)
        if bm is None and (b"Prefill batch" in msg or b"Decode batch" in msg):
            bm = BATCH_RE.search(msg)
        if bm is None:
            return None
        raw = m.group("ranks") if m is not None else b""
        ranks = self._ranks.get(raw)
        if ranks is None:
            ranks = self._rank_name(raw)
        return self._batch_line(bm, msg, ts, ranks)

    def _access_message(self, msg: bytes, ts: float | None) -> ParsedLine | None:
        """A uvicorn access line or traceback header after the prefix, or a proxy's
        access line in the common log format (Mooncake metadata); None for any other."""
        if msg[:6] in (b"INFO: ", b"ERROR:", b"WARNIN", b"TRACE:", b"DEBUG:", b"CRITIC"):
            am = ACCESS_RE.match(msg)
            if am is not None:
                return access_result(am, msg, ts)
            if EXC_HEADER in msg:
                self._tb.begin_header("", EXC_HEADER.decode(), None, ts)
                return TRACEBACK
        return access_line(msg, ts)

    def _raw(self, rest: bytes, wrap_ts: bytes | None, orig: bytes) -> ParsedLine:
        """A line without the SGLang prefix."""
        continued = self._continuation(rest, "")
        if continued is not None:
            return continued
        ts: float | None = None
        if wrap_ts is not None:
            ts = wrapper_time(wrap_ts)[1]
        parsed = self._raw_request(rest, ts)
        if parsed is None:
            parsed = self._raw_event(rest, orig, ts)
        return parsed if parsed is not None else self._raw_other(rest, orig, ts)

    def _raw_request(self, rest: bytes, ts: float | None) -> ParsedLine | None:
        """A request line, a JSON request event or a response body without the prefix;
        None for any other line."""
        if rest[:8] == b"Receive:" or rest[:7] == b"Finish:" or rest[:16] == b"Receive OpenAI: ":
            parsed = self._request_line(rest, ts)
            if parsed is not None:
                return parsed
        head = rest[:1]
        if head == b"{" and b'"event"' in rest and b'"request.' in rest:
            parsed = self._json_request(rest)
            if parsed is not None:
                return parsed
        if head in (b"{", b"[") or rest.startswith((b"CompletionUsage(", b"Usage(")):
            recognised, payloads = read_response_body(decode(rest), self.routing, self.ignored)
            if recognised:
                return emit_requests(self.pending, payloads, RESPONSE, ts)
        return None

    def _raw_event(self, rest: bytes, orig: bytes, ts: float | None) -> ParsedLine | None:
        """An expert-count row, an access line, a PD failure or an error line without the
        prefix; None for any other line."""
        if rest[:1].isdigit() and _CSV_ROW_RE.match(rest):
            return expert_count_row(rest)
        if rest.startswith(_CSV_HEADER):
            return _EXPERT
        access = access_line(rest, ts)
        if access is not None:
            return access
        if MARKER in rest:
            parsed = self._pd_failure(rest, ts)
            if parsed is not None:
                return parsed
        if (rest[:1] in ERROR_HEADS or orig[:1] in ERROR_HEADS) and EXC_HEADER not in rest:
            return self._any.error_line(rest, orig, ts)  # uvicorn ERROR:, logging...
        return None

    def _raw_other(self, rest: bytes, orig: bytes, ts: float | None) -> ParsedLine:
        """Any other line without the prefix: uvicorn's, a batch line after a foreign
        prefix, startup and known lines, else unparsed."""
        if UVICORN_RE.match(rest):
            if EXC_HEADER in rest:
                self._tb.begin_header("", EXC_HEADER.decode(), None, ts)
                return TRACEBACK
            return OTHER
        if b"Prefill batch" in rest or b"Decode batch" in rest:
            bm = BATCH_RE.search(rest)
            if bm is not None:
                return self._batch_line(bm, rest, ts)
        startup = startup_line(rest)
        if startup is not None:
            return startup
        known = self._known_other(rest, orig, ts)
        if known is not None:
            return known
        if _VLLM_STYLE_RE.match(rest):
            return OTHER
        self.last_reason = unparsed_reason(rest, "no SGLang prefix and no known message")
        return LineKind.UNPARSED, None
