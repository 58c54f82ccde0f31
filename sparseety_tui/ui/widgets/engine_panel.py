"""Engine statistics (vLLM ``Engine 000:`` / SGLang batch lines) as labelled sparklines.

The sparklines are the fleet's (``core.figures``: engines summed, ratios averaged, replicated
ranks once); expanded (``p`` or a click), one row per engine gives its last figures.

Stats of several logs are never summed into one fleet line: two servers tailed together
would read as one server ramping up when the second starts. Then the panel shows each
log's engines, one row each (a sparkline of its generation throughput and its last
figures), under the log's short name; a split (``x``: by file, by engine) shows the
sparklines of one log or one engine. The stats-line count is the series' true count, the
prefix-cache share is ``summary``'s (``core.figures.prefill_cached``: cached / (cached +
new) prefill tokens over every stats line), and retraction and OOM warnings are counted
from the error log."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, ClassVar

from rich.text import Text
from textual.widget import Widget

from sparseety_tui.core.figures import (
    Engine,
    fleet,
    fleet_points,
    fold,
    label_of,
    measured,
    prefill_cached,
)
from sparseety_tui.core.store import SOURCE_SEP, EngineSeries, FrozenExtractor, label_key
from sparseety_tui.core.text import short_names
from sparseety_tui.events import StatsPayload
from sparseety_tui.ui.safe_text import escape
from sparseety_tui.ui.widgets.fit import fit_height
from sparseety_tui.ui.widgets.sparkline import sparkline

#: (label, field, scale, unit): what the panel shows, in this order.
SERIES: tuple[tuple[str, str, float, str], ...] = (
    ("prompt tok/s", "prompt_throughput", 1.0, ""),
    ("gen tok/s", "generation_throughput", 1.0, ""),
    ("running", "running", 1.0, ""),
    ("waiting", "waiting", 1.0, ""),
    ("queue", "queued", 1.0, ""),  # SGLang ``#queue-req``
    ("KV usage", "kv_usage", 100.0, "%"),
    ("prefix hit", "prefix_cache_hit_rate", 100.0, "%"),
)
#: An engine row's prefix-cache share of prefill (``core.figures.prefill_cached``).
CACHED_SHARE = "cached_share"
#: What an engine row shows, in this order: SERIES, then the cached share.
ROW_FIELDS = (*SERIES, ("prefix cached", CACHED_SHARE, 100.0, "%"))


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
        self._series_all: EngineSeries | None = None
        #: the fleet's engines (core.figures), all logs; those of the split's group
        self._all_engines: tuple[Engine, ...] = ()
        self._shown: tuple[Engine, ...] = ()
        #: ("file", path) or ("engine", group): the split's group; None: everything
        self._focus: tuple[str, str] | None = None
        self._events: dict[str, int] = {}
        fit_height(self, self._rows())

    def set_points(
        self,
        points: tuple[StatsPayload, ...],
        series: EngineSeries | None = None,
        *,
        focus: tuple[str, str] | None = None,
        events: dict[str, int] | None = None,
    ) -> None:
        """The recent stats lines; ``series``: every stats line's series (its true count
        and sums); ``focus``: show one log (``("file", path)``) or one engine
        (``("engine", group)``, a ``core.figures.Engine.group``); ``events``: warnings
        by kind (``retraction``, ``oom``)."""
        events = events or {}
        if (
            points is self._points
            and series is self._series_all
            and focus == self._focus
            and events == self._events
        ):
            return
        if series is not self._series_all:
            self._all_engines = fleet(series).engines if series is not None and series.count else ()
        self._series_all, self._focus, self._events = series, focus, events
        self._points = points
        self._shown = tuple(e for e in self._all_engines if _in_focus(e.group, focus))
        followed = fleet_points([p for p in points if _in_focus(fold(label_key(p)), focus)])
        self._fleet, self._engines = followed.fleet, followed.engines
        fit_height(self, self._rows())  # not ``height: auto``: see widgets/fit.py
        self.refresh()

    @property
    def stats_lines(self) -> int:
        """Stats lines of what is shown: every line read (not the points kept for the
        sparklines), of the split's group when there is one."""
        if self._series_all is None:
            return len(self._points)
        if self._focus is None:
            return self._series_all.count
        return sum(
            series.count
            for key, series in self._series_all.labels.items()
            if _in_focus(fold(key), self._focus)
        )

    @property
    def sources(self) -> list[str]:
        """The logs the shown engines' stats came from, by path."""
        return sorted({e.source for e in self._shown})

    @property
    def grouped(self) -> bool:
        """One row per engine under each log's name: stats of several logs, no split."""
        return len(self.sources) > 1

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
        shares = [_cached_share(point) for point in self._fleet]
        # The prefix cache as summary measures it (cached / (cached + new) prefill tokens)
        # where lines give token counts: SGLang's own "cache hit rate" beside them is
        # another figure (0.00% on batches that had half their tokens cached).
        by_tokens = any(v is not None for v in shares)
        for label, key, scale, unit in ROW_FIELDS:
            values: list[float | None] = []
            if key == CACHED_SHARE:
                values = [None if v is None else v * scale for v in shares]
            elif key == "prefix_cache_hit_rate" and by_tokens:
                continue
            else:
                for point in self._fleet:
                    value = point.get(key)
                    values.append(float(value) * scale if value is not None else None)
            if any(v is not None for v in values):
                out.append((label, values, scale, unit))
        return out

    def _rows(self) -> int:
        extra = (1 if self._cache_line() else 0) + (1 if self._events_line() else 0)
        if self.grouped:
            return 1 + len(self.sources) + len(self._shown) + extra
        engines = len(self._engines) if self.expanded else 0
        return 1 + max(1, len(self._series())) + engines + extra

    def _cache_line(self) -> str:
        if self.grouped:
            return ""  # each log's rows say their own share: one over several would blend
        new, cached, ratio = prefill_cached(self._shown)
        if ratio is None or new is None or cached is None:
            return ""
        return f"prefix cached {ratio * 100:.1f}% of prefill ({_num(cached)} of {_num(cached + new)} tok)"

    def _events_line(self) -> str:
        shown = [f"{kind} {n:,}" for kind, n in sorted(self._events.items()) if n]
        return "warnings: " + ", ".join(shown) if shown else ""

    def render(self) -> Text:
        dim = self.get_component_rich_style("engine-panel--dim")
        spark_style = self.get_component_rich_style("engine-panel--spark")
        out = Text(no_wrap=True, overflow="crop", end="")
        out.append("Engine", self.get_component_rich_style("engine-panel--title"))
        if self._focus is not None:
            kind, group = self._focus
            logs = {e.source for e in self._all_engines} | {group}
            name = short_names(sorted(logs))[group] if kind == "file" else group
            if kind == "engine":
                name = next((_engine_label(e) for e in self._shown), label_of(group))
            out.append(f" {kind} ", dim)
            out.append(escape(name))
        if self.grouped:
            out.append(f"  {len(self._shown)} engines of {len(self.sources)} logs", dim)
        elif len(self._engines) > 1:
            toggle = "p: fold" if self.expanded else "p: per engine"
            out.append(f"  fleet of {len(self._engines)}, {toggle}", dim)
        out.append(f"  {self.stats_lines:,} stats lines", dim)
        for line in (self._cache_line(), self._events_line()):
            if line:
                out.append("\n")
                out.append(line, dim)
        if self.grouped:
            self._render_grouped(out, dim, spark_style)
            return out
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

    def _render_grouped(self, out: Text, dim: Any, spark_style: Any) -> None:
        """Each log's name, then one row per engine of it: a sparkline of its generation
        throughput (its own points) and its last figures."""
        width = self.size.width
        names = short_names(self.sources)
        name_w = min(max(len(_engine_label(e)) for e in self._shown), max(6, width // 4))
        spark_w = max(4, min(16, width // 5))
        by_group: dict[str, list[float | None]] = {}
        for point in self._points:
            # Its throughput: generation, else prompt (a prefill server logs no decode).
            value = point.get("generation_throughput", point.get("prompt_throughput"))
            by_group.setdefault(fold(label_key(point)), []).append(
                None if value is None else float(value)
            )
        for source in self.sources:
            out.append("\n")
            out.append(escape(names[source]), self.get_component_rich_style("engine-panel--title"))
            for engine in (e for e in self._shown if e.source == source):
                values = by_group.get(engine.group, [])
                out.append("\n")
                out.append(escape(_engine_label(engine))[:name_w].ljust(name_w) + " ", dim)
                out.append(sparkline(_compact(values, spark_w), spark_w), spark_style)
                figures: dict[str, float] = measured(engine.series.last)
                share = prefill_cached([engine])[2]
                if share is not None:  # summary's figure, not the line's own hit rate
                    figures.pop("prefix_cache_hit_rate", None)
                    figures[CACHED_SHARE] = share
                out.append(" " + _engine_row(figures, width - name_w - spark_w - 2))


#: The error-log kinds the panel counts as engine warnings (the errors view lists them).
WARNING_KINDS = ("retraction", "oom", "engine_dead")


def warning_counts(state: FrozenExtractor | None) -> dict[str, int]:
    """Engine warnings by kind (retraction, OOM, a dead engine), from the error log's exact
    counts; the panel never reads log lines itself."""
    if state is None:
        return {}
    by_kind = state.error_log.by_kind
    return {kind: int(by_kind.get(kind, 0)) for kind in WARNING_KINDS}


def _in_focus(group: str, focus: tuple[str, str] | None) -> bool:
    """Whether an engine group (``core.figures.fold`` of a series key) is in the split's."""
    if focus is None:
        return True
    kind, value = focus
    if kind == "engine":
        return group == value
    return group.rpartition(SOURCE_SEP)[0] == value


def _engine_label(engine: Engine) -> str:
    """An engine's name within its log (its log is the heading above it)."""
    suffix = f" ({engine.source})"
    return engine.name[: -len(suffix)] if engine.name.endswith(suffix) else engine.name


def _cached_share(figures: Mapping[str, float]) -> float | None:
    """One interval's prefix-cache share of prefill tokens (None: not reported, or no
    prefill in the interval)."""
    cached, new = figures.get("cached_tokens"), figures.get("new_tokens")
    if cached is None or new is None or cached + new <= 0:
        return None
    return cached / (cached + new)


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
    for label, key, scale, unit in ROW_FIELDS:
        value = figures.get(key)
        if value is None:
            continue
        pair = f"{label.split()[0]} {_num(float(value) * scale)}{unit}"
        joined = f"{row}  {pair}" if row else pair
        if len(joined) > width:
            break
        row = joined
    return row
