"""``key=value | key=value`` request lines, as popularised by an SGLang monitoring tutorial.

Real sample (with and without a leading timestamp)::

    INFO:sglang.srt.server:Request completed | req_id=5a8b9c | prompt_tokens=128 | completion_tokens=64 | latency=1.23s | hit_cache=True | model=Qwen-7B
    2025-04-01 10:00:01 INFO:sglang.srt.server:Request completed | req_id=5a8b9c | ...

No SGLang release prints this line (shared/reference/log-formats.md §6.2): it comes from user
wrappers and proxies, so keys are read generically and mapped by name. ``hit_cache`` is a
boolean, not a token count: it never becomes ``cached_tokens``. A value that is not a
plain number (``completion_tokens=¹²``, 5,000 digits, ``latency=1e400s``) leaves its field
unknown; the rest of the line is read (formats/_numbers.py).
"""

from __future__ import annotations

from collections.abc import Callable

from sparseety_tui.events import LineKind, ParsedLine, RequestPayload
from sparseety_tui.formats._base import note_ignored, share_of_lines
from sparseety_tui.formats._generic import AnyLinesParser
from sparseety_tui.formats._numbers import count, real
from sparseety_tui.formats._timestamps import parse_timestamp, timestamp_problem
from sparseety_tui.formats.shapes import KV, KV_FIELDS, KV_ID_KEYS

_LEADING_TS = KV.bytes_regex("leading_ts")
_SEPARATOR = b" | "
#: Python's default logging format, ``LEVEL:logger.name:message`` (optionally timestamped).
_LOGGER_LINE = KV.bytes_regex("logger_line")
_TRUE = {"true", "1", "yes"}
_FALSE = {"false", "0", "no"}


def _flag(text: str) -> bool | None:
    """A true/false word as a bool (None for any other word)."""
    lowered = text.lower()
    return True if lowered in _TRUE else False if lowered in _FALSE else None


def _text(text: str) -> str:
    return text


def _seconds(text: str) -> float | None:
    """``1.23s`` / ``1230ms`` / ``1.23`` as seconds (None unless a finite number)."""
    if text.endswith("ms"):
        millis = real(text[:-2])
        return None if millis is None else millis / 1000.0
    if text.endswith("s"):
        return real(text[:-1])
    return real(text)


#: How a key's value is read, by its type in ``shapes.lines.KV_FIELDS`` (``count``, not
#: ``isdigit()``: it takes ``¹²``, which ``int()`` refuses).
_CONVERT: dict[str, Callable[[str], object]] = {
    "int": count,
    "seconds": _seconds,
    "text": _text,
    "flag": _flag,
}


class KvLineParser(AnyLinesParser):
    """Per-file parser; tracebacks, error and access lines are read as in any file
    (formats._generic)."""

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
        rid = next((fields[k] for k in KV_ID_KEYS if fields.get(k)), None)
        if rid is None:
            self.last_reason = "key=value line without req_id"
            return LineKind.UNPARSED, None
        payload: RequestPayload = {"request_id": rid}
        for key, value in fields.items():
            typed = KV_FIELDS.get(key)
            if typed is not None:
                converted = _CONVERT[typed[1]](value)
                if converted is not None:
                    payload[typed[0]] = converted  # type: ignore[literal-required]
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


def _looks_like_kv(line: bytes) -> bool:
    return _SEPARATOR in line and (b"req_id=" in line or b"request_id=" in line)


class KvLineFamily:
    name = "kv"
    description = "'key=value | key=value' request lines (req_id=..., prompt_tokens=...)"
    scan_requests = None  # no bulk fast paths (formats._base.FormatFamily)
    scan_server = None
    decode_simple_block = None
    range_start = None  # no state across lines: a split read may start anywhere

    def sniff(self, lines: list[bytes]) -> float:
        return 0.9 * share_of_lines(lines, _looks_like_kv)

    def new_parser(self, *, reference_time: float | None = None) -> KvLineParser:
        return KvLineParser()  # its timestamps carry the year


FAMILY = KvLineFamily()
