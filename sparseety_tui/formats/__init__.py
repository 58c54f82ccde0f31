"""Format families: detect a file's format and parse each line into a kind and an event
(``sparseety_tui.events``), or read a run of lines into a ``Batch`` (a fast path). One
module (or package) per family, registered in ``FAMILIES``; ``detect`` picks one for a
file. The names below are the face every other package reads formats through."""

from sparseety_tui.formats._base import (
    BlockDecoder,
    BoundaryNotes,
    FormatFamily,
    LineParser,
    RangeAware,
    RecordScanner,
    ServerScanner,
    failure_reason,
)
from sparseety_tui.formats._clean import LocalClock
from sparseety_tui.formats._generic import FALLBACK
from sparseety_tui.formats._numbers import count
from sparseety_tui.formats._pylit import as_float
from sparseety_tui.formats._registry import (
    FAMILIES,
    SNIFF_LINES,
    UnknownFormatError,
    detect,
    fallback_for,
    family_by_name,
)
from sparseety_tui.formats._serverlog import ServerLogParser
from sparseety_tui.formats._startup import head_startup_meta
from sparseety_tui.formats._timestamps import (
    TIME_END,
    epoch_seconds,
    known_time,
    parse_timestamp,
    utc_text,
)
from sparseety_tui.formats._timing import meta_info_timing, metrics_timing
from sparseety_tui.formats._trace_native import SCANNER as TRACE_RECORD_SCANNER
from sparseety_tui.formats._wrapped import WrappedParser, wrapper_name

__all__ = [
    "FALLBACK",
    "FAMILIES",
    "SNIFF_LINES",
    "TIME_END",
    "TRACE_RECORD_SCANNER",
    "BlockDecoder",
    "BoundaryNotes",
    "FormatFamily",
    "LineParser",
    "LocalClock",
    "RangeAware",
    "RecordScanner",
    "ServerLogParser",
    "ServerScanner",
    "UnknownFormatError",
    "WrappedParser",
    "as_float",
    "count",
    "detect",
    "epoch_seconds",
    "failure_reason",
    "fallback_for",
    "family_by_name",
    "head_startup_meta",
    "known_time",
    "meta_info_timing",
    "metrics_timing",
    "parse_timestamp",
    "utc_text",
    "wrapper_name",
]
