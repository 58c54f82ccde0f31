"""Help: generated from the key registry, plus the filter syntax and the skip legend."""

from __future__ import annotations

from typing import ClassVar

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import BindingType
from textual.containers import VerticalScroll
from textual.screen import ModalScreen
from textual.widgets import Static

from sparseety_tui.ui import keys


def help_text() -> Text:
    out = Text(end="")
    out.append("sparseety-tui keys", "bold")
    out.append("   (mouse works too: click rows, scroll, tabs)\n", "dim")
    for title, table in keys.SCREENS:
        out.append(f"\n{title}\n", "bold underline")
        seen: set[str] = set()
        for key in table:
            if key.action in seen:
                continue
            seen.add(key.action)
            out.append(f"  {keys.display(key):<14}", "bold")
            out.append(f"{key.description}\n")
    out.append("\nFilter (/)\n", "bold underline")
    out.append("  " + keys.FILTER_HELP + "\n")
    out.append("\nSkipped tokens\n", "bold underline")
    out.append(
        "  cached: prefix-cache hit (prefill skipped, still attended)\n"
        "  evicted: KV dropped for good    masked: KV kept but not attended\n"
        "  dropped: MoE capacity overflow (an expert the token was routed to "
        "skipped it)\n"
    )
    return out


class HelpScreen(ModalScreen[None]):
    BINDINGS: ClassVar[list[BindingType]] = list(keys.bindings(keys.HELP))

    DEFAULT_CSS = """
    HelpScreen { align: center middle; }
    HelpScreen > VerticalScroll {
        width: 90%; max-width: 100; height: 90%;
        border: round $primary; background: $surface; padding: 0 1;
    }
    """

    def compose(self) -> ComposeResult:
        with VerticalScroll(id="help-scroll"):
            yield Static(help_text())

    def on_mount(self) -> None:
        self.query_one("#help-scroll").focus()

    def action_back(self) -> None:
        self.app.pop_screen()
