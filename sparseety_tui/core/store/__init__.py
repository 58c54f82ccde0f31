"""The request store and its frozen copies.

``RequestStore`` keeps compact columns per request plus where each contributing line lives;
``EngineSeries`` the engines' stats lines and heat maps; ``ErrorLog`` the errors;
``FileState`` each file's counts by kind. ``freeze_store`` and ``FrozenExtractor`` give
readers on other threads immutable copies; the views read both alike."""

from sparseety_tui.core.store._errors import (
    MESSAGE_CHARS,
    SHORT,
    ErrorLog,
    ErrorRecord,
    classify,
    errors_by_kind,
)
from sparseety_tui.core.store._files import (
    DIAGNOSTIC_SAMPLES,
    SNIFF_HEAD_BYTES,
    Diagnostic,
    FileState,
    FrozenFile,
    add_counts,
)
from sparseety_tui.core.store._frozen import FrozenExtractor, FrozenStore, freeze_store, numeric
from sparseety_tui.core.store._heat import (
    HEAT_INDICES,
    HEAT_LAYERS,
    UNKNOWN_MODEL,
    HeatByModel,
    HeatCounts,
    combined_heat,
    copy_heat_by_model,
    heat_for,
    heat_index,
    merge_heat_by_model,
)
from sparseety_tui.core.store._idindex import EncodedIds, IdIndex
from sparseety_tui.core.store._layout import (
    CACHE_HIT_REPORTED,
    COUNT_FROM_IDS,
    COUNT_IDS_LOWER_BOUND,
    COUNT_REPORTED,
    COUNT_SOURCES,
    COUNT_TOKENIZER,
    COUNT_TOKENIZER_LOWER_BOUND,
    FLOAT32_MAX,
    INT_COLUMNS,
    KV_SKIP_NAMES,
    LOWER_BOUND_SOURCES,
    NAN,
    ROW_LAYOUT,
    STATE_CODE,
    STATES,
    UNKNOWN,
    RowExtras,
)
from sparseety_tui.core.store._parts import StorePart
from sparseety_tui.core.store._segments import SEGMENT_ROWS
from sparseety_tui.core.store._series import (
    LABEL_FIELDS,
    SOURCE_SEP,
    EngineSeries,
    LabelSeries,
    RecordingEngineSeries,
    label_key,
    minute_cells,
)
from sparseety_tui.core.store._store import LineLocation, RequestStore
from sparseety_tui.core.store._views import (
    ColumnView,
    ExtractorView,
    IdsView,
    StoreView,
    merged_meta,
)

__all__ = [
    "CACHE_HIT_REPORTED",
    "COUNT_FROM_IDS",
    "COUNT_IDS_LOWER_BOUND",
    "COUNT_REPORTED",
    "COUNT_SOURCES",
    "COUNT_TOKENIZER",
    "COUNT_TOKENIZER_LOWER_BOUND",
    "DIAGNOSTIC_SAMPLES",
    "FLOAT32_MAX",
    "HEAT_INDICES",
    "HEAT_LAYERS",
    "INT_COLUMNS",
    "KV_SKIP_NAMES",
    "LABEL_FIELDS",
    "LOWER_BOUND_SOURCES",
    "MESSAGE_CHARS",
    "NAN",
    "ROW_LAYOUT",
    "SEGMENT_ROWS",
    "SHORT",
    "SNIFF_HEAD_BYTES",
    "SOURCE_SEP",
    "STATES",
    "STATE_CODE",
    "UNKNOWN",
    "UNKNOWN_MODEL",
    "ColumnView",
    "Diagnostic",
    "EncodedIds",
    "EngineSeries",
    "ErrorLog",
    "ErrorRecord",
    "ExtractorView",
    "FileState",
    "FrozenExtractor",
    "FrozenFile",
    "FrozenStore",
    "HeatByModel",
    "HeatCounts",
    "IdIndex",
    "IdsView",
    "LabelSeries",
    "LineLocation",
    "RecordingEngineSeries",
    "RequestStore",
    "RowExtras",
    "StorePart",
    "StoreView",
    "add_counts",
    "classify",
    "combined_heat",
    "copy_heat_by_model",
    "errors_by_kind",
    "freeze_store",
    "heat_for",
    "heat_index",
    "label_key",
    "merge_heat_by_model",
    "merged_meta",
    "minute_cells",
    "numeric",
]
