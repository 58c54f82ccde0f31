"""A layer × index heatmap (experts routed to, or heads skipped) drawn with shade characters.

Shades, not colour ramps, carry the value, so it reads the same in 16-colour terminals and
in monochrome. Indices beyond the width are bucketed (summed) and layers beyond the height
are listed as "+N more layers". Under the map an axis names the index of every few cells
(as many as fit), and, when asked (``top``), a list gives each layer's busiest indices
with their share, the numbers a shade cannot give.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import ClassVar

from rich.text import Text
from textual.widget import Widget

from sparseety_tui.core.figures import HeatMap
from sparseety_tui.ui.widgets.fit import fit_height

SHADES = "░▒▓█"


def heat_rows(
    counts: Mapping[int, Mapping[int, int]],
) -> tuple[list[int], int, list[list[int]]]:
    """(layers, width, rows) from {layer: {index: count}}."""
    layers = sorted(counts)
    width = 1 + max((max(row) for row in counts.values() if row), default=-1)
    rows = [[counts[layer].get(i, 0) for i in range(width)] for layer in layers]
    return layers, width, rows


class Heatmap(Widget):
    """Set ``data`` to ``(layers, width, rows)``; None shows ``empty_text``."""

    COMPONENT_CLASSES: ClassVar[set[str]] = {
        "heatmap--title",
        "heatmap--cell",
        "heatmap--zero",
        "heatmap--dim",
    }

    DEFAULT_CSS = """
    Heatmap { min-height: 3; }
    Heatmap > .heatmap--title { text-style: bold; color: $primary; }
    Heatmap > .heatmap--cell { color: $accent; }
    Heatmap > .heatmap--zero { color: $foreground 30%; }
    Heatmap > .heatmap--dim { color: $foreground 60%; }
    """

    def __init__(
        self,
        title: str,
        index_name: str,
        empty_text: str,
        *,
        max_rows: int | None = None,
        top: int = 0,
        id: str | None = None,
        classes: str | None = None,
    ) -> None:
        """``top``: list each shown layer's ``top`` busiest indices under the map."""
        super().__init__(id=id, classes=classes)
        self.title = title
        self.top = top
        self.index_name = index_name
        self.empty_text = empty_text
        self.max_rows = max_rows
        self._data: tuple[list[int], int, list[list[int]]] | None = None
        self._note = ""
        fit_height(self, self._rows())

    def set_data(
        self, data: tuple[Sequence[int], int, Sequence[Sequence[int]]] | None, note: str = ""
    ) -> None:
        new = None if data is None else (list(data[0]), data[1], [list(r) for r in data[2]])
        if new != self._data or note != self._note:
            self._data = new
            self._note = note
            fit_height(self, self._rows())  # not ``height: auto``: see widgets/fit.py
            self.refresh()

    def set_title(self, title: str) -> None:
        """A new title (log text in it is shown literally: ``render`` appends it as text)."""
        if title != self.title:
            self.title = title
            self.refresh()

    def set_summary(self, summary: HeatMap | None, note: str = "") -> None:
        """From a heat map of the totals (``core.figures.HeatMap``)."""
        if summary is None or not summary.layers:
            self.set_data(None, note)
            return
        self.set_data((summary.layers, summary.width, summary.counts), note)

    def _rows(self) -> int:
        if self._data is None:
            return 2
        layers = len(self._data[0])
        shown = min(layers, self.max_rows) if self.max_rows else layers
        top = 1 + shown if self.top else 0
        return shown + 3 + (1 if shown < layers else 0) + top

    def render(self) -> Text:
        title_style = self.get_component_rich_style("heatmap--title")
        dim = self.get_component_rich_style("heatmap--dim")
        out = Text(no_wrap=True, overflow="crop", end="")
        # One line, cut to the width: a wrapped title (a long model name) would push the
        # map's last line out of the height ``_rows`` gave it.
        width = max(1, self.size.width)
        title = self.title if len(self.title) <= width else self.title[: width - 1] + "…"
        out.append(title, title_style)
        if self._note and len(title) + 2 + len(self._note) <= width:
            out.append(f"  {self._note}", dim)
        if self._data is None:
            out.append("\n")
            out.append(self.empty_text, dim)
            return out
        layers, width, rows = self._data
        label_w = max(len(f"L{layer}") for layer in layers) + 1
        avail = max(4, self.size.width - label_w)
        bucket = max(1, -(-width // avail))  # ceil
        cells = -(-width // bucket)
        repeat = max(1, min(4, avail // max(1, cells)))  # few experts: wider cells
        peak = max((max(r) if r else 0 for r in rows), default=0)
        cell_style = self.get_component_rich_style("heatmap--cell")
        zero_style = self.get_component_rich_style("heatmap--zero")
        shown = rows if not self.max_rows else rows[: self.max_rows]
        for layer, row in zip(layers, shown):
            out.append("\n")
            out.append(f"L{layer}".ljust(label_w), dim)
            for j in range(cells):
                value = sum(row[j * bucket : (j + 1) * bucket])
                if value <= 0 or peak <= 0:
                    out.append("·" * repeat, zero_style)
                else:
                    level = min(len(SHADES) - 1, int(value / (peak * bucket) * len(SHADES)))
                    out.append(SHADES[level] * repeat, cell_style)
        if len(shown) < len(rows):
            out.append("\n")
            out.append(f"+{len(rows) - len(shown)} more layers", dim)
        out.append("\n")
        # "id" in the label column: a line of leading blanks may be trimmed when drawn.
        out.append("id".ljust(label_w) + axis_labels(cells, bucket, repeat), dim)
        out.append("\n")
        per = f"{bucket} {self.index_name}s per cell, " if bucket > 1 else ""
        out.append(f"{width} {self.index_name}s, {per}· none, ", dim)
        out.append(SHADES, cell_style)
        out.append(f" up to {peak:,}", dim)
        if self.top:
            out.append("\n")
            out.append(f"top {self.index_name}s per layer ({self.index_name} share):", dim)
            for layer, row in zip(layers, shown):
                out.append("\n")
                out.append(f"L{layer}".ljust(label_w), dim)
                out.append(top_text(row, self.top))
        return out


def axis_labels(cells: int, bucket: int, repeat: int) -> str:
    """The x axis under ``cells`` cells of ``repeat`` characters, each ``bucket`` indices
    wide: the first index of every k-th cell, k as small as keeps labels apart."""
    widest = len(str(max(0, cells - 1) * bucket)) + 1
    every = max(1, -(-widest // repeat))
    out = ""
    for j in range(0, cells, every):
        label = str(j * bucket)
        at = j * repeat
        if at < len(out) or at + len(label) > cells * repeat:
            continue
        out = out.ljust(at) + label
    return out


def top_text(row: Sequence[int], n: int) -> str:
    """A layer's ``n`` busiest indices with their share of the layer's counts, busiest
    first (``5 12.3%  38 8.1%``); ``—`` for a layer with no counts."""
    total = sum(row)
    if total <= 0:
        return "—"
    ranked = sorted((i for i, v in enumerate(row) if v > 0), key=lambda i: (-row[i], i))[:n]
    return "  ".join(f"{i} {row[i] / total * 100:.1f}%" for i in ranked)
