"""Heights that follow content, set explicitly instead of ``height: auto``.

A widget whose content changes its height (the totals strip, the heatmaps, the engine
panel) sets ``styles.height`` to its row count on every change. ``height: auto`` with
``refresh(layout=True)`` can keep the old height for good (Textual 8.2): the layout caches
each widget's box model under a counter that ``refresh(layout=True)`` bumps only when no
layout request of that widget is pending yet. If the screen lays out (for another widget)
while such a request is pending, the box model is cached under the bumped counter; a
content change before the widget's own request is handled then bumps nothing, and every
later layout reuses the old height (content cut off) until the next change or resize. A
changed ``styles.height`` is part of the cache key, so it always takes effect; an
unchanged one leaves a cached box model that is still right.
"""

from __future__ import annotations

from textual.widget import Widget


def fit_height(widget: Widget, rows: int) -> None:
    """Make ``widget`` ``rows`` rows tall (padding and border included: none vertical here).

    Call it whenever the content's row count may have changed, then ``refresh()``.
    """
    widget.styles.height = rows
