"""Reports: the documents the headless commands print (``summary --json``, ``extract``'s
request objects) built from a frozen extractor, its totals and request details."""

from sparseety_tui.core.report._document import (
    NOT_WINDOWED,
    SCHEMA_VERSION,
    SummaryDocument,
    SummaryFilter,
    SummaryWindow,
    WindowAnchor,
    WindowBound,
)
from sparseety_tui.core.report._report import (
    RecordTransform,
    extract_lines,
    request_records,
    summary_document,
)

__all__ = [
    "NOT_WINDOWED",
    "SCHEMA_VERSION",
    "RecordTransform",
    "SummaryDocument",
    "SummaryFilter",
    "SummaryWindow",
    "WindowAnchor",
    "WindowBound",
    "extract_lines",
    "request_records",
    "summary_document",
]
