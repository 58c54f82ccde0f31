"""OTLP/HTTP request bodies as OTLP/JSON lines, one span a line, for the receivers' spool.

Each line is a whole ``ExportTraceServiceRequest`` holding one span with its resource and
scope, so a spool file is itself a file as the Collector's ``file`` exporter writes it,
and a request's detail re-reads its one line. The protobuf form is converted by hand:
``MessageToDict`` would give base64 ids where OTLP/JSON wants hex, and is slow. The
protobuf packages (the ``otlp`` extra) are imported at the first protobuf body, never by
reading files.
"""

from __future__ import annotations

import base64
import math
from typing import Any

import orjson

from sparseety_tui.formats.otlp._spans import hex_id

#: Parts of a span line around the span itself: ``_PREFIX`` + resource + ``_SCOPE`` +
#: scope + ``_SPANS`` + span + ``_END`` (+ schema URLs when the export has them).
_PREFIX = b'{"resourceSpans":[{"resource":'
_SCOPE = b',"scopeSpans":[{"scope":'
_SPANS = b',"spans":['
_CLOSE_SCOPE = b"]"
_CLOSE_RESOURCE = b"}]"
_END = b"}]}"


def _frame(resource: Any, scope: Any, resource_url: Any, scope_url: Any) -> tuple[bytes, bytes]:
    """The bytes before and after the span of a line of this resource and scope."""
    head = _PREFIX + orjson.dumps(resource) + _SCOPE + orjson.dumps(scope) + _SPANS
    tail = _CLOSE_SCOPE
    if scope_url:
        tail += b',"schemaUrl":' + orjson.dumps(scope_url)
    tail += _CLOSE_RESOURCE
    if resource_url:
        tail += b',"schemaUrl":' + orjson.dumps(resource_url)
    return head, tail + _END


# -- JSON bodies ---------------------------------------------------------------------------


def _json_span(span: Any) -> dict[str, Any] | None:
    """The span with its ids in lowercase hex, or None when it is malformed (not an
    object, or without a valid trace and span id)."""
    if type(span) is not dict:
        return None
    trace_id = hex_id(span.get("traceId"), 32)
    span_id = hex_id(span.get("spanId"), 16)
    if trace_id is None or span_id is None:
        return None
    out = dict(span)
    out["traceId"] = trace_id
    out["spanId"] = span_id
    parent = span.get("parentSpanId")
    if type(parent) is str:
        out["parentSpanId"] = parent.lower()
    return out


def _list_field(obj: dict[str, Any], key: str, what: str) -> list[Any]:
    value = obj.get(key, [])
    if type(value) is not list:
        raise ValueError(f"{what}: {key} is not a list")
    return value


def lines_from_json_body(body: bytes) -> tuple[list[bytes], int]:
    """An OTLP/HTTP JSON body as span lines, and how many spans it rejected (a span that
    is not an object, or has no valid trace or span id).

    Raises:
        ValueError: the body is not JSON, or not an ``ExportTraceServiceRequest``.
    """
    try:
        request = orjson.loads(body)
    except orjson.JSONDecodeError as exc:
        raise ValueError(f"not JSON: {exc}") from None
    if type(request) is not dict:
        raise ValueError("not an ExportTraceServiceRequest: not a JSON object")
    lines: list[bytes] = []
    rejected = 0
    for resource_spans in _list_field(request, "resourceSpans", "request"):
        if type(resource_spans) is not dict:
            raise ValueError("a resourceSpans entry is not an object")
        resource = resource_spans.get("resource", {})
        if type(resource) is not dict:
            raise ValueError("a resource is not an object")
        for scope_spans in _list_field(resource_spans, "scopeSpans", "resourceSpans"):
            if type(scope_spans) is not dict:
                raise ValueError("a scopeSpans entry is not an object")
            scope = scope_spans.get("scope", {})
            if type(scope) is not dict:
                raise ValueError("a scope is not an object")
            spans = _list_field(scope_spans, "spans", "scopeSpans")
            if not spans:
                continue
            head, tail = _frame(
                resource, scope, resource_spans.get("schemaUrl"), scope_spans.get("schemaUrl")
            )
            for span in spans:
                good = _json_span(span)
                if good is None:
                    rejected += 1
                else:
                    lines.append(head + orjson.dumps(good) + tail)
    return lines, rejected


# -- protobuf bodies -----------------------------------------------------------------------

#: proto3 JSON's names of the doubles JSON has no number for.
_NOT_FINITE = {math.inf: "Infinity", -math.inf: "-Infinity"}


def _double(value: float) -> float | str:
    if math.isfinite(value):
        return value
    return _NOT_FINITE.get(value, "NaN")


def _any_value(value: Any) -> dict[str, Any]:
    """An ``AnyValue`` message in OTLP/JSON."""
    which = value.WhichOneof("value")
    if which == "string_value":
        return {"stringValue": value.string_value}
    if which == "int_value":
        return {"intValue": str(value.int_value)}
    if which == "double_value":
        return {"doubleValue": _double(value.double_value)}
    if which == "bool_value":
        return {"boolValue": value.bool_value}
    if which == "array_value":
        values = value.array_value.values
        return {"arrayValue": {"values": [_any_value(v) for v in values]} if values else {}}
    if which == "kvlist_value":
        pairs = value.kvlist_value.values
        return {"kvlistValue": {"values": _attributes(pairs)} if pairs else {}}
    if which == "bytes_value":
        return {"bytesValue": base64.b64encode(value.bytes_value).decode("ascii")}
    return {}


def _attributes(pairs: Any) -> list[dict[str, Any]]:
    """Repeated ``KeyValue`` messages in OTLP/JSON (the common value types inline: this
    loop is most of the conversion's time)."""
    out: list[dict[str, Any]] = []
    append = out.append
    for pair in pairs:
        value = pair.value
        which = value.WhichOneof("value")
        if which == "string_value":
            append({"key": pair.key, "value": {"stringValue": value.string_value}})
        elif which == "double_value":
            number = value.double_value
            finite = number - number == 0.0
            append(
                {"key": pair.key, "value": {"doubleValue": number if finite else _double(number)}}
            )
        elif which == "int_value":
            append({"key": pair.key, "value": {"intValue": str(value.int_value)}})
        elif which is None and not pair.HasField("value"):
            append({"key": pair.key})
        else:
            append({"key": pair.key, "value": _any_value(value)})
    return out


def _with_attributes(out: dict[str, Any], message: Any) -> dict[str, Any]:
    """``attributes`` and ``droppedAttributesCount`` of a message, when not empty."""
    if message.attributes:
        out["attributes"] = _attributes(message.attributes)
    if message.dropped_attributes_count:
        out["droppedAttributesCount"] = message.dropped_attributes_count
    return out


def _resource(resource_spans: Any) -> dict[str, Any]:
    if not resource_spans.HasField("resource"):
        return {}
    return _with_attributes({}, resource_spans.resource)


def _scope(scope_spans: Any) -> dict[str, Any]:
    if not scope_spans.HasField("scope"):
        return {}
    scope = scope_spans.scope
    out: dict[str, Any] = {}
    if scope.name:
        out["name"] = scope.name
    if scope.version:
        out["version"] = scope.version
    return _with_attributes(out, scope)


def _events(events: Any) -> list[dict[str, Any]]:
    out = []
    for event in events:
        item: dict[str, Any] = {}
        if event.time_unix_nano:
            item["timeUnixNano"] = str(event.time_unix_nano)
        if event.name:
            item["name"] = event.name
        out.append(_with_attributes(item, event))
    return out


def _links(links: Any) -> list[dict[str, Any]]:
    out = []
    for link in links:
        item: dict[str, Any] = {}
        if link.trace_id:
            item["traceId"] = link.trace_id.hex()
        if link.span_id:
            item["spanId"] = link.span_id.hex()
        if link.trace_state:
            item["traceState"] = link.trace_state
        _with_attributes(item, link)
        if link.flags:
            item["flags"] = link.flags
        out.append(item)
    return out


def _span(span: Any) -> dict[str, Any] | None:
    """A ``Span`` message in OTLP/JSON (fields at their default left out, as the proto3
    JSON mapping does), or None when its ids are not valid."""
    trace_id, span_id = span.trace_id, span.span_id
    if len(trace_id) != 16 or len(span_id) != 8 or not any(trace_id) or not any(span_id):
        return None
    out: dict[str, Any] = {"traceId": trace_id.hex(), "spanId": span_id.hex()}
    if span.trace_state:
        out["traceState"] = span.trace_state
    if span.parent_span_id:
        out["parentSpanId"] = span.parent_span_id.hex()
    if span.flags:
        out["flags"] = span.flags
    if span.name:
        out["name"] = span.name
    if span.kind:
        out["kind"] = span.kind
    if span.start_time_unix_nano:
        out["startTimeUnixNano"] = str(span.start_time_unix_nano)
    if span.end_time_unix_nano:
        out["endTimeUnixNano"] = str(span.end_time_unix_nano)
    _with_attributes(out, span)
    return _span_tail(out, span)


def _span_tail(out: dict[str, Any], span: Any) -> dict[str, Any]:
    """``_span``'s events, links and status."""
    if span.events:
        out["events"] = _events(span.events)
    if span.dropped_events_count:
        out["droppedEventsCount"] = span.dropped_events_count
    if span.links:
        out["links"] = _links(span.links)
    if span.dropped_links_count:
        out["droppedLinksCount"] = span.dropped_links_count
    if span.HasField("status"):
        status: dict[str, Any] = {}
        if span.status.message:
            status["message"] = span.status.message
        if span.status.code:
            status["code"] = span.status.code
        out["status"] = status
    return out


def lines_from_proto_body(body: bytes) -> tuple[list[bytes], int]:
    """An OTLP/HTTP (or gRPC) protobuf ``ExportTraceServiceRequest`` as span lines, and
    how many spans it rejected (without a valid trace or span id).

    Raises:
        ValueError: the body is not a protobuf ``ExportTraceServiceRequest``.
        ImportError: the ``otlp`` extra (``opentelemetry-proto``) is not installed.
    """
    from google.protobuf.message import DecodeError
    from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
        ExportTraceServiceRequest,
    )

    request = ExportTraceServiceRequest()
    try:
        request.ParseFromString(body)
    except (DecodeError, RecursionError, ValueError) as exc:
        raise ValueError(f"not a protobuf ExportTraceServiceRequest: {exc}") from None
    lines: list[bytes] = []
    rejected = 0
    for resource_spans in request.resource_spans:
        resource = _resource(resource_spans)
        for scope_spans in resource_spans.scope_spans:
            if not scope_spans.spans:
                continue
            head, tail = _frame(
                resource, _scope(scope_spans), resource_spans.schema_url, scope_spans.schema_url
            )
            for span in scope_spans.spans:
                converted = _span(span)
                if converted is None:
                    rejected += 1
                else:
                    lines.append(head + orjson.dumps(converted) + tail)
    return lines, rejected
