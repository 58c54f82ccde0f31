"""SteadyScrollBar's idea of what a bar draws matches what Textual draws."""

from __future__ import annotations

import itertools

from rich.color import Color
from textual.scrollbar import ScrollBarRender

from sparseety_tui.ui.widgets.steady_scrollbar import thumb_cells


def _drawn(size: int, virtual: int, window: int, position: float) -> list[tuple[str, str]]:
    bar = ScrollBarRender.render_bar(
        size=size,
        virtual_size=virtual,
        window_size=window,
        position=position,
        back_color=Color.parse("#222222"),
        bar_color=Color.parse("#888888"),
    )
    return [(s.text, str(s.style)) for s in bar.segments]


def test_states_with_the_same_thumb_cells_draw_the_same_bar() -> None:
    # Every state the table's bar goes through while rows stream in below it (ranges
    # from a screen to a million rows, positions in eighths, as ScrollBar keeps them):
    # two states that thumb_cells cannot tell apart must draw the very same bar, or
    # skipping the repaint would leave a wrong one on screen.
    size, window = 44, 44
    drawn: dict[object, list[tuple[str, str]]] = {}
    states = 0
    for virtual in (45, 46, 60, 88, 89, 200, 1_000, 54_321, 1_000_000):
        top = virtual - window
        positions = {top * k / 16 for k in range(17)} | {top - 0.125, top - 1, 0.125, 1}
        for position in sorted(int(p * 8) / 8 for p in positions if 0 <= p <= top):
            key = thumb_cells(size, virtual, window, position)
            bar = _drawn(size, virtual, window, position)
            assert drawn.setdefault(key, bar) == bar, (virtual, position)
            states += 1
    assert states > 150 and len(drawn) > 60  # many states, many different bars


def test_no_thumb_when_nothing_scrolls() -> None:
    for size, virtual, window in itertools.product((0, 10), (0, 10), (0, 10)):
        assert thumb_cells(size, virtual, window, 0) is None
    assert thumb_cells(10, 100, 10, 0) == (0, 8)
    assert thumb_cells(10, 100, 10, 90) == (72, 80)  # the last cell, to its end
