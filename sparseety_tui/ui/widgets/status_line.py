"""The status line: what is followed, follow/paused, sort and filter, backfill, last event."""

from __future__ import annotations

import os
from typing import ClassVar

from rich.text import Text
from textual.widget import Widget

from sparseety_tui.ingest.snapshot import Snapshot
from sparseety_tui.ui.safe_text import escape, redacting
from sparseety_tui.ui.sorting import sort_words
from sparseety_tui.ui.widgets.sparkline import bar


class StatusLine(Widget):
    COMPONENT_CLASSES: ClassVar[set[str]] = {
        "status-line--follow",
        "status-line--paused",
        "status-line--dim",
        "status-line--event",
        "status-line--error",
        "status-line--bar",
        "status-line--redacted",
    }

    DEFAULT_CSS = """
    StatusLine { height: 1; background: $panel; padding: 0 1; }
    StatusLine > .status-line--follow { text-style: bold; color: $success; }
    StatusLine > .status-line--paused { text-style: bold reverse; color: $warning; }
    StatusLine > .status-line--dim { color: $foreground 70%; }
    StatusLine > .status-line--event { color: $secondary; }
    StatusLine > .status-line--error { text-style: bold; color: $error; }
    StatusLine > .status-line--bar { color: $primary; }
    StatusLine > .status-line--redacted { text-style: bold reverse; color: $error; }
    """

    def __init__(self, *, id: str | None = None, classes: str | None = None) -> None:
        super().__init__(id=id, classes=classes)
        self._state: tuple[object, ...] = ()
        self._text = Text("starting…", end="")

    def update_status(
        self,
        snap: Snapshot,
        *,
        follow: bool,
        paused: bool,
        new_rows: int,
        message: str = "",
        message_is_error: bool = False,
    ) -> None:
        state = (snap.version, follow, paused, new_rows, message, message_is_error)
        if state == self._state:
            return
        self._state = state
        out = Text(no_wrap=True, overflow="ellipsis", end="")
        dim = self.get_component_rich_style("status-line--dim")
        if redacting():  # say so: a screenshot of it must say it is redacted
            out.append(" REDACTED ", self.get_component_rich_style("status-line--redacted"))
            out.append(" ")
        if paused:
            extra = f" +{new_rows:,} new" if new_rows else ""
            out.append(f" PAUSED{extra} ", self.get_component_rich_style("status-line--paused"))
        elif follow:
            out.append("FOLLOW", self.get_component_rich_style("status-line--follow"))
        else:
            out.append("scroll", dim)
        out.append("  ")
        names = [escape(os.path.basename(f.path) or f.path) for f in snap.files]
        if len(names) <= 2:
            out.append(", ".join(names) or "no files", dim)
        else:
            out.append(f"{names[0]} +{len(names) - 1} files", dim)
        lines = sum(f.lines for f in snap.files)
        out.append(f" · {lines:,} lines", dim)
        for f in snap.files:
            if f.backfilling:
                frac = f.backfill_done / f.backfill_total
                out.append(" · older part ", dim)
                out.append(bar(frac, 10), self.get_component_rich_style("status-line--bar"))
                out.append(f" {frac * 100:.0f}%", dim)
                break
        query = snap.query
        if query.text:
            out.append(f" · filter {escape(query.text)}", dim)
        if query.window is not None:
            # Relative bounds (and times of day) read as what they resolved to.
            relative = snap.window is not None and query.window.relative
            resolved = f" = {snap.window.text()}" if snap.window is not None and relative else ""
            out.append(f" · window {escape(query.window.text)}{resolved}", dim)
        if query.text or query.window is not None:
            out.append(f" ({snap.visible:,}/{snap.rows:,})", dim)
        if query.sort or query.reverse:
            out.append(f" · sort {sort_words(query.sort, query.reverse)}", dim)
        if snap.error or snap.problem:
            # Escaped: an exception message can quote log text.
            out.append(
                f" · {escape(snap.error or snap.problem or '')}",
                self.get_component_rich_style("status-line--error"),
            )
        elif message:
            style = "status-line--error" if message_is_error else "status-line--event"
            out.append(f" · {escape(message)}", self.get_component_rich_style(style))
        elif snap.events:
            out.append(
                f" · {escape(snap.events[-1])}", self.get_component_rich_style("status-line--event")
            )
        self._text = out
        self.refresh()

    def render(self) -> Text:
        return self._text
