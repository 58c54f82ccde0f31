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


def _by_prefix(codes: tuple[int, ...]) -> dict[bytes, bytes]:
    """UTF-8 encodings of ``codes`` grouped as {all bytes but the last: last bytes}."""
    groups: dict[bytes, bytes] = {}
    for code in codes:
        encoded = chr(code).encode("utf-8")
        groups[encoded[:-1]] = groups.get(encoded[:-1], b"") + encoded[-1:]
    return groups


_GROUPS = _by_prefix(JSON_ESCAPED)
#: One alternative per prefix (``\xc2[\x80-\x9f]``-like), so the regex stays simple.
_JSON_ESCAPED_UTF8 = re.compile(
    b"|".join(
        re.escape(prefix)
        + b"["
        + b"".join(re.escape(last[i : i + 1]) for i in range(len(last)))
        + b"]"
        for prefix, last in _GROUPS.items()
    )
)
#: Where such a sequence may start: ``escape_json`` runs its regex only on output that
#: holds one of these (a few memchr-speed scans; most output holds none).
_LEADS = tuple(prefix or last for prefix, last in _GROUPS.items())


def _json_escape(match: re.Match[bytes]) -> bytes:
    return f"\\u{ord(match.group().decode('utf-8')):04x}".encode("ascii")


def escape_json(data: bytes) -> bytes:
    """Encoded JSON with DEL, C1 controls and invisible characters written as ``\\uXXXX``.

    Valid because these characters can only occur inside JSON strings (everything outside
    strings is ASCII), where ``\\uXXXX`` means the same character.
    """
    if any(lead in data for lead in _LEADS):
        return _JSON_ESCAPED_UTF8.sub(_json_escape, data)
    return data
