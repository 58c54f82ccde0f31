"""Show log-derived text literally in the UI: ``escape``d, and as ``rich.text.Text``.

The rule itself (which characters become visible escapes) is ``core.text.escape``,
shared with the CLI's output. Everything that came from a log goes through ``escape``
before it reaches the screen, and is wrapped in ``rich.text.Text`` (never a markup
string), so that Rich/Textual markup such as ``[bold red]`` or ``[link=...]`` is shown as
typed.

With ``--redact`` (``set_redactor``), ``escape`` redacts first, on the text as logged,
then escapes: every log-derived string on the screen, and so in screenshots, copies and
text dumps, is redacted by the one funnel it already goes through.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import lru_cache

from rich.style import Style
from rich.text import Text

from sparseety_tui.core.redact import Redactor
from sparseety_tui.core.text import escape as escape_literal

__all__ = ["decode", "display_path", "escape", "redacting", "safe_text", "set_redactor"]

#: The redaction of the running app (None: off). A cache, as the same cells are drawn
#: every frame.
_redact: Callable[[str], str] | None = None


def set_redactor(redactor: Redactor | None) -> None:
    """Redact everything ``escape`` shows from now on (None: stop)."""
    global _redact
    _redact = None if redactor is None else lru_cache(maxsize=8192)(redactor.text)


def redacting() -> bool:
    return _redact is not None


def redact(text: str) -> str:
    """``text`` redacted when redaction is on, as it is otherwise (not escaped)."""
    return text if _redact is None else _redact(text)


def escape(text: str, *, keep_newlines: bool = False) -> str:
    """``core.text.escape``, after redaction when it is on."""
    if _redact is not None:
        text = _redact(text)
    return escape_literal(text, keep_newlines=keep_newlines)


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
