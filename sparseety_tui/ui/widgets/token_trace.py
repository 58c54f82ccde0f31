"""The token trace: prompt and completion as text, one styled span per token, with a cursor.

Laid out by the widget itself (word-wrap is by token, long tokens are split), so the cursor's
line is known and only the lines on screen are rendered (Line API). Skipped tokens are
styled by kind; the styles come from component classes, i.e. from the theme.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import ClassVar

from rich.cells import cell_len, get_character_cell_size
from rich.segment import Segment
from rich.style import Style
from textual.geometry import Size
from textual.message import Message
from textual.reactive import reactive
from textual.scroll_view import ScrollView
from textual.strip import Strip

from sparseety_tui.ui.safe_text import escape

#: Skip kinds in legend order; also the component class suffixes.
SKIP_ORDER = ("cached", "evicted", "masked", "dropped")


@dataclass
class TraceToken:
    text: str  # raw token text (escaped when laid out)
    phase: str  # "prompt" or "completion"
    skips: frozenset[str] = field(default_factory=frozenset)


@dataclass
class _Piece:
    token: int  # index into tokens, -1 for a label
    text: str


def _take(text: str, cells: int) -> str:
    """The longest prefix of ``text`` that fits in ``cells`` cells."""
    used = 0
    for i, ch in enumerate(text):
        used += get_character_cell_size(ch)
        if used > cells:
            return text[:i]
    return text


def skip_style_class(skips: frozenset[str]) -> str | None:
    for kind in SKIP_ORDER:
        if kind in skips:
            return kind
    return None


class TokenTrace(ScrollView, can_focus=True):
    COMPONENT_CLASSES: ClassVar[set[str]] = {
        "token-trace--prompt",
        "token-trace--completion",
        "token-trace--label",
        "token-trace--cursor",
        "token-trace--cached",
        "token-trace--evicted",
        "token-trace--masked",
        "token-trace--dropped",
    }

    DEFAULT_CSS = """
    TokenTrace { overflow-x: hidden; background: $surface; }
    TokenTrace > .token-trace--prompt { color: $foreground 80%; }
    TokenTrace > .token-trace--completion { color: $foreground; text-style: bold; }
    TokenTrace > .token-trace--label { color: $primary; text-style: bold; }
    TokenTrace > .token-trace--cursor { text-style: reverse; }
    TokenTrace > .token-trace--cached { color: $success; text-style: underline; }
    TokenTrace > .token-trace--evicted { color: $error; text-style: strike; }
    TokenTrace > .token-trace--masked { color: $warning; text-style: italic underline; }
    TokenTrace > .token-trace--dropped { color: $accent; text-style: bold underline; }
    """

    cursor: reactive[int] = reactive(0, init=False)

    class CursorMoved(Message):
        def __init__(self, index: int) -> None:
            super().__init__()
            self.index = index

    def __init__(self, *, id: str | None = None, classes: str | None = None) -> None:
        super().__init__(id=id, classes=classes)
        self.tokens: list[TraceToken] = []
        self._lines: list[list[_Piece]] = []
        self._line_of: list[int] = []  # token index -> first line it is on
        self._width = -1
        self._styles: dict[str, Style] = {}

    def set_tokens(self, tokens: list[TraceToken]) -> None:
        self.tokens = tokens
        self._width = -1
        self.cursor = 0
        self._relayout()

    # -- layout ------------------------------------------------------------------------------

    def _relayout(self) -> None:
        width = max(8, self.scrollable_content_region.width or self.size.width or 80)
        if width == self._width:
            return
        self._width = width
        lines: list[list[_Piece]] = []
        line_of: list[int] = [0] * len(self.tokens)
        current: list[_Piece] = []
        used = 0
        phase = None

        def newline() -> None:
            nonlocal current, used
            lines.append(current)
            current = []
            used = 0

        for index, token in enumerate(self.tokens):
            if token.phase != phase:
                if current:
                    newline()
                count = sum(1 for t in self.tokens if t.phase == token.phase)
                label = f"── {token.phase} ({count:,} token{'s' if count != 1 else ''}) "
                lines.append([_Piece(-1, label.ljust(width, "─")[:width])])
                phase = token.phase
            line_of[index] = len(lines)
            parts = escape(token.text, keep_newlines=True).split("\n")
            if token.text == "" and token.skips:
                parts = ["∅"]  # a skipped token with no text of its own: still show it
            for n, part in enumerate(parts):
                if n:
                    newline()
                while part:
                    room = width - used
                    size = cell_len(part)
                    if size <= room:
                        current.append(_Piece(index, part))
                        used += size
                        break
                    if used and size <= width:
                        newline()  # fits on a line of its own
                        continue
                    head = _take(part, room)
                    if not head:
                        newline()  # a wide character at the end of a line
                        continue
                    current.append(_Piece(index, head))
                    part = part[len(head) :]
                    newline()
        if current:
            lines.append(current)
        self._lines = lines
        self._line_of = line_of
        self.virtual_size = Size(width, len(lines))
        self.refresh()

    def on_resize(self) -> None:
        self._relayout()
        self._scroll_to_cursor()

    # -- cursor ------------------------------------------------------------------------------

    def move(self, delta: int) -> None:
        if self.tokens:
            self.cursor = max(0, min(len(self.tokens) - 1, self.cursor + delta))

    def move_line(self, delta: int) -> None:
        """The token on the next/previous line (same column as near as possible)."""
        if not self.tokens:
            return
        target_line = max(0, min(len(self._lines) - 1, self._line_of[self.cursor] + delta))
        for piece in self._lines[target_line]:
            if piece.token >= 0:
                self.cursor = piece.token
                return
        self.move(delta)

    def set_cursor(self, index: int) -> None:
        if self.tokens:
            self.cursor = max(0, min(len(self.tokens) - 1, index))

    def watch_cursor(self, old: int, new: int) -> None:
        self._scroll_to_cursor()
        self.refresh()
        self.post_message(self.CursorMoved(new))

    def _scroll_to_cursor(self) -> None:
        if not self.tokens or not self._line_of:
            return
        line = self._line_of[min(self.cursor, len(self._line_of) - 1)]
        height = max(1, self.scrollable_content_region.height)
        top = round(self.scroll_y)
        if line < top:
            self.scroll_to(y=max(0, line - 1), animate=False, immediate=True)
        elif line >= top + height:
            self.scroll_to(y=line - height + 2, animate=False, immediate=True)

    # -- rendering ---------------------------------------------------------------------------

    def _style(self, name: str) -> Style:
        style = self._styles.get(name)
        if style is None:
            style = self._styles[name] = self.get_component_rich_style(f"token-trace--{name}")
        return style

    def notify_style_update(self) -> None:
        self._styles.clear()
        super().notify_style_update()

    def render_line(self, y: int) -> Strip:
        width = self.scrollable_content_region.width
        index = round(self.scroll_y) + y
        if index >= len(self._lines):
            return Strip.blank(width, self.rich_style)
        segments: list[Segment] = []
        for piece in self._lines[index]:
            if piece.token < 0:
                segments.append(Segment(piece.text, self._style("label")))
                continue
            token = self.tokens[piece.token]
            style = self.rich_style + self._style(token.phase)
            kind = skip_style_class(token.skips)
            if kind is not None:
                style += self._style(kind)
            if piece.token == self.cursor:
                style += self._style("cursor")
            segments.append(Segment(piece.text, style))
        return Strip(segments).extend_cell_length(width, self.rich_style).crop(0, width)
