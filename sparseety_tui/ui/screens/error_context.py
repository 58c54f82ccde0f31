"""An error's lines in context (``enter``/``o`` in the errors view): the lines around it as
the file holds them, numbered, the error's own lines marked (a bar in the gutter and
bold, so the mark shows without colour too)."""

from __future__ import annotations

from typing import ClassVar

from rich.text import Text
from textual import work
from textual.app import ComposeResult
from textual.binding import BindingType
from textual.containers import ScrollableContainer
from textual.screen import Screen
from textual.widgets import Footer, Static

from sparseety_tui.core.store import ErrorRecord
from sparseety_tui.ui import keys
from sparseety_tui.ui.error_places import ErrorPlace
from sparseety_tui.ui.error_text import ErrorLines, needs_thread, read_error
from sparseety_tui.ui.safe_text import decode, escape

#: Lines shown before and after the error.
CONTEXT_LINES = 20


def context_text(lines: ErrorLines) -> Text:
    """Numbered lines, one screen row each (not wrapped: the view scrolls sideways), so
    that a row is a line and the error's place is a row number."""
    out = Text(end="", no_wrap=True, overflow="ignore")
    if lines.note:
        out.append(escape(lines.note) + "\n", "italic")
    width = len(f"{lines.lines[-1].number:,}") if lines.lines else 1
    for n, line in enumerate(lines.lines):
        if n:
            out.append("\n")
        inside = lines.error_first <= line.number <= lines.error_last
        out.append(f"{line.number:>{width},} ", "dim")
        out.append("▌" if inside else " ", "bold red" if inside else "")
        out.append(escape(decode(line.data)), "bold" if inside else "")
        if line.cut:
            out.append(" … (line cut)", "dim")
    return out


class ErrorContextScreen(Screen[None]):
    BINDINGS: ClassVar[list[BindingType]] = list(keys.bindings(keys.ERROR_CONTEXT))

    DEFAULT_CSS = """
    ErrorContextScreen #context-title { height: 1; padding: 0 1; background: $panel;
        text-style: bold; }
    ErrorContextScreen #context-scroll { height: 1fr; padding: 0 1; }
    ErrorContextScreen #context-text { width: auto; }
    """

    def __init__(self, record: ErrorRecord, place: ErrorPlace) -> None:
        super().__init__(id="error-context")
        self._record = record
        self._place = place

    def compose(self) -> ComposeResult:
        title = Text(f"{escape(self._place.short)}:{self._place.where}  ", end="")
        title.append(f"{self._record.kind}, ", "red")
        title.append(f"{CONTEXT_LINES} lines either side")
        yield Static(title, id="context-title")
        with ScrollableContainer(id="context-scroll"):
            yield Static(id="context-text")
        yield Footer(compact=True)

    def on_mount(self) -> None:
        self.query_one("#context-scroll").focus()
        if needs_thread(self._place):
            self.query_one("#context-text", Static).update(Text("reading…", style="dim"))
            self._read_in_thread()
        else:
            self._show(read_error(self._place, CONTEXT_LINES))

    @work(thread=True, exclusive=True, group="error-context")
    def _read_in_thread(self) -> None:
        lines = read_error(self._place, CONTEXT_LINES)
        self.app.call_from_thread(self._show, lines)

    def _show(self, lines: ErrorLines) -> None:
        if not lines.lines:
            text = Text(lines.note or "no lines", style="italic")
            self.query_one("#context-text", Static).update(text)
            return
        self.query_one("#context-text", Static).update(context_text(lines))
        # Start a few lines above the error, so it shows with what led to it.
        before = sum(1 for line in lines.lines if line.number < lines.error_first)
        top = max(0, before - 3) + (1 if lines.note else 0)
        self.call_after_refresh(
            self.query_one("#context-scroll", ScrollableContainer).scroll_to,
            y=top,
            animate=False,
        )

    def action_back(self) -> None:
        self.app.pop_screen()
