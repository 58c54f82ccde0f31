"""The receivers' helpers of formats.otlp: an OTLP/HTTP body (protobuf or JSON) as
OTLP/JSON lines, one span a line, and the sample file they wrote.

The converter is held to protobuf's own JSON mapping (``json_format.MessageToDict``, ids
turned from base64 into hex as OTLP/JSON says) over spans the OpenTelemetry SDK made and
its OTLP encoder encoded.
"""

from __future__ import annotations

import ast
import math
from pathlib import Path
from typing import Any

import orjson
import pytest
from google.protobuf import json_format
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
from otlp_spans import (
    SAMPLE,
    hex_ids,
    protobuf_body,
    reference_json,
    sample_lines,
    vllm_requests,
    vllm_spans,
)

from sparseety_tui.formats import otlp

PACKAGE = Path(otlp.__file__).resolve().parents[1].parent


def spans_of(
    document: dict[str, Any],
) -> list[tuple[dict[str, Any], dict[str, Any], dict[str, Any]]]:
    """(resource, scope, span) of every span of an export, in order."""
    return [
        (rs.get("resource", {}), ss.get("scope", {}), span)
        for rs in document.get("resourceSpans", [])
        for ss in rs.get("scopeSpans", [])
        for span in ss.get("spans", [])
    ]


def one_span_each(
    lines: list[bytes],
) -> list[tuple[dict[str, Any], dict[str, Any], dict[str, Any]]]:
    out = []
    for line in lines:
        spans = spans_of(orjson.loads(line))
        assert len(spans) == 1, line[:200]
        out.extend(spans)
    return out


def test_protobuf_body_gives_the_protobuf_json_mapping_one_span_a_line() -> None:
    spans = vllm_spans(vllm_requests(9))
    lines, rejected = otlp.lines_from_proto_body(protobuf_body(spans))
    assert rejected == 0
    assert len(lines) == 9
    assert all(b"\n" not in line and line.startswith(b'{"resourceSpans":') for line in lines)
    assert one_span_each(lines) == spans_of(reference_json(spans))


def test_json_body_gives_the_same_spans() -> None:
    spans = vllm_spans(vllm_requests(4))
    from_proto, _ = otlp.lines_from_proto_body(protobuf_body(spans))
    reference = reference_json(spans)
    for _, _, span in spans_of(reference):  # hex in any case is accepted
        span["traceId"] = span["traceId"].upper()
    from_json, rejected = otlp.lines_from_json_body(orjson.dumps(reference))
    assert rejected == 0
    assert one_span_each(from_json) == one_span_each(from_proto)


def _request_of(values: dict[str, Any]) -> ExportTraceServiceRequest:
    """A protobuf export of one span with attribute values of every kind."""
    request = ExportTraceServiceRequest()
    span = request.resource_spans.add().scope_spans.add().spans.add()
    span.trace_id = bytes(range(1, 17))
    span.span_id = bytes(range(1, 9))
    span.parent_span_id = bytes(range(9, 17))
    span.name = "llm_request"
    span.start_time_unix_nano = 2**63 + 5
    span.status.code = 2
    for key, setter in values.items():
        attribute = span.attributes.add()
        attribute.key = key
        setter(attribute.value)
    link = span.links.add()
    link.trace_id = bytes(range(2, 18))
    link.span_id = bytes(range(2, 10))
    return request


def test_every_attribute_type_converts_as_protobuf_maps_it() -> None:
    def array(value: Any) -> None:
        value.array_value.values.add().string_value = "stop"
        value.array_value.values.add().int_value = -3

    def kvlist(value: Any) -> None:
        pair = value.kvlist_value.values.add()
        pair.key = "inner"
        pair.value.bool_value = True

    request = _request_of(
        {
            "s": lambda v: setattr(v, "string_value", "x\x1b[31m"),
            "i": lambda v: setattr(v, "int_value", -(2**63)),
            "d": lambda v: setattr(v, "double_value", 0.1),
            "nan": lambda v: setattr(v, "double_value", math.nan),
            "inf": lambda v: setattr(v, "double_value", -math.inf),
            "b": lambda v: setattr(v, "bool_value", False),
            "bytes": lambda v: setattr(v, "bytes_value", b"\x00\xff"),
            "array": array,
            "kvlist": kvlist,
            "empty array": lambda v: v.array_value.SetInParent(),
            "unset": lambda v: None,
        }
    )
    request.resource_spans[0].scope_spans[0].spans[0].attributes.add().key = "no value"
    lines, rejected = otlp.lines_from_proto_body(request.SerializeToString())
    assert rejected == 0
    expected = hex_ids(json_format.MessageToDict(request, use_integers_for_enums=True))
    assert one_span_each(lines) == spans_of(expected)


def test_malformed_spans_are_rejected_and_counted() -> None:
    request = _request_of({})
    spans = request.resource_spans[0].scope_spans[0].spans
    spans.add().CopyFrom(spans[0])
    spans[1].span_id = bytes(8)  # all zeros: invalid
    spans.add().CopyFrom(spans[0])
    spans[2].trace_id = b"\x01" * 15  # too short
    lines, rejected = otlp.lines_from_proto_body(request.SerializeToString())
    assert (len(lines), rejected) == (1, 2)
    good = spans_of(hex_ids(json_format.MessageToDict(request, use_integers_for_enums=True)))[0]
    document = {
        "resourceSpans": [
            {
                "scopeSpans": [
                    {
                        "spans": [
                            good[2],
                            7,
                            {**good[2], "traceId": "z" * 32},
                            {**good[2], "spanId": None},
                        ]
                    }
                ]
            }
        ]
    }
    json_lines, json_rejected = otlp.lines_from_json_body(orjson.dumps(document))
    assert (len(json_lines), json_rejected) == (1, 3)


@pytest.mark.parametrize(
    ("body", "reason"),
    [
        (b"\xff\xff\xff\xff", "not a protobuf ExportTraceServiceRequest"),
        (b"\x0a\x05\x12\x03\x0a", "not a protobuf ExportTraceServiceRequest"),
    ],
)
def test_a_malformed_protobuf_body_is_a_value_error(body: bytes, reason: str) -> None:
    with pytest.raises(ValueError, match=reason):
        otlp.lines_from_proto_body(body)


@pytest.mark.parametrize(
    "body",
    [
        b"{",
        b"[]",
        b'{"resourceSpans": {}}',
        b'{"resourceSpans": [1]}',
        b'{"resourceSpans": [{"resource": 5, "scopeSpans": []}]}',
        b'{"resourceSpans": [{"scopeSpans": [{"scope": [], "spans": []}]}]}',
        b'{"resourceSpans": [{"scopeSpans": [{"spans": "x"}]}]}',
        b"\xff",
    ],
)
def test_a_malformed_json_body_is_a_value_error(body: bytes) -> None:
    with pytest.raises(ValueError):
        otlp.lines_from_json_body(body)


def test_empty_exports_give_no_lines() -> None:
    assert otlp.lines_from_proto_body(b"") == ([], 0)
    assert otlp.lines_from_json_body(b"{}") == ([], 0)
    assert otlp.lines_from_json_body(b'{"resourceSpans": [{"scopeSpans": [{}]}]}') == ([], 0)


def test_the_sample_file_is_what_the_converter_writes_from_sdk_spans() -> None:
    assert SAMPLE.read_bytes() == b"".join(line + b"\n" for line in sample_lines()), (
        "tests/data/otlp/vllm_spans.jsonl is stale: `python tests/support/otlp_spans.py` "
        "writes it again (an OpenTelemetry SDK of another version may encode differently)"
    )


def _module_level_imports(source: str) -> list[str]:
    """Imports that run when the module is imported: anywhere but in a function body."""
    names: list[str] = []
    stack: list[ast.AST] = [ast.parse(source)]
    while stack:
        node = stack.pop()
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
            continue
        if isinstance(node, ast.Import):
            names.extend(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module:
            names.append(node.module)
        stack.extend(ast.iter_child_nodes(node))
    return names


def test_protobuf_is_imported_only_inside_functions() -> None:
    """Reading logs and ``--help`` run without the otlp extra: no module imports protobuf
    or OpenTelemetry when it is imported (tests/integration/test_otlp_lazy.py checks a
    real ``summary`` of spans too)."""
    paths = sorted(PACKAGE.rglob("*.py"))
    assert len(paths) > 100
    assert "google.protobuf.message" not in _module_level_imports(
        "def f():\n    import google.protobuf.message\n"
    )
    assert "google.protobuf" in _module_level_imports(
        "try:\n    import google.protobuf\nexcept ImportError:\n    pass\n"
    )
    # The gRPC receiver's own module: it exists to use grpc, and only
    # ``receive._receivers`` imports it, inside the function that starts that receiver.
    lazy_modules = {PACKAGE / "receive" / "_grpc.py"}
    for path in paths:
        if path in lazy_modules:
            continue
        eager = [
            name
            for name in _module_level_imports(path.read_text())
            if name.split(".")[0] in ("google", "opentelemetry", "grpc")
        ]
        assert eager == [], path
