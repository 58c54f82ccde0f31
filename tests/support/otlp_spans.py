"""Real OpenTelemetry spans for the OTLP tests: made with the OpenTelemetry SDK, carrying
vLLM's attribute set (``vllm/tracing.py`` ``SpanAttributes``, set as
``vllm/v1/engine/output_processor.py`` ``do_tracing`` sets them), encoded with the SDK's
own OTLP encoder, as vLLM's exporter sends them.

Ids come from a counter and times are fixed, so the same spans give the same bytes every
run: ``python tests/support/otlp_spans.py`` rewrites the sample file
``tests/data/otlp/vllm_spans.jsonl`` (one span a line, as the receivers spool them), which
``tests/unit/test_formats_otlp.py`` checks against a fresh run.
"""

from __future__ import annotations

import base64
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from google.protobuf import json_format
from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import ReadableSpan, SpanProcessor, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.sdk.trace.id_generator import IdGenerator
from opentelemetry.trace import SpanContext, SpanKind, Status, StatusCode

SAMPLE = Path(__file__).resolve().parents[1] / "data" / "otlp" / "vllm_spans.jsonl"
#: 2025-06-15T14:13:20Z in unix nanoseconds: the first request's arrival.
T0_NS = 1_750_000_000_000_000_000


class CountingIds(IdGenerator):
    """Trace and span ids from a counter (the SDK's default ids are random)."""

    def __init__(self) -> None:
        self.count = 0

    def generate_span_id(self) -> int:
        self.count += 1
        return 0x5B00_0000_0000_0000 + self.count

    def generate_trace_id(self) -> int:
        self.count += 1
        return (0x4BF9_2F35_77B3_4DA6 << 64) + self.count


@dataclass
class VllmRequest:
    """What vLLM's ``llm_request`` span of one request says (seconds, counts)."""

    request_id: str
    prompt_tokens: int
    completion_tokens: int
    queue_s: float
    ttft_s: float
    latency_s: float
    prefill_s: float
    decode_s: float
    inference_s: float
    start_ns: int
    max_tokens: int | None = 256
    temperature: float | None = 0.7
    top_p: float | None = 0.9
    n: int | None = 1
    cached_tokens: int | None = None
    model: str | None = None
    preemptions: list[int] = field(default_factory=list)
    finish_status: str | None = "stopped"
    error: str | None = None

    @property
    def end_ns(self) -> int:
        return self.start_ns + round(self.latency_s * 1e9)

    def attributes(self, spelling: str) -> dict[str, Any]:
        """The span's attributes in vLLM's order; ``spelling`` "new" uses the newer GenAI
        names (``input_tokens``, ``output_tokens``, ``cache_read.input_tokens``,
        ``gen_ai.provider.name``) where "old" uses vLLM's (and ``gen_ai.system``)."""
        new = spelling == "new"
        attrs: dict[str, Any] = {
            "gen_ai.latency.time_to_first_token": self.ttft_s,
            "gen_ai.latency.e2e": self.latency_s,
            "gen_ai.latency.time_in_queue": self.queue_s,
            ("gen_ai.usage.input_tokens" if new else "gen_ai.usage.prompt_tokens"): (
                self.prompt_tokens
            ),
            ("gen_ai.usage.output_tokens" if new else "gen_ai.usage.completion_tokens"): (
                self.completion_tokens
            ),
            "gen_ai.latency.time_in_model_prefill": self.prefill_s,
            "gen_ai.latency.time_in_model_decode": self.decode_s,
            "gen_ai.latency.time_in_model_inference": self.inference_s,
            "gen_ai.request.id": self.request_id,
            ("gen_ai.provider.name" if new else "gen_ai.system"): "vllm",
        }
        optional = {
            "gen_ai.request.top_p": self.top_p,
            "gen_ai.request.max_tokens": self.max_tokens,
            "gen_ai.request.temperature": self.temperature,
            "gen_ai.request.n": self.n,
            "gen_ai.response.model": self.model,
            "gen_ai.usage.cache_read.input_tokens": self.cached_tokens,
        }
        attrs.update({k: v for k, v in optional.items() if v is not None})
        return attrs


def vllm_requests(count: int = 6, prefix: str = "chatcmpl-") -> list[VllmRequest]:
    """``count`` requests with distinct figures: every third preempted, every fifth
    cached, the last aborted."""
    out = []
    for i in range(count):
        queue = 0.002 + 0.75 * (i % 4)
        prefill = 0.03 + 0.01 * i
        decode = 0.4 + 0.125 * i
        out.append(
            VllmRequest(
                request_id=f"{prefix}{i:04x}a1",
                prompt_tokens=120 + 37 * i,
                completion_tokens=16 + 9 * i,
                queue_s=queue,
                ttft_s=queue + prefill + 0.001,
                latency_s=queue + prefill + decode + 0.004,
                prefill_s=prefill,
                decode_s=decode,
                inference_s=prefill + decode,
                start_ns=T0_NS + i * 250_000_000,
                temperature=None if i % 2 else 0.7,
                cached_tokens=64 if i % 5 == 1 else None,
                model="Qwen/Qwen3-8B" if i % 2 == 0 else None,
                preemptions=[0, 1, 1] if i % 3 == 2 else [0],
                finish_status="aborted" if i == count - 1 else "stopped",
            )
        )
    return out


def _journey(span: Any, request: VllmRequest) -> None:
    """vLLM's journey events (``journey.<TYPE>``, ``event.type``, ``num_preemptions``,
    ``finish.status`` on FINISHED)."""
    step = request.start_ns
    for number, preempted in enumerate(request.preemptions):
        kind = (
            "PREEMPTED" if number and preempted > request.preemptions[number - 1] else "SCHEDULED"
        )
        step += 1_000_000
        span.add_event(
            f"journey.{kind}",
            {"event.type": kind, "phase": "decode", "num_preemptions": preempted},
            timestamp=step,
        )
    if request.finish_status is not None:
        span.add_event(
            "journey.FINISHED",
            {
                "event.type": "FINISHED",
                "num_preemptions": request.preemptions[-1] if request.preemptions else 0,
                "finish.status": request.finish_status,
            },
            timestamp=request.end_ns,
        )


def trace_requests(
    requests: Sequence[VllmRequest],
    processor: SpanProcessor,
    spelling: str = "old",
    ids: IdGenerator | None = None,
) -> dict[str, SpanContext]:
    """One ``llm_request`` span per request through ``processor`` (a real processor and
    exporter: what vLLM's tracer does), then the provider shut down (every span flushed);
    each request id's span context."""
    provider = TracerProvider(resource=Resource({"service.name": "vllm"}), id_generator=ids)
    provider.add_span_processor(processor)
    tracer = provider.get_tracer("vllm.v1.engine.output_processor", "0.11.0")
    contexts = {}
    for request in requests:
        span = tracer.start_span(
            "llm_request",
            kind=SpanKind.SERVER,
            start_time=request.start_ns,
            attributes=request.attributes(spelling),
        )
        _journey(span, request)
        if request.error is not None:
            span.set_status(Status(StatusCode.ERROR, request.error))
        span.end(end_time=request.end_ns)
        contexts[request.request_id] = span.get_span_context()
    provider.shutdown()
    return contexts


def vllm_spans(requests: Sequence[VllmRequest], spelling: str = "old") -> list[ReadableSpan]:
    """The finished SDK spans vLLM would send for ``requests``."""
    exporter = InMemorySpanExporter()
    trace_requests(requests, SimpleSpanProcessor(exporter), spelling, CountingIds())
    return list(exporter.get_finished_spans())


def protobuf_body(spans: Sequence[ReadableSpan]) -> bytes:
    """The OTLP protobuf body the SDK's exporters send for ``spans``."""
    return bytes(encode_spans(spans).SerializeToString())


def hex_ids(value: Any) -> Any:
    """A ``MessageToDict`` form with its base64 trace and span ids as hex (OTLP/JSON)."""
    if isinstance(value, dict):
        return {
            key: base64.b64decode(item).hex()
            if key in ("traceId", "spanId", "parentSpanId")
            else hex_ids(item)
            for key, item in value.items()
        }
    if isinstance(value, list):
        return [hex_ids(item) for item in value]
    return value


def reference_json(spans: Sequence[ReadableSpan]) -> dict[str, Any]:
    """The OTLP/JSON of ``spans`` by protobuf's own JSON mapping (enums as integers, ids
    as hex): the independent form the converter is held to."""
    message = json_format.MessageToDict(encode_spans(spans), use_integers_for_enums=True)
    result: dict[str, Any] = hex_ids(message)
    return result


def sample_lines() -> list[bytes]:
    """The lines of the sample file, converted from SDK spans by the receivers' helper."""
    from sparseety_tui.formats.otlp import lines_from_proto_body

    lines, rejected = lines_from_proto_body(protobuf_body(vllm_spans(vllm_requests())))
    assert rejected == 0
    return lines


if __name__ == "__main__":
    SAMPLE.parent.mkdir(parents=True, exist_ok=True)
    SAMPLE.write_bytes(b"".join(line + b"\n" for line in sample_lines()))
    print(f"wrote {SAMPLE}")
