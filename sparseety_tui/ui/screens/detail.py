"""Request detail: token trace with skipped tokens by kind, per-token experts, heatmaps,
KV coverage, timing and the raw source lines.

The detail is built by ``core.detail.DetailCache`` (re-reads and re-parses the request's
lines) in a thread worker, so a request with tens of thousands of tokens never stalls the UI.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any, ClassVar

from rich.text import Text
from textual import on, work
from textual.app import ComposeResult
from textual.binding import BindingType
from textual.containers import Horizontal, VerticalScroll
from textual.screen import Screen
from textual.widgets import Footer, Static, TabbedContent, TabPane

from sparseety_tui.core.detail import (
    DetailCache,
    RequestDetail,
    TokenView,
    derive_times,
)
from sparseety_tui.core.figures import row_skip
from sparseety_tui.core.store import STATES, FrozenExtractor
from sparseety_tui.ui import keys
from sparseety_tui.ui.fmt import fmt_clock, fmt_count, fmt_day, fmt_seconds, known_ts
from sparseety_tui.ui.messages import HandOff
from sparseety_tui.ui.safe_text import escape
from sparseety_tui.ui.screens.detail_text import (
    kv_text,
    legend,
    number,
    raw_lines_plain,
    raw_lines_text,
    sampling_text,
    token_text,
    trace_tokens,
)
from sparseety_tui.ui.screens.detail_time import RequestTime, request_time, time_text
from sparseety_tui.ui.widgets.counts import count_text
from sparseety_tui.ui.widgets.heatmap import Heatmap, heat_rows
from sparseety_tui.ui.widgets.sparkline import bar
from sparseety_tui.ui.widgets.token_trace import SKIP_ORDER, TokenTrace

if TYPE_CHECKING:
    from sparseety_tui.core.figures import ModelShape

TABS = ("trace", "experts", "heads", "raw", "time")


class DetailScreen(Screen[None]):
    BINDINGS: ClassVar[list[BindingType]] = list(keys.bindings(keys.DETAIL))

    DEFAULT_CSS = """
    DetailScreen #detail-head { height: auto; padding: 0 1; background: $panel; }
    DetailScreen #legend { height: 1; padding: 0 1; }
    DetailScreen #trace-body { height: 1fr; }
    DetailScreen TokenTrace { width: 1fr; height: 1fr; }
    DetailScreen #token-info { width: 44; height: 1fr; padding: 0 1; border-left: vkey $primary; }
    DetailScreen.narrow #trace-body { layout: vertical; }
    DetailScreen.narrow #token-info { width: 1fr; height: 7; border-left: none;
        border-top: hkey $primary; }
    DetailScreen .pane-scroll { height: 1fr; padding: 0 1; }
    DetailScreen TabbedContent { height: 1fr; }
    DetailScreen TabPane { padding: 0; }
    """

    def __init__(
        self, row: int, state: FrozenExtractor, shape: ModelShape, details: DetailCache
    ) -> None:
        """``state``: the snapshot's frozen state the row was chosen in (a request's
        detail reads that state only); ``details``: the app's cache of built details."""
        super().__init__(id="detail")
        self.row = row
        self._state = state
        self._shape = shape
        self._details = details
        self.detail: RequestDetail | None = None
        self.time: RequestTime | None = None
        self._raw_text = ""

    def compose(self) -> ComposeResult:
        yield Static(self._head_text(None), id="detail-head")
        with TabbedContent(id="tabs", initial="trace"):
            with TabPane("1 Trace", id="trace"):
                yield Static(id="legend")
                with Horizontal(id="trace-body"):
                    yield TokenTrace(id="token-trace")
                    yield VerticalScroll(Static(id="token-info-text"), id="token-info")
            with TabPane("2 Experts", id="experts"), VerticalScroll(classes="pane-scroll"):
                yield Heatmap(
                    "Experts of this request (layer × expert)",
                    "expert",
                    "no routing",
                    id="req-experts",
                )
                yield Static(id="experts-note")
            with TabPane("3 Heads & KV", id="heads"), VerticalScroll(classes="pane-scroll"):
                yield Heatmap(
                    "Head skips of this request (layer × head)",
                    "head",
                    "no head masks",
                    id="req-heads",
                )
                yield Static(id="kv-text")
            with TabPane("4 Raw lines", id="raw"), VerticalScroll(classes="pane-scroll"):
                yield Static(id="raw-text")
            with TabPane("5 Time", id="time"), VerticalScroll(classes="pane-scroll"):
                yield Static(time_text(None, 80), id="time-text")
        yield Footer(compact=True)

    def on_mount(self) -> None:
        self._fit(self.size.width)
        self.query_one(TokenTrace).focus()
        self._load()

    def on_resize(self, event: Any) -> None:
        self._fit(event.size.width)

    def _fit(self, width: int) -> None:
        self.set_class(width < 100, "narrow")
        self.query_one("#legend", Static).update(legend(self._styles(), width))
        if self.time is not None:
            self.query_one("#time-text", Static).update(time_text(self.time, width - 2))

    def _styles(self) -> dict[str, Any]:
        trace = self.query_one(TokenTrace)
        out = {
            name: trace.get_component_rich_style(f"token-trace--{name}")
            for name in ("prompt", "completion", "label", *SKIP_ORDER)
        }
        out["dim"] = trace.get_component_rich_style("token-trace--prompt")
        return out

    @work(thread=True, exclusive=True, group="detail")
    def _load(self) -> None:
        try:
            detail = self._details.get(self._state, self.row)
        except Exception as exc:  # one request's detail must never end the app
            self.app.call_from_thread(self._failed, f"{type(exc).__name__}: {exc}")
            return
        self.app.call_from_thread(self._show, detail)
        try:
            # Against every request of the state (its peers): after the detail is shown.
            time = request_time(self._state, self.row)
        except Exception as exc:
            self.app.call_from_thread(self._time_failed, f"{type(exc).__name__}: {exc}")
            return
        self.app.call_from_thread(self._show_time, time)

    def _time_failed(self, reason: str) -> None:
        text = Text(escape(f"where the time went could not be worked out: {reason}"), "bold red")
        self.query_one("#time-text", Static).update(text)

    def _show_time(self, time: RequestTime) -> None:
        self.time = time
        self.query_one("#time-text", Static).update(time_text(time, self.size.width - 2))
        tabs = self.query_one(TabbedContent)
        if time.why is not None and not self._token_views and tabs.active == "trace":
            # A request known by its time only (a span): what there is to see is there.
            self.action_show_tab("time")

    def _failed(self, reason: str) -> None:
        out = self._head_text(None, failure=f"detail could not be built: {reason}")
        self.query_one("#detail-head", Static).update(out)

    # -- showing -----------------------------------------------------------------------------

    def _head_text(self, detail: RequestDetail | None, failure: str = "") -> Text:
        store = self._state.store
        c = store.columns
        row = self.row
        out = Text(end="")
        out.append("request ", "dim")
        out.append(escape(store.ids[row]), "bold")
        model = store.models[c["model"][row]]
        if model:
            out.append("  model ", "dim")
            out.append(escape(model))
        out.append("  state ", "dim")
        out.append(STATES[c["state"][row]])
        ratio, lower = row_skip(store, self._shape, row)
        out.append("\nprompt ", "dim")
        out.append(count_text(c["prompt_tokens"][row], c["prompt_source"][row]))
        out.append("  completion ", "dim")
        out.append(count_text(c["completion_tokens"][row], c["completion_source"][row]))
        out.append("  cached ", "dim")
        out.append(fmt_count(c["cached_tokens"][row]))
        out.append("  skip ", "dim")
        out.append("—" if ratio is None else f"{'≥' if lower else ''}{ratio * 100:.1f}%")
        k, e = c["topk_experts"][row], c["total_experts"][row]
        if k >= 0 or e >= 0:
            out.append("  k/E ", "dim")
            out.append(f"{fmt_count(k)}/{fmt_count(e)}")
        fields = detail.fields if detail is not None else {}
        first = fields.get("first_token_ts")
        finished = fields.get("finished_ts", c["finished_ts"][row])
        # The same derivations as the Extractor's (one core function), from the row and
        # what the re-read lines say.
        times = derive_times(
            received=number(fields.get("received_ts", c["received_ts"][row])),
            first_token=number(first),
            finished=number(finished),
            ttft=c["ttft_s"][row],
            latency=c["latency_s"][row],
        )
        received, ttft, latency = times.received, times.ttft, times.latency
        if known_ts(received):
            # Times after "received" as offsets: they are the TTFT and the latency.
            out.append("\nreceived ", "dim")
            out.append(fmt_clock(received))
            out.append("  first token ", "dim")
            out.append("—" if math.isnan(ttft) else f"+{fmt_seconds(ttft)}")
            out.append("  finished ", "dim")
            out.append("—" if math.isnan(latency) else f"+{fmt_seconds(latency)}")
        else:
            out.append("\nreceived — ", "dim")
            out.append(" first token ", "dim")
            out.append(fmt_clock(first))
            out.append("  finished ", "dim")
            out.append(fmt_clock(finished))
            out.append("  latency ", "dim")
            out.append(fmt_seconds(latency))
            out.append("  ttft ", "dim")
            out.append(fmt_seconds(ttft))
        ended_by = c["ended_by_ts"][row]
        if known_ts(ended_by):
            # end_unlogged: no line logged the end; the engine was idle by then.
            out.append("  ended by ", "dim")
            out.append(fmt_clock(ended_by))
        day = next((fmt_day(t) for t in (received, finished) if fmt_day(t)), "")
        if day:
            out.append(f"  {day} UTC", "dim")
        sampling = sampling_text(c, row)
        if sampling:
            out.append("\nsampling ", "dim")
            out.append(sampling)
        if failure:
            out.append("\n")
            out.append(escape(failure), "bold red")
        elif detail is None:
            out.append("\nloading…", "dim")
        else:
            if detail.cut:
                out.append(
                    f"\nthe log cut the {' and '.join(detail.cut)} (--max-log-len): the "
                    "trace shows what was logged, a prefix; its counts are lower bounds (≥)",
                    "bold yellow",
                )
            for problem in detail.problems[:3]:
                out.append("\n")
                out.append(escape(problem), "bold red")
        return out

    def _show(self, detail: RequestDetail) -> None:
        self.detail = detail
        self.query_one("#detail-head", Static).update(self._head_text(detail))
        trace = self.query_one(TokenTrace)
        tokens = trace_tokens(detail)
        trace.set_tokens(tokens)
        if not detail.tokens:
            has_text = bool(tokens)
            self.query_one("#token-info-text", Static).update(self._counts_only_text(has_text))
        else:
            self._show_token(0)
        # Experts
        experts = self.query_one("#req-experts", Heatmap)
        if detail.expert_counts:
            experts.set_data(heat_rows(detail.expert_counts))
            note = ""
        else:
            experts.set_data(None)
            note = (
                "No per-token routing for this request. A trace with `sparse.routing` "
                "([tokens][moe_layers][top_k] expert ids) or per-token `experts` "
                "events would fill this heatmap."
            )
        self.query_one("#experts-note", Static).update(Text(note, style="dim"))
        heads = self.query_one("#req-heads", Heatmap)
        heads.set_data(heat_rows(detail.head_skips) if detail.head_skips else None)
        self.query_one("#kv-text", Static).update(kv_text(detail))
        self._raw_text = raw_lines_plain(detail)
        raw_view = raw_lines_text(detail)
        self.query_one("#raw-text", Static).update(raw_view)

    def _counts_only_text(self, has_text: bool) -> Text:
        """What is known for a request with counts only, and what would fill the rest."""
        c = self._state.store.columns
        prompt, cached = c["prompt_tokens"][self.row], c["cached_tokens"][self.row]
        out = Text(end="")
        if has_text:
            out.append("Text without token boundaries (no token ids, no tokenizer).\n", "bold")
        else:
            out.append("No token text or ids in the log for this request.\n", "bold")
        if prompt > 0 and cached >= 0:
            frac = min(1.0, cached / prompt)
            out.append("prompt: cached vs computed\n", "dim")
            out.append(bar(frac, 24), "green")
            out.append(f" {cached:,} cached / {prompt - cached:,} computed\n")
        elif c["cache_hit"][self.row]:
            hit = c["cache_hit"][self.row] == 2
            out.append(f"prefix cache: {'hit' if hit else 'miss'} (no token count)\n")
        out.append(
            "\nA trace with `prompt`/`completion` text (or token ids) would fill the trace; "
            "`sparse.routing` the experts; `sparse.kv` or `kv` events the KV coverage.",
            "dim",
        )
        return out

    def _show_token(self, index: int) -> None:
        if self.detail is None or not 0 <= index < len(self._token_views):
            return
        text = token_text(self.detail, index, self._styles())
        self.query_one("#token-info-text", Static).update(text)

    @property
    def _token_views(self) -> list[TokenView]:
        return self.detail.tokens if self.detail is not None and self.detail.tokens else []

    @on(TokenTrace.CursorMoved)
    def _cursor_moved(self, event: TokenTrace.CursorMoved) -> None:
        if self._token_views:
            self._show_token(event.index)

    # -- actions -----------------------------------------------------------------------------

    def action_back(self) -> None:
        self.app.pop_screen()

    def action_token(self, delta: int) -> None:
        self.query_one(TokenTrace).move(delta)

    def action_token_line(self, delta: int) -> None:
        self.query_one(TokenTrace).move_line(delta)

    def action_skip_next(self) -> None:
        self._jump_skip(1)

    def action_skip_previous(self) -> None:
        self._jump_skip(-1)

    def _jump_skip(self, step: int) -> None:
        trace = self.query_one(TokenTrace)
        tokens = trace.tokens
        i = trace.cursor + step
        while 0 <= i < len(tokens):
            if tokens[i].skips:
                trace.set_cursor(i)
                return
            i += step
        self.notify("no more skipped tokens", timeout=2)

    def action_show_tab(self, name: str) -> None:
        self.query_one(TabbedContent).active = name
        # Focus moves with the tab: TabbedContent switches to whichever pane holds focus.
        target = (
            self.query_one(TokenTrace)
            if name == "trace"
            else self.query_one(f"#{name} .pane-scroll")
        )
        target.focus()

    def action_cycle_tab(self) -> None:
        tabs = self.query_one(TabbedContent)
        current = tabs.active if tabs.active in TABS else TABS[0]
        self.action_show_tab(TABS[(TABS.index(current) + 1) % len(TABS)])

    def action_copy(self) -> None:
        if self._raw_text:
            self.post_message(HandOff("raw lines", self._raw_text, "raw-lines"))

    def action_copy_traceparent(self) -> None:
        traceparent = self.time.traceparent if self.time is not None else None
        if traceparent is None:
            self.notify("no traceparent for this request", timeout=2)
            return
        self.post_message(HandOff("traceparent", traceparent, "traceparent"))
