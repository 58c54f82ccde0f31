"""A scrollbar that repaints only when what it draws changes.

While a log streams, every snapshot moves the request table's scroll range and position
(thousands of rows a second), and Textual's scrollbar repaints at each of those changes:
about 45 lines styled and composited a frame, a third of what a frame costs, for a thumb
that, over a million rows, stays one cell tall at the bottom. ``SteadyScrollBar`` works out
what it would draw (the cells its thumb covers, in the eighths of a cell that Textual's
``ScrollBarRender.render_bar`` draws, its size, colours, hover and grab) and lets a plain
repaint through only when that changed. A layout, a dirty region or a recompose always
goes through.
"""

from __future__ import annotations

from math import ceil

from rich.console import RenderableType
from textual.geometry import Region
from textual.scrollbar import ScrollBar, ScrollBarRender

#: The eighths of a cell Textual's bars are drawn in (``ScrollBarRender.VERTICAL_BARS``).
_STEPS = len(ScrollBarRender.VERTICAL_BARS)


def thumb_cells(
    size: int, virtual_size: float, window_size: float, position: float
) -> tuple[int, int] | None:
    """Where ``ScrollBarRender.render_bar`` draws the thumb of a bar ``size`` cells long,
    in eighths of a cell (start, end); None when it draws no thumb."""
    if not (window_size and size and virtual_size and size != virtual_size):
        return None
    if virtual_size == window_size:
        return None  # no range to scroll: the thumb fills the bar (Textual divides by 0)
    thumb = max(1, window_size / (virtual_size / size))
    start = int((size - thumb) * (position / (virtual_size - window_size)) * _STEPS)
    return start, start + ceil(thumb * _STEPS)


class SteadyScrollBar(ScrollBar):
    """Textual's scrollbar, without the repaints that would draw the cells it shows."""

    #: What the last render drew (``_drawing``).
    _drawn: tuple[object, ...] | None = None

    def _drawing(self, bar: RenderableType) -> tuple[object, ...] | None:
        """What ``bar`` (a ``render()``) draws (None: cannot tell, so repaint)."""
        if not isinstance(bar, ScrollBarRender):
            return None
        length = self.size.height if bar.vertical else self.size.width
        cells = thumb_cells(length, bar.virtual_size, bar.window_size, bar.position)
        return (self.size, bar.vertical, bar.thickness, bar.style, cells)

    def render(self) -> RenderableType:
        bar = super().render()
        self._drawn = self._drawing(bar)
        return bar

    def refresh(
        self,
        *regions: Region,
        repaint: bool = True,
        layout: bool = False,
        recompose: bool = False,
    ) -> SteadyScrollBar:
        if (
            repaint
            and not (regions or layout or recompose)
            and self.is_mounted
            and self.parent is not None
            and self._drawn is not None
            and self._drawing(super().render()) == self._drawn
        ):
            return self  # the screen shows this already
        super().refresh(*regions, repaint=repaint, layout=layout, recompose=recompose)
        return self
