"""Engine statistics (vLLM ``Engine 000:`` / SGLang batch lines) as labelled sparklines.

The sparklines are the fleet's (``core.fleet``: engines summed, ratios averaged, replicated
ranks once); expanded (``e`` or a click), one row per engine gives its last figures."""

from __future__ import annotations

from collections.abc import Sequence
from typing import ClassVar

from rich.text import Text
from textual.widget import Widget

from sparseety_tui.core.fleet import (
    fleet_points,
)
from sparseety_tui.events import StatsPayload
from sparseety_tui.ui.widgets.fit import fit_height
from sparseety_tui.ui.widgets.sparkline import sparkline

#: (label, field, scale, unit): what the panel shows, in this order.
SERIES: tuple[tuple[str, str, float, str], ...] = (
    ("prompt tok/s", "prompt_throughput", 1.0, ""),
    ("gen tok/s", "generation_throughput", 1.0, ""),
    ("running", "running", 1.0, ""),
    ("waiting", "waiting", 1.0, ""),
    ("KV usage", "kv_usage", 100.0, "%"),
    ("prefix hit", "prefix_cache_hit_rate", 100.0, "%"),
)


class EnginePanel(Widget):
    COMPONENT_CLASSES: ClassVar[set[str]] = {
        "engine-panel--title",
        "engine-panel--spark",
        "engine-panel--dim",
    }

    DEFAULT_CSS = """
    EnginePanel > .engine-panel--title { text-style: bold; color: $primary; }
    EnginePanel > .engine-panel--spark { color: $secondary; }
    EnginePanel > .engine-panel--dim { color: $foreground 60%; }
    """

    def __init__(self, *, id: str | None = None, classes: str | None = None) -> None:
        super().__init__(id=id, classes=classes)
        self._points: tuple[StatsPayload, ...] = ()
        self._fleet: list[dict[str, float]] = []
        self._engines: dict[str, dict[str, float]] = {}
        self.expanded = False
        fit_height(self, self._rows())

    def set_points(self, points: tuple[StatsPayload, ...]) -> None:
        if points is not self._points:
            self._points = points
            followed = fleet_points(points)
            self._fleet, self._engines = followed.fleet, followed.engines
            fit_height(self, self._rows())  # not ``height: auto``: see widgets/fit.py
            self.refresh()

    def toggle_expanded(self) -> None:
        """Show or hide one row per engine."""
        self.expanded = not self.expanded
        fit_height(self, self._rows())
        self.refresh()

    def on_click(self) -> None:
        self.toggle_expanded()

    @property
    def has_data(self) -> bool:
        return bool(self._points)

    def _series(self) -> list[tuple[str, list[float | None], float, str]]:
        out = []
        for label, key, scale, unit in SERIES:
            values: list[float | None] = []
            for point in self._fleet:
                value = point.get(key)
                values.append(float(value) * scale if value is not None else None)
            if any(v is not None for v in values):
                out.append((label, values, scale, unit))
        return out

    def _rows(self) -> int:
        engines = len(self._engines) if self.expanded else 0
        return 1 + max(1, len(self._series())) + engines

    def render(self) -> Text:
        dim = self.get_component_rich_style("engine-panel--dim")
        spark_style = self.get_component_rich_style("engine-panel--spark")
        out = Text(no_wrap=True, overflow="crop", end="")
        out.append("Engine", self.get_component_rich_style("engine-panel--title"))
        if len(self._engines) > 1:
            toggle = "p: fold" if self.expanded else "p: per engine"
            out.append(f"  fleet of {len(self._engines)}, {toggle}", dim)
        out.append(f"  {len(self._points)} stats lines", dim)
        series = self._series()
        if not series:
            out.append("\nno engine stats lines (vLLM/SGLang logs have them)", dim)
            return out
        width = self.size.width
        spark_w = max(4, width - 13 - 9)
        for label, values, _scale, unit in series:
            out.append("\n")
            out.append(label.ljust(13)[:13], dim)
            out.append(sparkline(_compact(values, spark_w), spark_w), spark_style)
            last = next((v for v in reversed(values) if v is not None), None)
            out.append(f" {_num(last)}{unit}".rjust(9))
        if self.expanded:
            # One line each, cropped: the name column as wide as the longest name, up to a
            # third of the panel (a log's path can be long).
            name_w = min(max(map(len, self._engines)), max(6, width // 3))
            for name, figures in self._engines.items():
                out.append("\n")
                out.append(name[:name_w].ljust(name_w) + " ", dim)  # log text: never markup
                out.append(_engine_row(figures, width - name_w - 1))
        return out


def _compact(values: Sequence[float | None], width: int) -> list[float | None]:
    """At most ``width`` points: the mean of equal slices when there are more."""
    if len(values) <= width:
        return list(values)
    step = len(values) / width
    out: list[float | None] = []
    for i in range(width):
        part = [v for v in values[int(i * step) : int((i + 1) * step)] if v is not None]
        out.append(sum(part) / len(part) if part else None)
    return out


def _num(value: float | None) -> str:
    if value is None:
        return "—"
    if abs(value) >= 10_000:
        return f"{value / 1000:.0f}k"
    if abs(value) >= 100 or value == int(value):
        return f"{value:.0f}"
    return f"{value:.1f}"


def _engine_row(figures: dict[str, float], width: int) -> str:
    """One engine's last figures, in SERIES order, as ``label value`` pairs: as many whole
    pairs as fit in ``width`` (a pair cut in its number would show another number)."""
    row = ""
    for label, key, scale, unit in SERIES:
        value = figures.get(key)
        if value is None:
            continue
        pair = f"{label.split()[0]} {_num(float(value) * scale)}{unit}"
        joined = f"{row}  {pair}" if row else pair
        if len(joined) > width:
            break
        row = joined
    return row
