"""The trends' vocabulary: a plotted series (``Line``), a plot (``Trend``) and the plots
of a span of minutes (``Trends``); unknown is None, never 0."""

from __future__ import annotations

from dataclasses import dataclass

from sparseety_tui.formats import TIME_END

Value = float | None


def is_date_seconds(seconds: float) -> bool:
    return 0.0 <= seconds < TIME_END


@dataclass(frozen=True)
class Line:
    """One plotted series: a value per minute of ``Trends.minutes`` (None: unknown)."""

    name: str
    values: tuple[Value, ...]

    @property
    def known(self) -> bool:
        return any(v is not None for v in self.values)

    @property
    def last(self) -> Value:
        """The latest known value."""
        return next((v for v in reversed(self.values) if v is not None), None)


@dataclass(frozen=True)
class Trend:
    """One plot: a quantity, its unit, where its numbers come from, and its series."""

    key: str
    title: str
    unit: str
    #: where the values come from ("requests that ended in the minute", "engine stats")
    source: str
    lines: tuple[Line, ...]

    @property
    def known(self) -> bool:
        return any(line.known for line in self.lines)


@dataclass(frozen=True)
class Trends:
    #: the start of each minute (unix seconds, UTC), consecutive, oldest first
    minutes: tuple[int, ...]
    trends: tuple[Trend, ...]
    #: minutes with data before the first one held, left out (MAX_MINUTES)
    older_minutes: int = 0

    def get(self, key: str) -> Trend:
        return next(t for t in self.trends if t.key == key)
