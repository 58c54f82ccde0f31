"""The requests a command was asked about: ``--filter`` and ``--since``/``--until``.

``summary`` and ``extract`` pick their rows here with the function the TUI's table view
comes from (``core.query.compute_view``, filter clauses and time window together), so a
command and the TUI agree on the same filter and window by construction. The reports
then take the rows as a subset (``compute_totals(rows=)``, ``request_records(rows=)``),
the way the TUI's totals follow its table.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from sparseety_tui.core.figures import ModelShape
from sparseety_tui.core.query._query import ViewQuery, compute_view, parse_filter
from sparseety_tui.core.query._timewindow import TimeWindow, WindowSpec, newest_time
from sparseety_tui.core.store import ExtractorView

if TYPE_CHECKING:
    import numpy as np


#: Top-level ``summary`` keys a filter does not narrow: lines by file, the engine's stats
#: and the errors are not requests; heat maps are counted per layer, not kept per request.
NOT_FILTERED = ("files", "engine", "errors", "experts", "dropped_experts", "head_skips")


@dataclass(frozen=True)
class Selection:
    """What ``--filter`` and ``--since``/``--until`` asked for (both optional)."""

    filter_text: str | None = None
    window: WindowSpec | None = None

    @property
    def narrows(self) -> bool:
        return self.filter_text is not None or self.window is not None

    def query(self) -> ViewQuery:
        """The TUI's query for the same filter and window (log order, no sort)."""
        text = (self.filter_text or "").strip()
        return ViewQuery(text=text, clauses=parse_filter(text) if text else (), window=self.window)


@dataclass(frozen=True)
class Selected:
    rows: np.ndarray[Any, Any]  # store rows, ascending (log order)
    window: TimeWindow | None  # the window resolved against the newest time read


def select_rows(extractor: ExtractorView, shape: ModelShape, selection: Selection) -> Selected:
    """The rows ``selection`` keeps (raises ``FilterError`` on a bad filter)."""
    window = None
    if selection.window is not None:
        window = selection.window.resolve(newest_time(extractor))
    store = extractor.store
    rows = compute_view(store, shape, selection.query(), len(store), window=window)
    return Selected(rows, window)
