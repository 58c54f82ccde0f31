"""``OtlpParser``: one OTLP/JSON line (an ``ExportTraceServiceRequest``) to its kind and
request events (the first returned, the others through ``pending``)."""

from __future__ import annotations

import re
from typing import Any

import orjson

from sparseety_tui.events import Event, LineKind, ParsedLine, RequestPayload
from sparseety_tui.formats._base import note_ignored
from sparseety_tui.formats._lenient_json import loads_lenient
from sparseety_tui.formats.otlp._kinds import EMPTY, SPANS
from sparseety_tui.formats.otlp._spans import request_id, span_payload
from sparseety_tui.formats.otlp._values import Attributes

#: Numbers in a span name (SGLang names its spans by host, pid, rank and request id),
#: each shown as ``#`` in its ``ignored`` key, so the keys stay few.
_NUMBERS = re.compile(r"0x[0-9a-fA-F]+|\b[0-9a-fA-F]*[0-9][0-9a-fA-F]*\b")
#: Characters of a span name shown in its ``ignored`` key.
NAME_CHARS = 60


class _Shape(Exception):
    """The line is JSON but not an ``ExportTraceServiceRequest``; the message says why."""


def _spans_of(obj: Any) -> list[Any]:
    """Every span of an ``ExportTraceServiceRequest`` (resources, then scopes, in order);
    raises ``_Shape`` when the containers are not what OTLP/JSON says."""
    if type(obj) is not dict:
        raise _Shape(f"JSON {type(obj).__name__}, not an object")
    resources = obj.get("resourceSpans")
    if resources is None:
        if obj:
            raise _Shape("JSON object without resourceSpans")
        return []  # ``{}``: an export of nothing
    if type(resources) is not list:
        raise _Shape("resourceSpans is not a list")
    spans: list[Any] = []
    for resource in resources:
        if type(resource) is not dict:
            raise _Shape("a resourceSpans entry is not an object")
        scopes = resource.get("scopeSpans", [])
        if type(scopes) is not list:
            raise _Shape("scopeSpans is not a list")
        for scope in scopes:
            if type(scope) is not dict:
                raise _Shape("a scopeSpans entry is not an object")
            inner = scope.get("spans", [])
            if type(inner) is not list:
                raise _Shape("spans is not a list")
            spans.extend(inner)
    return spans


class OtlpParser:
    """Per-file parser; it carries nothing from one line to the next."""

    def __init__(self) -> None:
        self.pending: list[Event] = []
        self.last_reason = ""
        self.ignored: dict[str, int] = {}

    def finish(self) -> None:
        """Nothing is held open across lines."""

    def _unparsed(self, reason: str) -> ParsedLine:
        self.last_reason = reason
        return LineKind.UNPARSED, None

    def parse(self, line: bytes) -> ParsedLine:
        try:
            obj = orjson.loads(line)
        except orjson.JSONDecodeError as exc:
            if not line.strip():
                return LineKind.BLANK, None
            # A number orjson cannot hold costs its attribute only.
            obj = loads_lenient(line)
            if obj is None:
                return self._unparsed(f"invalid JSON: {exc}")
        try:
            spans = _spans_of(obj)
        except _Shape as exc:
            return self._unparsed(f"not OTLP/JSON: {exc}")
        if not spans:
            return EMPTY, None
        payloads = [p for p in map(self._request, spans) if p is not None]
        if not payloads:
            return SPANS, None
        self.pending.extend(("request", p) for p in payloads[1:])
        return SPANS, ("request", payloads[0])

    def _request(self, span: Any) -> RequestPayload | None:
        if type(span) is not dict:
            note_ignored(self.ignored, "span", "not an object")
            return None
        attrs = Attributes(span.get("attributes"), self.ignored)
        rid = request_id(attrs)
        if rid is None:
            self._note_span(span.get("name"), "no request id")
            return None
        return span_payload(span, rid, attrs, self.ignored)

    def _note_span(self, name: object, reason: str) -> None:
        """Count a span that gave no request, by its name (numbers as ``#``)."""
        text = _NUMBERS.sub("#", name[: NAME_CHARS * 4])[:NAME_CHARS] if type(name) is str else "?"
        note_ignored(self.ignored, f"span '{text}'", reason)
