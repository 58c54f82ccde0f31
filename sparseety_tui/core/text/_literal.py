"""Text from logs and file names, shown literally: the one rule for the TUI and the CLI.

Log lines are attacker-influenced (prompts and request ids come from clients), and so are
file names. Whatever the tool shows, on a terminal or in JSON, goes through this module:

- ``escape`` (terminal text): C0 and C1 control characters and DEL (``\\x1b[2J``,
  ``\\x1b]0;title\\x07``, ``\\r``) become visible escapes like ``\\x1b`` and can neither move
  the cursor nor retitle the terminal; bidirectional overrides and isolates
  (U+202A-U+202E, U+2066-U+2069) and zero-width or invisible characters (ZWSP, ZWJ, BOM,
  variation selectors ...) become ``⟨U+202E⟩``, so text cannot be reordered or hidden and
  the cell width Rich computes is the width the terminal draws; the bytes of a file name
  that is not UTF-8 (Python holds them as lone surrogates) become ``\\xe9``.
- ``json_text`` (strings put into JSON): only those undecodable bytes become ``\\xe9``, so
  that every string can be encoded; JSON itself escapes the C0 controls.
- ``escape_json`` (JSON output bytes): C1 controls, DEL and the invisible characters above
  become ``\\u009b``-style escapes. The JSON stays valid and decodes to the same strings;
  only what a terminal or an editor would act on or hide is spelt out.

Wide CJK characters and emoji are kept: Rich measures them as two cells.
"""

from __future__ import annotations

import re
from typing import Any

import orjson

_NAMED = {0x09: "\\t", 0x0A: "\\n", 0x0D: "\\r"}

#: Code points shown as ⟨U+XXXX⟩: bidi controls, zero-width and other invisible formatting.
INVISIBLE = (
    0x061C,
    0x180E,
    0x2028,
    0x2029,
    *range(0x200B, 0x2010),  # ZWSP, ZWNJ, ZWJ, LRM, RLM
    *range(0x202A, 0x202F),  # LRE RLE PDF LRO RLO
    *range(0x2060, 0x2065),  # word joiner, invisible operators
    *range(0x2066, 0x206A),  # LRI RLI FSI PDI
    *range(0xFE00, 0xFE10),  # variation selectors (change emoji width in some terminals)
    0xFEFF,
    0xFFF9,
    0xFFFA,
    0xFFFB,
)

#: Lone surrogates: U+DC80-U+DCFF are the bytes 0x80-0xFF of a name that is not UTF-8
#: (``os.fsdecode``'s surrogateescape); any other one cannot come from a file name.
_SURROGATES = {
    code: f"\\x{code - 0xDC00:02x}" if 0xDC80 <= code <= 0xDCFF else f"⟨U+{code:04X}⟩"
    for code in range(0xD800, 0xE000)
}


def _table(keep_newlines: bool) -> dict[int, str]:
    table: dict[int, str] = dict(_SURROGATES)
    for code in [*range(0x00, 0x20), 0x7F, *range(0x80, 0xA0)]:
        table[code] = _NAMED.get(code, f"\\x{code:02x}")
    for code in INVISIBLE:
        table[code] = f"⟨U+{code:04X}⟩"
    if keep_newlines:
        table[0x0A] = "↵\n"
    return table


_ONE_LINE = _table(keep_newlines=False)
_MULTI_LINE = _table(keep_newlines=True)


def escape(text: str, *, keep_newlines: bool = False) -> str:
    """``text`` with every control or invisible character replaced by a visible escape.

    With ``keep_newlines``, ``\\n`` is shown as ``↵`` followed by a real line break (for
    multi-line views such as the token trace); otherwise as ``\\n``, so the result is one
    line.
    """
    return text.translate(_MULTI_LINE if keep_newlines else _ONE_LINE)


def quote(path: str) -> str:
    """A file name for a one-line message: escaped, between single quotes."""
    return f"'{escape(path)}'"


def json_text(text: str) -> str:
    """``text`` as a string JSON can hold: undecodable file-name bytes as ``\\xe9``."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return text.translate(_SURROGATES)
    return text


#: Code points ``escape_json`` spells out: DEL, C1 and the invisible ones (JSON encoders
#: already escape C0, and the strings hold no surrogates).
JSON_ESCAPED = (0x7F, *range(0x80, 0xA0), *INVISIBLE)

#: Their UTF-8 encodings, and what each is written as.
_JSON_REPLACEMENTS = {chr(code).encode("utf-8"): f"\\u{code:04x}".encode() for code in JSON_ESCAPED}
#: The bytes those encodings start with: where one may start.
_LEAD_BYTES = tuple(sorted({encoded[:1] for encoded in _JSON_REPLACEMENTS}))
_JSON_ESCAPED_UTF8 = re.compile(b"|".join(map(re.escape, _JSON_REPLACEMENTS)))
#: Above this share of lead bytes, one regex pass is cheaper than a find per lead byte.
_FIND_MAX_SHARE = 1 / 256


def escape_json(data: bytes) -> bytes:
    """Encoded JSON with DEL, C1 controls and invisible characters written as ``\\uXXXX``.

    Valid because these characters can only occur inside JSON strings (everything outside
    strings is ASCII), where ``\\uXXXX`` means the same character. Output is mostly ASCII:
    that is checked at C speed and costs nothing more; otherwise the few places where
    such a character can start (its first byte) are looked at, or, when there are many, a
    regex pass rewrites the whole block.
    """
    if data.isascii() and b"\x7f" not in data:
        return data
    budget = max(64, int(len(data) * _FIND_MAX_SHARE))
    hits: list[tuple[int, bytes]] = []
    for lead in _LEAD_BYTES:
        size = _utf8_length(lead[0])
        pos = data.find(lead)  # memchr: fast over the bytes between
        while pos >= 0:
            budget -= 1
            if budget < 0:  # dense non-ASCII text: one regex pass is cheaper
                return _JSON_ESCAPED_UTF8.sub(lambda m: _JSON_REPLACEMENTS[m.group()], data)
            if data[pos : pos + size] in _JSON_REPLACEMENTS:
                hits.append((pos, data[pos : pos + size]))
            pos = data.find(lead, pos + 1)
    if not hits:
        return data
    hits.sort()
    out: list[bytes] = []
    done = 0
    for pos, encoded in hits:
        out.append(data[done:pos])
        out.append(_JSON_REPLACEMENTS[encoded])
        done = pos + len(encoded)
    out.append(data[done:])
    return b"".join(out)


def _utf8_length(lead: int) -> int:
    """Bytes of the UTF-8 sequence that starts with byte ``lead`` (not a continuation)."""
    return 1 if lead < 0x80 else 2 if lead < 0xE0 else 3 if lead < 0xF0 else 4


#: The range of integers a JSON encoder (and most JSON readers) can hold.
_INT_MIN, _INT_MAX = -(1 << 63), (1 << 64) - 1


def json_bytes(value: Any, option: int = 0) -> bytes:
    """``orjson.dumps(value)``, for any document the tool builds.

    When a string cannot be encoded (a lone surrogate: bytes of a non-UTF-8 file name) or
    an integer does not fit in 64 bits, the document is written again with such strings as
    ``json_text`` gives them and such integers as ``null``: a number the tool cannot
    write is unknown, never wrapped. The counts the tool derives are kept in range where
    they are made (``core.figures``); this is the guarantee that no output ever fails.
    """
    try:
        return orjson.dumps(value, option=option)
    except orjson.JSONEncodeError:
        return orjson.dumps(_representable(value), option=option)


def _representable(value: Any) -> Any:
    if isinstance(value, str):
        return json_text(value)
    if isinstance(value, bool) or value is None or isinstance(value, float):
        return value
    if isinstance(value, int):
        return value if _INT_MIN <= value <= _INT_MAX else None
    if isinstance(value, dict):
        return {
            json_text(k) if isinstance(k, str) else k: _representable(v) for k, v in value.items()
        }
    if isinstance(value, list | tuple):
        return [_representable(v) for v in value]
    return value
