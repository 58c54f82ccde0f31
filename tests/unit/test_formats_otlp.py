"""The OTLP format family (formats.otlp): files of OpenTelemetry spans in OTLP/JSON, one
``ExportTraceServiceRequest`` a line, as the Collector's ``file`` exporter and the
receivers' spool write them.

Spans are made with the OpenTelemetry SDK carrying vLLM's attribute set and encoded with
the SDK's own OTLP encoder (tests/support/otlp_spans.py); the rows read back must equal
what was sent. Hand-written lines cover what the SDK would never send: attributes of the
wrong type, broken JSON, the wrong shape.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import orjson
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from otlp_spans import VllmRequest, protobuf_body, reference_json, vllm_requests, vllm_spans
from sample_helpers import extract, summary

from sparseety_tui.core.detail import build_detail
from sparseety_tui.core.extraction import Extractor
from sparseety_tui.events import LineKind, RequestPayload
from sparseety_tui.formats import _registry as registry
from sparseety_tui.formats import otlp
from sparseety_tui.ingest.batch import ingest_file


def spool_lines(requests: list[VllmRequest], spelling: str = "old") -> list[bytes]:
    lines, rejected = otlp.lines_from_proto_body(protobuf_body(vllm_spans(requests, spelling)))
    assert rejected == 0
    return lines


def write(path: Path, lines: list[bytes]) -> str:
    path.write_bytes(b"".join(line + b"\n" for line in lines))
    return str(path)


def parse_all(lines: list[bytes]) -> tuple[list[str], list[RequestPayload], otlp.OtlpParser]:
    """Kinds of the lines and every request payload, in order (returned, then pending)."""
    parser = otlp.FAMILY.new_parser()
    kinds: list[str] = []
    payloads: list[RequestPayload] = []
    for line in lines:
        kind, event = parser.parse(line)
        kinds.append(kind)
        if event is not None:
            assert event[0] == "request"
            payloads.append(event[1])
        for pending in parser.pending:
            assert pending[0] == "request"
            payloads.append(pending[1])
        parser.pending.clear()
    return kinds, payloads, parser


def attrs_line(name: str, attributes: list[dict[str, Any]], **span: Any) -> bytes:
    """One hand-written OTLP/JSON line with one span."""
    body = {
        "traceId": "0af7651916cd43dd8448eb211c80319c",
        "spanId": "b7ad6b7169203331",
        "name": name,
        "startTimeUnixNano": "1750000000000000000",
        "endTimeUnixNano": "1750000002000000000",
        "attributes": attributes,
        **span,
    }
    return orjson.dumps({"resourceSpans": [{"scopeSpans": [{"spans": [body]}]}]})


def kv(key: str, **value: Any) -> dict[str, Any]:
    return {"key": key, "value": value}


@pytest.mark.parametrize("spelling", ["old", "new"])
def test_rows_equal_the_attributes_sent(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], spelling: str
) -> None:
    requests = vllm_requests(7)
    path = write(tmp_path / "spans.jsonl", spool_lines(requests, spelling))
    rows = {row["request_id"]: row for row in extract(capsys, path)}
    assert sorted(rows) == sorted(r.request_id for r in requests)
    for sent in requests:
        row = rows[sent.request_id]
        assert row["source"]["format"] == "otlp"
        assert row["prompt_tokens"] == sent.prompt_tokens
        assert row["completion_tokens"] == sent.completion_tokens
        assert row["cached_tokens"] == sent.cached_tokens
        assert row["model"] == sent.model
        assert row["latency_s"] == pytest.approx(sent.latency_s, rel=1e-6)
        assert row["ttft_s"] == pytest.approx(sent.ttft_s, rel=1e-6)
        assert row["received_ts"] == pytest.approx(sent.start_ns / 1e9, abs=1e-6)
        assert row["finished_ts"] == pytest.approx(sent.end_ns / 1e9, abs=1e-6)
        assert row["state"] == ("aborted" if sent.finish_status == "aborted" else "finished")
        sampling = row["sampling"]
        assert sampling["max_tokens"] == sent.max_tokens
        assert sampling["n"] == sent.n
        assert sampling["top_p"] == pytest.approx(sent.top_p, rel=1e-6)
        if sent.temperature is None:
            assert sampling["temperature"] is None
        else:
            assert sampling["temperature"] == pytest.approx(sent.temperature, rel=1e-6)
    document = summary(capsys, path)
    (file,) = document["files"]
    assert file["lines"] == {"total": 7, "by_kind": {otlp.SPANS: 7}}
    assert file["ignored_values"] == {}
    assert document["requests"]["count"] == 7


def test_events_carry_the_servers_timing_and_the_span_ids() -> None:
    requests = vllm_requests(6)
    spans = vllm_spans(requests)
    kinds, payloads, parser = parse_all(spool_lines(requests))
    assert kinds == [otlp.SPANS] * 6
    assert parser.ignored == {}
    for sent, span, got in zip(requests, spans, payloads):
        assert got["request_id"] == sent.request_id
        assert got["timing_from"] == "span"
        for key in ("queue_s", "ttft_s", "latency_s", "prefill_s", "decode_s", "inference_s"):
            assert got[key] == getattr(sent, key), key  # type: ignore[literal-required]
        assert got["preemptions"] == max(sent.preemptions)
        context = span.get_span_context()
        assert context is not None
        assert got["trace_id"] == f"{context.trace_id:032x}"
        assert got["span_id"] == f"{context.span_id:016x}"
        assert got["received_ts"] == sent.start_ns / 1e9


def test_a_collector_line_of_many_spans_gives_every_request() -> None:
    """The Collector writes a whole export a line: the first request is returned, the
    others come through ``pending``, and the line counts once."""
    requests = vllm_requests(5)
    line = orjson.dumps(reference_json(vllm_spans(requests)))
    kinds, payloads, _ = parse_all([line])
    assert kinds == [otlp.SPANS]
    assert [p["request_id"] for p in payloads] == [r.request_id for r in requests]


def test_error_status_and_journey_finish_status_set_the_state() -> None:
    requests = vllm_requests(3)
    requests[0].error = "CUDA out of memory"
    requests[1].finish_status = "error"
    requests[2].finish_status = "aborted"
    _, payloads, _ = parse_all(spool_lines(requests))
    assert [p["state"] for p in payloads] == ["failed", "failed", "aborted"]
    assert payloads[0]["error"] == "CUDA out of memory"
    assert "error" not in payloads[1]


def test_spans_that_name_no_request_are_counted_by_name(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """SGLang: the request's root span carries ``rid``; its thread and stage spans (named
    by host, pid and rank) and a web framework's spans name no request."""
    lines = [
        attrs_line(
            " Req 5f3a9b21",
            [kv("rid", stringValue="5f3a9b21c0"), kv("module", stringValue="sglang::tokenizer")],
        ),
        attrs_line("scheduler [TP 0] (host:3c1e7a9f | pid:41723)", [kv("pid", intValue="41723")]),
        attrs_line("scheduler [TP 1] (host:3c1e7a9f | pid:41724)", [kv("pid", intValue="41724")]),
        attrs_line("prefill_forward", []),
        attrs_line("llm_request", [kv("gen_ai.usage.prompt_tokens", intValue="5")]),
        attrs_line(
            "POST /v1/chat/completions", [kv("http.route", stringValue="/v1/chat/completions")]
        ),
    ]
    kinds, payloads, parser = parse_all(lines)
    assert kinds == [otlp.SPANS] * 6
    assert [p["request_id"] for p in payloads] == ["5f3a9b21c0"]
    assert payloads[0]["received_ts"] == 1750000000.0
    assert payloads[0]["finished_ts"] == 1750000002.0
    assert "latency_s" not in payloads[0]  # the span says no e2e: none is made up
    counted = {
        "span 'scheduler [TP #] (host:# | pid:#)': no request id": 2,
        "span 'prefill_forward': no request id": 1,
        "span 'llm_request': no request id": 1,
        "span 'POST /v1/chat/completions': no request id": 1,
    }
    assert parser.ignored == counted
    (file,) = summary(capsys, write(tmp_path / "sglang.jsonl", lines))["files"]
    assert file["ignored_values"] == counted
    assert file["lines"]["by_kind"] == {otlp.SPANS: 6}


def test_sglang_root_span_with_genai_attributes() -> None:
    """Recent SGLang sets the GenAI names on the root span too; finish reasons come as a
    JSON list in a string, cached tokens as ``gen_ai.usage.cached_tokens``."""
    line = attrs_line(
        "prefill Req 77aa",
        [
            kv("rid", stringValue="77aa01"),
            kv("gen_ai.request.id", stringValue="my-req-1"),
            kv("gen_ai.usage.prompt_tokens", intValue="900"),
            kv("gen_ai.usage.completion_tokens", intValue=12),
            kv("gen_ai.usage.cached_tokens", intValue="512"),
            kv("gen_ai.response.finish_reasons", stringValue='["length"]'),
            kv("gen_ai.response.model", stringValue="deepseek-ai/DeepSeek-V3"),
            kv("gen_ai.latency.e2e", doubleValue=1.75),
        ],
    )
    _, (payload,), parser = parse_all([line])
    assert parser.ignored == {}
    assert payload["request_id"] == "my-req-1"
    assert (payload["prompt_tokens"], payload["completion_tokens"], payload["cached_tokens"]) == (
        900,
        12,
        512,
    )
    assert payload["finish_reason"] == "length"
    assert payload["model"] == "deepseek-ai/DeepSeek-V3"
    assert payload["latency_s"] == 1.75


def test_attributes_of_the_wrong_type_are_unknown_and_counted() -> None:
    line = attrs_line(
        "llm_request",
        [
            kv("gen_ai.request.id", stringValue="r1"),
            kv("gen_ai.latency.e2e", stringValue="1.5"),
            kv("gen_ai.latency.time_to_first_token", doubleValue=-0.5),
            kv("gen_ai.latency.time_in_queue", doubleValue="NaN"),
            kv("gen_ai.latency.time_in_model_decode", doubleValue="Infinity"),
            kv("gen_ai.latency.time_in_model_prefill", doubleValue=0.25),
            kv("gen_ai.usage.prompt_tokens", intValue="12x"),
            kv("gen_ai.usage.completion_tokens", boolValue=True),
            kv("gen_ai.usage.cache_read.input_tokens", intValue="-3"),
            kv("gen_ai.request.max_tokens", doubleValue=2.5),
            kv("gen_ai.response.model", intValue="7"),
            {"key": "gen_ai.request.n", "value": "1"},
            {"value": {"stringValue": "no key"}},
        ],
        startTimeUnixNano="soon",
        endTimeUnixNano="-5",
        traceId="not-hex",
    )
    _, (payload,), parser = parse_all([line])
    assert payload == {
        "request_id": "r1",
        "state": "finished",
        "timing_from": "span",
        "prefill_s": 0.25,
        "span_id": "b7ad6b7169203331",
    }
    assert parser.ignored == {
        "gen_ai.latency.e2e: not a number": 1,
        "gen_ai.latency.time_to_first_token: negative": 1,
        "gen_ai.latency.time_in_queue: not finite": 1,
        "gen_ai.latency.time_in_model_decode: not finite": 1,
        "gen_ai.usage.prompt_tokens: not an integer": 1,
        "gen_ai.usage.completion_tokens: not a number": 1,
        "gen_ai.usage.cache_read.input_tokens: negative": 1,
        "gen_ai.request.max_tokens: not an integer": 1,
        "gen_ai.response.model: not a string": 1,
        "gen_ai.request.n: not an AnyValue object": 1,
        "attributes: entry without a string key": 1,
        "startTimeUnixNano: not an integer": 1,
        "endTimeUnixNano: timestamp out of range": 1,
        "traceId: not 32 hex digits": 1,
    }


def test_ids_with_markup_and_escapes_are_kept_literally(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    rid = "[bold red]x[/]\x1b[2J\u202e;rm -rf"
    line = attrs_line("llm_request", [kv("gen_ai.request.id", stringValue=rid)])
    _, (payload,), _ = parse_all([line])
    assert payload["request_id"] == rid
    (row,) = extract(capsys, write(tmp_path / "s.jsonl", [line]))
    assert row["request_id"] == rid


MALFORMED = [
    (b"", LineKind.BLANK),
    (b"   ", LineKind.BLANK),
    (b'{"resourceSpans": [', LineKind.UNPARSED),
    (b"[1, 2]", LineKind.UNPARSED),
    (b'{"request_id": "r1"}', LineKind.UNPARSED),
    (b'{"resourceSpans": {}}', LineKind.UNPARSED),
    (b'{"resourceSpans": [7]}', LineKind.UNPARSED),
    (b'{"resourceSpans": [{"scopeSpans": "x"}]}', LineKind.UNPARSED),
    (b'{"resourceSpans": [{"scopeSpans": [{"spans": {}}]}]}', LineKind.UNPARSED),
    (b"{}", otlp.EMPTY),
    (b'{"resourceSpans": []}', otlp.EMPTY),
    (b'{"resourceSpans": [{"resource": {}, "scopeSpans": [{"spans": []}]}]}', otlp.EMPTY),
    (b'{"resourceSpans": [{"scopeSpans": [{"spans": [3, "x"]}]}]}', otlp.SPANS),
    (b"\xff\xfe not utf-8", LineKind.UNPARSED),
]


def test_every_line_counted_in_exactly_one_kind(tmp_path: Path) -> None:
    good = spool_lines(vllm_requests(2))
    lines = [good[0], *(line for line, _ in MALFORMED), good[1]]
    kinds, payloads, parser = parse_all(lines)
    assert kinds == [otlp.SPANS, *(kind for _, kind in MALFORMED), otlp.SPANS]
    assert len(payloads) == 2
    assert parser.ignored == {"span: not an object": 2}
    # ... and the same through the Extractor: the counts add up to the lines.
    extractor = Extractor()
    ingest_file(extractor, write(tmp_path / "mixed.jsonl", lines))
    (state,) = extractor.files
    assert state.family is not None and state.family.name == "otlp"
    assert state.lines_total == len(lines)
    expected: dict[str, int] = {}
    for kind in kinds:
        expected[kind] = expected.get(kind, 0) + 1
    assert state.by_kind == expected
    assert len(state.diagnostics) == kinds.count(LineKind.UNPARSED)
    assert all(d.reason for d in state.diagnostics)
    frozen = extractor.freeze()
    assert len(frozen.store) == 2


def test_unparsed_lines_say_why() -> None:
    parser = otlp.FAMILY.new_parser()
    reasons = []
    for line, kind in MALFORMED:
        if kind == LineKind.UNPARSED:
            assert parser.parse(line) == (LineKind.UNPARSED, None)
            reasons.append(parser.last_reason)
    assert reasons[0].startswith("invalid JSON")
    assert reasons[1:5] == [
        "not OTLP/JSON: JSON list, not an object",
        "not OTLP/JSON: JSON object without resourceSpans",
        "not OTLP/JSON: resourceSpans is not a list",
        "not OTLP/JSON: a resourceSpans entry is not an object",
    ]


def test_sniff_claims_otlp_lines_only() -> None:
    spans = spool_lines(vllm_requests(3))
    assert registry.detect(spans) is otlp.FAMILY
    assert registry.detect([b'  { "resourceSpans" : []}']) is otlp.FAMILY
    collector = [orjson.dumps(reference_json(vllm_spans(vllm_requests(2))))]
    assert registry.detect(collector) is otlp.FAMILY
    trace = [
        b'{"request_id": "req-1", "prompt_tokens": 5, "completion_tokens": 2}',
        b'{"type": "meta", "model": "m"}',
    ]
    assert otlp.FAMILY.sniff(trace) == 0.0
    assert registry.detect(trace) is registry.FAMILIES["trace"]
    assert otlp.FAMILY.sniff([b'{"resource_spans": []}', b"resourceSpans"]) == 0.0


def test_a_rows_detail_rereads_its_span(tmp_path: Path) -> None:
    requests = vllm_requests(3)
    extractor = Extractor()
    ingest_file(extractor, write(tmp_path / "spool.jsonl", spool_lines(requests)))
    frozen = extractor.freeze()
    row = frozen.find(requests[1].request_id)
    assert row is not None
    detail = build_detail(frozen, row)
    assert detail.problems == []
    assert detail.fields["queue_s"] == requests[1].queue_s
    assert (
        detail.fields["trace_id"] == spool_lines(requests)[1].split(b'"traceId":"')[1][:32].decode()
    )


JSON_VALUES = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=8),
    lambda inner: (
        st.lists(inner, max_size=4)
        | st.dictionaries(
            st.sampled_from(
                [
                    "resourceSpans",
                    "scopeSpans",
                    "spans",
                    "attributes",
                    "key",
                    "value",
                    "stringValue",
                    "intValue",
                    "doubleValue",
                    "arrayValue",
                    "values",
                    "events",
                    "status",
                    "code",
                    "traceId",
                    "startTimeUnixNano",
                    "name",
                ]
            ),
            inner,
            max_size=4,
        )
    ),
    max_leaves=30,
)


def _placed(value: Any) -> list[Any]:
    """``value`` at each level of an export: the whole line, the resource list, a span,
    a span's attributes, events and status."""
    span = {"attributes": [{"key": "gen_ai.request.id", "value": {"stringValue": "r"}}]}
    return [
        value,
        {"resourceSpans": value},
        {"resourceSpans": [{"scopeSpans": [{"spans": [value]}]}]},
        {"resourceSpans": [{"scopeSpans": [{"spans": [{**span, "attributes": value}]}]}]},
        {"resourceSpans": [{"scopeSpans": [{"spans": [{**span, "events": value}]}]}]},
        {"resourceSpans": [{"scopeSpans": [{"spans": [{**span, "status": value}]}]}]},
        {"resourceSpans": [{"scopeSpans": [{"spans": [{**span, "traceId": value}]}]}]},
    ]


@settings(max_examples=300, deadline=None)
@given(JSON_VALUES)
def test_any_json_gives_a_kind_and_never_raises(value: Any) -> None:
    """Numbers orjson refuses (beyond 64 bits, NaN) included: the standard library writes
    them, the parser's lenient path reads them."""
    parser = otlp.FAMILY.new_parser()
    for document in _placed(value):
        kind, event = parser.parse(json.dumps(document).encode())
        assert kind in otlp.KINDS
        assert kind != LineKind.UNPARSED or parser.last_reason
        assert event is None or event[0] == "request"
        assert all(e[0] == "request" for e in parser.pending)
        parser.pending.clear()
