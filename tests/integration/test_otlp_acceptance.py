"""Spans and logs of the same requests, end to end, as a user runs it: ``serve LOG --otlp
--otlp-grpc`` in its own process, vLLM's ``llm_request`` spans sent by the OpenTelemetry
SDK's own exporters (gRPC through a ``BatchSpanProcessor``, HTTP/protobuf through a
``SimpleSpanProcessor``), and a vLLM log with the ``Received request`` lines of the same
requests, read before the spans or appended after them while ``serve`` follows the log.

Each request is one row (as many rows as the log has requests), its prompt tokens are the
log's, its timing the span's (``timing_from`` says so), its ``traceparent`` the SDK span's
context, and its state the span's end, whichever came first."""

from __future__ import annotations

import math
import random
import subprocess
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any
from urllib.parse import quote

import numpy as np
import orjson
import pytest
from opentelemetry.exporter.otlp.proto.grpc.trace_exporter import (
    OTLPSpanExporter as GrpcExporter,
)
from opentelemetry.exporter.otlp.proto.http.trace_exporter import (
    OTLPSpanExporter as HttpExporter,
)
from opentelemetry.sdk.trace.export import BatchSpanProcessor, SimpleSpanProcessor
from opentelemetry.trace import SpanContext
from otlp_helpers import serve_with_receivers
from otlp_spans import T0_NS, VllmRequest, reference_json, trace_requests, vllm_spans
from serve_helpers import Server
from waiting import wait_for

COUNT = 6
PID = "(APIServer pid=90458)"


def api_id(i: int) -> str:
    """A front-end request id as vLLM 0.15 prints it (``chatcmpl-`` and 16 hex)."""
    return f"chatcmpl-{0xA269FDCB7C6CE890 + i:016x}"


def engine_id(i: int) -> str:
    """The engine-side id of the same request: the front-end id and 8 hex."""
    return f"{api_id(i)}-{0xA8A65D16 + 17 * i:08x}"


def prompt_tokens(i: int) -> int:
    return 40 + 7 * i


def stamp(seconds: float) -> str:
    """vLLM's stamp: ``MM-DD HH:MM:SS`` in the host's zone, no year."""
    return time.strftime("%m-%d %H:%M:%S", time.localtime(seconds))


def log_lines(i: int, at: float) -> list[str]:
    """What vLLM 0.15 (``--enable-log-requests``, ``VLLM_LOGGING_LEVEL=DEBUG``) logs for
    request ``i`` received at ``at``: the DEBUG details line with the prompt's token ids,
    the INFO ``Received request`` line, the engine's ``Added request`` line under the
    engine-side id, and uvicorn's access line when the response ends."""
    ids = ", ".join(str(151644 + k) for k in range(prompt_tokens(i)))
    rid = api_id(i)
    return [
        f"{PID} DEBUG {stamp(at)} [logger.py:41] Request {rid} details: prompt: "
        f"'<|im_start|>user\\nTell me a joke {i}<|im_end|>\\n<|im_start|>assistant\\n', "
        f"prompt_token_ids: [{ids}], prompt_embeds shape: None.",
        f"{PID} INFO {stamp(at)} [logger.py:49] Received request {rid}: params: "
        "SamplingParams(n=1, presence_penalty=0.0, frequency_penalty=0.0, "
        "repetition_penalty=1.0, temperature=0.7, top_p=0.95, top_k=0, min_p=0.0, seed=None, "
        "stop=[], stop_token_ids=[], bad_words=[], include_stop_str_in_output=False, "
        "ignore_eos=False, max_tokens=256, min_tokens=0, logprobs=None, prompt_logprobs=None, "
        "skip_special_tokens=True, spaces_between_special_tokens=True, "
        "truncate_prompt_tokens=None, structured_outputs=None, extra_args=None), "
        "lora_request: None.",
        f"{PID} INFO {stamp(at)} [async_llm.py:382] Added request {engine_id(i)}.",
        f'{PID} INFO:     127.0.0.1:{51408 + i} - "POST /v1/chat/completions HTTP/1.1" 200 OK',
    ]


STARTUP = [
    f"{PID} INFO:     Started server process [90458]",
    f"{PID} INFO:     Waiting for application startup.",
    f"{PID} INFO:     Application startup complete.",
]


def requests_at(t0: float) -> list[VllmRequest]:
    """The spans' figures: request ``i`` arrives at the second its log line says; even
    requests are named by the front-end id (vLLM since ``external_req_id``), odd ones by
    the engine-side id (vLLM before it)."""
    out = []
    for i in range(COUNT):
        queue, prefill, decode = 0.125 + 0.5 * (i % 3), 0.03 + 0.01 * i, 0.4 + 0.25 * i
        out.append(
            VllmRequest(
                request_id=api_id(i) if i % 2 == 0 else engine_id(i),
                prompt_tokens=prompt_tokens(i),
                completion_tokens=16 + 9 * i,
                queue_s=queue,
                ttft_s=queue + prefill + 0.002,
                latency_s=queue + prefill + decode + 0.004,
                prefill_s=prefill,
                decode_s=decode,
                inference_s=prefill + decode,
                start_ns=int((t0 + i) * 1e9),
                max_tokens=256,
                temperature=0.7,
                top_p=0.95,
                model="Qwen/Qwen3-8B",
            )
        )
    return out


def send(requests: Sequence[VllmRequest], http: int, grpc: int) -> dict[str, SpanContext]:
    """The first half by gRPC (a batch processor, vLLM's default protocol), the rest by
    HTTP/protobuf, each with the SDK's own exporter; every span flushed on return."""
    half = len(requests) // 2
    grpc_exporter = GrpcExporter(endpoint=f"http://127.0.0.1:{grpc}", insecure=True)
    contexts = trace_requests(requests[:half], BatchSpanProcessor(grpc_exporter))
    http_exporter = HttpExporter(endpoint=f"http://127.0.0.1:{http}/v1/traces")
    contexts.update(trace_requests(requests[half:], SimpleSpanProcessor(http_exporter)))
    return contexts


def rows(server: Server) -> list[dict[str, Any]]:
    answer = server.get("/requests")
    assert answer.status == 200, answer.body
    return [orjson.loads(line) for line in answer.body.splitlines()]


def settled(server: Server, done: Callable[[dict[str, Any]], bool], what: str) -> None:
    """Wait until ``/requests`` has COUNT rows and each satisfies ``done``."""
    wait_for(
        lambda: len(got := rows(server)) == COUNT and all(done(r) for r in got),
        what=what,
    )


def log_read(server: Server, log: Path, lines: int) -> None:
    """Wait until ``serve`` has read ``lines`` lines of the log, as vLLM's: each request's
    details, Received and Added lines, its access line, the start-up lines."""
    want = {"vllm.request": 3 * COUNT, "http.access": COUNT, "other": len(STARTUP)}

    def done() -> bool:
        files = server.get("/summary").json()["files"]  # (none listed before a first read)
        entries = [f for f in files if f["path"] == str(log)]
        return any(e["format"] == "vllm" and e["lines"]["total"] == lines for e in entries)

    wait_for(done, what=f"{lines} lines of the log read")
    (entry,) = [f for f in server.get("/summary").json()["files"] if f["path"] == str(log)]
    assert entry["lines"]["by_kind"] == want


def has_log(row: dict[str, Any]) -> bool:
    return row["prompt_tokens"] is not None


def has_span(row: dict[str, Any]) -> bool:
    return row["timing_from"].get("queue_s") == "span"


def check(server: Server, sent: Sequence[VllmRequest], contexts: dict[str, SpanContext]) -> None:
    got = rows(server)
    assert len(got) == COUNT, [r["request_id"] for r in got]  # one row per request
    for i, request in enumerate(sent):
        answer = server.get(f"/requests/{quote(api_id(i), safe='')}")
        assert answer.status == 200, answer.body
        record = answer.json()["request"]
        assert record["request_id"] in (api_id(i), engine_id(i))
        assert record["prompt_tokens"] == prompt_tokens(i)  # the log's count of its ids
        assert record["completion_tokens"] == request.completion_tokens
        # The span's end stands: a log line of the request's arrival, read after it, is
        # no reopening and no end time.
        assert record["state"] == "finished"
        assert record["received_ts"] == pytest.approx(request.start_ns / 1e9)
        assert record["finished_ts"] == pytest.approx(request.end_ns / 1e9)
        timing = record["timing"]
        assert timing == {
            **timing,
            "queue_s": pytest.approx(request.queue_s, rel=1e-6),
            "prefill_s": pytest.approx(request.prefill_s, rel=1e-6),
            "decode_s": pytest.approx(request.decode_s, rel=1e-6),
            "inference_s": pytest.approx(request.inference_s, rel=1e-6),
            "ttft_s": pytest.approx(request.ttft_s, rel=1e-6),
            "latency_s": pytest.approx(request.latency_s, rel=1e-6),
        }
        for key in ("queue_s", "prefill_s", "decode_s", "inference_s", "ttft_s", "latency_s"):
            assert record["timing_from"][key] == "span", (key, record["timing_from"])
        context = contexts[request.request_id]
        trace_id, span_id = f"{context.trace_id:032x}", f"{context.span_id:016x}"
        assert record["trace"]["trace_id"] == trace_id and record["trace"]["span_id"] == span_id
        # W3C: version 00, the ids, and the sampled flag the SDK set (its other bit, level
        # 2's "random", is not carried).
        version, traced, spanned, flags = record["trace"]["traceparent"].split("-")
        assert (version, traced, spanned) == ("00", trace_id, span_id)
        assert int(flags, 16) == context.trace_flags & 0x01 == 0x01
        if i % 2:  # the engine-side id finds the same row
            other = server.get(f"/requests/{quote(engine_id(i), safe='')}")
            assert other.status == 200 and other.json()["request"] == record


@pytest.mark.parametrize("spans_first", [True, False], ids=["spans first", "log first"])
def test_spans_and_a_vllm_log_are_one_row_per_request(tmp_path: Path, spans_first: bool) -> None:
    t0 = float(int(time.time()) - 60)
    sent = requests_at(t0)
    request_lines = [line for i in range(COUNT) for line in log_lines(i, t0 + i)]
    log = tmp_path / "vllm.log"
    first = STARTUP if spans_first else STARTUP + request_lines
    log.write_text("\n".join(first) + "\n")
    spool = tmp_path / "spans.jsonl"
    with serve_with_receivers([str(log), "--otlp-spool", str(spool)]) as (server, http, grpc):
        if spans_first:
            contexts = send(sent, http, grpc)
            settled(server, has_span, "a row from each span")
            with log.open("a") as f:
                f.write("\n".join(request_lines) + "\n")
            log_read(server, log, len(STARTUP) + len(request_lines))
        else:
            log_read(server, log, len(STARTUP) + len(request_lines))
            settled(server, has_log, "a row from each Received request line")
            contexts = send(sent, http, grpc)
            settled(server, has_span, "the spans on the log's rows")
        check(server, sent, contexts)
        health = server.get("/health").json()
        assert health["otlp"]["accepted_spans"] == COUNT and health["otlp"]["refused"] == {}


# -- the Collector's file exporter ------------------------------------------------------------


def nearest_rank(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[max(math.ceil(q * len(ordered)), 1) - 1]


def f32(value: float) -> float:
    """A value as the store keeps it (float32)."""
    return float(np.float32(value))


def collector_requests(count: int) -> list[VllmRequest]:
    rng = random.Random(29)
    out = []
    for i in range(count):
        queue, prefill = rng.uniform(0.0, 4.0), rng.uniform(0.01, 0.5)
        decode = rng.uniform(0.1, 6.0)
        ttft = queue + prefill + rng.uniform(0.0, 0.01)
        out.append(
            VllmRequest(
                request_id=f"cmpl-{rng.getrandbits(64):016x}",
                prompt_tokens=rng.randint(1, 4000),
                completion_tokens=rng.randint(1, 500),
                queue_s=queue,
                ttft_s=ttft,
                latency_s=ttft + decode + rng.uniform(0.0, 0.01),
                prefill_s=prefill,
                decode_s=decode,
                inference_s=prefill + decode,
                start_ns=T0_NS + i * 37_000_000,
            )
        )
    return out


def test_a_collector_file_gives_the_quantiles_of_the_attributes_sent(tmp_path: Path) -> None:
    """The OpenTelemetry Collector's ``file`` exporter writes one ExportTraceServiceRequest
    a line in OTLP/JSON (protobuf's JSON mapping: camelCase, 64-bit integers as strings,
    enums as numbers; ids as hex), each line a batch of spans; ``summary --json`` of it
    gives each timing figure's nearest-rank quantiles over the attributes sent."""
    sent = collector_requests(83)
    spans = vllm_spans(sent)
    lines = []
    for at in range(0, len(spans), 8):  # the Collector's batches: several spans a line
        document = reference_json(spans[at : at + 8])
        lines.append(orjson.dumps(document))
    first = orjson.loads(lines[0])["resourceSpans"][0]["scopeSpans"][0]["spans"][0]
    assert isinstance(first["startTimeUnixNano"], str) and len(first["traceId"]) == 32
    path = tmp_path / "otlp-traces.json"
    path.write_bytes(b"\n".join(lines) + b"\n")
    done = subprocess.run(
        [sys.executable, "-m", "sparseety_tui", "summary", "--json", str(path)],
        capture_output=True,
        timeout=120,
        check=True,
    )
    out = orjson.loads(done.stdout)
    (entry,) = out["files"]
    assert entry["format"] == "otlp" and entry["lines"]["total"] == len(lines)
    assert "unparsed" not in entry["lines"]["by_kind"]
    assert out["requests"]["count"] == len(sent)
    assert out["requests"]["prompt_tokens"] == sum(r.prompt_tokens for r in sent)
    figures = {
        "queue_s": [r.queue_s for r in sent],
        "prefill_s": [r.prefill_s for r in sent],
        "decode_s": [r.decode_s for r in sent],
        "inference_s": [r.inference_s for r in sent],
        "ttft_s": [r.ttft_s for r in sent],
        "latency_s": [r.latency_s for r in sent],
    }
    for name, sent_values in figures.items():
        values = [f32(v) for v in sent_values]
        figure = out["timing"][name]
        assert figure["count"] == len(values), name
        for key, q in (("p50", 0.5), ("p95", 0.95), ("p99", 0.99)):
            assert figure[key] == round(nearest_rank(values, q), 5), (name, key)
        assert figure["max"] == round(max(values), 5)
        assert figure["from"] == {"span": len(values)}
    # TPOT: decode time over the tokens after the first, where there are any.
    tpots = [f32(r.decode_s) / (r.completion_tokens - 1) for r in sent if r.completion_tokens > 1]
    assert out["timing"]["tpot_s"]["count"] == len(tpots)
    assert out["timing"]["tpot_s"]["p95"] == round(nearest_rank(tpots, 0.95), 5)


# -- hostile ids --------------------------------------------------------------------------------

HOSTILE_IDS = ["[bold]x[/]", "\x1b[31mred\x1b[0m", "a\nb", "[link=file:///etc/passwd]y[/link]"]


def test_ids_with_markup_and_escapes_come_back_literally(tmp_path: Path) -> None:
    sent = [
        VllmRequest(
            request_id=rid,
            prompt_tokens=10 + i,
            completion_tokens=3,
            queue_s=0.25,
            ttft_s=0.5,
            latency_s=1.0,
            prefill_s=0.125,
            decode_s=0.5,
            inference_s=0.625,
            start_ns=T0_NS + i,
        )
        for i, rid in enumerate(HOSTILE_IDS)
    ]
    spool = tmp_path / "spans.jsonl"
    with serve_with_receivers(["--otlp-spool", str(spool)]) as (server, http, _grpc):
        exporter = HttpExporter(endpoint=f"http://127.0.0.1:{http}/v1/traces")
        trace_requests(sent, SimpleSpanProcessor(exporter))
        got = wait_for(
            lambda: len(r := rows(server)) == len(sent) and r, what="a row for each span"
        )
        assert sorted(r["request_id"] for r in got) == sorted(HOSTILE_IDS)
        for i, rid in enumerate(HOSTILE_IDS):
            answer = server.get(f"/requests/{quote(rid, safe='')}")
            assert answer.status == 200, (rid, answer.body)
            record = answer.json()["request"]
            assert record["request_id"] == rid and record["prompt_tokens"] == 10 + i
            assert b"\x1b" not in answer.body  # JSON escapes it: \u001b
