"""Trends (``T``): per-minute plots of latency, TTFT, the p95 of queue, prefill and decode
(shown once a request knows one of them), tokens/s, requests/s, errors and 5xx, cache hit
rate, queue and KV usage (``core.figures``), so "since when" is one look.

The app hands the screen every new snapshot while it is shown (``refresh_content``); the
trends are worked out again at most once every REFRESH_S (or four times as long as the last
computation took), on a worker thread after the first frame: a day of minutes over a
million requests takes about 0.5 s, fine once a second, not at 20 frames a second. The request trends follow the table's filter and time window when
it has them: the rows of the snapshot's view, and the query's ``since``/``until``.
"""

from __future__ import annotations

import time
from typing import Any, ClassVar

from rich.text import Text
from textual import work
from textual.app import ComposeResult
from textual.binding import BindingType
from textual.containers import Grid, VerticalScroll
from textual.screen import Screen
from textual.widgets import Footer, Static
from textual.worker import get_current_worker

from sparseety_tui.core.figures import MAX_MINUTES, Trends, compute_trends
from sparseety_tui.formats import utc_text
from sparseety_tui.ingest.snapshot import Snapshot
from sparseety_tui.ui import keys
from sparseety_tui.ui.widgets.plot import Plot

#: The least time between two computations of the trends while data flows (seconds).
REFRESH_S = 1.0
#: Plots side by side from this width on.
TWO_COLUMNS_WIDTH = 140
#: The plots' keys, in screen order (core.figures names them).
ORDER = ("latency", "ttft", "parts", "errors", "requests", "tokens", "cache", "queue", "kv")
#: Each plot's title before there is data to name it.
TITLES = {
    "latency": "latency",
    "ttft": "TTFT",
    "parts": "time per part p95",
    "errors": "errors & HTTP 5xx",
    "requests": "requests",
    "tokens": "tokens",
    "cache": "cache hit rate",
    "queue": "queue",
    "kv": "KV cache usage",
}
#: Plots shown only once they have data: most logs never say where a request's time
#: went, and a plot saying so would push the others off an 80x24 screen.
ONLY_WITH_DATA = frozenset({"parts"})
#: Percentile lines drawn highest first: p99 a full line, p95 dashed, p50 dotted.
HIGHEST_FIRST = frozenset({"latency", "ttft"})


def _window(snapshot: Snapshot) -> tuple[float | None, float | None]:
    """The table's time window as it resolved (unix seconds; None: an open side)."""
    window = snapshot.window if snapshot.query.window is not None else None
    if window is None:
        return None, None
    return window.since, window.until


def _filtered(snapshot: Snapshot) -> bool:
    """Whether the snapshot's view is a filter's rows (it may be behind the query: a view
    not computed yet is None, and then every row counts)."""
    return bool(snapshot.query.clauses) and snapshot.view is not None


def trends_of(snapshot: Snapshot) -> Trends | None:
    """The trends of a snapshot: its filter's rows and its query's time window."""
    state = snapshot.state
    if state is None:
        return None
    since, until = _window(snapshot)
    rows = snapshot.view if _filtered(snapshot) else None
    return compute_trends(state, since=since, until=until, rows=rows)


def heading(snapshot: Snapshot, trends: Trends | None) -> Text:
    out = Text(no_wrap=True, overflow="crop", end="")
    out.append("Trends per minute (UTC)")
    if trends is None or not trends.minutes:
        out.append("  no timestamped data yet")
        return out
    first, last = trends.minutes[0], trends.minutes[-1]
    same_day = utc_text(first, "%Y-%m-%d") == utc_text(last, "%Y-%m-%d")
    out.append(f"  {utc_text(first, '%Y-%m-%d %H:%M')} – ")
    out.append(f"{utc_text(last, '%H:%M' if same_day else '%Y-%m-%d %H:%M')}")
    out.append(f"  {len(trends.minutes):,} min")
    if trends.older_minutes:
        out.append(f"  (the last {MAX_MINUTES:,}; {trends.older_minutes:,} older not shown)")
    since, until = _window(snapshot)
    if since is not None or until is not None:
        out.append("  window of the table")
    if _filtered(snapshot):
        out.append("  requests: filter ")
        out.append(snapshot.query.text)  # the user's text: literal, never markup
    return out


class TrendsScreen(Screen[None]):
    BINDINGS: ClassVar[list[BindingType]] = list(keys.bindings(keys.TRENDS))

    DEFAULT_CSS = """
    TrendsScreen #trends-title { height: 1; padding: 0 1; background: $panel;
        text-style: bold; color: $primary; }
    TrendsScreen #trends-scroll { height: 1fr; padding: 0 1; }
    TrendsScreen #trends-grid { grid-size: 1; grid-gutter: 1 2; height: auto; }
    TrendsScreen #trends-grid.two { grid-size: 2; }
    TrendsScreen Plot { height: 5; }
    """

    def __init__(self, snapshot: Snapshot) -> None:
        super().__init__(id="trends")
        self._snapshot = snapshot
        self._shown_version = -1
        self._computed_at = -REFRESH_S
        self._interval = REFRESH_S  # grows with the time a computation takes
        self._pending: Any = None  # a timer for a snapshot that came too soon

    def compose(self) -> ComposeResult:
        yield Static(id="trends-title")
        with VerticalScroll(id="trends-scroll"), Grid(id="trends-grid"):
            for key in ORDER:
                yield Plot(id=f"plot-{key}")
        yield Footer(compact=True)

    def on_mount(self) -> None:
        self._layout_for(self.size.width, self.size.height)
        self._show(self._snapshot, trends_of(self._snapshot))  # the first frame complete
        self.query_one("#trends-scroll").focus()

    def on_resize(self, event: Any) -> None:
        self._layout_for(event.size.width, event.size.height)

    def _layout_for(self, width: int, height: int) -> None:
        """Two columns on a wide terminal; plots as tall as three of them per screen
        allow (3 dot rows at 80x24: 5 lines each)."""
        two = width >= TWO_COLUMNS_WIDTH
        self.query_one("#trends-grid").set_class(two, "two")
        rows = max(3, min(12, (height - 2) // 3 - 3))
        for plot in self.query(Plot):
            plot.set_rows(rows)

    def refresh_content(self, snapshot: Snapshot) -> None:
        """Show a newer snapshot: at once if the last computation is REFRESH_S old, else
        when it is (the newest snapshot then)."""
        self._snapshot = snapshot
        if snapshot.version == self._shown_version or self._pending is not None:
            return
        wait = self._computed_at + self._interval - time.monotonic()
        if wait > 0:
            self._pending = self.set_timer(wait, self._compute_pending)
            return
        self._compute(snapshot)

    def _compute_pending(self) -> None:
        self._pending = None
        if self._snapshot.version != self._shown_version:
            self._compute(self._snapshot)

    @work(thread=True, exclusive=True, group="trends")
    def _compute(self, snapshot: Snapshot) -> None:
        start = self._computed_at = time.monotonic()
        trends = trends_of(snapshot)
        # Busy at most a fifth of the time, however big the store.
        self._interval = max(REFRESH_S, 4 * (time.monotonic() - start))
        if not get_current_worker().is_cancelled:
            self.app.call_from_thread(self._show, snapshot, trends)

    def _show(self, snapshot: Snapshot, trends: Trends | None) -> None:
        if not self.is_attached:
            return  # closed (esc) while the trends were worked out
        self._shown_version = snapshot.version
        self._computed_at = time.monotonic()
        self.query_one("#trends-title", Static).update(heading(snapshot, trends))
        minutes = trends.minutes if trends is not None else ()
        for key in ORDER:
            plot = self.query_one(f"#plot-{key}", Plot)
            trend = trends.get(key) if trends is not None and trends.trends else None
            if key in ONLY_WITH_DATA:
                plot.display = trend is not None and trend.known
            if trend is None:
                plot.set_data(TITLES[key], "", "", (), minutes)
                continue
            lines = [(line.name, line.values) for line in trend.lines]
            if key in HIGHEST_FIRST:
                lines.reverse()
            plot.set_data(trend.title, trend.unit, trend.source, lines, minutes)

    def action_back(self) -> None:
        self.app.pop_screen()

    def action_scroll(self, how: str) -> None:
        scroll = self.query_one("#trends-scroll", VerticalScroll)
        {
            "up": scroll.scroll_up,
            "down": scroll.scroll_down,
            "page_up": scroll.scroll_page_up,
            "page_down": scroll.scroll_page_down,
            "home": scroll.scroll_home,
            "end": scroll.scroll_end,
        }[how]()
