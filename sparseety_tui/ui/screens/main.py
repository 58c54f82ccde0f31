"""The main screen: totals strip, request table, expert heatmap, engine panel, status line."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace
from typing import TYPE_CHECKING, Any, ClassVar

from textual import on, work
from textual.app import ComposeResult
from textual.binding import BindingType
from textual.containers import Horizontal, Vertical
from textual.screen import Screen
from textual.widgets import Footer, Input

from sparseety_tui.core.figures import SPLITS, HeatMap, Totals, fleet, worst_imbalance
from sparseety_tui.core.query import (
    SORT_COLUMNS,
    FilterError,
    ViewQuery,
    WindowError,
    parse_filter,
    parse_window,
)
from sparseety_tui.core.text import short_names
from sparseety_tui.ingest.snapshot import Snapshot
from sparseety_tui.ui import keys
from sparseety_tui.ui.handoff import row_text, summary_command
from sparseety_tui.ui.messages import HandOff, OpenRequest, QueryChanged, ReplaySeek
from sparseety_tui.ui.safe_text import escape
from sparseety_tui.ui.widgets.engine_panel import EnginePanel, warning_counts
from sparseety_tui.ui.widgets.heatmap import Heatmap
from sparseety_tui.ui.widgets.prompt import Prompt
from sparseety_tui.ui.widgets.replay_bar import ReplayBar
from sparseety_tui.ui.widgets.request_table import RequestTable
from sparseety_tui.ui.widgets.status_line import StatusLine
from sparseety_tui.ui.widgets.totals_strip import (
    TotalsStrip,
    split_groups,
    split_items,
    totals_items,
)

if TYPE_CHECKING:
    from sparseety_tui.core.figures import ModelShape


def narrowed_by(query: ViewQuery) -> str:
    """What narrows the table, in a few words: ``filter``, ``window 10m`` or both."""
    parts = []
    if query.clauses:
        parts.append("filter")
    if query.window is not None:
        parts.append(f"window {query.window.text}")
    return " + ".join(parts)


#: The heat maps' note while the table is narrowed (see ``MainScreen._heat_scope``).
HEAT_SCOPE_NOTE = "(all requests)"


EXPERTS_TITLE = "Expert load (layer × expert)"
#: The heatmap title's note when it shows expert-distribution dump counts.
DUMP_SOURCE = " (dump counts)"


def expert_source(totals: Totals | None) -> tuple[HeatMap | None, str]:
    """What the expert heatmap shows: per-token routing (``experts``), else the counts of
    expert-distribution dumps (``expert_distribution``), with the title note saying so."""
    if totals is None:
        return None, ""
    if totals.experts is not None:
        return totals.experts, ""
    dumps = totals.expert_distribution
    return (dumps, DUMP_SOURCE) if dumps is not None else (None, "")


#: Below this width the side panel (heatmap, engine) is hidden; the table gets it all.
SIDE_PANEL_MIN_WIDTH = 110


class MainScreen(Screen[None]):
    BINDINGS: ClassVar[list[BindingType]] = list(keys.bindings(keys.MAIN))

    def __init__(
        self,
        shape: ModelShape,
        *,
        show_rate: bool = True,
        query: ViewQuery | None = None,
        replay: bool = False,
    ) -> None:
        """``query``: the query to start with (``tail --since/--until``'s window);
        ``replay``: show the replay bar (``tail --replay``, ``demo``)."""
        super().__init__(id="main")
        self._replay = replay
        self._shape = shape
        self._show_rate = show_rate
        self.paused = False
        self._frozen: Snapshot | None = None  # what the screen shows while paused
        self._prompt_mode = ""  # "filter", "goto" or "window" while the prompt is open
        self._query = query if query is not None else ViewQuery()
        self._find = ""  # the last "go to" text, for n / N
        self._message = ""
        self._message_is_error = False
        self._last: Snapshot | None = None
        self._pending_row: int | None = None  # go to this row once the new view arrives
        self._before_prompt = self._query  # the query when the prompt opened (esc restores)
        self._model = ""  # the model the expert heatmap shows ("": the first)
        self._split = "none"  # core.splits.SPLITS: what the totals and side panel split by
        self._group = 0  # which group of the split is shown
        #: the followed paths and their short names (core.filenames)
        self._short: tuple[tuple[str, ...], dict[str, str]] = ((), {})

    def compose(self) -> ComposeResult:
        yield TotalsStrip(id="totals")
        with Horizontal(id="body"):
            yield RequestTable(self._shape, id="requests")
            with Vertical(id="side"):
                # The engine panel first: a few lines, where a heatmap and its top list
                # can be a hundred (61 layers) and would push it out of sight.
                yield EnginePanel(id="engine", classes="hidden")
                yield Heatmap(
                    EXPERTS_TITLE,
                    "expert",
                    "no per-token routing in these logs yet",
                    top=3,
                    id="experts-heatmap",
                )
                yield Heatmap(
                    "Head skips (layer × head)",
                    "head",
                    "",
                    id="heads-heatmap",
                    classes="hidden",
                )
        yield Prompt(id="prompt", classes="hidden")
        if self._replay:
            yield ReplayBar(id="replay")
        yield StatusLine(id="status")
        yield Footer(compact=True)

    @property
    def replay_bar(self) -> ReplayBar:
        return self.query_one(ReplayBar)

    def on_mount(self) -> None:
        self.query_one(RequestTable).focus()
        self._layout_for(self.size.width)

    def on_resize(self, event: Any) -> None:
        self._layout_for(event.size.width)

    def _layout_for(self, width: int) -> None:
        self.set_class(width < SIDE_PANEL_MIN_WIDTH, "narrow")

    # -- snapshots ---------------------------------------------------------------------------

    @property
    def table(self) -> RequestTable:
        return self.query_one(RequestTable)

    def apply_snapshot(self, snap: Snapshot) -> None:
        """Called by the app on each tick with a new snapshot."""
        self._last = snap
        if self.paused and self._frozen is not None:
            self._update_status(snap)
            return
        self._show(snap)

    def _show(self, snap: Snapshot) -> None:
        self.table.set_snapshot(snap)
        if snap.query is self._query:
            self.after_query_applied()
        unparsed = sum(f.unparsed for f in snap.files)
        paths = tuple(f.path for f in snap.files)
        if paths != self._short[0]:  # named once per set of files, not per frame
            self._short = (paths, short_names(paths))
        short = self._short[1]
        items = split_items(snap.totals, self._split, self._group, short) + totals_items(
            snap.totals,
            snap.rate,
            unparsed,
            show_rate=self._show_rate,
            partial=any(f.backfilling for f in snap.files),
        )
        if snap.totals_query.narrows:
            # The figures are the table's rows only: say so before the first of them.
            items.insert(0, [("totals of ", "label"), (narrowed_by(snap.totals_query), "warn")])
        self.query_one(TotalsStrip).set_items(items)
        heat_scope = self._heat_scope(snap)
        self._show_experts(snap.totals, heat_scope)
        heads = snap.totals.head_skips if snap.totals is not None else None
        heads_map = self.query_one("#heads-heatmap", Heatmap)
        heads_map.set_summary(heads, heat_scope)
        heads_map.set_class(not heads, "hidden")
        series = snap.engine_window
        if series is None and snap.state is not None:
            series = snap.state.engine
        engine = self.query_one(EnginePanel)
        engine.set_points(
            snap.engine_points,
            series,
            focus=self._engine_focus(snap),
            events=warning_counts(snap.state),
        )
        engine.set_class(not snap.engine_points, "hidden")
        self._update_status(snap)

    def _heat_scope(self, snap: Snapshot) -> str:
        """What the heat maps cover when the table is narrowed: expert and head heat is
        counted over all requests as lines come (not kept per request), so it cannot
        follow a filter or a window; say so rather than pass it off as the table's
        (the help and README say why).
        (Hook: a heat count kept per model could follow a pure ``model=`` filter.)"""
        if not snap.totals_query.narrows:
            return ""
        return HEAT_SCOPE_NOTE

    # -- splits and models -------------------------------------------------------------------

    def _split_name(self, snap: Snapshot) -> str | None:
        """The selected group of the split (None: no split, or no group yet)."""
        names = split_groups(snap.totals, self._split, [f.path for f in snap.files])
        return names[self._group % len(names)] if names else None

    def _engine_focus(self, snap: Snapshot) -> tuple[str, str] | None:
        """What the engine panel shows of a split: one log, or one engine."""
        name = self._split_name(snap)
        if name is None or self._split not in ("file", "engine"):
            return None
        if self._split == "file":
            return ("file", name)
        engines = fleet(snap.state.engine).engines if snap.state is not None else ()
        group = next((e.group for e in engines if e.name == name), None)
        return None if group is None else ("engine", group)

    def _show_experts(self, totals: Totals | None, scope: str = "") -> None:
        """One model's expert load at a time (``m`` cycles; a split by model picks it):
        per-token routing, else expert-distribution dump counts, labelled as such."""
        heatmap = self.query_one("#experts-heatmap", Heatmap)
        experts, source = expert_source(totals)
        by_model: Mapping[str, HeatMap] = (experts.by_model if experts else None) or {}
        models = sorted(by_model)
        if self._split == "model" and self._last is not None:
            chosen = self._split_name(self._last)
            if chosen is not None and chosen not in by_model and (experts is not None or models):
                # The split's model routed nothing that was logged: say so, never show
                # another model's load under it.
                heatmap.set_title(f"Expert load: {escape(chosen)}")
                heatmap.set_summary(None, "none logged for this model")
                return
            if chosen is not None:
                self._model = chosen
        if self._model not in by_model:
            self._model = models[0] if models else ""
        shown = by_model.get(self._model, experts)
        if not models:
            heatmap.set_title(EXPERTS_TITLE)
        else:
            which = ""
            if len(models) > 1:
                which = f" ({models.index(self._model) + 1}/{len(models)}, m: next)"
            heatmap.set_title(f"Expert load: {escape(self._model)}{which}{source}")
        note = ""
        if shown is not None:
            worst, _ = worst_imbalance(shown)
            if worst is not None:
                note = f"max/mean {worst:.2f}"
        heatmap.set_summary(shown, " ".join(filter(None, (note, scope))))

    def action_cycle_model(self) -> None:
        totals = self._last.totals if self._last is not None else None
        experts = totals.experts if totals is not None else None
        models = sorted((experts.by_model if experts is not None else None) or {})
        if len(models) < 2:
            self.say("expert heatmap: one model" if models else "no expert load to show")
            return
        at = models.index(self._model) if self._model in models else -1
        self._model = models[(at + 1) % len(models)]
        if self._split == "model":  # the split's group follows the heatmap's model
            names = split_groups(totals, "model")
            if self._model in names:
                self._group = names.index(self._model)
        self.say(f"expert heatmap: {escape(self._model)}")
        self._refresh_split()

    def action_cycle_split(self) -> None:
        self._split = SPLITS[(SPLITS.index(self._split) + 1) % len(SPLITS)]
        self._group = 0
        self.say(
            f"split by {self._split}: X for the next group" if self._split != "none" else "no split"
        )
        self._refresh_split()

    def action_cycle_group(self) -> None:
        if self._split == "none":
            self.say("no split: x splits by model, file or engine")
            return
        self._group += 1
        if self._last is not None:
            name = self._split_name(self._last)
            if name is not None:
                self.say(f"{self._split}: {escape(name)}")
        self._refresh_split()

    def _refresh_split(self) -> None:
        shown = self._frozen if self.paused and self._frozen is not None else self._last
        if shown is not None:
            self._show(shown)

    def _update_status(self, snap: Snapshot) -> None:
        shown = self._frozen if self.paused and self._frozen is not None else snap
        new_rows = max(0, snap.rows - shown.rows) if self.paused else 0
        status_snap = snap if not self.paused else shown
        self.query_one(StatusLine).update_status(
            status_snap,
            follow=self.table.follow,
            paused=self.paused,
            new_rows=new_rows,
            message=self._message,
            message_is_error=self._message_is_error,
        )

    def say(self, message: str, *, error: bool = False) -> None:
        self._message = message
        self._message_is_error = error
        if self._last is not None:
            self._update_status(self._last)

    @on(RequestTable.FollowChanged)
    def _follow_changed(self) -> None:
        if self._last is not None:
            self._update_status(self._last)

    # -- actions -----------------------------------------------------------------------------

    def action_drill(self) -> None:
        row = self.table.current_row
        if row is None:
            self.say("no request selected")
            return
        self.post_message(OpenRequest(row))

    def action_copy_id(self) -> None:
        row = self.table.current_row
        if row is None:
            self.say("no request selected")
            return
        self.post_message(HandOff("request id", self.table.request_id(row), "request-id"))

    def action_copy_row(self) -> None:
        row = self.table.current_row
        if row is None:
            self.say("no request selected")
            return
        self.post_message(HandOff("row", row_text(self.table.row_cells(row)), "row"))

    def action_copy_command(self) -> None:
        """The table's filter and time window as a ready-to-run
        ``summary`` command over the files shown."""
        snap = self._last or self.table.snapshot
        paths = [f.path for f in snap.files]
        # The window as it resolved (epoch seconds, written as UTC times): the command
        # gives the same rows after the log has grown past a relative "10m".
        window = snap.window if self._query.window is not None else None
        since = window.since if window is not None else None
        until = window.until if window is not None else None
        command = summary_command(self._query.text, paths, since, until)
        self.post_message(HandOff("summary command", command, "summary-command"))

    def action_follow(self) -> None:
        if self.paused:
            self.action_pause()
        self.table.start_following()
        self.say("following the tail")

    def action_pause(self) -> None:
        self.paused = not self.paused
        if self.paused:
            self._frozen = self._last or self.table.snapshot
            self.say("paused: the view is frozen; space resumes")
        else:
            self._frozen = None
            self.say("")
            if self._last is not None:
                self._show(self._last)

    def action_sort_next(self) -> None:
        current = self._query.sort
        order: list[str | None] = [None, *SORT_COLUMNS]
        following = order[(order.index(current) + 1) % len(order)]
        self._set_query(sort=following)
        self.say("")  # the status line says the new order (ui.sorting's words)

    def action_toggle_engines(self) -> None:
        panel = self.query_one(EnginePanel)
        panel.toggle_expanded()
        self.say("engine panel: one row per engine" if panel.expanded else "engine panel: fleet")

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
