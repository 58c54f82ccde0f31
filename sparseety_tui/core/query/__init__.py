"""Queries over a frozen store: the table's filter and sort language (``compute_view``),
the ``--since``/``--until`` time window, the selection that ``summary``, ``extract`` and the
TUI share, and request-id prefix matching."""

from sparseety_tui.core.query._idmatch import PrefixMatches, ambiguous_message
from sparseety_tui.core.query._query import (
    SORT_COLUMNS,
    FilterError,
    ViewQuery,
    compute_view,
    parse_filter,
)
from sparseety_tui.core.query._selection import NOT_FILTERED, Selection, select_rows
from sparseety_tui.core.query._timewindow import (
    TimeWindow,
    WindowedEngineSeries,
    WindowError,
    WindowRows,
    WindowSpec,
    newest_time,
    parse_bound,
    parse_window,
    points_in,
    records_in,
    time_span,
    window_from_args,
    window_rows,
    window_series,
)

__all__ = [
    "NOT_FILTERED",
    "SORT_COLUMNS",
    "FilterError",
    "PrefixMatches",
    "Selection",
    "TimeWindow",
    "ViewQuery",
    "WindowError",
    "WindowRows",
    "WindowSpec",
    "WindowedEngineSeries",
    "ambiguous_message",
    "compute_view",
    "newest_time",
    "parse_bound",
    "parse_filter",
    "parse_window",
    "points_in",
    "records_in",
    "select_rows",
    "time_span",
    "window_from_args",
    "window_rows",
    "window_series",
]
