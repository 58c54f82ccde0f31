"""Sending spans as vLLM does, with the OpenTelemetry SDK's own exporters, and reading the
receivers' spool (imported by test modules: pyproject.toml puts tests/support on
sys.path)."""

from __future__ import annotations

import gzip
import http.client
import os
import re
import signal
import subprocess
import sys
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import Any

import orjson
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor, SpanExporter
from opentelemetry.trace import SpanKind
from serve_helpers import Server


#: vLLM's ``SpanAttributes`` (vllm/tracing.py) as its output processor sets them on the
#: ``llm_request`` span, with values for request ``i``.
def vllm_attributes(i: int) -> dict[str, Any]:
    return {
        "gen_ai.response.model": "Qwen/Qwen3-30B-A3B",
        "gen_ai.request.id": f"cmpl-{i:04d}-0",
        "gen_ai.request.top_p": 0.95,
        "gen_ai.request.max_tokens": 256,
        "gen_ai.request.temperature": 0.7,
        "gen_ai.request.n": 1,
        "gen_ai.usage.prompt_tokens": 100 + i,
        "gen_ai.usage.completion_tokens": 20 + i,
        "gen_ai.latency.time_in_queue": 0.01 * (i + 1),
        "gen_ai.latency.time_to_first_token": 0.1 + 0.01 * i,
        "gen_ai.latency.e2e": 1.0 + 0.1 * i,
        "gen_ai.latency.time_in_scheduler": 0.002,
        "gen_ai.latency.time_in_model_forward": 0.5,
        "gen_ai.latency.time_in_model_execute": 0.6,
        "gen_ai.latency.time_in_model_prefill": 0.08 + 0.01 * i,
        "gen_ai.latency.time_in_model_decode": 0.8 + 0.05 * i,
        "gen_ai.latency.time_in_model_inference": 0.9 + 0.06 * i,
    }


def send_vllm_spans(exporter: SpanExporter, ids: Sequence[int]) -> None:
    """One ``llm_request`` span per id, each exported at once by ``exporter`` (a real
    OTLP exporter), as vLLM's tracer would send them."""
    provider = TracerProvider(resource=Resource.create({"service.name": "vllm"}))
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    tracer = provider.get_tracer("vllm.v1.engine.output_processor")
    for i in ids:
        with tracer.start_as_current_span("llm_request", kind=SpanKind.SERVER) as span:
            span.set_attributes(vllm_attributes(i))
    provider.shutdown()


def spool_spans(path: str) -> list[dict[str, Any]]:
    """Every line of the spool, each checked to be one whole ExportTraceServiceRequest
    holding exactly one span, as ``{"resource", "scope", "span"}``."""
    out = []
    with open(path, "rb") as f:
        data = f.read()
    assert not data or data.endswith(b"\n"), "the spool ends in half a line"
    for line in data.splitlines():
        request = orjson.loads(line)
        (resource_spans,) = request["resourceSpans"]
        (scope_spans,) = resource_spans["scopeSpans"]
        (span,) = scope_spans["spans"]
        out.append(
            {"resource": resource_spans["resource"], "scope": scope_spans["scope"], "span": span}
        )
    return out


def attributes(span: dict[str, Any]) -> dict[str, Any]:
    """An OTLP/JSON span's attributes as plain values (int64 given as strings: ints)."""
    out: dict[str, Any] = {}
    for item in span.get("attributes", []):
        ((kind, value),) = item["value"].items()
        out[item["key"]] = int(value) if kind == "intValue" else value
    return out


def post(
    port: int,
    body: bytes,
    content_type: str = "application/x-protobuf",
    headers: dict[str, str] | None = None,
    path: str = "/v1/traces",
    method: str = "POST",
) -> tuple[int, dict[str, str], bytes]:
    """One request to the OTLP/HTTP receiver: (status, headers lower-cased, body)."""
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
    try:
        conn.request(
            method, path, body=body, headers={"Content-Type": content_type, **(headers or {})}
        )
        response = conn.getresponse()
        return response.status, {k.lower(): v for k, v in response.getheaders()}, response.read()
    finally:
        conn.close()


def gzipped(data: bytes) -> bytes:
    return gzip.compress(data, compresslevel=6)


_SERVING = re.compile(r"serving http://([0-9.]+):(\d+)")
_HTTP = re.compile(r"receiving OTLP/HTTP on http://127\.0\.0\.1:(\d+)/v1/traces")
_GRPC = re.compile(r"receiving OTLP/gRPC on 127\.0\.0\.1:(\d+)")


RECEIVING = ("--port", "0", "--otlp", "0", "--otlp-grpc", "0")


@contextmanager
def serve_with_receivers(args: Sequence[str]) -> Iterator[tuple[Server, int, int]]:
    """``serve ARGS --port 0 --otlp 0 --otlp-grpc 0`` as its own process (the CLI a user
    runs): (the API, HTTP port, gRPC port)."""
    proc = subprocess.Popen(
        [sys.executable, "-m", "sparseety_tui", "serve", *args, *RECEIVING],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, "PYTHONUNBUFFERED": "1"},
    )
    try:
        assert proc.stderr is not None
        lines = [proc.stderr.readline() for _ in range(3)]
        serving, http, grpc = (
            _SERVING.search(lines[0]),
            _HTTP.search(lines[1]),
            _GRPC.search(lines[2]),
        )
        assert serving and http and grpc, lines
        server = Server(serving.group(1), int(serving.group(2)))
        yield server, int(http.group(1)), int(grpc.group(1))
    finally:
        proc.send_signal(signal.SIGINT)
        try:
            proc.wait(20)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(5)
        if proc.stderr is not None:
            proc.stderr.close()
