"""The sampling parameters of a vLLM ``Received request`` line: ``max_tokens``,
``temperature``, ``top_p`` and ``n`` out of its ``SamplingParams(...)`` repr.

Every version prints the repr's fields in the same order (log-formats.md §3.2):
``SamplingParams(n=1, [best_of=1, ]presence_penalty=0.0, ..., temperature=0.7,
top_p=0.95, top_k=0, ..., stop=[], stop_token_ids=[], [bad_words=[], ]...,
max_tokens=100, min_tokens=0, ...)``. The fast path finds the four keys with ``bytes.find``
when no quote comes before ``max_tokens=``: then no string (a client's ``stop`` text)
can hold a look-alike key, and every ``, key=`` found is the repr's own. Otherwise the
repr is read whole by ``formats.pylit`` (the rare line whose stop strings are printed).
"""

from __future__ import annotations

from typing import Any

from sparseety_tui.events import SamplingInfo
from sparseety_tui.formats.numbers import count, real
from sparseety_tui.formats.pylit import LiteralError, as_float, as_int, parse_value_at

_OPEN = b"SamplingParams("
_MAX_TOKENS = b", max_tokens="
#: (key as the repr prints it after the first field, payload name, is a count)
_FIELDS = (
    (b", temperature=", "temperature", False),
    (b", top_p=", "top_p", False),
    (_MAX_TOKENS, "max_tokens", True),
)
#: How far a value may reach (``None``, a count, a float's repr).
_VALUE_BYTES = 32


def sampling_params(body: bytes, pos: int = 0) -> SamplingInfo | None:
    """The sampling fields of the first ``SamplingParams(`` at or after ``pos``; None when
    there is none. A field that is ``None`` or not a number is left out (unknown)."""
    start = body.find(_OPEN, pos)
    if start < 0:
        return None
    start += len(_OPEN)
    at = body.find(_MAX_TOKENS, start)
    if at < 0 or body.find(b"'", start, at) >= 0 or body.find(b'"', start, at) >= 0:
        return _slow(body, start - len(_OPEN))
    info: SamplingInfo = {}
    if body.startswith(b"n=", start):
        _put(info, "n", body, start + 2, True)
    for key, name, is_count in _FIELDS:
        found = body.find(key, start, at + len(key))
        if found >= 0:
            _put(info, name, body, found + len(key), is_count)
    return info


def _put(info: SamplingInfo, name: str, body: bytes, at: int, is_count: bool) -> None:
    head = body[at : at + _VALUE_BYTES]
    end = len(head)
    for stop in (b",", b")"):
        i = head.find(stop)
        if 0 <= i < end:
            end = i
    text = head[:end]
    value: int | float | None = count(text) if is_count else real(text)
    if value is not None:
        info[name] = value  # type: ignore[literal-required]


def _slow(body: bytes, start: int) -> SamplingInfo | None:
    """The repr read whole (a stop string before ``max_tokens``, or an unusual shape)."""
    try:
        value, _end = parse_value_at(body[start:].decode("utf-8", "replace"), 0)
    except (LiteralError, RecursionError, ValueError):
        return None
    if not isinstance(value, dict) or value.get("__class__") != "SamplingParams":
        return None
    info: SamplingInfo = {}
    fields: dict[str, Any] = value
    n, max_tokens = as_int(fields.get("n")), as_int(fields.get("max_tokens"))
    temperature, top_p = as_float(fields.get("temperature")), as_float(fields.get("top_p"))
    if n is not None:
        info["n"] = n
    if temperature is not None:
        info["temperature"] = temperature
    if top_p is not None:
        info["top_p"] = top_p
    if max_tokens is not None:
        info["max_tokens"] = max_tokens
    return info
