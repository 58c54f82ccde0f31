"""Show log-derived text literally in the UI: ``escape``d, and as ``rich.text.Text``.

The rule itself (which characters become visible escapes) is ``core.literal.escape``,
shared with the CLI's output. Everything that came from a log goes through ``escape``
before it reaches the screen, and is wrapped in ``rich.text.Text`` (never a markup
string), so that Rich/Textual markup such as ``[bold red]`` or ``[link=...]`` is shown as
typed.
"""

from __future__ import annotations

from rich.style import Style
from rich.text import Text

from sparseety_tui.core.literal import escape

__all__ = ["decode", "display_path", "escape", "safe_text"]


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
