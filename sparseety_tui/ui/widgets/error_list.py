"""The list of errors: one row per error (time, file, line, class, request, message), a
cursor, and rows drawn only when visible (a log may have 100,000 errors).

Log text (messages, request ids, file names) is escaped and drawn as plain segments,
never read as markup.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import ClassVar

from rich.segment import Segment
from rich.style import Style
from textual.binding import BindingType
from textual.geometry import Size
from textual.message import Message
from textual.reactive import reactive
from textual.scroll_view import ScrollView
from textual.strip import Strip

from sparseety_tui.core.store import ErrorRecord
from sparseety_tui.formats import utc_text
from sparseety_tui.ui import keys
from sparseety_tui.ui.error_places import Places
from sparseety_tui.ui.fmt import fit
from sparseety_tui.ui.safe_text import escape
from sparseety_tui.ui.widgets.row_cursor import component_classes, cursor_css

#: Widths from which the request id and the date are shown.
REQUEST_MIN_WIDTH = 110
DATE_MIN_WIDTH = 130


def columns(width: int) -> list[tuple[str, str, int, str]]:
    """(key, title, width, align) of the columns at ``width`` cells; the message takes
    what is left."""
    cols = [
        ("time", "time", 19 if width >= DATE_MIN_WIDTH else 8, "left"),
        ("file", "file", 24 if width >= REQUEST_MIN_WIDTH else 16, "left"),
        ("line", "line", 9, "right"),
        ("kind", "class", 11, "left"),
    ]
    if width >= REQUEST_MIN_WIDTH:
        cols.append(("request", "request", 34, "left"))
    used = sum(w for _, _, w, _ in cols) + len(cols)
    cols.append(("message", "message", max(8, width - used), "left"))
    return cols


class ErrorList(ScrollView, can_focus=True):
    COMPONENT_CLASSES: ClassVar[set[str]] = component_classes(
        "error-list", ("header", "cursor", "dim", "kind")
    )

    DEFAULT_CSS = (
        """
    ErrorList { background: $surface; overflow-x: hidden; }
    ErrorList > .error-list--header { text-style: bold; color: $primary; }
    """
        + cursor_css("ErrorList", "error-list--cursor")
        + """
    ErrorList > .error-list--dim { color: $foreground 60%; }
    ErrorList > .error-list--kind { color: $error; text-style: bold; }
    """
    )

    BINDINGS: ClassVar[list[BindingType]] = list(keys.bindings(keys.TABLE))

    cursor: reactive[int] = reactive(0, init=False)

    class CursorMoved(Message):
        def __init__(self, position: int) -> None:
            super().__init__()
            self.position = position

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self._records: Sequence[ErrorRecord] = ()
        self._places: Places | None = None
        self._styles: dict[str, Style] = {}

    # -- data ---------------------------------------------------------------------------------

    def set_records(self, records: Sequence[ErrorRecord], places: Places, cursor: int) -> None:
        self._records, self._places = records, places
        self.virtual_size = Size(self.size.width, len(records) + 1)
        self.move_to(cursor)
        self.refresh()

    @property
    def count(self) -> int:
        return len(self._records)

    # -- cursor -------------------------------------------------------------------------------

    def move_to(self, position: int) -> None:
        count = len(self._records)
        position = max(0, min(position, count - 1)) if count else 0
        if position != self.cursor:
            self.cursor = position
        height = max(1, self.scrollable_content_region.height - 1)
        top = round(self.scroll_y)
        if position < top:
            self.scroll_to(y=position, animate=False, immediate=True)
        elif position >= top + height:
            self.scroll_to(y=position - height + 1, animate=False, immediate=True)

    def watch_cursor(self, old: int, new: int) -> None:
        self.refresh()
        self.post_message(self.CursorMoved(new))

    def action_cursor_up(self) -> None:
        self.move_to(self.cursor - 1)

    def action_cursor_down(self) -> None:
        self.move_to(self.cursor + 1)

    def action_page_up(self) -> None:
        self.move_to(self.cursor - max(1, self.size.height - 2))

    def action_page_down(self) -> None:
        self.move_to(self.cursor + max(1, self.size.height - 2))

    def action_first(self) -> None:
        self.move_to(0)

    def action_last(self) -> None:
        self.move_to(len(self._records) - 1)

    def on_click(self, event: object) -> None:
        offset = getattr(event, "y", None)
        if isinstance(offset, int) and offset >= 1:
            self.move_to(round(self.scroll_y) + offset - 1)

    def on_resize(self) -> None:
        self.virtual_size = Size(self.size.width, len(self._records) + 1)
        self.move_to(self.cursor)

    # -- rendering ----------------------------------------------------------------------------

    def _style(self, name: str) -> Style:
        style = self._styles.get(name)
        if style is None:
            style = self.rich_style if not name else self.get_component_rich_style(name)
            self._styles[name] = style
        return style

    def notify_style_update(self) -> None:
        self._styles.clear()
        super().notify_style_update()

    def render_line(self, y: int) -> Strip:
        width = self.scrollable_content_region.width
        cols = columns(width)
        base = self._style("")
        if y == 0:
            header = self._style("error-list--header")
            text = " ".join(fit(title, w, align) for _, title, w, align in cols)
            return Strip([Segment(text, header)]).extend_cell_length(width, header).crop(0, width)
        position = round(self.scroll_y) + y - 1
        if position >= len(self._records) or self._places is None:
            return Strip.blank(width, base)
        record = self._records[position]
        place = self._places.of(record)
        cursor = self._style("error-list--cursor") if position == self.cursor else None
        dim, kind = self._style("error-list--dim"), self._style("error-list--kind")
        cells = {
            "time": (_time(record.ts, cols[0][2] > 8), dim),
            "file": (escape(place.short), base),
            "line": (place.where, dim),
            "kind": (record.kind, kind),
            "request": (escape(record.request_id or "—"), base),
            "message": (escape(_first_line(record)), base),
        }
        segments: list[Segment] = []
        for i, (key, _, w, align) in enumerate(cols):
            text, style = cells[key]
            if cursor is not None:
                style = style + cursor
            if i:
                segments.append(Segment(" ", cursor if cursor is not None else base))
            segments.append(Segment(fit(text, w, align), style))
        fill = cursor if cursor is not None else base
        return Strip(segments).extend_cell_length(width, fill).crop(0, width)


def _time(ts: float | None, with_date: bool) -> str:
    if ts is None:
        return "—"
    return utc_text(ts, "%Y-%m-%d %H:%M:%S" if with_date else "%H:%M:%S") or "—"


def _first_line(record: ErrorRecord) -> str:
    if record.status is not None:  # the status first: a narrow row still shows it
        return f"HTTP {record.status}: {record.message}"
    text = record.message or record.exception
    if record.exception and record.message and record.exception not in record.message:
        text = f"{record.exception}: {record.message}"
    return text.split("\n", 1)[0]
