"""What a snapshot carries besides the counts: the freeze with the rows it changed, and the
engine panel's points.
"""

from __future__ import annotations

import itertools
from collections import deque

from sparseety_tui.core.extraction import Extractor
from sparseety_tui.core.query import TimeWindow, points_in, window_series
from sparseety_tui.core.store import EngineSeries, FrozenExtractor
from sparseety_tui.events import StatsPayload

#: Engine stats points copied into each snapshot for sparklines.
ENGINE_POINTS = 120
#: Freezes whose changed rows a snapshot carries (``Snapshot.changes``): the UI keeps a
#: row drawn from any of these states while it did not change (ui/widgets/request_table.py).
ROW_CHANGES_KEPT = 64


class Freezer:
    """The Extractor's state frozen, and from which row each of the last freezes changed
    it (``changes``: (state version, first row changed since the freeze before))."""

    def __init__(self, extractor: Extractor) -> None:
        self._extractor = extractor
        self.state: FrozenExtractor | None = None  # the last freeze
        self.changes: deque[tuple[int, int]] = deque(maxlen=ROW_CHANGES_KEPT)

    def freeze(self) -> FrozenExtractor:
        """The Extractor's state now, frozen (again only if anything changed)."""
        state = self.state
        if state is None or state.version != self._extractor.version:
            store = self._extractor.store
            # Rows below the store's dirty_from and the last freeze's length are the same
            # in the new freeze (the invariant freezing shares segments by): read before
            # freeze() resets it.
            changed_from = 0 if state is None else min(store.dirty_from, len(state.store))
            state = self.state = self._extractor.freeze()
            self.changes.append((state.version, changed_from))
        return state


class EngineWindow:
    """The engine panel's newest ``ENGINE_POINTS`` stats points and the series its figures
    (every stats line's count) come from; with a time window, those of the window only
    (points outside it are not drawn, lines outside it not counted)."""

    def __init__(self) -> None:
        #: (key, points, series) of the window shown last.
        self._cached: tuple[object, tuple[StatsPayload, ...], EngineSeries | None] = (
            None,
            (),
            None,
        )

    def view(
        self, engine: EngineSeries, window: TimeWindow | None
    ) -> tuple[tuple[StatsPayload, ...], EngineSeries | None]:
        if not engine.count:
            return (), None
        if window is None:
            return tuple(itertools.islice(reversed(engine.points), ENGINE_POINTS))[::-1], None
        key = (engine.count, window)  # a pass over STATS_POINTS points: once per change
        if self._cached[0] != key:
            series = window_series(engine, window)[0]
            points = tuple(points_in(engine.points, window)[-ENGINE_POINTS:])
            self._cached = (key, points, series)
        return self._cached[1], self._cached[2]
