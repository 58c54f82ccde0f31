"""SGLang server logs, ~0.2 to current (log-formats.md §5, §6).

An SGLang line is ``[YYYY-MM-DD HH:MM:SS( DPn| TPn| EPn| PPn ...)*] message``: no level,
no file. Variants: ``.mmm`` milliseconds (``SGLANG_LOG_MS=1``), time only
(``[16:43:29 TP0]``, ~0.3), ``[gpu=0] `` without a time (~0.2), and no rank suffix at all
(tp_size=1 since ~May 2025). Other processes write into the same stream, sometimes in the
middle of a line (``This is only a test[2024-10-31 ... TP0] Prefill batch...``), so when the
anchored prefix fails the prefix is looked for with ``re.search``.

Kinds this family returns:

- ``sglang.prefill`` / ``sglang.decode``: ``Prefill batch`` / ``Decode batch`` lines of every
  version (``.``/``,`` after ``batch``, ``[iter]``, trailing commas, ``cache hit rate``,
  ``#cached-token``, ``cuda graph``/``npu graph``, ``input throughput``, ``#pending-token``,
  SWA ``full token usage``, Mamba, PD ``pre-allocated usage`` / ``#unbootstrapped-req``,
  speculative ``accept len``/``accept rate``, sglang-jax ``#cache_miss``); fields are read
  generically (``key: value`` split on ``, ``), unknown or garbled keys are ignored
  -> ``("stats", StatsPayload)``;
- ``sglang.request``: ``--log-requests`` ``Receive:`` / ``Receive OpenAI:`` / ``Finish:``
  lines (with or without the ``[ts]`` prefix: the newer RequestLogger prints bare
  messages) and JSON request-log lines (``"event": "request.finished"``)
  -> ``("request", RequestPayload)``;
- ``api.response``: a ``/generate`` result (``{'text': ..., 'meta_info': {...}}``, repr or
  JSON, or a list of them) or an OpenAI body/``usage`` printed into the log;
- ``sglang.expert_dist``: expert-distribution CSV dump lines (``layer_id,expert_id,count``
  header and ``L,E,N`` rows);
- ``http.access``, ``traceback``, ``prometheus``, ``blank``, ``other``, ``unparsed`` as in
  the vLLM family.

``ts``: ``[date time]`` prefixes are local wall-clock time on the inference host, converted
with the host's zone. Time-only prefixes get the date of the last dated line of the file
(next day when the time goes back by more than 12 h); with no dated line before them,
``ts`` is left out.
"""

from __future__ import annotations

import re
import time
from typing import Any

import orjson

from sparseety_tui.events import (
    LineKind,
    ParsedLine,
    RequestPayload,
    StatsPayload,
)
from sparseety_tui.formats import prometheus
from sparseety_tui.formats.base import YearProbe, YearState
from sparseety_tui.formats.clean import (
    ACCESS_RE,
    UVICORN_RE,
    basic_clean,
    strip_wrappers,
    wrapper_time,
)
from sparseety_tui.formats.pylit import (
    LiteralError,
    parse_value_at,
    read_string_at,
)
from sparseety_tui.formats.routing import (
    read_response_body,
    request_from_meta_info,
)
from sparseety_tui.formats.serverlog import (
    ACCESS,
    BLANK,
    OTHER,
    PROMETHEUS,
    RESPONSE,
    TRACEBACK,
    ServerLogParser,
    decode,
)

PREFILL = "sglang.prefill"
DECODE = "sglang.decode"
REQUEST = "sglang.request"
EXPERT_DIST = "sglang.expert_dist"
KINDS = (
    PREFILL,
    DECODE,
    REQUEST,
    RESPONSE,
    EXPERT_DIST,
    LineKind.ACCESS,
    LineKind.TRACEBACK,
    PROMETHEUS,
    LineKind.NOISE,
    LineKind.BLANK,
    LineKind.UNPARSED,
)

_EXPERT: ParsedLine = (EXPERT_DIST, None)

#: ``[2024-10-31 21:55:11 TP0] ``, ``[2025-08-22 13:47:04 DP0 TP0 EP0] ``,
#: ``[2026-01-31 15:05:33] ``, ``[2025-01-01 10:00:00.123 TP0] ``, ``[16:43:29 TP0] ``.
_PREFIX = (
    rb"\[(?P<stamp>(?:(?P<y>\d{4})-(?P<mo>\d\d)-(?P<d>\d\d) )?(?P<h>\d\d):(?P<mi>\d\d):(?P<s>\d\d)"
    rb"(?P<frac>[.,]\d{1,6})?)(?P<ranks>(?: [A-Z][A-Z_]{0,10}\d{1,5}){0,8})\] ?"
)
PREFIX_RE = re.compile(_PREFIX)
PREFIX_SEARCH_RE = re.compile(_PREFIX)
#: The common lines of a current SGLang log, whole, in one anchored match (the rest go
#: through the general path below, which gives the same result for these):
#:   ``[2026-11-30 12:00:00 TP0] Prefill batch. #new-seq: 3, #new-token: 3105, #cached-token:
#:   2784, token usage: 0.01, #running-req: 0, #queue-req: 0``
#:   ``[2026-11-30 12:00:00 TP0] Decode batch. #running-req: 5, #token: 3175, token usage:
#:   0.01, gen throughput (token/s): 199.40, #queue-req: 1``
#:   ``[2026-11-30 12:00:00] INFO:     127.0.0.1:57479 - "POST /v1/completions HTTP/1.1" 200 OK``
#: (the access alternative only matches its start; ``ACCESS_RE`` checks the rest).
FAST_RE = re.compile(
    rb"\[(\d{4}-\d\d-\d\d \d\d:\d\d:\d\d)((?: [A-Z][A-Z_]{0,10}\d{1,5}){0,8})\] (?:"
    rb"Prefill batch\. #new-seq: (\d+), #new-token: (\d+), #cached-token: (\d+), "
    rb"token usage: (\d+\.\d+), #running-req: (\d+), #queue-req: (\d+)\Z"
    rb"|Decode batch\. #running-req: (\d+), #token: \d+, token usage: (\d+\.\d+), "
    rb"gen throughput \(token/s\): (\d+\.\d+), #queue-req: (\d+)\Z"
    rb"|(?=INFO:     ))"
)
#: ~0.2: ``[gpu=0] Prefill batch. #new-seq: 2, ...`` (no time at all).
GPU_PREFIX_RE = re.compile(rb"\[gpu(?:_id)?=\d+\] ")
#: A vLLM-style line from vendored code (``INFO 10-31 ... weight_utils.py:243] ...``).
_VLLM_STYLE_RE = re.compile(rb"(?:DEBUG|INFO|WARNING|ERROR|CRITICAL) \d\d-\d\d \d\d:\d\d:\d\d ")

#: ``Prefill batch. `` / ``Decode batch, `` / ``Prefill batch [123], ``.
BATCH_RE = re.compile(rb"(?P<kind>Prefill|Decode) batch(?: \[\d+\])?[.,]? ?")
#: ``#new-seq: 1, #new-token: 48, #cached-token: 1, [cache hit rate: 1.79%, ]token usage:
#: 0.00, #running-req: 0, #queue-req: 0`` (0.3 .. 2026 builds without SWA/PD variants).
_PREFILL_HEAD_RE = re.compile(
    rb"#new-seq: (\d+), #new-token: (\d+), #cached-token: (\d+), "
    rb"(?:cache hit rate: ([\d.]+)%, )?token usage: ([\d.]+), "
    rb"#running-req: (\d+), #queue-req: (\d+)(?:,|$)"
)
#: ``#running-req: 1, #token: 82, token usage: 0.00, ``
_DECODE_HEAD_RE = re.compile(rb"#running-req: (\d+), #token: \d+, token usage: ([\d.]+)(?:,|$)")
_CSV_ROW_RE = re.compile(rb"\d{1,6},\d{1,6},\d{1,12}\s*$")
_CSV_HEADER = b"layer_id,expert_id,count"
_RID_RE = re.compile(r"\brid=(?P<q>['\"])(?P<rid>[^'\"]{1,512})(?P=q)")
_EXC_HEADER = b"Exception in ASGI application"
#: str.translate table deleting the characters of a plain int list.
_NOT_ID_CHARS = str.maketrans("", "", "0123456789, ")


def _pct(v: bytes) -> float:
    return round(float(v.rstrip(b"%")) / 100.0, 6)


#: Batch-line keys we read -> (payload field, converter). Everything else is ignored.
_PREFILL_FIELDS: dict[bytes, tuple[str, Any]] = {
    b"#new-seq": ("batch_requests", int),
    b"#new-token": ("new_tokens", int),
    b"#cached-token": ("cached_tokens", int),
    b"cache hit rate": ("prefix_cache_hit_rate", _pct),
    b"token usage": ("kv_usage", float),
    b"full token usage": ("kv_usage", float),
    b"#running-req": ("running", int),
    b"#queue-req": ("queued", int),
    b"input throughput (token/s)": ("prompt_throughput", float),
}
_DECODE_FIELDS: dict[bytes, tuple[str, Any]] = {
    b"#running-req": ("running", int),
    b"token usage": ("kv_usage", float),
    b"full token usage": ("kv_usage", float),
    b"gen throughput (token/s)": ("generation_throughput", float),
    b"#queue-req": ("queued", int),
    b"accept len": ("spec_accept_length", float),
    b"accept rate": ("spec_accept_rate", float),
}


class SglangParser(ServerLogParser):
    """Stateful per-file parser (last date for time-only prefixes, open tracebacks).

    It is ``RangeAware`` (formats.base): a split reader may give it one range of a file.
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

    def parse(self, line: bytes) -> ParsedLine:
        try:
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

    # -- reading a range of a file (formats.base.RangeAware) ----------------------------

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
        (stamp, raw_ranks, seq, new, cached, usage, running, queued,
         d_running, d_usage, d_gen, d_queued) = fm.groups()
        if stamp != self._sec_key:
            self._second(stamp)
        ts = self._sec_entry[0]
        self._in_warning = False
        if seq is None and d_running is None:
            msg = line[fm.end() :]
            if ACCESS_RE.match(msg) is None or b" batch" in msg or b"Traceback" in msg:
                return None
            if b"\r" in msg or b"\x1b" in msg:
                return None
            return ACCESS
        ranks = self._ranks.get(raw_ranks)
        if ranks is None:
            ranks = self._rank_name(raw_ranks)
        payload: StatsPayload
        if seq is not None:
            kind = PREFILL
            payload = {"phase": "prefill", "ts": ts, "engine": ranks,  # type: ignore[typeddict-item]
                       "batch_requests": int(seq), "new_tokens": int(new),
                       "cached_tokens": int(cached), "kv_usage": float(usage),
                       "running": int(running), "queued": int(queued)}
        else:
            kind = DECODE
            payload = {"phase": "decode", "ts": ts, "engine": ranks,  # type: ignore[typeddict-item]
                       "running": int(d_running), "kv_usage": float(d_usage),
                       "generation_throughput": float(d_gen), "queued": int(d_queued)}
        # The common line has both; without them the fields are absent, never null.
        if ts is None:
            del payload["ts"]
        if not ranks:
            del payload["engine"]
        return kind, ("stats", payload)

    def _second(self, stamp: bytes) -> None:
        """Make ``stamp`` (``YYYY-MM-DD HH:MM:SS``) the current second: its date state."""
        minute = self._minutes.get(stamp[:16])
        if minute is None:
            minute = self._minute(stamp[:16])
        base, date, hour = minute
        self._date, self._last_hour = date, hour
        self._sec_key = stamp
        self._sec_entry = (None if base is None else base + int(stamp[17:19]), date, hour)

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

    def _stamp(self, m: re.Match[bytes] | None) -> float | None:
        if m is None:
            return None
        if m.group("y") is not None:
            stamp = m.group("stamp")
            frac = m.group("frac")
            if frac:
                stamp = stamp[:19]
            if stamp != self._sec_key:
                self._second(stamp)
            if not frac:
                return self._sec_entry[0]
            base = self._minutes[stamp[:16]][0]
            if base is None:
                return None
            return base + (float(m.group("s")) + float(b"0." + frac[1:]))
        self._sec_key = b""  # the date state is about to change under the cached second
        return self._time_only(m)

    def _minute(self, key: bytes) -> tuple[float | None, tuple[int, int, int], int]:
        """(unix seconds of the minute or None for an impossible date, date, hour) of a
        dated prefix's ``YYYY-MM-DD HH:MM``: a pure function of the text, cached, so a
        dated line costs one dict lookup (34 days of log are ~49k distinct minutes)."""
        cached = self._minutes.get(key)
        if cached is not None:
            return cached
        date = (int(key[0:4]), int(key[5:7]), int(key[8:10]))
        hour = int(key[11:13])
        base: float | None = None
        if 1 <= date[1] <= 12 and 1 <= date[2] <= 31:
            base = self._clock.to_unix(date[0], date[1], date[2], hour, int(key[14:16]), 0.0)
        cached = (base, date, hour)
        if len(self._minutes) >= 65536:
            self._minutes.clear()
        self._minutes[key] = cached
        return cached

    def _time_only(self, m: re.Match[bytes]) -> float | None:
        """``[16:43:29 TP0]``: the date of the last dated line, rolled past midnight."""
        hour, minute = int(m.group("h")), int(m.group("mi"))
        sec = float(m.group("s"))
        frac = m.group("frac")
        if frac:
            sec += float(b"0." + frac[1:])
        if self._date is None:
            return None
        if hour + 12 < self._last_hour:  # time-only prefix went past midnight
            y, mo, d = self._date
            nxt = self._clock.to_unix(y, mo, d, 12, 0, 0.0) + 86400
            t = time.localtime(nxt)
            self._date = (t.tm_year, t.tm_mon, t.tm_mday)
        date = self._date
        self._last_hour = hour
        if not (1 <= date[1] <= 12 and 1 <= date[2] <= 31):
            return None
        return self._clock.to_unix(date[0], date[1], date[2], hour, minute, sec)

    def _message(self, msg: bytes, m: re.Match[bytes] | None) -> ParsedLine:
        """A line with the SGLang prefix (``m``; None for ``[gpu=0]``)."""
        ts = self._stamp(m)
        self._in_warning = False
        if (self._tb.active or b"Traceback" in msg) and self._tb.feed(
            "", decode(msg), b"sgl", ts, interleavable=True
        ):
            return TRACEBACK
        if b" batch" in msg:
            bm = BATCH_RE.match(msg)
            if bm is None and (b"Prefill batch" in msg or b"Decode batch" in msg):
                bm = BATCH_RE.search(msg)
            if bm is not None:
                raw = m.group("ranks") if m is not None else b""
                ranks = self._ranks.get(raw)
                if ranks is None:
                    ranks = self._rank_name(raw)
                return self._batch(bm, msg, ts, ranks)
        if msg[:4] == b"Rece" or msg[:7] == b"Finish:":
            parsed = self._request_line(msg, ts)
            if parsed is not None:
                return parsed
        if msg[:6] in (b"INFO: ", b"ERROR:", b"WARNIN", b"TRACE:", b"DEBUG:", b"CRITIC"):
            if ACCESS_RE.match(msg) is not None:
                return ACCESS
            if _EXC_HEADER in msg:
                self._tb.begin_header("", _EXC_HEADER.decode(), None, ts)
                return TRACEBACK
        return OTHER

    def _raw(self, rest: bytes, wrap_ts: bytes | None, orig: bytes) -> ParsedLine:
        """A line without the SGLang prefix."""
        continued = self._continuation(rest, "")
        if continued is not None:
            return continued
        ts: float | None = None
        if wrap_ts is not None:
            ts = wrapper_time(wrap_ts)[1]
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
            recognised, payloads = read_response_body(decode(rest), self.routing)
            if recognised:
                return self._emit(payloads, RESPONSE, ts)
        if head.isdigit() and _CSV_ROW_RE.match(rest):
            return _EXPERT
        if rest.startswith(_CSV_HEADER):
            return _EXPERT
        if b"HTTP/" in rest and b'"' in rest and ACCESS_RE.search(rest) is not None:
            return ACCESS
        if UVICORN_RE.match(rest):
            if _EXC_HEADER in rest:
                self._tb.begin_header("", _EXC_HEADER.decode(), None, ts)
                return TRACEBACK
            return OTHER
        if b"Prefill batch" in rest or b"Decode batch" in rest:
            bm = BATCH_RE.search(rest)
            if bm is not None:
                return self._batch(bm, rest, ts)
        known = self._known_other(rest, orig)
        if known is not None:
            return known
        if _VLLM_STYLE_RE.match(rest):
            return OTHER
        self.last_reason = "no SGLang prefix and no known message"
        return LineKind.UNPARSED, None

    # -- batch lines --------------------------------------------------------------------

    def _batch(
        self, bm: re.Match[bytes], msg: bytes, ts: float | None, ranks: str = ""
    ) -> ParsedLine:
        prefill = bm.group("kind") == b"Prefill"
        fields = _PREFILL_FIELDS if prefill else _DECODE_FIELDS
        payload: StatsPayload = {"phase": "prefill" if prefill else "decode"}
        if ts is not None:
            payload["ts"] = ts
        if ranks:
            payload["engine"] = ranks
        body = msg[bm.end() :]
        # Fast path: the leading fields every version since 0.3 prints in this order are
        # read by one anchored regex; whatever follows goes through the generic loop.
        if prefill:
            fm = _PREFILL_HEAD_RE.match(body)
            if fm is not None:
                seq, new, cached, hit, usage, running, queued = fm.groups()
                payload["batch_requests"] = int(seq)
                payload["new_tokens"] = int(new)
                payload["cached_tokens"] = int(cached)
                if hit is not None:
                    payload["prefix_cache_hit_rate"] = round(float(hit) / 100.0, 6)
                payload["kv_usage"] = float(usage)
                payload["running"] = int(running)
                payload["queued"] = int(queued)
                body = body[fm.end() :]
        else:
            fm = _DECODE_HEAD_RE.match(body)
            if fm is not None:
                running, usage = fm.groups()
                payload["running"] = int(running)
                payload["kv_usage"] = float(usage)
                body = body[fm.end() :]
        body = body.strip(b", \t")
        if not body:
            return (PREFILL if prefill else DECODE), ("stats", payload)
        get = fields.get
        for part in body.split(b", "):
            cut = part.rfind(b": ")
            if cut < 0:
                continue
            spec = get(part[:cut])
            if spec is None:
                continue  # a field we do not use, or TTY garbage such as `#cached-tounning-req`
            try:
                payload[spec[0]] = spec[1](part[cut + 2 :])  # type: ignore[literal-required]
            except ValueError:
                continue  # garbled value (TTY overwrite): leave the field out
        kind = PREFILL if prefill else DECODE
        return kind, ("stats", payload)

    # -- requests -----------------------------------------------------------------------

    def _emit(self, payloads: list[RequestPayload], kind: str, ts: float | None) -> ParsedLine:
        if not payloads:
            return kind, None
        for p in payloads:
            if ts is not None:
                p.setdefault("ts", ts)
        for extra in payloads[1:]:
            self.pending.append(("request", extra))
        return kind, ("request", payloads[0])

    def _request_line(self, msg: bytes, ts: float | None) -> ParsedLine | None:
        text = decode(msg)
        if text.startswith(("Receive: ", "Receive OpenAI: ")):
            return self._receive(text, ts)
        if text.startswith("Finish: "):
            return self._finish(text, ts)
        return None

    def _receive(self, text: str, ts: float | None) -> ParsedLine:
        payload: RequestPayload = {"state": "received"}
        rm = _RID_RE.search(text)
        if rm is not None:
            payload["request_id"] = rm.group("rid")
        if ts is not None:
            payload["received_ts"] = ts
        pos = text.find("input_ids=[")
        if pos >= 0:
            close = text.find("]", pos)
            if close > 0:
                inner = text[pos + 11 : close]
                if not inner.translate(_NOT_ID_CHARS) and inner.strip():
                    payload["prompt_tokens"] = inner.count(",") + 1
                    if self.keep_token_ids:
                        payload["prompt_token_ids"] = [int(x) for x in inner.split(",")]
        tpos = text.find("(text=")
        if tpos >= 0 and text.startswith(("'", '"'), tpos + 6):
            try:
                prompt, _ = read_string_at(text, tpos + 6)
                payload["prompt"] = prompt
            except LiteralError:
                pass
        if "request_id" not in payload:
            return REQUEST, None  # a batch (rid=[...]) or an abbreviated line: no single id
        return self._emit([payload], REQUEST, ts)

    def _finish(self, text: str, ts: float | None) -> ParsedLine:
        payload: RequestPayload = {}
        rm = _RID_RE.search(text)
        if rm is not None:
            payload["request_id"] = rm.group("rid")
        out: Any = None
        pos = text.rfind(", out={")
        if pos >= 0:
            try:
                out, _ = parse_value_at(text, pos + 6)
            except (LiteralError, RecursionError):
                out = None
        meta: Any = out.get("meta_info") if isinstance(out, dict) else None
        if not isinstance(meta, dict):
            for needle in ("'meta_info': ", '"meta_info": '):
                mpos = text.rfind(needle)
                if mpos >= 0:
                    try:
                        meta, _ = parse_value_at(text, mpos + len(needle))
                    except (LiteralError, RecursionError):
                        meta = None
                    break
        if isinstance(meta, dict):
            request_from_meta_info(meta, self.routing, payload)
        if isinstance(out, dict) and isinstance(out.get("text"), str):
            payload["completion"] = out["text"]
        if "state" not in payload and isinstance(meta, dict):
            payload["state"] = "finished"
        if ts is not None:
            payload.setdefault("finished_ts", ts)
        if "request_id" not in payload:
            return REQUEST, None
        return self._emit([payload], REQUEST, ts)

    def _json_request(self, rest: bytes) -> ParsedLine | None:
        """``--log-requests-format json``: ``{"timestamp": ..., "event": "request.finished",
        "rid": ..., "obj": {...}, "out": {...}}``."""
        try:
            obj = orjson.loads(rest)
        except orjson.JSONDecodeError:
            return None
        if not isinstance(obj, dict):
            return None
        event = obj.get("event")
        if not isinstance(event, str) or not event.startswith("request."):
            return None
        payload: RequestPayload = {}
        rid = obj.get("rid")
        if isinstance(rid, str):
            payload["request_id"] = rid
        stamp = obj.get("timestamp")
        ts = (
            float(stamp)
            if isinstance(stamp, (int, float)) and not isinstance(stamp, bool)
            else None
        )
        if ts is not None:
            payload["ts"] = ts
        if event.startswith("request.received"):
            payload["state"] = "received"
            if ts is not None:
                payload["received_ts"] = ts
            req = obj.get("obj")
            if isinstance(req, dict):
                ids = req.get("input_ids")
                if isinstance(ids, list) and all(isinstance(i, int) for i in ids):
                    payload["prompt_tokens"] = len(ids)
                    if self.keep_token_ids:
                        payload["prompt_token_ids"] = ids
                if isinstance(req.get("text"), str):
                    payload["prompt"] = req["text"]
        else:
            out = obj.get("out")
            if isinstance(out, dict):
                meta = out.get("meta_info")
                if isinstance(meta, dict):
                    request_from_meta_info(meta, self.routing, payload)
                    payload.setdefault("state", "finished")
                if isinstance(out.get("text"), str):
                    payload["completion"] = out["text"]
            if ts is not None:
                payload.setdefault("finished_ts", ts)
        if "request_id" not in payload:
            return REQUEST, None
        return REQUEST, ("request", payload)


class SglangFamily:
    name = "sglang"
    description = "SGLang server log (~0.2 to current), incl. uvicorn, /metrics, meta_info"

    def sniff(self, lines: list[bytes]) -> float:
        nonblank = strong = weak = 0
        for raw in lines:
            line = basic_clean(raw)
            if not line.strip():
                continue
            nonblank += 1
            if b"req_id=" in line and b" | " in line:
                continue  # key=value request lines belong to the kvline family
            if b"Prefill batch" in line or b"Decode batch" in line:
                strong += 1
                continue
            if GPU_PREFIX_RE.match(line) or b"meta_info" in line or b"ServerArgs(" in line:
                strong += 1
                continue
            if prometheus.family_of(line) == "sglang" or line.startswith(_CSV_HEADER):
                strong += 1
                continue
            m = PREFIX_SEARCH_RE.search(line)
            if m is not None and (m.group("y") is not None or m.group("ranks")):
                msg = line[m.end() :]
                if _VLLM_STYLE_RE.match(msg):
                    continue  # a collector's stamp in front of a vLLM line
                strong += 1
                continue
            if b"prompt_tokens" in line or b"CompletionUsage(" in line:
                weak += 1
        if not nonblank:
            return 0.0
        evidence = (strong + 0.5 * weak) / nonblank
        if strong == 0:
            # Bare usage bodies: equally plausible from vLLM; this keeps them above a
            # generic JSON reader's weak claim but never above a real server log.
            return min(0.45, evidence)
        return min(0.95, 0.5 + evidence)

    def new_parser(
        self,
        *,
        reference_time: float | None = None,  # SGLang's dated prefixes carry the year
        num_layers: int | None = None,
        top_k: int | None = None,
        keep_token_ids: bool = False,
    ) -> SglangParser:
        return SglangParser(num_layers=num_layers, top_k=top_k, keep_token_ids=keep_token_ids)


FAMILY = SglangFamily()


def parse_all(lines: list[bytes], **options: Any) -> list[ParsedLine]:
    """Convenience for tests and tools: parse lines with a fresh parser."""
    parser = FAMILY.new_parser(**options)
    return [parser.parse(line) for line in lines]
