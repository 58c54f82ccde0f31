"""vLLM server logs, 0.2 to current V1 (log-formats.md §1-§4).

A vLLM line is ``[(<Proc> pid=<N>) ]*LEVEL MM-DD HH:MM:SS [file.py:NNN] message``; before
~0.8 the file info had no ``[``; with DEBUG logging it is a shortened path
(``[v1/engine/async_llm.py:480]``); a real paste shows the glitch ``[async_llm.py:485[]``,
which is accepted. Wrappers (docker, compose, k8s, collectors, ``> ``) and ANSI colours are
removed by ``clean``; process prefixes nest (``(EngineCore pid=925) (RayWorkerProc
pid=8272)``) and Ray Data names contain parentheses
(``(MapWorker(MapBatches(vLLMEngineStageUDF)) pid=20874)``).

Kinds this family returns (``ParsedLine[0]``):

- ``vllm.stats``: ``Avg prompt throughput`` lines (V0, V1 with/without ``Engine NNN:``,
  ``N Engines Aggregated:``), the V0 ``Prefix cache hit rate: GPU: X%, CPU: Y%`` line,
  ``SpecDecoding metrics`` (both V1 formats) and V0 ``Speculative metrics``
  -> ``("stats", StatsPayload)``;
- ``vllm.request``: ``Received request`` (0.2 / 0.3 / 0.4-0.11 / >=0.11.2 wordings),
  DEBUG ``Request X details``, ``Added request``, ``Aborted request``, ``Finished
  request``, ``Generated response`` -> ``("request", RequestPayload)``;
- ``api.response``: an OpenAI response / ``usage`` body or SGLang-style ``meta_info``
  dict printed into the log (JSON or Python repr) -> a request when it has an id;
- ``http.access``: uvicorn access lines; ``traceback``: any line of a Python traceback
  (grouped into one ``("error", ErrorPayload)`` delivered through ``pending``);
- ``prometheus``: ``/metrics`` exposition text; ``blank``; ``other``: a vLLM line (or a
  known third-party shape: tqdm, NCCL, PyTorch ``[rank0]:``, uvicorn lifecycle) with
  nothing to extract; ``unparsed`` (with ``last_reason``).

Payload fields are only those read from the line (never a 0 for "unknown"). Stats:
throughputs, running/waiting/swapped, ``kv_usage`` and ``prefix_cache_hit_rate`` as
fractions (vLLM prints percent), ``engine`` ("0", "all" for aggregated), spec acceptance.
Requests: ``request_id``, ``state``, ``prompt``, ``prompt_tokens`` (counted from
``prompt_token_ids`` when printed), ``completion``/``completion_tokens``/``finish_reason``
(``Generated response``), ``received_ts``/``finished_ts``, ``ts``; the id lists themselves
only with ``keep_token_ids=True``. ``SamplingParams`` (``max_tokens``) has no payload field
and is not read. V1 ≈0.15 engine-side ids ``<id>-<8hex>`` are mapped back to the id seen in
``Received request``.

Timestamps have no year and are local time. The year is inferred once per file: from a
wrapper timestamp that has one (docker ``--timestamps``, a collector), else from the
``reference_time`` given to ``new_parser`` (the file's mtime), else from the current time;
if the first stamp's month/day lies after the reference's, the log started last year.
Later stamps roll the year forward when the month drops by six or more (Dec -> Jan).
Lines are never reordered and a small step backwards never changes the year. When a
docker/CI RFC3339 wrapper with a zone is present, its instant is used as ``ts`` (it is
exact); otherwise the vLLM stamp is read in the host's local zone.
"""

from __future__ import annotations

import re
import time
from collections import OrderedDict
from typing import Any

from sparseety_tui.events import (
    LineKind,
    ParsedLine,
    RequestPayload,
    StatsPayload,
)
from sparseety_tui.formats import prometheus
from sparseety_tui.formats.base import BoundaryNotes, YearProbe, YearState
from sparseety_tui.formats.clean import (
    ACCESS_RE,
    UVICORN_RE,
    basic_clean,
    strip_wrappers,
    wrapper_time,
)
from sparseety_tui.formats.pylit import LiteralError, read_string_at
from sparseety_tui.formats.routing import read_response_body
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

STATS = "vllm.stats"
REQUEST = "vllm.request"
KINDS = (
    STATS,
    REQUEST,
    RESPONSE,
    LineKind.ACCESS,
    LineKind.TRACEBACK,
    PROMETHEUS,
    LineKind.NOISE,
    LineKind.BLANK,
    LineKind.UNPARSED,
)

_RESPONSE_ONLY: ParsedLine = (RESPONSE, None)

#: ``(APIServer pid=1) `` (nesting handled by looping). Bounded so a line that merely
#: starts with ``(`` is not scanned to its end.
PROC_RE = re.compile(rb"\((?P<proc>[^\r\n]{1,200}?) pid=(?P<pid>\d+)\)\s?")

#: The logging head. ``INFO 02-22 16:52:30 metrics.py:161] `` (<0.8),
#: ``INFO 03-18 09:04:46 [metrics.py:481] `` (>=0.8), ``[v1/engine/async_llm.py:480]``,
#: glitch ``[async_llm.py:485[]``; PR #7606 pasted a leading ``[``.
_HEAD = (
    rb"\[?(?P<level>DEBUG|INFO|WARNING|WARN|ERROR|CRITICAL) "
    rb"(?P<stamp>\d\d-\d\d \d\d:\d\d:\d\d)(?:\.\d+)? "
    rb"\[?(?P<file>[^\s\[\]:]{1,300}):(?P<lineno>\d+)(?:\[\]|\])\]? ?"
)
HEAD_RE = re.compile(_HEAD)
HEAD_SEARCH_RE = re.compile(rb"(?<![A-Za-z])" + _HEAD)
#: The common case in one match: one simple process prefix and the head.
FAST_RE = re.compile(rb"\((?P<proc>[^()\r\n]{1,120}?) pid=(?P<pid>\d+)\) " + _HEAD)
#: The two request lines of every request, up to their bodies, with at most one simple
#: process prefix (the rest go through the general path, which gives the same result):
#:   ``INFO 11-30 12:00:00 [logger.py:43] Received request chatcmpl-b4c9: prompt: '...',``
#:   ``(APIServer pid=1) INFO 02-13 11:33:33 [async_llm.py:382] Added request cmpl-9-a8a65d16.``
FAST_REQUEST_RE = re.compile(
    rb"(?:\([^()\r\n]{1,120}? pid=\d+\) )?"
    rb"INFO (\d\d-\d\d \d\d:\d\d:\d\d) \[[^\s\[\]:]{1,300}:\d+\] ()"
    rb"(?:Received request (\S+): |Added request ([\w-]+)\.\Z)"
)
#: One simple process prefix before a uvicorn access line (``_fast_access``).
_FAST_PROC_RE = re.compile(rb"\([^()\r\n]{1,120}? pid=\d+\) (?=INFO:     )")
#: Where wrapper stripping stops: a process prefix or the logging head.
_OWN_PREFIX_RE = re.compile(rb"\([^\r\n]{1,200}? pid=\d+\)|" + _HEAD)

#: V1: ``Engine 000: Avg prompt throughput: 0.0 tokens/s, Avg generation throughput:
#: 25.0 tokens/s, Running: 0 reqs, Waiting: 0 reqs, GPU KV cache usage: 0.0%, Prefix cache
#: hit rate: 64.4%, MM cache hit rate: 66.7%`` (0.8.x: no ``Engine`` part).
V1_STATS_RE = re.compile(
    rb"(?:Engine (?P<engine>\d+): |(?P<nagg>\d+) Engines Aggregated: )?"
    rb"Avg prompt throughput: (?P<p>[\d.]+) tokens/s, "
    rb"Avg generation throughput: (?P<g>[\d.]+) tokens/s, "
    rb"Running: (?P<run>\d+) reqs, Waiting: (?P<wait>\d+) reqs"
    rb"(?:, Deferred: \d+ reqs)?(?:, Preemptions: \d+)?, "
    rb"GPU KV cache usage: (?P<kv>[\d.]+)%, Prefix cache hit rate: (?P<hit>[\d.]+)%"
)
#: V0: ``Avg prompt throughput: 0.9 tokens/s, Avg generation throughput: 0.0 tokens/s,
#: Running: 1 reqs, Swapped: 0 reqs, Pending: 0 reqs, GPU KV cache usage: 0.0%, CPU KV
#: cache usage: 0.0%[.]``
V0_STATS_RE = re.compile(
    rb"Avg prompt throughput: (?P<p>[\d.]+) tokens/s, "
    rb"Avg generation throughput: (?P<g>[\d.]+) tokens/s, "
    rb"Running: (?P<run>\d+) reqs, Swapped: (?P<sw>\d+) reqs, Pending: (?P<pend>\d+) reqs, "
    rb"GPU KV cache usage: (?P<kv>[\d.]+)%"
)
#: ``Prefix cache hit rate: GPU: 22.16%, CPU: 0.00%`` (V0, 0.5.5+).
V0_HIT_RE = re.compile(rb"Prefix cache hit rate: GPU: (?P<gpu>[\d.]+)%, CPU: (?P<cpu>[\d.]+)%")

_ENGINE_NAMES = {b"000": "0", b"001": "1", b"002": "2", b"003": "3"}
_RECEIVED_RE = re.compile(rb"Received request (?P<id>\S+): ")
_DETAILS_RE = re.compile(rb"Request (?P<id>\S+) details: ")
_LIFECYCLE_RE = re.compile(rb"(?P<what>Added|Aborted|Finished) request(?:\(s\)|s)? (?=\S)")
_GENERATED_RE = re.compile(
    rb"Generated response (?P<id>\S+?)(?P<stream> \(streaming (?:delta|complete)\))?"
    rb"(?P<details> details)?: "
)
_PROMPT_IDS_KEYS = (b"prompt_token_ids: ", b"prompt token ids: ")
_OUTPUT_IDS_KEYS = (b"output_token_ids: ",)
_DIGITS_AND_COMMAS = b"0123456789, "
_ID_SUFFIX_RE = re.compile(r"-[0-9a-f]{8}$")
_RAY_REPEAT_RE = re.compile(rb"\s*\[repeated \d+x across cluster\]\s*$")
_EXC_HEADER = b"Exception in ASGI application"

#: Engine-side ids of V1 ≈0.15 add ``-<8hex>`` to the front-end id; remember this many
#: received ids to map them back.
_RECENT_IDS = 4096


def _find_key(body: bytes, keys: tuple[bytes, ...], pos: int) -> int:
    """Index just after the first of ``keys`` found from ``pos`` (-1 if none)."""
    for key in keys:
        at = body.find(key, pos)
        if at >= 0:
            return at + len(key)
    return -1


def _id_list(text: bytes, pos: int, keep: bool) -> tuple[int | None, list[int] | None]:
    """``[1, 2, 3]`` at ``pos`` -> (count, ids if ``keep``); (None, None) for ``None`` or
    anything that is not a plain int list. Counting needs no int objects, which is what
    keeps long ``prompt_token_ids`` lines cheap."""
    if not text.startswith(b"[", pos):
        return None, None
    close = text.find(b"]", pos)
    if close < 0:
        return None, None
    inner = text[pos + 1 : close]
    if inner.translate(None, _DIGITS_AND_COMMAS):
        return None, None  # not a plain int list (truncated, `...`)
    if not inner.strip(b" "):
        return 0, ([] if keep else None)
    if not keep:
        return inner.count(b",") + 1, None
    try:
        ids = list(map(int, inner.split(b",")))
    except ValueError:
        return None, None
    return len(ids), ids


def _repr_string(body: bytes, pos: int) -> tuple[str | None, int]:
    """A Python-repr string literal at ``pos`` (bytes); (None, pos) if there is none.

    The closing quote is found with ``bytes.find`` (skipping escaped quotes), so a long
    prompt costs a few C-level scans; only strings with escapes go through pylit.
    """
    quote = body[pos : pos + 1]
    if quote not in (b"'", b'"'):
        return None, pos
    i = pos + 1
    while True:
        j = body.find(quote, i)
        if j < 0:
            return None, pos
        k = j - 1
        while k > pos and body[k] == 0x5C:  # backslash
            k -= 1
        if (j - 1 - k) % 2 == 0:
            break
        i = j + 1
    raw = body[pos : j + 1]
    if b"\\" not in raw:
        return raw[1:-1].decode("utf-8", "replace"), j + 1
    try:
        return read_string_at(raw.decode("utf-8", "replace"), 0)[0], j + 1
    except LiteralError:
        return None, j + 1


class VllmParser(ServerLogParser):
    """Stateful per-file parser (year inference, open tracebacks, recent request ids).

    It is ``RangeAware`` (formats.base): a split reader may give it one range of a file.
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
        #: Received ids, oldest first (OrderedDict: dropping the oldest is O(1); a dict's
        #: ``next(iter())`` rescans the deleted slots at its front, ~4 us a call here).
        self._recent: OrderedDict[str, None] = OrderedDict()
        #: How many ids were ever remembered (evicted ones included).
        self.remembered = 0
        #: Set by a split reader (``begin_range``); None otherwise.
        self.boundary: BoundaryNotes | None = None
        self._last_stamp = b""
        self._last_ts: float | None = None

    # -- public -------------------------------------------------------------------------

    def parse(self, line: bytes) -> ParsedLine:
        try:
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

    # -- reading a range of a file (formats.base.RangeAware) ----------------------------

    def begin_range(self, year: YearState | None) -> BoundaryNotes:
        """Start recording ``BoundaryNotes`` (a split reader's range parser), from the year
        state ``year`` when given (the split reader's guess; checked)."""
        self.boundary = BoundaryNotes()
        if year is not None:
            self._year, self._last_month = year
            self._last_stamp = b""
        return self.boundary

    def recent_ids(self) -> tuple[list[str], int]:
        """The window of received ids that engine-side ids are mapped against, oldest
        first, and how many ids were ever remembered."""
        return list(self._recent), self.remembered

    # -- dispatch -----------------------------------------------------------------------

    def _parse(self, line: bytes) -> ParsedLine:
        if b"\r" in line or b"\x1b" in line:
            line = basic_clean(line)
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
        payload: RequestPayload = {"request_id": self._canonical(decode(fm.group(4))),
                                   "state": "running"}
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
            or ACCESS_RE.match(rest) is None
        ):
            return None
        self._in_warning = False
        return ACCESS

    def _stamp_text(self, stamp: bytes) -> float | None:
        """``_stamp`` for a line without a wrapper, from the stamp's text."""
        ts = self._stamp_slow(stamp, None)
        self._last_stamp, self._last_ts = stamp, ts
        return ts

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
            return self._stats(msg, ts)  # the common line: no traceback checks needed
        if tb_open or error or b"Traceback" in msg or b'File "' in msg:
            record = m.group(0)
            if self._tb.feed(key, decode(msg), record, ts, error_level=error):
                return TRACEBACK
        if b"throughput: " in msg and b"Avg prompt throughput" in msg:
            return self._stats(msg, ts)
        if b" request" in msg or b"Request " in msg or b"Generated response" in msg:
            parsed = self._request(msg, ts)
            if parsed is not None:
                return parsed
        if b"metrics: " in msg or b"Prefix cache hit rate: GPU" in msg:
            parsed = self._spec_or_hit(msg, ts)
            if parsed is not None:
                return parsed
        if error and msg.strip():
            self._tb.note_context(key, decode(msg.strip()))
        return OTHER

    def _raw(self, rest: bytes, key: str, wrap_ts: bytes | None, orig: bytes) -> ParsedLine:
        """A line without the vLLM logging head."""
        if not rest or rest.isspace():
            return OTHER if key else BLANK
        if rest[-1:] == b"]" and b"[repeated" in rest:
            rest = _RAY_REPEAT_RE.sub(b"", rest)
        continued = self._continuation(rest, key)
        if continued is not None:
            return continued
        if b"HTTP/" in rest and b'"' in rest:
            am = ACCESS_RE.search(rest)
            if am is not None:
                return ACCESS
        if _EXC_HEADER in rest and UVICORN_RE.match(rest):
            self._tb.begin_header(key, _EXC_HEADER.decode(), None, self._wrap_ts(wrap_ts))
            return TRACEBACK
        if UVICORN_RE.match(rest):
            return OTHER
        ts = self._wrap_ts(wrap_ts)
        if b"Avg prompt throughput" in rest:
            start = rest.find(b"Engine ")
            if start < 0 or start > rest.find(b"Avg prompt throughput"):
                start = rest.find(b"Avg prompt throughput")
            return self._stats(rest[start:], ts)
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
            recognised, payloads = read_response_body(decode(rest), self.routing)
            if recognised:
                return self._emit_requests(payloads, RESPONSE, ts)
        known = self._known_other(rest, orig)
        if known is not None:
            return known
        if key:
            return OTHER  # a vLLM process prefix: ours, just nothing to extract
        self.last_reason = "no vLLM prefix and no known message"
        return LineKind.UNPARSED, None

    # -- time ---------------------------------------------------------------------------

    def _year_for(self, month: int, day: int) -> int:
        if self._year is None:
            ref = time.localtime(self._reference if self._reference is not None else time.time())
            year = ref.tm_year
            if (month, day) > (ref.tm_mon, ref.tm_mday + 1):
                year -= 1
            self._year = year
        elif month <= self._last_month - 6:
            self._year += 1  # Dec -> Jan wrap
        self._last_month = month
        return self._year

    def _stamp(self, m: re.Match[bytes], wrap_ts: bytes | None) -> float | None:
        stamp = m.group("stamp")
        if wrap_ts is None and stamp == self._last_stamp:
            return self._last_ts  # most lines share their second with the previous one
        ts = self._stamp_slow(stamp, wrap_ts)
        if wrap_ts is None:
            self._last_stamp, self._last_ts = stamp, ts
        return ts

    def _stamp_slow(self, stamp: bytes, wrap_ts: bytes | None) -> float | None:
        """``stamp`` is ``b"MM-DD HH:MM:SS"``."""
        if self.boundary is not None and self.boundary.year_probe is None:
            ts = self._stamp_year(stamp, wrap_ts)
            self._note_year_probe(("stamp", stamp, wrap_ts))
            return ts
        return self._stamp_year(stamp, wrap_ts)

    def _note_year_probe(self, probe: YearProbe) -> None:
        notes = self.boundary
        if notes is not None and notes.year_probe is None and self._year is not None:
            notes.year_probe = probe
            notes.year_after_probe = (self._year, self._last_month)

    def year_state(self) -> YearState:
        """(year, month of the last stamp): all the year inference carries across lines."""
        return self._year, self._last_month

    def replay_year_probe(self, probe: YearProbe, state: YearState) -> YearState:
        """The year state after ``probe`` (see ``BoundaryNotes``) on a parser whose state
        was ``state``. For checking a split read; changes this parser's year state."""
        self._year, self._last_month = state
        self._last_stamp = b""
        if probe[0] == "stamp":
            self._stamp_year(probe[1], probe[2])
        else:
            self._wrap_ts(probe[1])
        return self.year_state()

    def _stamp_year(self, stamp: bytes, wrap_ts: bytes | None) -> float | None:
        month = int(stamp[0:2])
        day = int(stamp[3:5])
        if wrap_ts is not None:
            year, instant = wrapper_time(wrap_ts)
            if year and self._year is None:
                self._year = year
                self._last_month = month
            if instant is not None:
                self._year_for(month, day)
                return instant
        if not (1 <= month <= 12 and 1 <= day <= 31):
            return None
        year = self._year_for(month, day)
        return self._clock.to_unix(
            year, month, day, int(stamp[6:8]), int(stamp[9:11]), float(stamp[12:14])
        )

    def _wrap_ts(self, wrap_ts: bytes | None) -> float | None:
        """ts of a line whose only timestamp is a wrapper's (KServe, collectors)."""
        if wrap_ts is None:
            return None
        year, instant = wrapper_time(wrap_ts)
        if instant is not None or not year:
            return instant
        digits = re.match(rb"\[?(\d{4})-(\d\d)-(\d\d)[T ](\d\d):(\d\d):(\d\d)", wrap_ts)
        if digits is None:
            return None
        y, mo, d, h, mi, s = (int(g) for g in digits.groups())
        if self._year is None:
            self._year = y
            self._last_month = mo
            self._note_year_probe(("wrap", wrap_ts))
        return self._clock.to_unix(y, mo, d, h, mi, float(s))

    # -- stats --------------------------------------------------------------------------

    def _stats(self, msg: bytes, ts: float | None) -> ParsedLine:
        payload: StatsPayload = {"phase": "engine"}
        if ts is not None:
            payload["ts"] = ts
        m = V1_STATS_RE.match(msg)
        if m is not None:
            engine, nagg, p, g, run, wait, kv, hit = m.groups()
            if engine is not None:
                payload["engine"] = _ENGINE_NAMES.get(engine) or str(int(engine))
            elif nagg is not None:
                payload["engine"] = "all"
            payload["prompt_throughput"] = float(p)
            payload["generation_throughput"] = float(g)
            payload["running"] = int(run)
            payload["waiting"] = int(wait)
            payload["kv_usage"] = round(float(kv) / 100.0, 6)
            payload["prefix_cache_hit_rate"] = round(float(hit) / 100.0, 6)
            return STATS, ("stats", payload)
        m = V0_STATS_RE.match(msg)
        if m is not None:
            payload["prompt_throughput"] = float(m.group("p"))
            payload["generation_throughput"] = float(m.group("g"))
            payload["running"] = int(m.group("run"))
            payload["swapped"] = int(m.group("sw"))
            payload["waiting"] = int(m.group("pend"))
            payload["kv_usage"] = round(float(m.group("kv")) / 100.0, 6)
            return STATS, ("stats", payload)
        self._generic_stats(msg, payload)
        return STATS, ("stats", payload)

    @staticmethod
    def _generic_stats(msg: bytes, payload: StatsPayload) -> None:
        """Fields in any order / unknown extras (future versions): ``Key: value unit``."""
        for part in msg.split(b", "):
            name, sep, value = part.rpartition(b": ")
            if not sep:
                continue
            if name.startswith(b"Engine ") and b": " in name:
                eng, _, name = name.partition(b": ")
                digits = eng[7:]
                if digits.isdigit():
                    payload["engine"] = str(int(digits))
            number = value.split(b" ", 1)[0].rstrip(b"%.")
            try:
                num = float(number)
            except ValueError:
                continue
            if name == b"Avg prompt throughput":
                payload["prompt_throughput"] = num
            elif name == b"Avg generation throughput":
                payload["generation_throughput"] = num
            elif name == b"Running":
                payload["running"] = int(num)
            elif name in (b"Waiting", b"Pending"):
                payload["waiting"] = int(num)
            elif name == b"Swapped":
                payload["swapped"] = int(num)
            elif name.endswith(b"KV cache usage") and not name.startswith(b"CPU"):
                payload["kv_usage"] = round(num / 100.0, 6)
            elif name == b"Prefix cache hit rate":
                payload["prefix_cache_hit_rate"] = round(num / 100.0, 6)

    def _spec_or_hit(self, msg: bytes, ts: float | None) -> ParsedLine | None:
        payload: StatsPayload = {}
        if ts is not None:
            payload["ts"] = ts
        hm = V0_HIT_RE.search(msg)
        if hm is not None:
            payload["phase"] = "engine"
            payload["prefix_cache_hit_rate"] = round(float(hm.group("gpu")) / 100.0, 6)
            return STATS, ("stats", payload)
        start = msg.find(b"SpecDecoding metrics: ")
        width = 22
        if start < 0:
            start = msg.find(b"Speculative metrics: ")
            width = 21
        if start < 0:
            return None
        payload["phase"] = "spec"
        for part in msg[start + width :].split(b", "):
            name, sep, value = part.partition(b": ")
            if not sep:
                continue
            raw = value.split(b" ", 1)[0]
            try:
                num = float(raw.rstrip(b"%"))
            except ValueError:
                continue
            if raw.endswith(b"%"):
                num = round(num / 100.0, 6)
            if name in (b"Draft acceptance rate", b"Avg Draft acceptance rate"):
                payload["spec_accept_rate"] = num
            elif name == b"Mean acceptance length":
                payload["spec_accept_length"] = num
        return STATS, ("stats", payload)

    # -- requests -----------------------------------------------------------------------

    def _remember(self, rid: str) -> None:
        recent = self._recent
        if rid in recent:
            return  # re-received: keeps its place in the window
        recent[rid] = None
        self.remembered += 1
        if len(recent) > _RECENT_IDS:
            recent.popitem(last=False)
        notes = self.boundary
        if notes is not None and len(notes.first_inserted) < _RECENT_IDS:
            notes.first_inserted.append(rid)

    def _canonical(self, rid: str) -> str:
        """Engine-side ``<id>-<8hex>`` -> the front-end ``<id>`` we saw received."""
        if rid in self._recent or rid[-9:-8] != "-":
            return rid
        m = _ID_SUFFIX_RE.search(rid)
        if m is not None:
            base = rid[: m.start()]
            if base in self._recent:
                return base
            if self.boundary is not None:
                self.boundary.unmapped.append((rid, base, self.remembered))
        return rid

    def _emit_requests(
        self, payloads: list[RequestPayload], kind: str, ts: float | None
    ) -> ParsedLine:
        if not payloads:
            return kind, None
        for p in payloads:
            if ts is not None:
                p.setdefault("ts", ts)
        for extra in payloads[1:]:
            self.pending.append(("request", extra))
        return kind, ("request", payloads[0])

    def _request(self, msg: bytes, ts: float | None) -> ParsedLine | None:
        # Substring checks pick the one regex to run (each would scan the whole line).
        if b"Received request " in msg:
            m = _RECEIVED_RE.search(msg)
            if m is not None:
                return self._received(decode(m.group("id")), msg[m.end() :], ts)
        if b" details: " in msg:
            m = _DETAILS_RE.search(msg)
            if m is not None:
                rid = self._canonical(decode(m.group("id")))
                return self._received(rid, msg[m.end() :], ts, details=True)
        if b"Generated response " in msg:
            m = _GENERATED_RE.search(msg)
            if m is not None:
                return self._generated(m, msg[m.end() :], ts)
        if (
            b"Added request" not in msg
            and b"Aborted request" not in msg
            and (b"Finished request" not in msg)
        ):
            return None
        m = _LIFECYCLE_RE.match(msg) or _LIFECYCLE_RE.search(msg)
        if m is not None:
            what = m.group("what")
            state = {b"Added": "running", b"Aborted": "aborted", b"Finished": "finished"}[what]
            payloads: list[RequestPayload] = []
            ids = msg[m.end() :].rstrip()
            if ids.endswith(b"."):
                ids = ids[:-1]
            for raw in ids.split(b","):
                rid = decode(raw.strip().strip(b"'\"[]."))
                if not rid or " " in rid:
                    continue
                payload: RequestPayload = {"request_id": self._canonical(rid), "state": state}
                if ts is not None and state != "running":
                    payload["finished_ts"] = ts
                payloads.append(payload)
            if payloads:
                return self._emit_requests(payloads, REQUEST, ts)
        return None

    def _received(
        self, rid: str, body: bytes, ts: float | None, details: bool = False
    ) -> ParsedLine:
        payload: RequestPayload = {"request_id": rid}
        if not details:
            payload["state"] = "received"
            self._remember(rid)
            if ts is not None:
                payload["received_ts"] = ts
        pos = 0
        if body.startswith(b"prompt: "):
            prompt, pos = _repr_string(body, 8)
            if prompt is not None:
                payload["prompt"] = prompt
        at = _find_key(body, _PROMPT_IDS_KEYS, pos)
        if at >= 0:
            count, ids = _id_list(body, at, self.keep_token_ids)
            if count is not None:
                payload["prompt_tokens"] = count
            if ids is not None:
                payload["prompt_token_ids"] = ids
        return self._emit_requests([payload], REQUEST, ts)

    def _generated(self, m: re.Match[bytes], body: bytes, ts: float | None) -> ParsedLine:
        rid = self._canonical(decode(m.group("id")))
        payload: RequestPayload = {"request_id": rid}
        stream = m.group("stream")
        delta = stream is not None and b"delta" in stream
        pos = 0
        if body.startswith(b"output: "):
            text, pos = _repr_string(body, 8)
            if text is not None and not delta:
                payload["completion"] = text
        at = _find_key(body, _OUTPUT_IDS_KEYS, pos)
        if at >= 0 and not delta:
            count, ids = _id_list(body, at, self.keep_token_ids)
            if count is not None:
                payload["completion_tokens"] = count
            if ids is not None:
                payload["completion_token_ids"] = ids
            pos = at
        fr = body.find(b"finish_reason: ", pos)
        if fr >= 0:
            reason = decode(body[fr + 15 :].split(b",", 1)[0].strip().rstrip(b".").strip(b"'\""))
            if reason and reason != "None":
                payload["finish_reason"] = reason
                if not delta:
                    payload["state"] = "aborted" if reason == "abort" else "finished"
                    if ts is not None:
                        payload["finished_ts"] = ts
        return self._emit_requests([payload], REQUEST, ts)


class VllmFamily:
    name = "vllm"
    description = "vLLM server log (0.2 to V1), incl. uvicorn, /metrics, response bodies"

    def sniff(self, lines: list[bytes]) -> float:
        nonblank = strong = weak = 0
        for raw in lines:
            line = basic_clean(raw)
            if not line.strip():
                continue
            nonblank += 1
            if b"req_id=" in line and b" | " in line:
                continue  # key=value request lines belong to the kvline family
            if (
                HEAD_SEARCH_RE.search(line) is not None
                or (b" pid=" in line and PROC_RE.search(line))
                or b"Received request " in line
                or b"Avg prompt throughput" in line
                or prometheus.family_of(line) == "vllm"
                or b'"kv_transfer_params"' in line
                or b"k05VTVBZ" in line
            ):
                strong += 1
            elif line[:1] == b"{" and b"meta_info" in line:
                continue  # SGLang /generate bodies
            elif (
                b"prompt_tokens" in line
                or b"CompletionUsage(" in line
                or ACCESS_RE.search(line) is not None
            ):
                weak += 1
        if not nonblank:
            return 0.0
        evidence = (strong + 0.5 * weak) / nonblank
        if strong == 0:
            return min(0.45, evidence)
        return min(0.95, 0.5 + evidence)

    def new_parser(
        self,
        *,
        reference_time: float | None = None,
        num_layers: int | None = None,
        top_k: int | None = None,
        keep_token_ids: bool = False,
    ) -> VllmParser:
        return VllmParser(
            reference_time=reference_time,
            num_layers=num_layers,
            top_k=top_k,
            keep_token_ids=keep_token_ids,
        )


FAMILY = VllmFamily()


def parse_all(lines: list[bytes], **options: Any) -> list[ParsedLine]:
    """Convenience for tests and tools: parse lines with a fresh parser."""
    parser = FAMILY.new_parser(**options)
    return [parser.parse(line) for line in lines]
