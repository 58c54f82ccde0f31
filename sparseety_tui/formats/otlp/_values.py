"""Typed reads of OTLP/JSON attribute values (``AnyValue``), never raising.

OTLP/JSON writes an attribute as ``{"key": k, "value": {"<type>Value": v}}``; 64-bit
integers are decimal strings (numbers are accepted too), a double may be the string
``"NaN"`` or ``"Infinity"``. A value of the wrong type (a string where a number is
expected, a negative duration, NaN) leaves its field unknown and is counted in the
parser's ``ignored`` under the attribute's name.
"""

from __future__ import annotations

import math
import sys
from typing import Any

import orjson

from sparseety_tui.formats._base import note_ignored

NOT_A_NUMBER = "not a number"
NOT_AN_INTEGER = "not an integer"
NOT_FINITE = "not finite"
NEGATIVE = "negative"
NOT_TEXT = "not a string"
NOT_A_VALUE = "not an AnyValue object"
#: Digits (and sign) of the longest integer an int64 attribute can hold.
_INT64_DIGITS = 20
_LARGEST = sys.float_info.max


def integer_text(value: object) -> int | None:
    """An OTLP/JSON 64-bit integer (a JSON integer, or a decimal string), else None."""
    if type(value) is int:
        return value
    if type(value) is str and 0 < len(value) <= _INT64_DIGITS and value.isascii():
        digits = value[1:] if value[:1] in ("-", "+") else value
        if digits.isdigit():
            return int(value)
    return None


def _double(value: object) -> float | None:
    """An OTLP/JSON double: a JSON number, or a string (``"NaN"``, ``"Infinity"``, or
    a number), else None. Not-finite values come back as they are."""
    if type(value) is float or type(value) is int:
        return float(value)
    if type(value) is str and value.isascii() and len(value) <= 40:
        try:
            return float(value)
        except ValueError:
            return None
    return None


def _plain_digits(text: str) -> bool:
    return text.isascii() and text.isdecimal()


class Attributes:
    """The attributes of one span (or span event), read by name and type."""

    __slots__ = ("ignored", "values")

    def __init__(self, raw: object, ignored: dict[str, int]) -> None:
        self.ignored = ignored
        self.values: dict[str, Any] = {}
        if type(raw) is not list:
            if raw is not None:
                note_ignored(ignored, "attributes", "not a list")
            return
        for item in raw:
            key = item.get("key") if type(item) is dict else None
            if type(key) is str:
                self.values[key] = item.get("value")
            else:
                note_ignored(ignored, "attributes", "entry without a string key")

    def __contains__(self, key: str) -> bool:
        return key in self.values

    def _raw(self, key: str) -> dict[str, Any] | None:
        """The AnyValue object of ``key``; None when absent or empty (unset)."""
        raw = self.values.get(key)
        if raw is None or raw == {}:
            return None
        if type(raw) is not dict:
            note_ignored(self.ignored, key, NOT_A_VALUE)
            return None
        return raw

    def _bad(self, key: str, reason: str) -> None:
        note_ignored(self.ignored, key, reason)

    def text(self, key: str) -> str | None:
        """A ``stringValue``."""
        raw = self._raw(key)
        if raw is None:
            return None
        value = raw.get("stringValue")
        if type(value) is str:
            return value
        self._bad(key, NOT_TEXT)
        return None

    def ident(self, key: str) -> str | None:
        """An id: a non-empty ``stringValue``, or an ``intValue`` as its decimal text."""
        raw = self._raw(key)
        if raw is None:
            return None
        value = raw.get("stringValue")
        if type(value) is str:
            return value or None
        number = integer_text(raw.get("intValue"))
        if number is not None:
            return str(number)
        self._bad(key, NOT_TEXT)
        return None

    def count(self, key: str) -> int | None:
        """A non-negative ``intValue`` (or a ``doubleValue`` that is a whole number)."""
        raw = self.values.get(key)
        if raw is None:
            return None
        if type(raw) is dict:  # the usual form first: a decimal string of a few digits
            value = raw.get("intValue")
            if type(value) is str and 0 < len(value) < _INT64_DIGITS and _plain_digits(value):
                return int(value)
        return self._count(key)

    def _count(self, key: str) -> int | None:
        raw = self._raw(key)
        if raw is None:
            return None
        number: int | None
        if "intValue" in raw:
            number = integer_text(raw["intValue"])
            if number is None:
                self._bad(key, NOT_AN_INTEGER)
                return None
        elif "doubleValue" in raw:
            double = _double(raw["doubleValue"])
            if double is None or not math.isfinite(double) or not double.is_integer():
                self._bad(key, NOT_AN_INTEGER)
                return None
            number = int(double)
        else:
            self._bad(key, NOT_A_NUMBER)
            return None
        if number < 0:
            self._bad(key, NEGATIVE)
            return None
        return number

    def amount(self, key: str) -> float | None:
        """A finite, non-negative ``doubleValue`` or ``intValue`` (seconds, a
        temperature, a top-p)."""
        raw = self.values.get(key)
        if raw is None:
            return None
        if type(raw) is dict:  # the usual form first: a finite, non-negative double
            value = raw.get("doubleValue")
            if type(value) is float and 0.0 <= value <= _LARGEST:  # (NaN fails both)
                return value
        return self._amount(key)

    def _amount(self, key: str) -> float | None:
        raw = self._raw(key)
        if raw is None:
            return None
        value: float | None
        if "doubleValue" in raw:
            value = _double(raw["doubleValue"])
        elif "intValue" in raw:
            number = integer_text(raw["intValue"])
            value = None if number is None else float(number)
        else:
            value = None
        if value is None:
            self._bad(key, NOT_A_NUMBER)
            return None
        if not math.isfinite(value):
            self._bad(key, NOT_FINITE)
            return None
        if value < 0.0:
            self._bad(key, NEGATIVE)
            return None
        return value

    def texts(self, key: str) -> list[str] | None:
        """Strings: an ``arrayValue`` of ``stringValue``s, or one ``stringValue`` (a JSON
        list in a string, as SGLang writes its finish reasons, is read as that list)."""
        raw = self._raw(key)
        if raw is None:
            return None
        if "arrayValue" in raw:
            array = raw["arrayValue"]
            values = array.get("values", []) if type(array) is dict else None
            if type(values) is list:
                out = [
                    v["stringValue"]
                    for v in values
                    if type(v) is dict and type(v.get("stringValue")) is str
                ]
                if len(out) == len(values):
                    return out
            self._bad(key, "not an array of strings")
            return None
        value = raw.get("stringValue")
        if type(value) is not str:
            self._bad(key, NOT_TEXT)
            return None
        if value.startswith("["):
            try:
                listed = orjson.loads(value)
            except orjson.JSONDecodeError:
                return [value]
            if type(listed) is list and all(type(v) is str for v in listed):
                return listed
        return [value]
