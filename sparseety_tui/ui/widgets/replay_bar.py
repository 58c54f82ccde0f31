"""The replay bar: where a replay is (log time), how fast, paused or not, and its keys."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, ClassVar

from rich.text import Text
from textual.widget import Widget

from sparseety_tui.formats import utc_text


def replay_text(status: Mapping[str, Any]) -> str:
    """``▶ replay 12:03:10 UTC ×10 · 412/1,200 lines`` (``⏸`` when paused, ``■`` done)."""
    at = utc_text(status["at"], "%Y-%m-%d %H:%M:%S") or "—"
    done = status["lines"] >= status["of"]
    mark = "■" if done else "⏸" if status["paused"] else "▶"
    speed = status["speed"]
    pace = f"×{speed:g}"
    state = " done" if done else " paused" if status["paused"] else ""
    return f"{mark} replay {at} UTC {pace}{state} · {status['lines']:,}/{status['of']:,} lines"


KEYS_HINT = "P pause · . step · [ ] ∓1 min · { } ∓10 min · J seek · < > speed"


class ReplayBar(Widget):
    COMPONENT_CLASSES: ClassVar[set[str]] = {"replay-bar--keys"}
    DEFAULT_CSS = """
    ReplayBar { height: 1; background: $boost; color: $accent; padding: 0 1; text-style: bold; }
    ReplayBar > .replay-bar--keys { color: $foreground 70%; text-style: none; }
    """

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self._text = ""

    def show(self, status: Mapping[str, Any]) -> None:
        text = replay_text(status)
        if text != self._text:
            self._text = text
            self.refresh()

    def render(self) -> Text:
        out = Text(self._text or "replay", no_wrap=True, overflow="ellipsis", end="")
        out.append("  " + KEYS_HINT, self.get_component_rich_style("replay-bar--keys"))
        return out
