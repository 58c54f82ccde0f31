"""Spans per second the live OTLP receivers take, on one core.

The receivers (``sparseety_tui.receive``: OTLP/HTTP and OTLP/gRPC, spooling to a file)
run alone in a child process pinned to one core; this process, on another core, sends the
same export again and again, one request at a time as the SDK's BatchSpanProcessor does:
``--batch`` spans (default 512) carrying vLLM's ``llm_request`` attributes, encoded once by
the OpenTelemetry SDK's own encoder. Each protocol runs for ``--seconds``; the figure is
spans the receiver accepted (its own counters) over the wall time.

Run: ``python bench/otlp_receive.py [--batch 512] [--seconds 5]``.
"""

from __future__ import annotations

import argparse
import http.client
import json
import os
import subprocess
import sys
import time

CHILD = r"""
import json, os, sys
from sparseety_tui.receive import Endpoint, Receivers, ReceiveSettings
os.sched_setaffinity(0, {int(sys.argv[1])})
if sys.argv[2] == "transport":
    import sparseety_tui.formats.otlp as family
    span_line = b"x" * int(sys.argv[3])
    def fixed(body):
        return [span_line] * int(sys.argv[4]), 0
    family.lines_from_proto_body = family.lines_from_json_body = fixed
r = Receivers(ReceiveSettings(http=Endpoint("127.0.0.1", 0), grpc=Endpoint("127.0.0.1", 0)))
r.start()
print(json.dumps({"http": r.bound["http"].port, "grpc": r.bound["grpc"].port}), flush=True)
for _ in sys.stdin:
    print(json.dumps(r.status()), flush=True)
r.close()
"""


def vllm_spans(count: int) -> list[object]:
    """``count`` finished spans as vLLM's output processor makes them."""
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SpanExporter, SpanExportResult
    from opentelemetry.trace import SpanKind

    kept: list[object] = []

    class Keep(SpanExporter):
        def export(self, spans: object) -> SpanExportResult:
            kept.extend(spans)  # type: ignore[call-overload]
            return SpanExportResult.SUCCESS

    from opentelemetry.sdk.trace.export import SimpleSpanProcessor

    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(Keep()))
    tracer = provider.get_tracer("vllm.v1.engine.output_processor")
    for i in range(count):
        with tracer.start_as_current_span("llm_request", kind=SpanKind.SERVER) as span:
            span.set_attributes(
                {
                    "gen_ai.response.model": "Qwen/Qwen3-30B-A3B",
                    "gen_ai.request.id": f"cmpl-{i:08x}-0",
                    "gen_ai.request.top_p": 1.0,
                    "gen_ai.request.max_tokens": 256,
                    "gen_ai.request.temperature": 0.7,
                    "gen_ai.request.n": 1,
                    "gen_ai.usage.prompt_tokens": 812,
                    "gen_ai.usage.completion_tokens": 256,
                    "gen_ai.latency.time_in_queue": 0.012,
                    "gen_ai.latency.time_to_first_token": 0.143,
                    "gen_ai.latency.e2e": 2.31,
                    "gen_ai.latency.time_in_model_prefill": 0.121,
                    "gen_ai.latency.time_in_model_decode": 2.17,
                    "gen_ai.latency.time_in_model_inference": 2.29,
                }
            )
    provider.shutdown()
    return kept


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--batch", type=int, default=512)
    parser.add_argument("--seconds", type=float, default=5.0)
    parser.add_argument(
        "--transport-only",
        action="store_true",
        help="replace the otlp family's reader by one that returns as many lines of the "
        "same size without reading the body: what the receivers cost alone",
    )
    args = parser.parse_args()

    import base64

    import orjson
    from google.protobuf.json_format import MessageToDict
    from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans

    from sparseety_tui.formats.otlp import lines_from_proto_body

    message = encode_spans(vllm_spans(args.batch))  # type: ignore[arg-type]
    proto = message.SerializeToString()
    document = MessageToDict(message)
    for resource in document["resourceSpans"]:
        for scope in resource["scopeSpans"]:
            for span in scope["spans"]:
                for key in ("traceId", "spanId", "parentSpanId"):
                    if key in span:  # OTLP/JSON gives ids in hex, not protobuf's base64
                        span[key] = base64.b64decode(span[key]).hex()
    as_json = orjson.dumps(document)
    line_size = len(lines_from_proto_body(proto)[0][0])
    cores = sorted(os.sched_getaffinity(0))
    receiver_core, client_core = cores[0], cores[-1]
    os.sched_setaffinity(0, {client_core})
    child = subprocess.Popen(
        [
            sys.executable,
            "-c",
            CHILD,
            str(receiver_core),
            "transport" if args.transport_only else "family",
            str(line_size),
            str(args.batch),
        ],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    assert child.stdin is not None and child.stdout is not None
    ports = json.loads(child.stdout.readline())

    refusals: list[dict[str, int]] = []

    def accepted() -> int:
        child.stdin.write("status\n")  # type: ignore[union-attr]
        child.stdin.flush()  # type: ignore[union-attr]
        status = json.loads(child.stdout.readline())  # type: ignore[union-attr]
        refusals.append(status["refused"])
        return int(status["accepted_spans"])

    results = {}
    try:
        for name, media, body in (
            ("OTLP/HTTP protobuf", "application/x-protobuf", proto),
            ("OTLP/HTTP JSON", "application/json", as_json),
        ):
            conn = http.client.HTTPConnection("127.0.0.1", ports["http"])
            before, start = accepted(), time.perf_counter()
            while time.perf_counter() - start < args.seconds:
                conn.request("POST", "/v1/traces", body, {"Content-Type": media})
                response = conn.getresponse()
                response.read()
                assert response.status in (200, 503), response.status
            elapsed = time.perf_counter() - start
            results[name] = (accepted() - before) / elapsed
            conn.close()
        import grpc

        channel = grpc.insecure_channel(f"127.0.0.1:{ports['grpc']}")
        export = channel.unary_unary("/opentelemetry.proto.collector.trace.v1.TraceService/Export")
        before, start = accepted(), time.perf_counter()
        while time.perf_counter() - start < args.seconds:
            try:
                export(proto, timeout=10)
            except grpc.RpcError as exc:
                assert exc.code() == grpc.StatusCode.UNAVAILABLE, exc
        elapsed = time.perf_counter() - start
        results["OTLP/gRPC"] = (accepted() - before) / elapsed
        channel.close()
    finally:
        child.stdin.close()
        child.wait(30)
    what = "transport only" if args.transport_only else "with the otlp family's reader"
    for name, rate in results.items():
        print(f"{name}: {rate:,.0f} spans/s (batches of {args.batch}, one core, {what})")
    print(f"refused by the end (503 when the spool's queue was full): {refusals[-1]}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
