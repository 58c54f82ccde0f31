"""The main screen's query: sort, filter and time window typed in its prompt, go to and
find a request id. A base class of ``MainScreen`` (screens/main.py), which shows what the
query selects; this part keeps the query and posts ``QueryChanged`` when it changes.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from textual import on, work
from textual.screen import Screen
from textual.widgets import Input

from sparseety_tui.core.query import (
    SORT_COLUMNS,
    FilterError,
    ViewQuery,
    WindowError,
    parse_filter,
    parse_window,
)
from sparseety_tui.ui.messages import QueryChanged, ReplaySeek
from sparseety_tui.ui.widgets.prompt import Prompt
from sparseety_tui.ui.widgets.request_table import RequestTable


def narrowed_by(query: ViewQuery) -> str:
    """What narrows the table, in a few words: ``filter``, ``window 10m`` or both."""
    parts = []
    if query.clauses:
        parts.append("filter")
    if query.window is not None:
        parts.append(f"window {query.window.text}")
    return " + ".join(parts)


class QueryScreen(Screen[None]):
    """The query a screen's request table shows, and the prompt that edits it."""

    def __init__(self, query: ViewQuery | None = None, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self._prompt_mode = ""  # "filter", "goto" or "window" while the prompt is open
        self._query = query if query is not None else ViewQuery()
        self._find = ""  # the last "go to" text, for n / N
        self._pending_row: int | None = None  # go to this row once the new view arrives
        self._before_prompt = self._query  # the query when the prompt opened (esc restores)

    @property
    def table(self) -> RequestTable:
        return self.query_one(RequestTable)

    def say(self, message: str, *, error: bool = False) -> None:
        """Show ``message`` on the status line (the screen that shows the table)."""
        raise NotImplementedError

    def action_sort_next(self) -> None:
        current = self._query.sort
        order: list[str | None] = [None, *SORT_COLUMNS]
        following = order[(order.index(current) + 1) % len(order)]
        self._set_query(sort=following)
        self.say("")  # the status line says the new order (ui.sorting's words)

    def action_sort_reverse(self) -> None:
        self._set_query(reverse=not self._query.reverse)

    def set_sort(self, column: str | None, reverse: bool = False) -> None:
        self._set_query(sort=column, reverse=reverse)

    def _set_query(self, **changes: Any) -> None:
        self._query = replace(self._query, serial=self._query.serial + 1, **changes)
        self.post_message(QueryChanged(self._query))

    def action_clear_filter(self) -> None:
        if self._prompt_mode:
            # Esc in the prompt cancels it: back to the filter from before it opened.
            mode = self._prompt_mode
            self._close_prompt()
            if mode == "filter" and self._query.text != self._before_prompt.text:
                self._set_query(text=self._before_prompt.text, clauses=self._before_prompt.clauses)
                self.say("filter unchanged")
            return
        if self._query.text:
            self._set_query(text="", clauses=())
            self.say("filter cleared")

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        # "/", "g" and "t" are priority bindings (they must take focus before the next key is
        # routed): while the prompt is open they are text, so the binding steps aside.
        return not (action in ("filter", "goto", "time_window") and self._prompt_mode)

    def action_filter(self) -> None:
        self._open_prompt(
            "filter",
            self._query.text,
            "filter: words, or skip>0.5 latency>2 state=finished (esc: close)",
        )

    def action_time_window(self) -> None:
        window = self._query.window
        current = ""
        if window is not None:
            since = window.since.text if window.since else ""
            current = f"{since}..{window.until.text}" if window.until else since
        self._open_prompt(
            "window",
            current,
            "time window: 10m, 2h, 10:00..10:30, since..until; empty: all (esc: close)",
        )

    def set_window(self, text: str) -> None:
        """Apply the ``t`` prompt's text (an error leaves the window as it was)."""
        try:
            window = parse_window(text)
        except WindowError as exc:
            self.say(f"time window: {exc}", error=True)
            return
        if window != self._query.window:
            self._set_query(window=window)
        if window is None:
            self.say("time window: all")
        else:
            self.table.follow = False if window.until is not None else self.table.follow
            self.say("time window set")  # the status line shows it

    def action_goto(self) -> None:
        self._open_prompt("goto", "", "go to request id (or part of it)")

    def open_seek_prompt(self) -> None:
        """The replay's ``J``: a time to play from (the app seeks, ``ReplaySeek``)."""
        self._open_prompt(
            "seek", "", "replay from: 12:03, 2026-11-30T12:03:10, 10m (before the end) (esc: close)"
        )

    def _open_prompt(self, mode: str, value: str, placeholder: str) -> None:
        prompt = self.query_one("#prompt", Prompt)
        self._prompt_mode = mode
        self._before_prompt = self._query
        prompt.remove_class("hidden")
        # Takes focus synchronously (Widget.focus() is deferred): the keys the app routes
        # after this binding ran go to the prompt, not to the table (ui/widgets/prompt.py).
        prompt.open(value, placeholder)

    def _close_prompt(self) -> None:
        prompt = self.query_one("#prompt", Prompt)
        prompt.close()
        prompt.add_class("hidden")
        self._prompt_mode = ""
        if self.focused is None:
            self.set_focus(self.table)

    @on(Input.Changed, "#prompt")
    def _prompt_changed(self, event: Input.Changed) -> None:
        if self._prompt_mode == "filter":
            self._apply_filter(event.value, final=False)

    @on(Prompt.Done)
    def _prompt_done(self, event: Prompt.Done) -> None:
        if event.value is None:
            self.action_clear_filter()  # esc: closes the prompt, restores the old filter
            return
        mode = self._prompt_mode
        self._close_prompt()
        if mode == "filter":
            self._apply_filter(event.value, final=True)
        elif mode == "goto":
            self.go_to_request(event.value.strip())
        elif mode == "window":
            self.set_window(event.value)
        elif mode == "seek":
            self.post_message(ReplaySeek(event.value))

    def _apply_filter(self, text: str, *, final: bool) -> None:
        try:
            clauses = parse_filter(text)
        except FilterError as exc:
            self.say(f"filter: {exc}", error=True)
            if final:  # not applied: back to the filter from before the prompt
                before = self._before_prompt
                self._set_query(text=before.text, clauses=before.clauses)
            return
        if text.strip() != self._query.text or clauses != self._query.clauses:
            self._set_query(text=text.strip(), clauses=clauses)
        self.table.follow = False if clauses and not final else self.table.follow
        if final or text.strip():
            # The status line already says "filter TEXT (shown/all)": say it once.
            self.say("" if text.strip() else "filter cleared")

    # -- go to and find ----------------------------------------------------------------------

    def go_to_request(self, text: str) -> None:
        if not text:
            return
        self._find = text
        row = self.table.snapshot.find(text)
        if row is not None:
            self._jump_to_row(row)
            return
        self._find_from(-1, 1)

    def _jump_to_row(self, row: int) -> None:
        position = self.table.position_of(row)
        if position is None and self._query.narrows:
            self.say(f"the request is hidden by the {narrowed_by(self._query)}: cleared it")
            self._set_query(text="", clauses=(), window=None)
            self._pending_row = row
            return
        if position is None:
            self.say("request not shown yet")
            return
        self.table.follow = False
        self.table.go_to(position)
        self.say(f"at {self.table.request_id(row)}")

    def action_find_next(self) -> None:
        if not self._find:
            self.action_goto()
            return
        self._find_from(self.table.cursor, 1)

    def action_find_previous(self) -> None:
        if not self._find:
            self.action_goto()
            return
        self._find_from(self.table.cursor, -1)

    @work(thread=True, exclusive=True, group="find")
    def _find_from(self, position: int, step: int) -> None:
        """Scan the view for the next id containing the find text (off the UI thread)."""
        snap = self.table.snapshot
        if snap.state is None:
            return
        ids = snap.state.store.ids
        needle = self._find.lower()
        count = snap.visible
        pos = position + step
        checked = 0
        while checked < count:
            if pos >= count:
                pos = 0
            elif pos < 0:
                pos = count - 1
            if needle in ids[snap.row_at(pos)].lower():
                self.app.call_from_thread(self._found, pos)
                return
            pos += step
            checked += 1
        self.app.call_from_thread(self.say, f"no request id contains {self._find!r}", error=True)

    def _found(self, position: int) -> None:
        self.table.follow = False
        self.table.go_to(position)
        row = self.table.snapshot.row_at(position)
        self.say(f"match: {self.table.request_id(row)}")

    def after_query_applied(self) -> None:
        row = self._pending_row
        if row is not None:
            self._pending_row = None
            position = self.table.position_of(row)
            if position is not None:
                self.table.follow = False
                self.table.go_to(position)
