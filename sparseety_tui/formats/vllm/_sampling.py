"""The sampling parameters of a vLLM ``Received request`` line: ``max_tokens``,
``temperature``, ``top_p`` and ``n`` out of its ``SamplingParams(...)`` repr.

Every version prints the repr's fields in the same order (log-formats.md §3.2):
``SamplingParams(n=1, [best_of=1, ]presence_penalty=0.0, ..., temperature=0.7,
top_p=0.95, top_k=0, ..., stop=[], stop_token_ids=[], [bad_words=[], ]...,
max_tokens=100, min_tokens=0, ...)``. The fast path finds the four keys with ``bytes.find``
when no quote comes before ``max_tokens=``: then no string (a client's ``stop`` text)
can hold a look-alike key, and every ``, key=`` found is the repr's own. Otherwise the
repr is read whole by ``formats._pylit`` (the rare line whose stop strings are printed).
"""

from __future__ import annotations

from typing import Any

from sparseety_tui.events import SamplingInfo
from sparseety_tui.formats._numbers import count, real
from sparseety_tui.formats._pylit import LiteralError, as_float, as_int, parse_value_at

_OPEN = b"SamplingParams("
_MAX_TOKENS = b", max_tokens="
_TEMPERATURE = b", temperature="
_TOP_P = b", top_p="
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
    # One call per line: every field read inline (this runs once per request).
    info: SamplingInfo = {}
    if body.startswith(b"n=", start):
        n = count(_value(body, start + 2))
        if n is not None:
            info["n"] = n
    t = body.find(_TEMPERATURE, start, at)
    if t >= 0:
        t += len(_TEMPERATURE)
        temperature = real(_value(body, t))
        if temperature is not None:
            info["temperature"] = temperature
        p = body.find(_TOP_P, t, at)
        if p >= 0:
            top_p = real(_value(body, p + len(_TOP_P)))
            if top_p is not None:
                info["top_p"] = top_p
    max_tokens = count(_value(body, at + len(_MAX_TOKENS)))
    if max_tokens is not None:
        info["max_tokens"] = max_tokens
    return info


def _value(body: bytes, at: int) -> bytes:
    """The text of the value at ``at``: up to the next ``,`` (``)`` for the last field),
    at most ``_VALUE_BYTES``."""
    end = body.find(b",", at, at + _VALUE_BYTES)
    if end < 0:
        end = body.find(b")", at, at + _VALUE_BYTES)
    return body[at:end] if end >= 0 else b""


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
