"""The errors view (``e``): every error the logs showed, and the selected one's whole text.

A list of errors (time, file, line, class, request, first line of the message), the
newest selected at first; below it the selected error's lines as the file holds them
(a traceback's every line, scrolled so its last line shows). ``e``/``E`` step to the next
or previous error (as in lnav), ``enter``/``o`` opens its lines in context, ``r`` the
request it names. The app pushes each new snapshot down (``refresh_content``): errors
that arrive are listed at once.
"""

from __future__ import annotations

from typing import ClassVar

from rich.text import Text
from textual import work
from textual.app import ComposeResult
from textual.binding import BindingType
from textual.containers import VerticalScroll
from textual.screen import Screen
from textual.widgets import Footer, Static

from sparseety_tui.core.store import SHORT, ErrorRecord, errors_by_kind
from sparseety_tui.formats import utc_text
from sparseety_tui.ingest.snapshot import Snapshot
from sparseety_tui.ui import keys
from sparseety_tui.ui.error_places import ErrorPlace, Places
from sparseety_tui.ui.error_text import ErrorLines, needs_thread, read_error
from sparseety_tui.ui.messages import OpenRequest
from sparseety_tui.ui.safe_text import decode, escape, safe_text
from sparseety_tui.ui.screens.error_context import ErrorContextScreen
from sparseety_tui.ui.widgets.error_list import ErrorList


def error_title(snapshot: Snapshot) -> Text:
    """``Errors 5: traceback 3 · 5xx 2`` (and how many are counted but not kept)."""
    state = snapshot.state
    out = Text("Errors ", style="bold", end="")
    if state is None:
        out.append("— (nothing read yet)")
        return out
    log = state.error_log
    out.append(f"{log.total:,}")
    by_kind = errors_by_kind(log.by_kind)
    if by_kind:
        out.append(": " + " · ".join(f"{SHORT.get(k, k)} {n:,}" for k, n in by_kind.items()))
    if log.dropped:
        out.append(f"  (the oldest {log.dropped:,} are counted, not listed)", "dim")
    return out


def error_header(record: ErrorRecord, place: ErrorPlace) -> Text:
    """The selected error in one line: where, when, class, request, status."""
    out = Text(end="")
    # class and time first: a long file name is what gets cut
    out.append(record.kind, "bold red")
    out.append("  " + (utc_text(record.ts, "%Y-%m-%d %H:%M:%S") or "time unknown"), "dim")
    out.append("  ")
    out.append(escape(place.short), "bold")
    out.append(f":{place.where}")
    if place.last is not None and place.line is not None and place.last > place.line:
        out.append(f"-{place.last:,}")
    if record.status is not None:
        out.append(f"  HTTP {record.status}")
    if record.request_id is not None:
        out.append("  request ")
        out.append(escape(record.request_id), "bold")
    return out


def error_body(record: ErrorRecord, lines: ErrorLines) -> Text:
    """The error's own lines (literally), or its message when they cannot be read."""
    out = Text(end="")
    if lines.note:
        out.append(escape(lines.note) + "\n", "italic")
    shown = [line for line in lines.lines if lines.error_first <= line.number <= lines.error_last]
    if not shown:
        if record.exception:
            out.append(escape(record.exception) + ": ", "bold")
        out.append(escape(record.message))
        return out
    for n, line in enumerate(shown):
        if n:
            out.append("\n")
        out.append(escape(decode(line.data)))
        if line.cut:
            out.append(" … (line cut)", "dim")
    return out


class ErrorsScreen(Screen[None]):
    BINDINGS: ClassVar[list[BindingType]] = list(keys.bindings(keys.ERRORS))

    DEFAULT_CSS = """
    ErrorsScreen #errors-title { height: 1; padding: 0 1; background: $panel; }
    ErrorsScreen ErrorList { height: 1fr; min-height: 4; }
    ErrorsScreen #error-header { height: 1; padding: 0 1; background: $panel; }
    ErrorsScreen #error-scroll { height: 45%; padding: 0 1; }
    """

    def __init__(self, snapshot: Snapshot) -> None:
        super().__init__(id="errors")
        self._snapshot = snapshot
        self._places = Places(snapshot)
        self._records: tuple[ErrorRecord, ...] = ()
        self._total = 0
        self._shown: ErrorRecord | None = None
        self._plain = ""

    def compose(self) -> ComposeResult:
        yield Static(id="errors-title")
        yield ErrorList(id="error-list")
        yield Static(id="error-header")
        with VerticalScroll(id="error-scroll"):
            yield Static(id="error-text")
        yield Footer(compact=True)

    def on_mount(self) -> None:
        self.refresh_content(self._snapshot)
        self.query_one(ErrorList).focus()

    @property
    def error_list(self) -> ErrorList:
        return self.query_one(ErrorList)

    @property
    def selected(self) -> ErrorRecord | None:
        cursor = self.error_list.cursor
        return self._records[cursor] if 0 <= cursor < len(self._records) else None

    def refresh_content(self, snapshot: Snapshot) -> None:
        """Show ``snapshot``'s errors; the selection stays on its error, and follows the
        newest when it was on the newest."""
        state = snapshot.state
        log = state.error_log if state is not None else None
        records = tuple(log.records) if log is not None else ()
        total = log.total if log is not None else 0
        if self._records and records is self._records:
            return
        widget = self.error_list
        old_count, cursor = len(self._records), widget.cursor
        # Records only ever append; the oldest go when the log is full.
        gone = (total - len(records)) - (self._total - old_count)
        if not old_count or cursor >= old_count - 1:
            cursor = len(records) - 1  # on the newest: stay on the newest
        else:
            cursor = max(0, cursor - gone)
        self._snapshot, self._records, self._total = snapshot, records, total
        self._places = Places(snapshot)
        self.query_one("#errors-title", Static).update(error_title(snapshot))
        widget.set_records(records, self._places, cursor)
        self._show_selected()

    def on_error_list_cursor_moved(self, _message: ErrorList.CursorMoved) -> None:
        self._show_selected()

    def _show_selected(self) -> None:
        record = self.selected
        header = self.query_one("#error-header", Static)
        if record is None:
            header.update(Text("no errors in these logs (yet)", style="dim"))
            self.query_one("#error-text", Static).update("")
            self._shown = None
            return
        if record is self._shown:
            return
        self._shown = record
        place = self._places.of(record)
        header.update(error_header(record, place))
        if needs_thread(place):
            self.query_one("#error-text", Static).update(safe_text("reading…", "dim"))
            self._read_in_thread(record, place)
        else:
            self._show_text(record, read_error(place))

    @work(thread=True, exclusive=True, group="error-text")
    def _read_in_thread(self, record: ErrorRecord, place: ErrorPlace) -> None:
        lines = read_error(place)
        self.app.call_from_thread(self._show_text, record, lines)

    def _show_text(self, record: ErrorRecord, lines: ErrorLines) -> None:
        if record is not self._shown:
            return  # another error was selected meanwhile
        body = error_body(record, lines)
        self._plain = body.plain
        self.query_one("#error-text", Static).update(body)
        # The last line of a traceback says what failed: keep it in view.
        scroll = self.query_one("#error-scroll", VerticalScroll)
        self.call_after_refresh(scroll.scroll_end, animate=False, immediate=True)

    # -- actions ------------------------------------------------------------------------------

    def action_back(self) -> None:
        self.app.pop_screen()

    def action_next_error(self) -> None:
        self.error_list.move_to(self.error_list.cursor + 1)

    def action_previous_error(self) -> None:
        self.error_list.move_to(self.error_list.cursor - 1)

    def action_context(self) -> None:
        record = self.selected
        if record is not None:
            self.app.push_screen(ErrorContextScreen(record, self._places.of(record)))

    def action_request(self) -> None:
        record = self.selected
        if record is None or record.request_id is None:
            self.notify("this error names no request", timeout=3)
            return
        row = self._snapshot.find(record.request_id)
        if row is None:
            self.notify(f"request {escape(record.request_id)} is not in the table", timeout=3)
            return
        self.post_message(OpenRequest(row))

    def action_copy(self) -> None:
        self.app.copy_to_clipboard(self._plain)
        self.notify("error text copied (OSC 52)", timeout=2)
