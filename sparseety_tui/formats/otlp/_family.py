"""``OtlpFamily``: detection of OTLP/JSON span files, and their parser."""

from __future__ import annotations

from sparseety_tui.formats._base import share_of_lines
from sparseety_tui.formats.otlp._kinds import KINDS
from sparseety_tui.formats.otlp._parser import OtlpParser

__all__ = ["FAMILY", "KINDS", "OtlpFamily"]

#: The key an ``ExportTraceServiceRequest`` line opens with (the Collector writes it first):
#: ``{"resourceSpans":[{"resource":{"attributes":[]},"scopeSpans":[]}]}``.
_KEY = b'"resourceSpans"'


def opens_export(line: bytes) -> bool:
    """Whether ``line`` opens with ``{"resourceSpans":`` (whitespace allowed between)."""
    head = line.lstrip()
    if head[:1] != b"{":
        return False
    rest = head[1:].lstrip()
    return rest.startswith(_KEY) and rest[len(_KEY) :].lstrip()[:1] == b":"


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
        return 0.98 * share_of_lines(lines, opens_export)

    def new_parser(self, *, reference_time: float | None = None) -> OtlpParser:
        return OtlpParser()  # span times are unix nanoseconds


FAMILY = OtlpFamily()
