"""Show log-derived text literally: the one place that neutralises hostile characters.

Log lines are attacker-influenced (prompts come from users). Everything that came from a
log goes through ``escape`` before it reaches the screen, and is wrapped in
``rich.text.Text`` (never a markup string), so that:

- Rich/Textual markup such as ``[bold red]`` or ``[link=...]`` is shown as typed;
- C0 and C1 control characters and DEL (``\\x1b[2J``, ``\\x1b]0;title\\x07``, ``\\r``) become
  visible escapes like ``\\x1b`` and can neither move the cursor nor retitle the terminal;
- bidirectional overrides and isolates (U+202A-U+202E, U+2066-U+2069) and zero-width or
  invisible characters (ZWSP, ZWJ, BOM, variation selectors ...) become ``⟨U+202E⟩``, so
  text cannot be reordered or hidden and the cell width Rich computes is the width the
  terminal draws.

Wide CJK characters and emoji are kept: Rich measures them as two cells.
"""

from __future__ import annotations

from rich.style import Style
from rich.text import Text

_NAMED = {0x09: "\\t", 0x0A: "\\n", 0x0D: "\\r"}

#: Code points shown as ⟨U+XXXX⟩: bidi controls, zero-width and other invisible formatting.
_INVISIBLE = (
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


def _table(keep_newlines: bool) -> dict[int, str]:
    table: dict[int, str] = {}
    for code in [*range(0x00, 0x20), 0x7F, *range(0x80, 0xA0)]:
        table[code] = _NAMED.get(code, f"\\x{code:02x}")
    for code in _INVISIBLE:
        table[code] = f"⟨U+{code:04X}⟩"
    if keep_newlines:
        table[0x0A] = "↵\n"
    return table


_ONE_LINE = _table(keep_newlines=False)
_MULTI_LINE = _table(keep_newlines=True)


def escape(text: str, *, keep_newlines: bool = False) -> str:
    """``text`` with every control or invisible character replaced by a visible escape.

    With ``keep_newlines``, ``\\n`` is shown as ``↵`` followed by a real line break (for
    multi-line views such as the token trace); otherwise as ``\\n``.
    """
    return text.translate(_MULTI_LINE if keep_newlines else _ONE_LINE)


def safe_text(text: str, style: str | Style = "", *, keep_newlines: bool = False) -> Text:
    """A ``Text`` showing ``text`` literally (escaped, never parsed as markup)."""
    return Text(escape(text, keep_newlines=keep_newlines), style=style, end="")


def decode(data: bytes) -> str:
    """Bytes of a log line as text (invalid UTF-8 becomes U+FFFD), not yet escaped."""
    return data.decode("utf-8", errors="replace")


def display_path(path: str) -> str:
    """A path as short as is unambiguous: relative to the working directory when inside it."""
    import os

    try:
        rel = os.path.relpath(path)
    except ValueError:  # another drive (Windows)
        return path
    return path if rel.startswith("..") else rel
