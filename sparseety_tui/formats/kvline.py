"""``key=value | key=value`` request lines, as popularised by an SGLang monitoring tutorial.

Real sample (with and without a leading timestamp)::

    INFO:sglang.srt.server:Request completed | req_id=5a8b9c | prompt_tokens=128 | completion_tokens=64 | latency=1.23s | hit_cache=True | model=Qwen-7B
    2025-04-01 10:00:01 INFO:sglang.srt.server:Request completed | req_id=5a8b9c | ...

No SGLang release prints this line (shared/reference/log-formats.md §6.2): it comes from user
wrappers and proxies, so keys are read generically and mapped by name. ``hit_cache`` is a
boolean, not a token count: it never becomes ``cached_tokens``. A value that is not a
plain number (``completion_tokens=¹²``, 5,000 digits, ``latency=1e400s``) leaves its field
unknown; the rest of the line is read (formats/numbers.py).
"""

from __future__ import annotations

import re

from sparseety_tui.events import LineKind, ParsedLine, RequestPayload
from sparseety_tui.formats.base import note_ignored
from sparseety_tui.formats.generic import AnyLinesParser
from sparseety_tui.formats.numbers import count, real
from sparseety_tui.formats.timestamps import parse_timestamp, timestamp_problem

_LEADING_TS = re.compile(rb"^(\d{4}-\d{2}-\d{2})[ T](\d{2}:\d{2}:\d{2}(?:[.,]\d+)?)\s+")
_SEPARATOR = b" | "
#: Python's default logging format, ``LEVEL:logger.name:message`` (optionally timestamped).
_LOGGER_LINE = re.compile(
    rb"^(?:\d{4}-\d{2}-\d{2}[ T]\d{2}:\d{2}:\d{2}(?:[.,]\d+)?\s+)?"
    rb"(?:DEBUG|INFO|WARNING|ERROR|CRITICAL):[\w.]+:"
)

_ID_KEYS = ("req_id", "request_id", "rid", "id")
_INT_FIELDS = {
    "prompt_tokens": "prompt_tokens",
    "input_tokens": "prompt_tokens",
    "completion_tokens": "completion_tokens",
    "output_tokens": "completion_tokens",
    "cached_tokens": "cached_tokens",
}
_SECONDS_FIELDS = {
    "latency": "latency_s",
    "latency_s": "latency_s",
    "e2e_latency": "latency_s",
    "ttft": "ttft_s",
    "ttft_s": "ttft_s",
}
_TRUE = {"true", "1", "yes"}
_FALSE = {"false", "0", "no"}


def _seconds(text: str) -> float | None:
    """``1.23s`` / ``1230ms`` / ``1.23`` as seconds (None unless a finite number)."""
    if text.endswith("ms"):
        millis = real(text[:-2])
        return None if millis is None else millis / 1000.0
    if text.endswith("s"):
        return real(text[:-1])
    return real(text)


class KvLineParser(AnyLinesParser):
    """Per-file parser; tracebacks, error and access lines are read as in any file
    (formats.generic)."""

    def _parse(self, line: bytes) -> ParsedLine:
        if _SEPARATOR not in line or self._any.tb.open_by_key:
            if not line.strip():
                self._any.tb.blank()
                return LineKind.BLANK, None
            parsed = self._any.parse(line)
            if parsed is not None:
                return parsed
            if _SEPARATOR in line:
                return self._request(line)
            if _LOGGER_LINE.match(line):
                return LineKind.NOISE, None  # the same logger's other messages
            self.last_reason = "no ' | ' separated fields"
            return LineKind.UNPARSED, None
        return self._request(line)

    def _request(self, line: bytes) -> ParsedLine:
        text = line.decode("utf-8", errors="replace").rstrip()
        head, *parts = text.split(" | ")
        fields: dict[str, str] = {}
        for part in parts:
            key, sep, value = part.partition("=")
            if sep:
                fields[key.strip()] = value.strip()
        rid = next((fields[k] for k in _ID_KEYS if fields.get(k)), None)
        if rid is None:
            self.last_reason = "key=value line without req_id"
            return LineKind.UNPARSED, None
        payload: RequestPayload = {"request_id": rid}
        for key, value in fields.items():
            if key in _INT_FIELDS:
                tokens = count(value)  # not isdigit(): it takes ``¹²``, which int() refuses
                if tokens is not None:
                    payload[_INT_FIELDS[key]] = tokens  # type: ignore[literal-required]
            elif key in _SECONDS_FIELDS:
                seconds = _seconds(value)
                if seconds is not None:
                    payload[_SECONDS_FIELDS[key]] = seconds  # type: ignore[literal-required]
            elif key == "model":
                payload["model"] = value
            elif key == "hit_cache":
                lowered = value.lower()
                if lowered in _TRUE:
                    payload["cache_hit"] = True
                elif lowered in _FALSE:
                    payload["cache_hit"] = False
        if "completed" in head.lower() or "finished" in head.lower():
            payload["state"] = "finished"
        match = _LEADING_TS.match(line)
        if match:
            stamp = f"{match.group(1).decode()} {match.group(2).decode().replace(',', '.')}"
            ts = parse_timestamp(stamp)
            if ts is not None:
                payload["ts"] = ts
            else:  # a date that does not exist, or before 1970
                note_ignored(self.ignored, "ts", timestamp_problem(stamp))
        return LineKind.KV_REQUEST, ("request", payload)


class KvLineFamily:
    name = "kv"
    description = "'key=value | key=value' request lines (req_id=..., prompt_tokens=...)"
    scan_requests = None  # no bulk fast paths (formats.base.FormatFamily)
    scan_server = None
    decode_simple_block = None
    range_start = None  # no state across lines: a split read may start anywhere

    def sniff(self, lines: list[bytes]) -> float:
        nonblank = hits = 0
        for line in lines:
            if not line.strip():
                continue
            nonblank += 1
            if _SEPARATOR in line and (b"req_id=" in line or b"request_id=" in line):
                hits += 1
        return 0.9 * hits / nonblank if nonblank else 0.0

    def new_parser(self, *, reference_time: float | None = None) -> KvLineParser:
        return KvLineParser()  # its timestamps carry the year


FAMILY = KvLineFamily()
