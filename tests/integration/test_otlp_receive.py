"""The live OTLP receivers with real clients: the OpenTelemetry SDK's own exporters (HTTP
and gRPC) sending spans with vLLM's attributes land, one span a line, in the spool; what a
receiver refuses it answers as the OTLP specification says and counts; nothing accepted
is lost."""

from __future__ import annotations

import zlib
from collections.abc import Iterator
from pathlib import Path

import grpc
import pytest
from google.rpc import status_pb2
from opentelemetry.exporter.otlp.proto.grpc.trace_exporter import (
    OTLPSpanExporter as GrpcExporter,
)
from opentelemetry.exporter.otlp.proto.http.trace_exporter import (
    OTLPSpanExporter as HttpExporter,
)
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
    ExportTraceServiceRequest,
    ExportTraceServiceResponse,
)
from opentelemetry.proto.trace.v1.trace_pb2 import ResourceSpans, ScopeSpans, Span
from otlp_helpers import (
    attributes,
    gzipped,
    post,
    send_vllm_spans,
    spool_spans,
    vllm_attributes,
)
from waiting import wait_for

from sparseety_tui.receive import Endpoint, Receivers, ReceiveSettings

EXPORT = "/opentelemetry.proto.collector.trace.v1.TraceService/Export"
TOKEN = b"0123456789abcdef0123"


def loopback_settings(**kw: object) -> ReceiveSettings:
    return ReceiveSettings(
        http=Endpoint("127.0.0.1", 0),
        grpc=Endpoint("127.0.0.1", 0),
        **kw,  # type: ignore[arg-type]
    )


@pytest.fixture
def receivers(tmp_path: Path) -> Iterator[Receivers]:
    running = Receivers(loopback_settings(spool=str(tmp_path / "spool.jsonl")))
    running.start()
    try:
        yield running
    finally:
        running.close()


def export_of(spans: list[Span]) -> bytes:
    request = ExportTraceServiceRequest(
        resource_spans=[ResourceSpans(scope_spans=[ScopeSpans(spans=spans)])]
    )
    return request.SerializeToString()


def good_span(i: int) -> Span:
    return Span(trace_id=bytes([i + 1]) * 16, span_id=bytes([i + 1]) * 8, name="llm_request")


def wait_spool(receivers: Receivers, count: int) -> list[dict[str, object]]:
    return wait_for(
        lambda: (spans := spool_spans(receivers.spool_path)) and len(spans) >= count and spans,
        what=f"{count} spans in the spool",
    )


# -- real exporters --------------------------------------------------------------------------


def test_the_sdk_http_exporter_lands_each_span_as_one_line(receivers: Receivers) -> None:
    port = receivers.bound["http"].port
    send_vllm_spans(HttpExporter(endpoint=f"http://127.0.0.1:{port}/v1/traces"), range(5))
    spans = wait_spool(receivers, 5)
    assert len(spans) == 5
    for i, item in enumerate(spans):
        span = item["span"]
        assert span["name"] == "llm_request"  # type: ignore[index]
        assert len(span["traceId"]) == 32 and len(span["spanId"]) == 16  # type: ignore[index]
        assert attributes(span) == pytest.approx(vllm_attributes(i))  # type: ignore[arg-type]
        assert item["scope"] == {"name": "vllm.v1.engine.output_processor"}
    status = receivers.status()
    assert status["accepted_spans"] == 5 and status["refused"] == {}
    assert status["requests"] == 5 and status["body_bytes"] > 0


def test_the_sdk_grpc_exporter_lands_each_span_as_one_line(receivers: Receivers) -> None:
    # As vLLM passes --otlp-traces-endpoint: an http:// URL means a plaintext channel.
    port = receivers.bound["grpc"].port
    send_vllm_spans(GrpcExporter(endpoint=f"http://127.0.0.1:{port}"), range(3))
    spans = wait_spool(receivers, 3)
    ids = [attributes(item["span"])["gen_ai.request.id"] for item in spans]  # type: ignore[arg-type]
    assert ids == ["cmpl-0000-0", "cmpl-0001-0", "cmpl-0002-0"]
    assert receivers.status()["accepted_spans"] == 3


def test_json_and_gzip_bodies_are_taken_and_answered_in_kind(receivers: Receivers) -> None:
    port = receivers.bound["http"].port
    body = export_of([good_span(1), good_span(2)])
    status, headers, answer = post(port, gzipped(body), headers={"Content-Encoding": "gzip"})
    assert status == 200 and headers["content-type"] == "application/x-protobuf"
    assert ExportTraceServiceResponse.FromString(answer) == ExportTraceServiceResponse()
    json_body = (
        b'{"resourceSpans":[{"resource":{},"scopeSpans":[{"scope":{},"spans":[{"traceId":'
        b'"5b8efff798038103d269b633813fc60c","spanId":"eee19b7ec3c1b174","name":"llm_request"}]}]}]}'
    )
    status, headers, answer = post(port, json_body, "application/json; charset=utf-8")
    assert (status, headers["content-type"], answer) == (200, "application/json", b"{}")
    assert len(wait_spool(receivers, 3)) == 3


def test_rejected_spans_are_a_partial_success(receivers: Receivers) -> None:
    port = receivers.bound["http"].port
    no_ids = Span(name="llm_request")  # neither a trace id nor a span id
    status, _, answer = post(port, export_of([good_span(1), no_ids]))
    assert status == 200
    partial = ExportTraceServiceResponse.FromString(answer).partial_success
    assert partial.rejected_spans == 1 and partial.error_message
    assert receivers.status()["rejected_spans"] == 1
    assert len(wait_spool(receivers, 1)) == 1
    channel = grpc.insecure_channel(f"127.0.0.1:{receivers.bound['grpc'].port}")
    answer = channel.unary_unary(EXPORT)(export_of([no_ids]), timeout=30)
    assert ExportTraceServiceResponse.FromString(answer).partial_success.rejected_spans == 1
    channel.close()


# -- bad input -------------------------------------------------------------------------------


def test_a_malformed_body_is_400_with_a_status_and_counted(receivers: Receivers) -> None:
    port = receivers.bound["http"].port
    status, headers, answer = post(port, b"\xff\xfe not protobuf \x00")
    assert status == 400 and headers["content-type"] == "application/x-protobuf"
    assert "malformed" in status_pb2.Status.FromString(answer).message
    status, _, answer = post(port, b"{not json", "application/json")
    assert status == 400 and b"malformed" in answer
    channel = grpc.insecure_channel(f"127.0.0.1:{receivers.bound['grpc'].port}")
    with pytest.raises(grpc.RpcError) as caught:
        channel.unary_unary(EXPORT)(b"\xff\xfe not protobuf", timeout=30)
    channel.close()
    assert caught.value.code() == grpc.StatusCode.INVALID_ARGUMENT
    assert receivers.status()["refused"] == {"malformed": 3}


def test_a_50_mb_body_is_413_and_counted(receivers: Receivers) -> None:
    status, _, answer = post(receivers.bound["http"].port, b"\x00" * (50 << 20))
    assert status == 413 and b"larger than" in answer
    assert receivers.status()["refused"] == {"too_large": 1}


def test_a_gzip_bomb_is_413_not_memory(receivers: Receivers) -> None:
    bomb = zlib.compressobj(9, zlib.DEFLATED, 31)
    body = b"".join(bomb.compress(b"\x00" * (1 << 20)) for _ in range(200)) + bomb.flush()
    assert len(body) < 1 << 20  # 200 MiB inflated, well under the cap sent
    status, _, answer = post(
        receivers.bound["http"].port, body, headers={"Content-Encoding": "gzip"}
    )
    assert status == 413 and b"inflated body larger" in answer
    assert receivers.status()["refused"] == {"too_large": 1}


def test_wrong_type_path_method_and_encoding_are_refused_and_counted(receivers: Receivers) -> None:
    port = receivers.bound["http"].port
    body = export_of([good_span(1)])
    assert post(port, body, "text/plain")[0] == 415
    assert post(port, body, headers={"Content-Encoding": "br"})[0] == 415
    assert post(port, body, path="/v1/metrics")[0] == 404
    status, headers, _ = post(port, b"", method="GET")
    assert status == 405 and headers["allow"] == "POST"
    assert receivers.status()["refused"] == {
        "content_encoding": 1,
        "content_type": 1,
        "method": 1,
        "not_found": 1,
    }
    assert spool_spans(receivers.spool_path) == []


def test_a_full_queue_is_503_with_retry_after_counted_and_nothing_lost(tmp_path: Path) -> None:
    # The writer is held back and the queue holds one byte: the first export always goes
    # into an empty queue; the next ones find it full.
    held = Receivers(
        loopback_settings(spool=str(tmp_path / "spool.jsonl"), queue_bytes=1), spool_started=False
    )
    held.start()
    try:
        port = held.bound["http"].port
        assert post(port, export_of([good_span(1)]))[0] == 200
        status, headers, answer = post(port, export_of([good_span(2)]))
        assert status == 503 and headers["retry-after"] == "1"
        assert "queue is full" in status_pb2.Status.FromString(answer).message
        channel = grpc.insecure_channel(f"127.0.0.1:{held.bound['grpc'].port}")
        with pytest.raises(grpc.RpcError) as caught:
            channel.unary_unary(EXPORT)(export_of([good_span(3)]), timeout=30)
        channel.close()
        assert caught.value.code() == grpc.StatusCode.UNAVAILABLE
        assert held.status()["refused"] == {"queue_full": 2}
        held.spool.start()
        (only,) = wait_spool(held, 1)
        assert only["span"]["traceId"] == "02" * 16  # type: ignore[index]
        # Drained: the same export is taken again.
        assert post(port, export_of([good_span(2)]))[0] == 200
        assert len(wait_spool(held, 2)) == 2
        assert held.status()["accepted_spans"] == 2 and held.status()["lost_spans"] == 0
    finally:
        held.close()


def test_the_token_is_required_when_given(tmp_path: Path) -> None:
    guarded = Receivers(loopback_settings(spool=str(tmp_path / "s.jsonl"), token=TOKEN))
    guarded.start()
    try:
        port = guarded.bound["http"].port
        body = export_of([good_span(1)])
        status, headers, _ = post(port, body)
        assert status == 401 and headers["www-authenticate"] == "Bearer"
        assert post(port, body, headers={"Authorization": "Bearer wrong-token-here"})[0] == 401
        right = {"Authorization": "Bearer " + TOKEN.decode()}
        assert post(port, body, headers=right)[0] == 200
        channel = grpc.insecure_channel(f"127.0.0.1:{guarded.bound['grpc'].port}")
        with pytest.raises(grpc.RpcError) as caught:
            channel.unary_unary(EXPORT)(body, timeout=30)
        channel.close()
        assert caught.value.code() == grpc.StatusCode.UNAUTHENTICATED
        exporter = GrpcExporter(
            endpoint=f"http://127.0.0.1:{guarded.bound['grpc'].port}",
            headers={"authorization": "Bearer " + TOKEN.decode()},
        )
        send_vllm_spans(exporter, [7])
        assert len(wait_spool(guarded, 2)) == 2
        assert guarded.status()["refused"] == {"unauthorized": 3}
    finally:
        guarded.close()


def test_the_private_spool_is_removed_at_close() -> None:
    running = Receivers(loopback_settings())
    running.start()
    path = running.spool_path
    assert Path(path).exists() and (Path(path).parent.stat().st_mode & 0o777) == 0o700
    running.close()
    assert not Path(path).parent.exists()


def test_a_given_spool_is_appended_to_never_truncated(tmp_path: Path) -> None:
    spool = tmp_path / "kept.jsonl"
    spool.write_bytes(b"earlier line\n")
    running = Receivers(loopback_settings(spool=str(spool)))
    running.start()
    try:
        assert post(running.bound["http"].port, export_of([good_span(1)]))[0] == 200
        wait_for(lambda: spool.read_bytes().count(b"\n") == 2, what="the span appended")
    finally:
        running.close()
    assert spool.read_bytes().startswith(b"earlier line\n")
