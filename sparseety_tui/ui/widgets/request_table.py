"""The request table: a virtual view over the snapshot's rows on Textual's Line API.

Only the rows on screen are ever rendered (``render_line``), from the snapshot's frozen
store (never the writer's), so
first paint is the same for ten rows or a million. Rendered rows are cached per store row:
a new snapshot re-renders only the visible rows that changed since the state they were
drawn from (``Snapshot.unchanged_below``) or that are drawn otherwise (width, cursor, id
label, time pattern, file names), so a table that scrolls by a few new rows at the bottom
renders those few. The table does not keep row objects: which store row sits at which
position comes from the snapshot's view (the identity, or an index array the ingest worker
sorted and filtered).
"""

from __future__ import annotations

import time
from typing import ClassVar

from rich.segment import Segment
from rich.style import Style
from textual.binding import BindingType
from textual.cache import LRUCache
from textual.geometry import Size
from textual.message import Message
from textual.reactive import reactive
from textual.scroll_view import ScrollView
from textual.scrollbar import ScrollBar
from textual.strip import Strip

from sparseety_tui.core.figures import ModelShape
from sparseety_tui.core.text import short_names
from sparseety_tui.ingest.snapshot import Snapshot
from sparseety_tui.ui import keys
from sparseety_tui.ui.fmt import fit
from sparseety_tui.ui.idlabels import screen_labels
from sparseety_tui.ui.safe_text import escape
from sparseety_tui.ui.textual_compat import install_vertical_scrollbar
from sparseety_tui.ui.widgets.row_cursor import component_classes, cursor_css
from sparseety_tui.ui.widgets.steady_scrollbar import SteadyScrollBar
from sparseety_tui.ui.widgets.table_cells import BASE, DIM, SKIP, STATE, cells_of, copy_cells
from sparseety_tui.ui.widgets.table_columns import (
    Column,
    columns_for,
    header_strip,
    layout_columns,
    time_pattern,
)

#: Request states with a component class of their own (``request-table--{state}``).
_ROW_STATES = ("finished", "running", "received", "failed", "aborted", "end_unlogged")


class RequestTable(ScrollView, can_focus=True):
    """Rows of the store as the snapshot's view orders them; a cursor; follow mode."""

    COMPONENT_CLASSES: ClassVar[set[str]] = component_classes(
        "request-table", ("header", "cursor", "sorted", "dim", "skip", *_ROW_STATES)
    )

    DEFAULT_CSS = (
        """
    RequestTable {
        background: $surface;
        overflow-x: hidden;
    }
    RequestTable > .request-table--header { text-style: bold; color: $primary; }
    RequestTable > .request-table--sorted { text-style: bold underline; color: $accent; }
    """
        + cursor_css("RequestTable", "request-table--cursor")
        + """
    RequestTable > .request-table--dim { color: $foreground 60%; }
    RequestTable > .request-table--finished { color: $success; }
    RequestTable > .request-table--running { color: $primary; }
    RequestTable > .request-table--received { color: $secondary; }
    RequestTable > .request-table--failed { color: $error; text-style: bold; }
    RequestTable > .request-table--aborted { color: $warning; }
    RequestTable > .request-table--end_unlogged { color: $success 60%; }
    RequestTable > .request-table--skip { color: $accent; }
    """
    )

    BINDINGS: ClassVar[list[BindingType]] = list(keys.bindings(keys.TABLE))

    cursor: reactive[int] = reactive(0, init=False)
    follow: reactive[bool] = reactive(True, init=False)

    class CursorMoved(Message):
        def __init__(self, position: int) -> None:
            super().__init__()
            self.position = position

    class FollowChanged(Message):
        def __init__(self, follow: bool) -> None:
            super().__init__()
            self.follow = follow

    def __init__(
        self,
        shape: ModelShape,
        *,
        name: str | None = None,
        id: str | None = None,
        classes: str | None = None,
    ) -> None:
        super().__init__(name=name, id=id, classes=classes)
        self._shape = shape
        self._snap = Snapshot()
        #: store row -> (how it was drawn, (lineage, state version) drawn from, strip).
        self._cache: LRUCache[int, tuple[tuple[object, ...], tuple[int, int], Strip]] = LRUCache(
            512
        )
        #: The rows on screen as last drawn (position -> strip), and for which snapshot,
        #: scroll position, size and cursor: Textual asks for them a line at a time.
        self._screen_key: tuple[int, ...] | None = None
        self._screen_rows: dict[int, Strip] = {}
        #: Per snapshot: (lineage, state version) of a cached row -> rows still as then.
        self._unchanged: dict[tuple[int, int], int] = {}
        self._pattern_span: tuple[float, float] | None = None
        self._pattern = time_pattern(None)
        self._styles: dict[str, Style] = {}  # component styles, cleared when styles change
        self._layout: list[tuple[Column, int]] = []
        #: (width, time pattern, files shown, timing shown) ``_layout`` was made for.
        self._layout_key: tuple[int, str, bool, bool] = (-1, "", False, False)
        #: Whether the timing group of columns shows (``set_timing``).
        self._timing = False
        # Id labels of the rows on screen, made distinct together (ui/idlabels.py).
        self._id_labels: dict[int, str] = {}
        self._id_labels_key: tuple[int, int, int, int] = (-1, -1, -1, -1)
        #: Each Extractor file's short name (core.text), and the paths it was made for.
        self._file_names: tuple[str, ...] = ()
        self._file_paths: tuple[str, ...] = ()

    # -- data --------------------------------------------------------------------------------

    @property
    def snapshot(self) -> Snapshot:
        return self._snap

    @property
    def row_count(self) -> int:
        return self._snap.visible

    @property
    def current_row(self) -> int | None:
        """The store row under the cursor (None when the table is empty)."""
        if not 0 <= self.cursor < self._snap.visible:
            return None
        return self._snap.row_at(self.cursor)

    def set_snapshot(self, snap: Snapshot) -> None:
        """Show ``snap``: O(visible rows), whatever the store size."""
        old = self._snap
        keep_row = None
        if not self.follow and old.view is not snap.view and old.visible:
            keep_row = self.current_row  # a re-sort/re-filter: stay on the same request
        self._snap = snap
        self._unchanged = {}  # the rows kept are judged against this snapshot's changes
        self._screen_key = None
        if snap.lineage != old.lineage or (not snap.lineage and snap.state is not old.state):
            # Another worker, or a snapshot made by hand (tests): its versions say nothing
            # about the rows drawn before.
            self._cache.clear()
        self._name_files(snap)
        count = snap.visible
        self._set_rows(count)
        if self.follow:
            self._move_cursor(max(0, count - 1), follow=True)
        elif keep_row is not None:
            position = self.position_of(keep_row)
            self._move_cursor(position if position is not None else min(self.cursor, count - 1))
        elif self.cursor >= count:
            self._move_cursor(max(0, count - 1))
        if self.show_vertical_scrollbar:
            self.vertical_scrollbar.refresh()  # drawn again only if its thumb moved
        self.refresh()

    def _set_rows(self, count: int) -> None:
        """Size the scrollable area for ``count`` rows (and the header).

        Setting ``virtual_size`` asks Textual for a layout of the whole screen: with a
        snapshot every ~50 ms while a log streams, that reflow and the repaint of every
        widget it touched were a third of a frame. When rows come or go below a scrollbar
        that is shown before and after, nothing but the table's scroll range changes:
        the size is set without the layout and the scrollbar told (what the layout would
        have done for this widget, ``ScrollView._size_updated``), without a repaint of its
        own (see ``SteadyScrollBar``). Anything else (the scrollbar appearing or going,
        another width) takes the layout.
        """
        size = Size(self.size.width, count + 1)
        old = self.virtual_size
        view = self.scrollable_content_region.height
        if (
            self.show_vertical_scrollbar
            and old.width == size.width
            and old.height > view
            and size.height > view
        ):
            self.set_reactive(RequestTable.virtual_size, size)
            # What ``Widget._scroll_update`` does for a vertical bar shown before and after,
            # with no repaint yet: set_snapshot asks for one once the position moved too.
            bar = self.vertical_scrollbar
            bar.set_reactive(ScrollBar.window_virtual_size, size.height)
            bar.set_reactive(
                ScrollBar.window_size, self.container_size.height - self.scrollbar_size_horizontal
            )
            self.scroll_y = self.validate_scroll_y(self.scroll_y)
        else:
            self.virtual_size = size

    @property
    def vertical_scrollbar(self) -> ScrollBar:
        """Textual's vertical scrollbar (made as ``Widget.vertical_scrollbar`` makes it),
        as a ``SteadyScrollBar``: rows streaming in below a long table move its range and
        position at every snapshot, and its thumb hardly ever (see steady_scrollbar)."""
        return install_vertical_scrollbar(self, SteadyScrollBar)

    @property
    def timing(self) -> bool:
        """Whether the timing columns (queue, prefill, decode, why) show."""
        return self._timing

    def set_timing(self, timing: bool) -> None:
        """Show the timing group of columns or not (every row is drawn again)."""
        if timing != self._timing:
            self._timing = timing
            self._forget_drawn()
            self.refresh()

    def request_id(self, row: int) -> str:
        """The id of store row ``row`` (from the snapshot shown)."""
        state = self._snap.state
        return state.store.ids[row] if state is not None and row < self._snap.rows else ""

    def row_cells(self, row: int) -> list[tuple[str, str]]:
        """Every column of store row ``row`` as (title, text), the id whole (copy a row)."""
        state = self._snap.state
        if state is None or row >= self._snap.rows:
            return []
        columns = columns_for(self._timing)
        return copy_cells(
            state.store, self._shape, row, columns, self._time_pattern(), self._file_names
        )

    def position_of(self, row: int) -> int | None:
        """Table position of store row ``row`` in the current view (None: filtered out)."""
        snap = self._snap
        if snap.view is None:
            return row if 0 <= row < snap.rows else None
        import numpy as np

        hits = np.flatnonzero(snap.view == row)
        return int(hits[0]) if hits.size else None

    # -- cursor ------------------------------------------------------------------------------

    def _move_cursor(self, position: int, *, follow: bool = False) -> None:
        count = self._snap.visible
        position = max(0, min(position, count - 1)) if count else 0
        if position != self.cursor:
            self.cursor = position
        self._scroll_to_cursor()
        if self.follow != follow:
            self.follow = follow

    def go_to(self, position: int) -> None:
        self._move_cursor(position)

    def _scroll_to_cursor(self) -> None:
        height = max(1, self.scrollable_content_region.height - 1)
        top = round(self.scroll_y)
        if self.cursor < top:
            self.scroll_to(y=self.cursor, animate=False, immediate=True)
        elif self.cursor >= top + height:
            self.scroll_to(y=self.cursor - height + 1, animate=False, immediate=True)

    def watch_cursor(self, old: int, new: int) -> None:
        self.refresh()
        self.post_message(self.CursorMoved(new))

    def watch_follow(self, follow: bool) -> None:
        self.post_message(self.FollowChanged(follow))

    def action_cursor_up(self) -> None:
        self._move_cursor(self.cursor - 1)

    def action_cursor_down(self) -> None:
        at_end = self.cursor >= self._snap.visible - 1
        self._move_cursor(self.cursor + 1, follow=self.follow and at_end)

    def action_page_up(self) -> None:
        self._move_cursor(self.cursor - max(1, self.size.height - 2))

    def action_page_down(self) -> None:
        self._move_cursor(self.cursor + max(1, self.size.height - 2))

    def action_first(self) -> None:
        self._move_cursor(0)

    def action_last(self) -> None:
        self._move_cursor(self._snap.visible - 1, follow=True)

    def start_following(self) -> None:
        self._move_cursor(self._snap.visible - 1, follow=True)

    def on_click(self, event: object) -> None:
        offset = getattr(event, "y", None)
        if isinstance(offset, int) and offset >= 1:
            self._move_cursor(round(self.scroll_y) + offset - 1)

    def on_resize(self) -> None:
        self._forget_drawn()
        self.virtual_size = Size(self.size.width, self._snap.visible + 1)
        self._scroll_to_cursor()

    # -- rendering ---------------------------------------------------------------------------

    def _style(self, name: str) -> Style:
        """A component class's style ("" for the widget's own), computed once per theme."""
        style = self._styles.get(name)
        if style is None:
            style = self.rich_style if not name else self.get_component_rich_style(name)
            self._styles[name] = style
        return style

    def notify_style_update(self) -> None:
        self._styles.clear()
        self._forget_drawn()
        super().notify_style_update()

    def _forget_drawn(self) -> None:
        """Drop the drawn rows and screen: they are drawn again at the next refresh."""
        self._cache.clear()
        self._screen_key = None

    def _name_files(self, snap: Snapshot) -> None:
        """Name each file of the snapshot (once per new set of files, not per frame)."""
        paths = tuple(f.path for f in snap.state.files) if snap.state is not None else ()
        if paths != self._file_paths:
            names = short_names(paths)
            self._file_paths = paths
            self._file_names = tuple(escape(names[path]) for path in paths)

    @property
    def shows_files(self) -> bool:
        """Whether the ``file`` column is in the layout: more than one log is read."""
        return len(set(self._file_paths)) > 1

    def _time_pattern(self) -> str:
        """``time_pattern`` of the snapshot's span: two dates to format, once per span."""
        span = self._snap.time_span
        if span != self._pattern_span:
            self._pattern_span, self._pattern = span, time_pattern(span)
        return self._pattern

    def _columns(self, width: int) -> list[tuple[Column, int]]:
        pattern = self._time_pattern()
        key = (width, pattern, self.shows_files, self._timing)
        if key != self._layout_key:
            cells = len(time.strftime(pattern, time.gmtime(0)))
            self._layout = layout_columns(width, cells, self.shows_files, self._timing)
            self._layout_key = key
        return self._layout

    def render_line(self, y: int) -> Strip:
        region = self.scrollable_content_region
        width = region.width
        if y == 0:
            return self._header(width)
        snap = self._snap
        position = round(self.scroll_y) + y - 1
        if position >= snap.visible or snap.state is None:
            return Strip.blank(width, self._style(""))
        height = max(1, region.height - 1)
        top = round(self.scroll_y)
        screen = (snap.lineage, snap.version, top, height, width, self.cursor)
        if screen != self._screen_key:
            self._screen_rows = self._draw_screen(top, height, width)
            self._screen_key = screen
        strip = self._screen_rows.get(position)
        if strip is None:  # below the rows a screen holds (never, but draw it all the same)
            strip = self._draw_screen(position, 1, width)[position]
        return strip

    def _draw_screen(self, top: int, height: int, width: int) -> dict[int, Strip]:
        """The rows at positions [top, top + height): the ones drawn before as they still
        look from the cache, the others drawn together (table_cells) and cached."""
        snap = self._snap
        assert snap.state is not None
        drawn_from = (snap.lineage, snap.state.version)
        out: dict[int, Strip] = {}
        misses: list[tuple[int, tuple[object, ...]]] = []
        for position in range(top, min(top + height, snap.visible)):
            row = snap.row_at(position)
            label = self._id_label(position, width, height)
            look: tuple[object, ...] = (
                width,
                self._timing,
                position == self.cursor,
                label,
                self._pattern,
                self._file_names,
            )
            cached = self._cache.get(row)
            if cached is not None and cached[0] == look and row < self._still_as(cached[1]):
                out[position] = cached[2]
            else:
                misses.append((position, look))
        positions = [position for position, _ in misses]
        for (position, look), strip in zip(misses, self._render_rows(positions, width, height)):
            self._cache[snap.row_at(position)] = (look, drawn_from, strip)
            out[position] = strip
        return out

    def _still_as(self, drawn_from: tuple[int, int]) -> int:
        """Rows that are the same now as in the state a cached row was drawn from."""
        bound = self._unchanged.get(drawn_from)
        if bound is None:
            snap = self._snap
            lineage, version = drawn_from
            bound = snap.unchanged_below(version) if lineage == snap.lineage else 0
            self._unchanged[drawn_from] = bound
        return bound

    def _id_label(self, position: int, width: int, height: int | None = None) -> str:
        """The id shown at ``position``: shortened, if it must be, unlike its neighbours'."""
        id_width = next((w for c, w in self._columns(width) if c.key == "id"), 0)
        top = round(self.scroll_y)
        if height is None:
            height = max(1, self.scrollable_content_region.height - 1)
        key = (self._snap.version, top, height, id_width)
        if key != self._id_labels_key:
            positions = range(top, min(top + height, self._snap.visible))
            self._id_labels = screen_labels(self._snap, positions, id_width)
            self._id_labels_key = key
        return self._id_labels.get(position, "")

    def _header(self, width: int) -> Strip:
        query = self._snap.query
        return header_strip(
            self._columns(width),
            query.sort,
            query.reverse,
            self._style("request-table--header"),
            self._style("request-table--sorted"),
            width,
        )

    def _render_rows(self, positions: list[int], width: int, height: int) -> list[Strip]:
        """The rows at table ``positions`` (on screen, ``height`` rows of it), drawn
        together."""
        snap = self._snap
        state = snap.state
        assert state is not None
        layout = self._columns(width)
        rows = [snap.row_at(p) for p in positions]
        drawn = cells_of(
            state.store,
            self._shape,
            rows,
            [column.key for column, _ in layout],
            self._time_pattern(),
            self._file_names,
        )
        base = self._style("")
        styles = {
            BASE: base,
            DIM: self._style("request-table--dim"),
            SKIP: self._style("request-table--skip"),
        }
        cursor_style = self._style("request-table--cursor")
        strips = []
        for position, row in zip(positions, drawn):
            cursor = cursor_style if position == self.cursor else None
            if row.state != "unknown":  # (an unknown state's cell is dimmed)
                styles[STATE] = self._style(f"request-table--{row.state}")
            segments: list[Segment] = []
            gap = cursor if cursor is not None else base
            space = Segment(" ", gap)
            used = -1
            for column, w in layout:
                if column.key == "id":
                    text, style = self._id_label(position, width, height), base
                else:
                    text, role = row.cells[column.key]
                    style = styles[role]
                if cursor is not None:
                    style = style + cursor
                if used >= 0:
                    segments.append(space)
                segments.append(Segment(fit(text, w, column.align), style))
                used += w + 1
            if used <= width:
                if used < width:
                    segments.append(Segment(" " * (width - used), gap))
                strips.append(Strip(segments, width))
            else:  # wider than the widget (a terminal narrower than one column): cut
                strips.append(Strip(segments).crop(0, width))
        return strips
