"""A braille line plot (U+2800 block: 2x4 dots a cell) of per-minute series, as Rich Text.

``render_plot`` is a pure function of the data and a size, so tests read its text; the
``Plot`` widget only feeds it its size and theme styles. Layout, ``height`` rows of dots:

    title (unit)  ━ p99 2.31s  ┄ p95 1.20s  · p50 410ms   source
      2.40s ┤⠀⠀⠀⢀⡠⠊⠉⠑⠢⡀
            │⣀⠤⠊⠁⠀⠀⠀⠀⠀⠈⠢⣀
         0s ┤
            └12:00      12:30      13:00

Series differ by shape as well as colour, so a 16-colour or NO_COLOR terminal tells them
apart: the first is a full line, the second dashed, the third dotted (the legend shows
which). A cell shared by several series takes the colour of the first. None is a gap: no
line is drawn to or from an unknown minute; a known minute between two gaps is one dot.
The y axis starts at 0 for data that is never negative (no false zoom on a flat series).
When there are more minutes than dot columns, each column shows the mean of its minutes.
With no known value at all the plot says so, instead of drawing a line at 0.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import ClassVar

from rich.style import Style
from rich.text import Text
from textual.widget import Widget

from sparseety_tui.formats import utc_text
from sparseety_tui.ui.widgets.fit import fit_height

#: (legend glyph, dot columns drawn between samples: every n-th of m) per series, in order.
MARKS: tuple[tuple[str, int, int], ...] = (("━", 1, 1), ("┄", 2, 4), ("·", 1, 4))
#: Dot bits of a braille cell by (column 0-1, row 0-3 from the top).
_BITS = ((0x01, 0x02, 0x04, 0x40), (0x08, 0x10, 0x20, 0x80))
_BRAILLE = 0x2800
#: How a unit is named in a plot's title ("%" is in its numbers already).
UNIT_NAMES = {"%": "", "/min": "per minute"}
#: The fewest dot rows a plot has (80x24 fits a title, 3 rows and a time axis: 5 lines).
MIN_ROWS = 3


@dataclass(frozen=True)
class PlotLine:
    name: str
    values: Sequence[float | None]
    style: Style | str = ""


def fmt_value(value: float, unit: str) -> str:
    """A number in the unit's natural form: 97ms, 2.31s, 12.3k tok/s, 41.4%."""
    if unit == "s":
        if value == 0:
            return "0s"
        if abs(value) < 1:
            return f"{value * 1000:.0f}ms"
        if abs(value) < 100:
            return f"{value:.2f}s"
        if abs(value) < 6000:
            return f"{value:.0f}s"
        return f"{value / 60:.0f}min"
    suffix = "%" if unit == "%" else ""
    magnitude = abs(value)
    if magnitude >= 1_000_000:
        text = f"{value / 1_000_000:.1f}M"
    elif magnitude >= 10_000:
        text = f"{value / 1000:.0f}k"
    elif magnitude >= 1000:
        text = f"{value / 1000:.1f}k"
    elif magnitude >= 100 or value == int(value):
        text = f"{value:.0f}"
    elif magnitude >= 10:
        text = f"{value:.1f}"
    elif magnitude >= 0.01:
        text = f"{value:.2f}"
    else:
        text = f"{value:.1g}"
    return text + suffix


def spans_days(minutes: Sequence[int]) -> bool:
    """Whether the minutes fall on more than one UTC day (their labels then need the date)."""
    return bool(minutes) and utc_text(minutes[0], "%Y%m%d") != utc_text(minutes[-1], "%Y%m%d")


def time_label(minute: int, with_date: bool) -> str:
    return utc_text(minute, "%m-%d %H:%M" if with_date else "%H:%M") or "—"


def _columns(values: Sequence[float | None], dots: int) -> list[float | None]:
    """At most ``dots`` values: the mean of the known values of equal slices when there
    are more (None when a slice has none)."""
    n = len(values)
    if n <= dots:
        return list(values)
    out: list[float | None] = []
    for i in range(dots):
        part = [v for v in values[i * n // dots : (i + 1) * n // dots] if v is not None]
        out.append(sum(part) / len(part) if part else None)
    return out


def _dot_x(i: int, n: int, dots: int) -> int:
    """The dot column of sample ``i`` of ``n`` spread over ``dots`` columns."""
    if n <= 1:
        return dots - 1  # one minute: at the right, where the latest value is
    return round(i * (dots - 1) / (n - 1))


def render_plot(
    title: str,
    lines: Sequence[PlotLine],
    minutes: Sequence[int],
    width: int,
    height: int,
    *,
    unit: str = "",
    note: str = "",
    title_style: Style | str = "bold",
    dim_style: Style | str = "dim",
) -> Text:
    """The plot in ``width`` cells and ``height + 2`` lines (title, ``height`` dot rows,
    time axis): module docstring."""
    height = max(MIN_ROWS, height)
    out = Text(no_wrap=True, overflow="crop", end="")
    shown_unit = UNIT_NAMES.get(unit, unit)
    out.append(title + (f" ({shown_unit})" if shown_unit else ""), title_style)
    known_lines = [line for line in lines if any(v is not None for v in line.values)]
    for n, line in enumerate(lines[: len(MARKS)]):
        last = next((v for v in reversed(line.values) if v is not None), None)
        out.append("  ")
        out.append(f"{MARKS[n][0]} {line.name}", line.style)
        out.append(" " + (fmt_value(last, unit) if last is not None else "—"))
    if note:
        out.append(f"  {note}", dim_style)
    if not known_lines or not minutes:
        message = "no data in these minutes" if minutes else "no timestamped data"
        for row in range(height + 1):
            out.append("\n")
            if row == height // 2:
                out.append(f"  {message}", dim_style)
        return _cropped(out, width)
    every = [v for line in known_lines for v in line.values if v is not None]
    lo, hi = min(0.0, min(every)), max(every)
    if hi <= lo:
        hi = lo + 1.0  # a constant series: drawn at its value, with a range around it
    top, bottom = fmt_value(hi, unit), fmt_value(lo, unit)
    label_w = max(len(top), len(bottom)) + 1
    dots = _Dots(max(1, width - label_w - 1), height)
    for n, line in enumerate(lines[: len(MARKS)]):
        dots.draw(line.values, n, lo, hi)
    styles = [line.style for line in lines]
    for row in range(height):
        out.append("\n")
        if row == 0:
            out.append(top.rjust(label_w - 1) + " ┤", dim_style)
        elif row == height - 1:
            out.append(bottom.rjust(label_w - 1) + " ┤", dim_style)
        else:
            out.append(" " * label_w + "│", dim_style)
        for bits, owner in zip(dots.grid[row], dots.owner[row]):
            out.append(chr(_BRAILLE + bits), styles[owner] if bits else "")
    out.append("\n")
    out.append(_time_axis(minutes, label_w, dots.cells_w), dim_style)
    return _cropped(out, width)


class _Dots:
    """The braille cells of a plot, ``cells_w`` by ``height``, and which series owns each
    (the first series drawn into a cell gives it its colour)."""

    def __init__(self, cells_w: int, height: int) -> None:
        self.cells_w = cells_w
        self.dots_w, self.dots_h = 2 * cells_w, 4 * height
        self.grid = [[0] * cells_w for _ in range(height)]
        self.owner: list[list[int]] = [[-1] * cells_w for _ in range(height)]

    def put(self, x: int, y: int, series: int) -> None:
        """Dot column ``x``, dot row ``y`` (from the bottom) of ``series``."""
        row, col = (self.dots_h - 1 - y) // 4, x // 2
        self.grid[row][col] |= _BITS[x % 2][(self.dots_h - 1 - y) % 4]
        if self.owner[row][col] < 0 or series < self.owner[row][col]:
            self.owner[row][col] = series

    def draw(self, line: Sequence[float | None], series: int, lo: float, hi: float) -> None:
        """One series in its dash (``MARKS``), scaled from [lo, hi] to the dot rows."""
        _, on, period = MARKS[series]
        values = _columns(line, self.dots_w)
        count = len(values)
        top = self.dots_h - 1
        ys = [None if v is None else round((v - lo) / (hi - lo) * top) for v in values]
        for i, y in enumerate(ys):
            if y is None:
                continue
            x = _dot_x(i, count, self.dots_w)
            self.put(x, y, series)  # every known sample is drawn, whatever the series' dash
            following = ys[i + 1] if i + 1 < count else None
            if following is None:
                if i == 0 or ys[i - 1] is None:
                    self.put(x ^ 1, y, series)  # a lone value: two dots wide, to be seen
                continue  # a gap: no line into an unknown minute
            x2 = _dot_x(i + 1, count, self.dots_w)
            previous_y = y
            for xi in range(x + 1, x2 + 1):
                yi = round(y + (following - y) * (xi - x) / (x2 - x))
                if xi % period < on or xi == x2:
                    # a full step joins the previous dot's height to this one's
                    low, high = sorted((previous_y, yi)) if on == period else (yi, yi)
                    for yy in range(low, high + 1):
                        self.put(xi, yy, series)
                previous_y = yi


def _cropped(text: Text, width: int) -> Text:
    """Every line cut at ``width`` cells (a long legend never wraps into the plot)."""
    lines = text.split("\n", allow_blank=True)
    for line in lines:
        line.truncate(max(0, width), overflow="crop")
    out = Text("\n", no_wrap=True, overflow="crop", end="").join(lines)
    out.no_wrap, out.overflow, out.end = True, "crop", ""
    return out


def _time_axis(minutes: Sequence[int], label_w: int, cells_w: int) -> str:
    """``└`` under the axis, then UTC times under the minutes they name: the first, the
    last, and as many between as fit two cells apart (the date too when the minutes span
    more than a day)."""
    with_date = spans_days(minutes)
    count = len(minutes)
    size = len(time_label(minutes[0], with_date))
    axis = [" "] * cells_w

    def place(i: int, start: int) -> None:
        text = time_label(minutes[i], with_date)
        for k, ch in enumerate(text[: max(0, cells_w - start)]):
            axis[start + k] = ch

    def start_of(i: int) -> int:
        return max(0, min(_dot_x(i, count, 2 * cells_w) // 2, cells_w - size))

    last_start = start_of(count - 1)
    place(count - 1, last_start)  # the latest minute always shows
    slots = max(1, cells_w // (size + 2))
    end = -2
    for i in sorted({round(k * (count - 1) / slots) for k in range(slots)}):
        start = start_of(i)
        if i == count - 1 or start < end + 2 or start + size + 2 > last_start:
            continue
        place(i, start)
        end = start + size
    return " " * label_w + "└" + "".join(axis)


class Plot(Widget):
    """A ``render_plot`` at the widget's size; colours from the theme (component classes)."""

    COMPONENT_CLASSES: ClassVar[set[str]] = {
        "plot--title",
        "plot--dim",
        "plot--series-0",
        "plot--series-1",
        "plot--series-2",
    }

    DEFAULT_CSS = """
    Plot { height: 5; }
    Plot > .plot--title { text-style: bold; color: $primary; }
    Plot > .plot--dim { color: $foreground 60%; }
    Plot > .plot--series-0 { color: $error; }
    Plot > .plot--series-1 { color: $warning; }
    Plot > .plot--series-2 { color: $secondary; }
    """

    def __init__(self, *, id: str | None = None, classes: str | None = None) -> None:
        super().__init__(id=id, classes=classes)
        self._title = ""
        self._unit = ""
        self._note = ""
        self._lines: tuple[tuple[str, Sequence[float | None]], ...] = ()
        self._minutes: Sequence[int] = ()
        self.rows = MIN_ROWS

    def set_data(
        self,
        title: str,
        unit: str,
        note: str,
        lines: Sequence[tuple[str, Sequence[float | None]]],
        minutes: Sequence[int],
    ) -> None:
        self._title, self._unit, self._note = title, unit, note
        self._lines, self._minutes = tuple(lines), minutes
        self.refresh()

    def set_rows(self, rows: int) -> None:
        """Dot rows of the plot (the widget is two lines more)."""
        self.rows = max(MIN_ROWS, rows)
        fit_height(self, self.rows + 2)
        self.refresh()

    def render(self) -> Text:
        lines = [
            PlotLine(name, values, self.get_component_rich_style(f"plot--series-{n}"))
            for n, (name, values) in enumerate(self._lines[: len(MARKS)])
        ]
        return render_plot(
            self._title,
            lines,
            self._minutes,
            self.size.width,
            self.rows,
            unit=self._unit,
            note=self._note,
            title_style=self.get_component_rich_style("plot--title"),
            dim_style=self.get_component_rich_style("plot--dim"),
        )
