"""The compare screen (``compare --tui``): both sides side by side, a row per figure, and
the matched requests' changes; ``⏎`` on a request shows both sides of it.

Everything shown comes from the ``compare`` document (``core.compare.document``) and its
pair diffs, built before the app starts: the screen computes nothing.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, ClassVar

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import BindingType
from textual.screen import Screen
from textual.widgets import DataTable, Footer, Static

from sparseety_tui.core.compare import (
    PairDiff,
    before_after,
    figure_cells,
    fmt_rel,
    match_text,
)
from sparseety_tui.core.figures import ModelShape
from sparseety_tui.core.redact import Redactor
from sparseety_tui.core.store import ExtractorView
from sparseety_tui.ui import keys
from sparseety_tui.ui.safe_text import escape

CHANGE_STYLE = {"better": "bold green", "worse": "bold red", "": ""}


def side_text(label: str, side: dict[str, Any]) -> Text:
    out = Text(no_wrap=True, overflow="ellipsis", end="")
    out.append(f"{label:<9} ", "bold")
    out.append(", ".join(escape(p) for p in side["paths"]))
    if side.get("window"):
        out.append(f"  window {escape(side['window'])}", "dim")
    out.append(f"  {side['requests']:,} requests", "dim")
    return out


@dataclass(frozen=True)
class CompareData:
    """What the compare screen shows: the ``compare`` ``document``; ``pairs``, the matched
    pairs listed (the worst first) of ``pairs_total``; each side's state (``sides``) and
    its store rows by position (``rows``)."""

    document: dict[str, Any]
    pairs: Sequence[PairDiff]
    pairs_total: int
    sides: tuple[ExtractorView, ExtractorView]
    rows: tuple[Any, Any]
    shape: ModelShape
    #: --redact: shown text goes through ``safe_text.escape`` (set by the app), and each
    #: request's detail is redacted over its joined text, as in the main app.
    redactor: Redactor | None = None


class CompareScreen(Screen[None]):
    BINDINGS: ClassVar[list[BindingType]] = list(keys.bindings(keys.COMPARE))
    DEFAULT_CSS = """
    CompareScreen #compare-head { height: auto; padding: 0 1; background: $panel; }
    CompareScreen #figures { height: 1fr; }
    CompareScreen #pairs-title { height: 1; padding: 0 1; background: $panel; }
    CompareScreen #pairs { height: 1fr; }
    """

    def __init__(self, data: CompareData) -> None:
        super().__init__(id="compare")
        self.document = data.document
        self.pairs = list(data.pairs)
        self.pairs_total = data.pairs_total
        self.sides = data.sides
        self.rows = data.rows
        self.shape = data.shape
        self.redactor = data.redactor

    def compose(self) -> ComposeResult:
        doc = self.document
        head = Text(end="")
        head.append_text(side_text("baseline", doc["baseline"]))
        head.append("\n")
        head.append_text(side_text("candidate", doc["candidate"]))
        head.append("\n")
        head.append(match_text(doc), "dim")
        if self.redactor is not None:
            head.append("  REDACTED", "bold reverse")
        yield Static(head, id="compare-head")
        yield DataTable(id="figures", cursor_type="row", zebra_stripes=True)
        yield Static(self._pairs_title(), id="pairs-title")
        yield DataTable(id="pairs", cursor_type="row", zebra_stripes=True)
        yield Footer(compact=True)

    def _pairs_title(self) -> Text:
        doc = self.document
        if not doc["matched"]:
            return Text("no matched requests: the workloads are compared as a whole", "dim")
        return Text(
            f"per request: {len(self.pairs):,} of {self.pairs_total:,} matched, the largest "
            f"increase (latency or compute) first; {doc['regressions_total']:,} went up",
            "bold",
        )

    def on_mount(self) -> None:
        doc = self.document
        figures = self.query_one("#figures", DataTable)
        figures.add_columns("figure", "baseline", "candidate", "Δ", "Δ%", "CI95 (paired)")
        for name in doc["delta"]:
            cells = figure_cells(doc, name)
            style = CHANGE_STYLE[cells.change]
            figures.add_row(
                name,
                Text(cells.baseline, justify="right"),
                Text(cells.candidate, justify="right"),
                Text(cells.delta, style=style, justify="right"),
                Text(cells.rel, style=style, justify="right"),
                Text(cells.ci95, justify="right"),
            )
        table = self.query_one("#pairs", DataTable)
        table.add_columns("baseline id", "candidate id", "latency s", "Δ", "compute", "Δ")
        for pair in self.pairs:
            lat, comp = pair.entry["latency_s"], pair.entry["effective_compute_tokens"]
            table.add_row(
                Text(escape(pair.entry["baseline_id"])),
                Text(escape(pair.entry["candidate_id"])),
                Text(before_after(lat, "s"), justify="right"),
                _rel(lat),
                Text(before_after(comp, "tokens"), justify="right"),
                _rel(comp),
            )
        (table if self.pairs else figures).focus()

    def action_switch(self) -> None:
        figures = self.query_one("#figures", DataTable)
        pairs = self.query_one("#pairs", DataTable)
        (figures if pairs.has_focus else pairs).focus()

    def action_drill(self) -> None:
        table = self.query_one("#pairs", DataTable)
        if not table.has_focus or not self.pairs:
            return
        pair = self.pairs[table.cursor_row]
        base_row = int(self.rows[0][pair.baseline])
        cand_row = int(self.rows[1][pair.candidate])
        from sparseety_tui.ui.screens.compare_detail import CompareDetailScreen

        self.app.push_screen(
            CompareDetailScreen(
                pair.entry, self.sides, (base_row, cand_row), self.shape, self.redactor
            )
        )

    def on_data_table_row_selected(self, event: DataTable.RowSelected) -> None:
        if event.data_table.id == "pairs":
            self.action_drill()


def _rel(change: dict[str, Any]) -> Text:
    up = (change["abs"] or 0) > 0
    down = (change["abs"] or 0) < 0
    style = "bold red" if up else "green" if down else ""
    return Text(fmt_rel(change["rel"]), style=style, justify="right")
