"""The main screen: totals strip, request table, expert heatmap, engine panel, status line."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, ClassVar

from textual import on
from textual.app import ComposeResult
from textual.binding import BindingType
from textual.containers import Horizontal, Vertical
from textual.widgets import Footer

from sparseety_tui.core.figures import SPLITS, HeatMap, Totals, fleet, worst_imbalance
from sparseety_tui.core.query import ViewQuery
from sparseety_tui.core.text import short_names
from sparseety_tui.ingest.snapshot import Snapshot
from sparseety_tui.ui import keys
from sparseety_tui.ui.handoff import row_text, summary_command
from sparseety_tui.ui.messages import HandOff, OpenRequest
from sparseety_tui.ui.safe_text import escape
from sparseety_tui.ui.screens.query_prompt import QueryScreen, narrowed_by
from sparseety_tui.ui.timing_seen import TimingSeen
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


class MainScreen(QueryScreen):
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
        super().__init__(query, id="main")
        self._replay = replay
        self._shape = shape
        self._show_rate = show_rate
        self.paused = False
        self._frozen: Snapshot | None = None  # what the screen shows while paused
        self._message = ""
        self._message_is_error = False
        self._last: Snapshot | None = None
        self._model = ""  # the model the expert heatmap shows ("": the first)
        self._split = "none"  # core.figures.SPLITS: what the totals and side panel split by
        self._group = 0  # which group of the split is shown
        #: the followed paths and their short names (core.text)
        self._short: tuple[tuple[str, ...], dict[str, str]] = ((), {})
        #: The timing columns: None follows the data (shown once a request has a part of
        #: its time known), else what ``w`` chose.
        self._timing_choice: bool | None = None
        self._timing_seen = TimingSeen()

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

    def apply_snapshot(self, snap: Snapshot) -> None:
        """Called by the app on each tick with a new snapshot."""
        self._last = snap
        if self.paused and self._frozen is not None:
            self._update_status(snap)
            return
        self._show(snap)

    def _show(self, snap: Snapshot) -> None:
        seen = self._timing_seen.look(snap)
        self.table.set_timing(seen if self._timing_choice is None else self._timing_choice)
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

    def action_toggle_timing(self) -> None:
        """The timing columns (queue, prefill, decode, why) on or off, whatever the data."""
        self._timing_choice = not self.table.timing
        self.table.set_timing(self._timing_choice)
        self.say("timing columns on" if self._timing_choice else "timing columns off")

    def action_toggle_engines(self) -> None:
        panel = self.query_one(EnginePanel)
        panel.toggle_expanded()
        self.say("engine panel: one row per engine" if panel.expanded else "engine panel: fleet")
