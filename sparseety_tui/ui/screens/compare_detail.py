"""Both sides of one matched request: the baseline's token trace above the candidate's,
skipped tokens highlighted in each (the detail screen's trace and legend)."""

from __future__ import annotations

from typing import Any, ClassVar

from rich.text import Text
from textual import work
from textual.app import ComposeResult
from textual.binding import BindingType
from textual.screen import Screen
from textual.widgets import Footer, Static

from sparseety_tui.core.compare import fmt_rel, fmt_value
from sparseety_tui.core.detail import RequestDetail, build_detail
from sparseety_tui.core.figures import ModelShape
from sparseety_tui.core.redact import Redactor, redact_detail
from sparseety_tui.core.store import ExtractorView
from sparseety_tui.ui import keys
from sparseety_tui.ui.safe_text import escape
from sparseety_tui.ui.screens.detail_text import legend, trace_tokens
from sparseety_tui.ui.widgets.token_trace import SKIP_ORDER, TokenTrace

SIDES = ("baseline", "candidate")


class CompareDetailScreen(Screen[None]):
    BINDINGS: ClassVar[list[BindingType]] = list(keys.bindings(keys.COMPARE_DETAIL))
    DEFAULT_CSS = """
    CompareDetailScreen .side-head { height: auto; padding: 0 1; background: $panel; }
    CompareDetailScreen #legend { height: 1; padding: 0 1; }
    CompareDetailScreen TokenTrace { height: 1fr; }
    """

    def __init__(
        self,
        entry: dict[str, Any],
        sides: tuple[ExtractorView, ExtractorView],
        rows: tuple[int, int],
        shape: ModelShape,
        redactor: Redactor | None = None,
    ) -> None:
        """``entry``: the pair as ``regressions`` lists it; ``rows``: its store row on
        each side; ``redactor`` (--redact): each detail redacted over its joined text."""
        super().__init__(id="compare-detail")
        self.entry = entry
        self.sides = sides
        self.rows = rows
        self.shape = shape
        self.redactor = redactor
        self.details: list[RequestDetail | None] = [None, None]

    def compose(self) -> ComposeResult:
        yield Static(id="legend")
        for i, side in enumerate(SIDES):
            yield Static(self._head(i, loading=True), id=f"{side}-head", classes="side-head")
            yield TokenTrace(id=f"{side}-trace")
        yield Footer(compact=True)

    def _head(self, i: int, loading: bool = False, problem: str = "") -> Text:
        side = SIDES[i]
        lat, comp = self.entry["latency_s"], self.entry["effective_compute_tokens"]
        out = Text(no_wrap=True, overflow="ellipsis", end="")
        out.append(f"{side:<9} ", "bold")
        out.append(escape(self.entry[f"{side}_id"]))
        out.append("  latency ", "dim")
        out.append(fmt_value(lat[side], "s") + " s")
        out.append("  compute ", "dim")
        out.append(fmt_value(comp[side], "tokens"))
        columns = self.sides[i].store.columns
        k, experts = columns["topk_experts"][self.rows[i]], columns["total_experts"][self.rows[i]]
        if k >= 0 and experts > 0:
            out.append("  experts ", "dim")
            out.append(f"{k}/{experts}")
        out.append("\n          ")
        if i == 1:
            out.append(f"latency {fmt_rel(lat['rel'])}, compute {fmt_rel(comp['rel'])}  ")
        detail = self.details[i]
        if detail is not None:
            skipped = sum(1 for t in detail.tokens if t.skips)
            out.append(f"{len(detail.tokens):,} tokens, {skipped:,} skipped", "dim")
            if not detail.tokens:
                out.append(" (no per-token data in this log)", "dim")
        elif loading:
            out.append("loading…", "dim")
        if problem:
            out.append(f"  {escape(problem)}", "bold red")
        return out

    def on_mount(self) -> None:
        trace = self.query_one("#baseline-trace", TokenTrace)
        styles = {
            name: trace.get_component_rich_style(f"token-trace--{name}")
            for name in ("prompt", "completion", "label", *SKIP_ORDER)
        }
        styles["dim"] = styles["prompt"]
        self.query_one("#legend", Static).update(legend(styles, self.size.width))
        trace.focus()
        self._load()

    @work(thread=True, exclusive=True, group="compare-detail")
    def _load(self) -> None:
        for i in (0, 1):
            try:
                detail = build_detail(self.sides[i], self.rows[i])
                if self.redactor is not None:
                    detail = redact_detail(detail, self.redactor)
            except Exception as exc:  # one request's detail must never end the app
                self.app.call_from_thread(self._failed, i, f"{type(exc).__name__}: {exc}")
                continue
            self.app.call_from_thread(self._show, i, detail)

    def _failed(self, i: int, reason: str) -> None:
        self.query_one(f"#{SIDES[i]}-head", Static).update(
            self._head(i, problem=f"detail could not be built: {reason}")
        )

    def _show(self, i: int, detail: RequestDetail) -> None:
        self.details[i] = detail
        self.query_one(f"#{SIDES[i]}-trace", TokenTrace).set_tokens(trace_tokens(detail))
        self.query_one(f"#{SIDES[i]}-head", Static).update(self._head(i))

    def _focused_trace(self) -> TokenTrace:
        candidate = self.query_one("#candidate-trace", TokenTrace)
        return candidate if candidate.has_focus else self.query_one("#baseline-trace", TokenTrace)

    def action_switch(self) -> None:
        base = self.query_one("#baseline-trace", TokenTrace)
        (self.query_one("#candidate-trace", TokenTrace) if base.has_focus else base).focus()

    def action_back(self) -> None:
        self.app.pop_screen()

    def action_skip_next(self) -> None:
        self._jump(1)

    def action_skip_previous(self) -> None:
        self._jump(-1)

    def _jump(self, step: int) -> None:
        trace = self._focused_trace()
        i = trace.cursor + step
        while 0 <= i < len(trace.tokens):
            if trace.tokens[i].skips:
                trace.set_cursor(i)
                return
            i += step
