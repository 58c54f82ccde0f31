"""Every use of Textual's private API, in one module.

The app needs a few things Textual keeps behind underscores. Each is used here and nowhere
else (the tests included), with what it is for, so that a Textual upgrade is checked in one
place: ``tests/app/test_textual_compat.py`` reads the installed Textual's version, fails
outside ``CHECKED_VERSIONS`` and checks that every name in ``PRIVATES`` still exists on the
real classes.

Used by the app:

- ``App._filters``: the line filters every frame goes through; the no-colour mode puts
  its own in place of Textual's colour-dropping ones (``set_line_filters``).
- ``Widget._vertical_scrollbar`` and ``App._start_widget``: the request table makes its
  vertical scrollbar as ``Widget.vertical_scrollbar`` does, as a ``SteadyScrollBar``
  (``install_vertical_scrollbar``).
- ``DOMNode._bindings``: a widget's own key bindings; the prompt runs an ``Input``'s
  editing keys itself, in key order (``own_bindings``).
- ``Input._on_key`` and ``Input._on_paste``: an ``Input``'s handlers, which Textual calls
  (with every class's ``_on_key`` in the method resolution order) when a key or paste
  reaches the widget; ``KeyFirstInput`` lets the prompt take them first.

Used by the tests (what is on screen, and when Textual lays out or repaints):

- ``Screen._compositor``, ``App._background_screens`` and the private module
  ``textual._compositor`` (its ``LayoutUpdate``): the screen's cells as drawn
  (``screen_segments``, ``screen_strips``).
- ``App._driver``: keys queued as a terminal sends them (``send_to_driver``).
- ``Widget._clear_arrangement_cache`` and ``Screen._refresh_layout``: a layout now
  (``lay_out_now``).
- ``Screen._layout_required`` and ``Widget._repaint_required``: a layout or a repaint
  pending (``layout_pending``, ``repaint_pending``).
"""

from __future__ import annotations

from typing import Any

from rich.segment import Segment
from textual import events
from textual._compositor import LayoutUpdate
from textual.app import App
from textual.binding import BindingsMap
from textual.dom import DOMNode
from textual.filter import LineFilter
from textual.screen import Screen
from textual.scrollbar import ScrollBar
from textual.strip import Strip
from textual.widget import Widget
from textual.widgets import Input

#: The Textual versions the privates below were checked against: at least the first,
#: below the second (checked on 8.2.8).
CHECKED_VERSIONS = ((8, 2), (8, 3))

#: (class, name) of every private used here; an instance attribute is checked on an
#: instance of the class.
PRIVATES: tuple[tuple[type[object], str], ...] = (
    (App, "_filters"),
    (App, "_start_widget"),
    (App, "_background_screens"),
    (App, "_driver"),
    (Widget, "_vertical_scrollbar"),
    (Widget, "_clear_arrangement_cache"),
    (Widget, "_repaint_required"),
    (DOMNode, "_bindings"),
    (Input, "_on_key"),
    (Input, "_on_paste"),
    (Screen, "_compositor"),
    (Screen, "_refresh_layout"),
    (Screen, "_layout_required"),
)


# -- used by the app ---------------------------------------------------------------------------


def line_filters(app: App[Any]) -> list[LineFilter]:
    """The line filters every frame of ``app`` goes through (enabled or not)."""
    return app._filters


def set_line_filters(app: App[Any], filters: list[LineFilter]) -> None:
    """Put ``filters`` in place of ``app``'s line filters (in ``__init__``)."""
    app._filters = filters


def install_vertical_scrollbar(widget: Widget, make: type[ScrollBar]) -> ScrollBar:
    """``widget``'s vertical scrollbar, made (the first time) as ``Widget.vertical_scrollbar``
    makes Textual's, but of class ``make``."""
    bar = widget._vertical_scrollbar
    if bar is None:
        bar = make(vertical=True, name="vertical", thickness=widget.scrollbar_size_vertical)
        bar.display = False
        widget._vertical_scrollbar = bar
        widget.app._start_widget(widget, bar)
    return bar


def own_bindings(widget: Widget) -> BindingsMap:
    """``widget``'s own key bindings (its class's ``BINDINGS``)."""
    return widget._bindings


class KeyFirstInput(Input):
    """An ``Input`` whose subclass takes each key and paste first (``take_key``,
    ``take_paste``), then hands it on to the ``Input``'s own handling by calling
    ``super()``. Textual then calls the ``Input``'s handler too, as for any subclass
    that defines ``_on_key`` (it dispatches along the method resolution order until an
    event's default is prevented)."""

    async def _on_key(self, event: events.Key) -> None:
        await self.take_key(event)

    def _on_paste(self, event: events.Paste) -> None:
        self.take_paste(event)

    async def take_key(self, event: events.Key) -> None:
        await Input._on_key(self, event)

    def take_paste(self, event: events.Paste) -> None:
        Input._on_paste(self, event)


# -- used by the tests -------------------------------------------------------------------------


def screen_segments(app: App[Any]) -> list[list[Segment]]:
    """Every segment of each line of ``app``'s screen as its next full frame would draw
    it (what ``export_screenshot`` prints into an SVG, without the SVG)."""
    update = app.screen._compositor.render_update(full=True, screen_stack=app._background_screens)
    assert isinstance(update, LayoutUpdate)  # what a full update is
    return [[seg for strip in row for seg in strip] for row in update.strips]


def screen_strips(screen: Screen[Any]) -> list[Strip]:
    """``screen``'s lines as drawn."""
    return screen._compositor.render_strips()


def send_to_driver(app: App[Any], event: events.Event) -> None:
    """Queue ``event`` on ``app``'s driver, as the terminal's input thread does."""
    assert app._driver is not None
    app._driver.send_message(event)


def lay_out_now(widget: Widget) -> None:
    """Lay ``widget``'s screen out now, as a sibling's layout request would, before the
    widget's own request is handled."""
    for container in widget.ancestors:
        if isinstance(container, Widget):
            container._clear_arrangement_cache()
    widget.screen._refresh_layout()


def layout_pending(screen: Screen[Any]) -> bool:
    """``screen`` lays out again before its next frame."""
    return screen._layout_required


def repaint_pending(widget: Widget) -> bool:
    """``widget`` is repainted at the next frame."""
    return widget._repaint_required
