"""Safe parsing of Python reprs and JSON found inside log lines. Never ``eval``.

Servers print request data as Python reprs (SGLang ``Finish: obj=GenerateReqInput(...),
out={'text': ..., 'meta_info': {...}}``, vLLM ``prompt: '...'``, openai-python
``CompletionUsage(...)``) or as JSON (``{"usage": {...}}``). ``ast.literal_eval`` rejects
calls (``GenerateReqInput(...)``), ``nan``/``inf`` and SGLang's abbreviations
(``<text: 2048 chars, blake2b=...>``), so this module has its own small recursive-descent
parser that:

- accepts Python and JSON spellings (``None``/``null``, ``True``/``true`` ...), strings in
  either quote with escapes, ints, floats, ``nan``/``inf``, lists, tuples, dicts, sets;
- turns ``Name(a=1, b=[2])`` into ``{"__class__": "Name", "a": 1, "b": [2]}``;
- turns ``<anything>``, unknown bare words and integers too long for ``int()`` (over 4,300
  digits) into the ``UNKNOWN`` marker instead of failing;
- is bounded: input length (``MAX_CHARS``) and nesting depth (``MAX_DEPTH``); on anything
  it cannot read it raises ``LiteralError``, which callers catch.

``parse_value_at(text, pos)`` parses one value starting at ``pos`` and returns it with the
position after it, so a caller can read ``'meta_info': {...}`` out of a long line without
parsing the (possibly huge) prompt in front of it.
"""

from __future__ import annotations

import math
import re
from typing import Any

MAX_CHARS = 16 * 1024 * 1024
MAX_DEPTH = 64


class LiteralError(ValueError):
    """The text is not a literal this parser can read."""


class _Unknown:
    """Placeholder for a value that was present but not readable (``<...>``, bare names)."""

    __slots__ = ()

    def __repr__(self) -> str:
        return "UNKNOWN"


UNKNOWN: Any = _Unknown()

#: Longer integers are UNKNOWN (Python's ``int`` refuses more than 4,300 digits by default).
_MAX_INT_DIGITS = 4000
_WS = re.compile(r"\s*")
#: ASCII digits only (``\d`` of a str pattern also takes ``١٢``), split one way.
_NUMBER = re.compile(
    r"[-+]?(?:[0-9]+(?:\.[0-9]*)?(?:[eE][-+]?[0-9]+)?|\.[0-9]+(?:[eE][-+]?[0-9]+)?)"
)
_NAME = re.compile(r"[A-Za-z_][\w.]*")
_STR_PREFIX = re.compile(r"[rRbBuUfF]{1,2}(?=['\"])")
_SIMPLE_ESCAPES = {
    "n": "\n",
    "t": "\t",
    "r": "\r",
    "\\": "\\",
    "'": "'",
    '"': '"',
    "/": "/",
    "b": "\b",
    "f": "\f",
    "a": "\a",
    "v": "\v",
    "0": "\0",
    "\n": "",
}
_WORDS: dict[str, Any] = {
    "None": None,
    "null": None,
    "True": True,
    "true": True,
    "False": False,
    "false": False,
    "nan": float("nan"),
    "NaN": float("nan"),
    "inf": float("inf"),
    "Infinity": float("inf"),
}


def parse_literal(text: str) -> Any:
    """Parse ``text`` as one literal (trailing whitespace allowed)."""
    value, end = parse_value_at(text, 0)
    if text[end:].strip():
        raise LiteralError(f"trailing text at {end}")
    return value


def parse_value_at(text: str, pos: int) -> tuple[Any, int]:
    """Parse one value starting at ``pos``; return it and the index just after it."""
    if len(text) > MAX_CHARS:
        raise LiteralError("text too long")
    return _Parser(text).value(pos, 0)


def read_string_at(text: str, pos: int) -> tuple[str, int]:
    """Read one quoted string literal at ``pos`` (no whitespace skipping)."""
    return _Parser(text).string(pos)


class _Parser:
    __slots__ = ("_had_comma", "n", "text")

    def __init__(self, text: str) -> None:
        self.text = text
        self.n = len(text)
        self._had_comma = False

    def skip(self, pos: int) -> int:
        m = _WS.match(self.text, pos)
        return m.end() if m else pos

    def value(self, pos: int, depth: int) -> tuple[Any, int]:
        if depth > MAX_DEPTH:
            raise LiteralError("too deep")
        text = self.text
        pos = self.skip(pos)
        if pos >= self.n:
            raise LiteralError("unexpected end")
        ch = text[pos]
        if ch == "'" or ch == '"':
            return self.string(pos)
        if ch == "{":
            return self.mapping(pos + 1, depth)
        if ch == "[":
            items, end = self.sequence(pos + 1, "]", depth)
            return items, end
        if ch == "(":
            items, end = self.sequence(pos + 1, ")", depth)
            return (items[0] if len(items) == 1 and not self._had_comma else tuple(items)), end
        if ch == "<":
            close = text.find(">", pos)
            if close < 0:
                raise LiteralError("unterminated <...>")
            return UNKNOWN, close + 1
        if ch == "-" and text.startswith("-inf", pos):
            return float("-inf"), pos + 4
        m = _NUMBER.match(text, pos)
        if m is not None and ch in "0123456789+-.":
            return self._number(m)
        return self._word(pos, depth)

    def _number(self, m: re.Match[str]) -> tuple[Any, int]:
        """The number ``m`` matched: an int, a float, or UNKNOWN for one too long."""
        raw = m.group()
        end = m.end()
        if end < self.n and self.text[end] in "jJ":
            raise LiteralError("complex numbers unsupported")
        if any(c in raw for c in ".eE"):
            return float(raw), end
        if len(raw) > _MAX_INT_DIGITS:
            return UNKNOWN, end  # int() refuses it; no field holds it anyway
        return int(raw), end

    def _word(self, pos: int, depth: int) -> tuple[Any, int]:
        """A prefixed string, a constant (``None``, ``True`` ...) or a call at ``pos``;
        UNKNOWN for another name."""
        text = self.text
        m = _STR_PREFIX.match(text, pos)
        if m is not None:
            return self.string(m.end())
        m = _NAME.match(text, pos)
        if m is not None:
            word = m.group()
            end = m.end()
            if word in _WORDS:
                return _WORDS[word], end
            nxt = self.skip(end)
            if nxt < self.n and text[nxt] == "(":
                return self.call(word, nxt + 1, depth)
            return UNKNOWN, end
        raise LiteralError(f"unexpected {text[pos]!r} at {pos}")

    def string(self, pos: int) -> tuple[str, int]:
        text = self.text
        quote = text[pos]
        if quote not in "'\"":
            raise LiteralError("not a string")
        if text.startswith(quote * 3, pos):
            end = text.find(quote * 3, pos + 3)
            if end < 0:
                raise LiteralError("unterminated string")
            return text[pos + 3 : end], end + 3
        i = pos + 1
        # Fast path: no backslash before the closing quote.
        close = text.find(quote, i)
        if close < 0:
            raise LiteralError("unterminated string")
        backslash = text.find("\\", i, close)
        if backslash < 0:
            return text[i:close], close + 1
        out: list[str] = []
        n = self.n
        start = i
        surrogates = False
        while i < n:
            c = text[i]
            if c == quote:
                out.append(text[start:i])
                joined = "".join(out)
                if surrogates:  # pair them (JSON writes 😀 as two) or replace lone ones
                    joined = joined.encode("utf-16", "surrogatepass").decode("utf-16", "replace")
                return joined, i + 1
            if c == "\\":
                out.append(text[start:i])
                if i + 1 >= n:
                    break
                e = text[i + 1]
                if e in _SIMPLE_ESCAPES:
                    out.append(_SIMPLE_ESCAPES[e])
                    i += 2
                elif e in "xuU":
                    width = {"x": 2, "u": 4, "U": 8}[e]
                    digits = text[i + 2 : i + 2 + width]
                    try:
                        code = int(digits, 16)
                        out.append(chr(code))
                        surrogates = surrogates or 0xD800 <= code <= 0xDFFF
                    except ValueError:
                        out.append(text[i : i + 2 + width])
                    i += 2 + width
                else:
                    out.append("\\" + e)
                    i += 2
                start = i
                continue
            i += 1
        raise LiteralError("unterminated string")

    def sequence(self, pos: int, close: str, depth: int) -> tuple[list[Any], int]:
        items: list[Any] = []
        text = self.text
        had_comma = False
        while True:
            pos = self.skip(pos)
            if pos >= self.n:
                raise LiteralError("unterminated sequence")
            if text[pos] == close:
                self._had_comma = had_comma
                return items, pos + 1
            item, pos = self.value(pos, depth + 1)
            items.append(item)
            pos = self.skip(pos)
            if pos < self.n and text[pos] == ",":
                had_comma = True
                pos += 1
            elif pos < self.n and text[pos] == close:
                continue
            else:
                raise LiteralError(f"expected , or {close} at {pos}")

    def mapping(self, pos: int, depth: int) -> tuple[Any, int]:
        text = self.text
        out: dict[Any, Any] = {}
        items: list[Any] = []
        while True:
            pos = self.skip(pos)
            if pos >= self.n:
                raise LiteralError("unterminated dict")
            if text[pos] == "}":
                return (out if out or not items else items), pos + 1
            key, pos = self.value(pos, depth + 1)
            pos = self.skip(pos)
            if pos < self.n and text[pos] == ":":
                val, pos = self.value(pos + 1, depth + 1)
                if isinstance(key, (str, int, float, bool, tuple)) or key is None:
                    out[key] = val  # an unhashable key (a list) drops the pair
            else:
                items.append(key)  # a set literal
            pos = self.skip(pos)
            if pos < self.n and text[pos] == ",":
                pos += 1
            elif pos < self.n and text[pos] == "}":
                continue
            else:
                raise LiteralError(f"expected , or }} at {pos}")

    def call(self, name: str, pos: int, depth: int) -> tuple[Any, int]:
        """``Name(a=1, b, c=2)`` -> {"__class__": "Name", "a": 1, "c": 2} (positionals dropped)."""
        text = self.text
        out: dict[str, Any] = {"__class__": name}
        while True:
            pos = self.skip(pos)
            if pos >= self.n:
                raise LiteralError("unterminated call")
            if text[pos] == ")":
                return out, pos + 1
            m = _NAME.match(text, pos)
            if m is not None:
                after = self.skip(m.end())
                if after < self.n and text[after] == "=" and text[after + 1 : after + 2] != "=":
                    val, pos = self.value(after + 1, depth + 1)
                    out[m.group()] = val
                else:
                    _, pos = self.value(pos, depth + 1)
            else:
                _, pos = self.value(pos, depth + 1)
            pos = self.skip(pos)
            if pos < self.n and text[pos] == ",":
                pos += 1
            elif pos < self.n and text[pos] == ")":
                continue
            else:
                raise LiteralError(f"expected , or ) at {pos}")


def as_int(value: Any) -> int | None:
    """An int from a parsed value (bools and non-integral floats are not ints)."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value
    if isinstance(value, float) and value.is_integer():
        return int(value)
    return None


def as_float(value: Any) -> float | None:
    """A finite float from a parsed value (not nan, not inf, not a bool)."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    try:
        number = float(value)
    except OverflowError:  # an int beyond any float
        return None
    return number if math.isfinite(number) else None
