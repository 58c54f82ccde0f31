"""``OtlpFamily``: detection of OTLP/JSON span files, and their parser."""

from __future__ import annotations

import re

from sparseety_tui.formats.otlp._kinds import KINDS
from sparseety_tui.formats.otlp._parser import OtlpParser

__all__ = ["FAMILY", "KINDS", "OtlpFamily"]

#: A line that opens an ``ExportTraceServiceRequest`` (the Collector writes this key first).
_HEAD = re.compile(rb'\s*\{\s*"resourceSpans"\s*:')


class OtlpFamily:
    name = "otlp"
    description = (
        "OpenTelemetry spans, OTLP/JSON (the Collector's file exporter: one export a line)"
    )
    scan_requests = None  # no bulk fast paths (formats._base.FormatFamily)
    scan_server = None
    decode_simple_block = None
    range_start = None  # no state across lines: a split read may start anywhere

    def sniff(self, lines: list[bytes]) -> float:
        nonblank = hits = 0
        for line in lines:
            if not line.strip():
                continue
            nonblank += 1
            if _HEAD.match(line):
                hits += 1
        return 0.98 * hits / nonblank if nonblank else 0.0

    def new_parser(self, *, reference_time: float | None = None) -> OtlpParser:
        return OtlpParser()  # span times are unix nanoseconds


FAMILY = OtlpFamily()
