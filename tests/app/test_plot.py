"""The braille plot as text: gaps, a lone value, a flat series, no data, sizes and axes."""

from __future__ import annotations

from rich.cells import cell_len

from sparseety_tui.ui.widgets.plot import PlotLine, fmt_value, render_plot

BRAILLE = range(0x2800, 0x2900)
MIN0 = 1_764_504_000  # 2025-11-30 12:00 UTC


def minutes(n: int, start: int = MIN0) -> list[int]:
    return [start + 60 * i for i in range(n)]


def plot_rows(text: str) -> list[str]:
    """The dot rows: the braille cells after the axis of each line between title and
    time axis."""
    lines = text.split("\n")[1:-1]
    return [line[line.index("┤" if "┤" in line else "│") + 1 :] for line in lines]


def dots_in_column(rows: list[str], col: int) -> int:
    return sum(bin(ord(row[col]) - 0x2800).count("1") for row in rows if col < len(row))


def test_size_lines_and_width() -> None:
    for width, height in ((78, 3), (150, 12)):
        text = render_plot(
            "latency", [PlotLine("p99", [1.0, 2.0, 3.0])], minutes(3), width, height, unit="s"
        )
        lines = text.plain.split("\n")
        assert len(lines) == height + 2  # title, dot rows, time axis
        assert all(cell_len(line) <= width for line in lines)
        assert "12:00" in lines[-1] and "12:02" in lines[-1]
        assert lines[1].lstrip().startswith("3.00s") and lines[height].lstrip().startswith("0s")


def test_gap_draws_nothing_in_unknown_minutes() -> None:
    values = [1.0] * 10 + [None] * 20 + [1.0] * 10
    text = render_plot("x", [PlotLine("a", values)], minutes(40), 2 + 40 + 4, 3).plain
    rows = plot_rows(text)
    width = len(rows[0])
    # minutes 10..29 are the middle half of the dot columns: none drawn there
    middle = range(width * 11 // 40 + 1, width * 29 // 40 - 1)
    assert all(dots_in_column(rows, c) == 0 for c in middle)
    assert dots_in_column(rows, 0) > 0 and dots_in_column(rows, width - 1) > 0


def test_a_lone_value_between_gaps_is_visible() -> None:
    text = render_plot("x", [PlotLine("a", [None, None, 5.0, None, None])], minutes(5), 60, 3)
    rows = plot_rows(text.plain)
    drawn = [c for c in range(len(rows[0])) if dots_in_column(rows, c)]
    assert len(drawn) == 1 and dots_in_column(rows, drawn[0]) == 2  # two dots wide
    assert "a 5" in text.plain.split("\n")[0]  # the last value in the legend


def test_single_minute() -> None:
    text = render_plot("x", [PlotLine("a", [7.0])], minutes(1), 40, 3).plain
    rows = plot_rows(text)
    assert dots_in_column(rows, len(rows[0]) - 1) == 2  # at the right: the latest minute
    assert "12:00" in text.split("\n")[-1]


def test_constant_series_is_a_flat_line_at_its_value() -> None:
    text = render_plot("x", [PlotLine("a", [4.0] * 30)], minutes(30), 50, 3).plain
    rows = plot_rows(text)
    # the top row holds the line (axis 0..4), every column, one dot row
    assert all(dots_in_column([rows[0]], c) > 0 for c in range(len(rows[0])))
    assert all(dots_in_column(rows[1:], c) == 0 for c in range(len(rows[0])))
    assert text.split("\n")[1].lstrip().startswith("4 ┤")


def test_all_unknown_says_no_data_instead_of_a_line_at_zero() -> None:
    text = render_plot("TTFT", [PlotLine("p99", [None] * 5)], minutes(5), 60, 3).plain
    assert "no data in these minutes" in text
    assert not any(ord(ch) in BRAILLE for ch in text)
    assert "p99 —" in text.split("\n")[0]
    assert len(text.split("\n")) == 5


def test_series_differ_by_shape_without_colour() -> None:
    """p99 full, p95 dashed, p50 dotted: with no colour at all they are told apart."""
    n = 60
    lines = [
        PlotLine("p99", [9.0] * n),
        PlotLine("p95", [5.0] * n),
        PlotLine("p50", [1.0] * n),
    ]
    text = render_plot("latency", lines, minutes(n), 64, 9, unit="s").plain
    rows = plot_rows(text)

    def drawn(row_values: float) -> int:
        # the dot row of a value on a 0..9 axis of 36 dot rows
        y = round(row_values / 9 * 35)
        row = rows[(35 - y) // 4]
        bit = ((0x01, 0x02, 0x04, 0x40), (0x08, 0x10, 0x20, 0x80))
        return sum(
            1
            for c in range(len(row))
            for half in (0, 1)
            if (ord(row[c]) - 0x2800) & bit[half][(35 - y) % 4]
        )

    full, dashed, dotted = drawn(9.0), drawn(5.0), drawn(1.0)
    assert full > dashed > dotted > 0
    legend = text.split("\n")[0]
    assert "━ p99" in legend and "┄ p95" in legend and "· p50" in legend


def test_time_axis_has_the_date_when_minutes_span_two_days() -> None:
    late = MIN0 + 11 * 3600 + 50 * 60  # 23:50
    text = render_plot("x", [PlotLine("a", [1.0] * 20)], minutes(20, late), 80, 3).plain
    axis = text.split("\n")[-1]
    assert "11-30 23:50" in axis and "12-01 00:09" in axis


def test_many_minutes_fit_the_width() -> None:
    n = 1440
    values = [float(i % 60) for i in range(n)]
    text = render_plot("x", [PlotLine("a", values)], minutes(n), 80, 3).plain
    assert all(cell_len(line) <= 80 for line in text.split("\n"))


def test_natural_units() -> None:
    assert fmt_value(0.097, "s") == "97ms"
    assert fmt_value(2.314, "s") == "2.31s"
    assert fmt_value(12_345, "tok/s") == "12k"
    assert fmt_value(41.44, "%") == "41.4%"
    assert fmt_value(0.0167, "req/s") == "0.02"
