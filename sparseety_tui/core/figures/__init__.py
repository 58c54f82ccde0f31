"""Figures: what the store adds up to.

``compute_totals`` (the typed ``Totals`` document behind ``summary --json`` and the TUI's
totals: frozen dataclasses, one ``to_json`` giving the JSON), the per-row figures and skip
rules (``row_skip``, ``column_skip``), the cost model that names its source, live running
totals, splits by model and file, per-minute trends and the engines' fleet figures."""

from sparseety_tui.core.figures._costmodel import (
    DEFAULT_SHAPE,
    ModelConfigError,
    ModelShape,
    shape_from_config,
)
from sparseety_tui.core.figures._document import (
    CacheHitRequests,
    EngineCounts,
    EngineFigures,
    EngineOwn,
    EngineTotals,
    ErrorTotals,
    HeatMap,
    ListedError,
    LowerBoundCounts,
    MinuteThroughput,
    PrefillTokens,
    Quantiles,
    RequestTotals,
    SkipKind,
    SkippedTotals,
    SlowTotals,
    SplitGroup,
    Splits,
    TimingQuantiles,
    TimingTotals,
    Totals,
)
from sparseety_tui.core.figures._figures import (
    INPUT_COLUMNS,
    SKIP_FIELDS,
    column_figures,
    column_inputs,
    column_skip,
    column_skips,
    row_skip,
    whole_number,
)
from sparseety_tui.core.figures._fleet import (
    Engine,
    fleet,
    fleet_points,
    fold,
    label_of,
    measured,
    prefill_cached,
)
from sparseety_tui.core.figures._reading import from_json
from sparseety_tui.core.figures._running_totals import RunningTotals
from sparseety_tui.core.figures._skip_trend import CHUNK_ROWS, skip_trends
from sparseety_tui.core.figures._splits import SPLITS
from sparseety_tui.core.figures._timing import (
    TIMING_OUTPUT,
    WhyTable,
    timing_records,
    timing_totals,
    tpot,
)
from sparseety_tui.core.figures._totals import compute_totals, error_record, worst_imbalance
from sparseety_tui.core.figures._trend_lines import Trend, Trends
from sparseety_tui.core.figures._trends import MAX_MINUTES, compute_trends
from sparseety_tui.core.figures._why import (
    COMPONENTS,
    PEER_WINDOW_S,
    EngineAtArrival,
    dominant,
    why_text,
)

__all__ = [
    "CHUNK_ROWS",
    "COMPONENTS",
    "DEFAULT_SHAPE",
    "INPUT_COLUMNS",
    "MAX_MINUTES",
    "PEER_WINDOW_S",
    "SKIP_FIELDS",
    "SPLITS",
    "TIMING_OUTPUT",
    "CacheHitRequests",
    "Engine",
    "EngineAtArrival",
    "EngineCounts",
    "EngineFigures",
    "EngineOwn",
    "EngineTotals",
    "ErrorTotals",
    "HeatMap",
    "ListedError",
    "LowerBoundCounts",
    "MinuteThroughput",
    "ModelConfigError",
    "ModelShape",
    "PrefillTokens",
    "Quantiles",
    "RequestTotals",
    "RunningTotals",
    "SkipKind",
    "SkippedTotals",
    "SlowTotals",
    "SplitGroup",
    "Splits",
    "TimingQuantiles",
    "TimingTotals",
    "Totals",
    "Trend",
    "Trends",
    "WhyTable",
    "column_figures",
    "column_inputs",
    "column_skip",
    "column_skips",
    "compute_totals",
    "compute_trends",
    "dominant",
    "error_record",
    "fleet",
    "fleet_points",
    "fold",
    "from_json",
    "label_of",
    "measured",
    "prefill_cached",
    "row_skip",
    "shape_from_config",
    "skip_trends",
    "timing_records",
    "timing_totals",
    "tpot",
    "whole_number",
    "why_text",
    "worst_imbalance",
]
