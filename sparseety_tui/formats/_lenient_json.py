"""JSON that orjson refuses only because of a number: read it, with that number marked.

orjson rejects a whole line for one number a double cannot hold (``1e400``, ``-1e400``, an
integer of 400 digits) and for ``NaN``/``Infinity``, which Python's ``json.dumps`` writes
for a float it cannot express in JSON. The trace format ignores just that field
(docs/trace-format.md §1), so the parser needs the rest of the line: ``loads_lenient``
reads it with the standard library's decoder, giving every value orjson would give
(integers within 64 bits as ``int``, larger ones as ``float``, like orjson) and
``UNREPRESENTABLE`` in place of each number nothing can hold.

Why not formats/_pylit.py: it reads Python reprs too (single quotes, ``True``, calls), so
a line that is not JSON would become a record; this module accepts JSON only.
"""

from __future__ import annotations

import json
import math
from typing import Any


class _Unrepresentable:
    """A number no float holds (or NaN/Infinity): present in the line, value unknown."""

    __slots__ = ()

    def __repr__(self) -> str:
        return "<number not representable>"


UNREPRESENTABLE: Any = _Unrepresentable()

_INT64_MIN = -(2**63)
_UINT64_END = 2**64
#: Digits (and sign) of the longest integer that can lie in orjson's int range.
_INT_DIGITS = 20


def _parse_int(text: str) -> Any:
    if len(text) <= _INT_DIGITS:  # int() of a long digit string is slow, and limited
        value = int(text)
        if _INT64_MIN <= value < _UINT64_END:
            return value
    return _parse_float(text)  # as orjson does: an integer beyond 64 bits is a float


def _parse_float(text: str) -> Any:
    value = float(text)
    return value if math.isfinite(value) else UNREPRESENTABLE


def _parse_constant(text: str) -> Any:
    return UNREPRESENTABLE  # NaN, Infinity, -Infinity


_DECODER = json.JSONDecoder(
    parse_int=_parse_int, parse_float=_parse_float, parse_constant=_parse_constant
)


def loads_lenient(line: bytes) -> Any | None:
    """The JSON value of ``line`` with ``UNREPRESENTABLE`` for numbers orjson refuses, or
    None when the line is not JSON for another reason (then orjson's error stands)."""
    try:
        text = line.decode("utf-8")
        value = _DECODER.decode(text)
    except (UnicodeDecodeError, ValueError, RecursionError):
        return None
    # orjson refuses a lone surrogate escape ("\ud800"), which the standard decoder
    # keeps; text that cannot be encoded again must not reach the store.
    if "\\u" in text and not _encodable(value):
        return None
    return value


def contains_unrepresentable(value: Any) -> bool:
    """True when ``value`` is, or holds at any depth, an ``UNREPRESENTABLE`` number."""
    stack = [value]
    while stack:
        item = stack.pop()
        if item is UNREPRESENTABLE:
            return True
        if type(item) is list:
            stack.extend(item)
        elif type(item) is dict:
            stack.extend(item.values())
    return False


def _encodable(value: Any) -> bool:
    """Every string (keys too) of a decoded value is valid UTF-8 text."""
    stack = [value]
    while stack:
        item = stack.pop()
        if type(item) is str:
            try:
                item.encode("utf-8")
            except UnicodeEncodeError:
                return False
        elif type(item) is list:
            stack.extend(item)
        elif type(item) is dict:
            stack.extend(item)
            stack.extend(item.values())
    return True
