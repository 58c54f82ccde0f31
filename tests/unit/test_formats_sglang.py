"""SGLang family on synthetic variants of real lines: prefixes of every version, batch-line
variants, request logging, interleaving, wrappers and tracebacks."""

from __future__ import annotations

import time
from typing import Any

import pytest

from sparseety_tui.events import Event, ParsedLine
from sparseety_tui.formats import sglang

PREFILL = b"Prefill batch. #new-seq: 1, #new-token: 48, #cached-token: 1, cache hit rate: 1.79%, token usage: 0.00, #running-req: 0, #queue-req: 0"
DECODE = b"Decode batch, #running-req: 32, #token: 11179, token usage: 0.08, cuda graph: True, gen throughput (token/s): 1635.11, #queue-req: 0"


def parse(*lines: bytes, **options: Any) -> tuple[list[ParsedLine], list[Event]]:
    parser = sglang.FAMILY.new_parser(**options)
    out: list[ParsedLine] = []
    pending: list[Event] = []
    for line in lines:
        out.append(parser.parse(line))
        pending.extend(parser.pending)
        parser.pending.clear()
    parser.finish()
    pending.extend(parser.pending)
    return out, pending


def one(line: bytes) -> tuple[str, dict[str, Any] | None]:
    (result,), pending = parse(line)
    # A batch line of a shape a terminal's wrap could have cut is held for its next line
    # (formats/_termwrap.py): the file's end reports it.
    event = result[1] if result[1] is not None else next(iter(pending), None)
    return result[0], (dict(event[1]) if event is not None else None)


@pytest.mark.parametrize(
    ("prefix", "ts", "engine"),
    [
        (b"[2024-10-31 21:55:11 TP0] ", (2024, 10, 31, 21, 55, 11), "TP0"),
        (b"[2025-08-22 13:47:04 DP0 TP0 EP0] ", (2025, 8, 22, 13, 47, 4), "DP0 TP0 EP0"),
        (b"[2025-08-22 13:47:04 PP1 TP3] ", (2025, 8, 22, 13, 47, 4), "PP1 TP3"),
        (b"[2026-01-31 15:05:33] ", (2026, 1, 31, 15, 5, 33), None),
        (b"[16:43:29 TP0] ", None, "TP0"),
        (b"[gpu=0] ", None, None),
    ],
)
def test_prefixes(prefix: bytes, ts: tuple[int, ...] | None, engine: str | None) -> None:
    kind, stats = one(prefix + PREFILL)
    assert kind == "sglang.prefill" and stats is not None
    assert stats["new_tokens"] == 48 and stats["cached_tokens"] == 1
    assert stats["prefix_cache_hit_rate"] == 0.0179
    if ts is None:
        assert "ts" not in stats
    else:
        assert stats["ts"] == time.mktime((*ts, 0, 0, -1))
    assert stats.get("engine") == engine


def test_milliseconds_prefix() -> None:
    _, stats = one(b"[2025-01-01 10:00:00.250 TP0] " + DECODE)
    assert stats is not None
    assert stats["ts"] == time.mktime((2025, 1, 1, 10, 0, 0, 0, 0, -1)) + 0.25


def test_time_only_takes_date_from_context() -> None:
    results, _ = parse(
        b"[2024-10-31 23:59:59] INFO:     Started server process [1]",
        b"[23:59:59 TP0] " + PREFILL,
        b"[00:00:05 TP0] " + PREFILL,
    )
    ts = [dict(e[1])["ts"] for _, e in results if e is not None]
    assert ts[0] == time.mktime((2024, 10, 31, 23, 59, 59, 0, 0, -1))
    assert ts[1] == time.mktime((2024, 11, 1, 0, 0, 5, 0, 0, -1))  # rolled past midnight


@pytest.mark.parametrize(
    ("body", "expected"),
    [
        (
            b"Decode batch. #running-req: 509, #token: 180776, token usage: 0.43, gen throughput (token/s): 7897.87, largest-len: 0, #queue-req: 0, ",
            {"running": 509, "kv_usage": 0.43, "generation_throughput": 7897.87, "queued": 0},
        ),
        (
            b"Decode batch. #running-req: 1, #token: 82, token usage: 0.00, accept len: 4.05, gen throughput (token/s): 29.88, #queue-req: 0",
            {
                "running": 1,
                "kv_usage": 0.0,
                "spec_accept_length": 4.05,
                "generation_throughput": 29.88,
                "queued": 0,
            },
        ),
        (
            b"Decode batch [77], #running-req: 5, #full token: 10, full token usage: 0.5, #swa token: 3, swa token usage: 0.2, cuda graph: True, gen throughput (token/s): 10.5, #queue-req: 0",
            {"running": 5, "kv_usage": 0.5, "generation_throughput": 10.5, "queued": 0},
        ),
        (
            b"Decode batch, #running-req: 2, mamba num: 4, mamba usage: 0.1, token usage: 0.3, cpu graph: False, gen throughput (token/s): 3.0, #queue-req: 1, #cache_miss: 2",
            {"running": 2, "kv_usage": 0.3, "generation_throughput": 3.0, "queued": 1},
        ),
        (
            b"Decode batch. #running-req: 43, #token: 0, token usage: 0.00, pre-allocated usage: 0.00, #prealloc-req: 1, #transfer-req: 2, #retracted-req: 0, cuda graph: True, gen throughput (token/s): 385.00, #queue-req: 0",
            {"running": 43, "kv_usage": 0.0, "generation_throughput": 385.0, "queued": 0},
        ),
    ],
)
def test_decode_variants(body: bytes, expected: dict[str, Any]) -> None:
    kind, stats = one(b"[2025-03-14 02:16:14 TP0] " + body)
    assert kind == "sglang.decode" and stats is not None
    for key, value in expected.items():
        assert stats[key] == value, key


@pytest.mark.parametrize(
    ("body", "expected"),
    [
        (
            b"Prefill batch, #new-seq: 1, #new-token: 9, #cached-token: 0, token usage: 0.00, #running-req: 1, #queue-req: 1, input throughput (token/s): 1.70, cuda graph: False",
            {"batch_requests": 1, "new_tokens": 9, "cached_tokens": 0, "prompt_throughput": 1.7},
        ),
        (
            b"Prefill batch, #new-seq: 8, #new-token: 54400, #cached-token: 482304, token usage: 0.66, #running-req: 16, #queue-req: 2, #pending-token: 0, npu graph: False, input throughput (token/s): 2793.64",
            {"new_tokens": 54400, "cached_tokens": 482304, "running": 16, "queued": 2},
        ),
        (
            b"Prefill batch. #new-seq: 2, #new-token: 68, #cached-token: 0, token usage: 0.01, #unbootstrapped-req: 0, #queue-req: 0, #transferring-req: 1, input throughput (token/s): 1326.00, ",
            {"new_tokens": 68, "queued": 0, "prompt_throughput": 1326.0},
        ),
        (
            b"Prefill batch, #new-seq: 1, #new-token: 9, #cached-token: 2, full token usage: 0.01, swa token usage: 0.02, mamba usage: 0.3, #running-req: 1, #queue-req: 1,",
            {"kv_usage": 0.01, "cached_tokens": 2},
        ),
        (
            b"Prefill batch. #new-seq: 1, #new-token: 6, #cached-token: 0, #token: 0, token usage: 0.00, #running-req: 0, #queue-req: 0",
            {"new_tokens": 6, "kv_usage": 0.0},
        ),
    ],
)
def test_prefill_variants(body: bytes, expected: dict[str, Any]) -> None:
    kind, stats = one(b"[2026-01-31 15:05:33] " + body)
    assert kind == "sglang.prefill" and stats is not None
    for key, value in expected.items():
        assert stats[key] == value, key


def test_interleaved_mid_line_prefix() -> None:
    kind, stats = one(b"This is only a test[2024-10-31 21:55:11 TP0] " + PREFILL)
    assert kind == "sglang.prefill" and stats is not None and stats["new_tokens"] == 48
    kind, _ = one(
        b"\r  0%|   | 0/3 [00:00<?, ?it/s][2025-10-31 21:12:18] Using default MoE kernel config."
    )
    assert kind == "other"


@pytest.mark.parametrize(
    "wrapper",
    [
        b"2025-04-04T10:00:00.123456789Z ",
        b"[2026-08-21T19:42:37Z] ",
        b"sglang-1  | ",
        b"sglang-7d9f8c6b5-x2k9p sglang ",
        b"> ",
        b"sglang-1  | 2025-04-04T10:00:00Z ",
    ],
)
def test_every_wrapper(wrapper: bytes) -> None:
    kind, stats = one(wrapper + b"[2024-10-31 21:55:11 TP0] " + PREFILL)
    assert kind == "sglang.prefill" and stats is not None
    assert stats["engine"] == "TP0" and stats["new_tokens"] == 48


def test_ansi_and_crlf() -> None:
    line = b"\x1b[32m[2024-10-31 21:55:11 TP0]\x1b[0m " + PREFILL + b"\r"
    assert one(line)[1] == one(b"[2024-10-31 21:55:11 TP0] " + PREFILL)[1]


def test_access_lines() -> None:
    assert (
        one(b'[2024-10-31 21:55:05] INFO:     127.0.0.1:59560 - "GET /v1/models HTTP/1.1" 200 OK')[
            0
        ]
        == "http.access"
    )
    assert (
        one(b'[2026-05-28 02:59:59] INFO:     127.0.0.1:37664 - "POST /v1/completions HTTP/1.1"')[0]
        == "http.access"
    )
    assert (
        one(
            b"[2024-10-31 21:55:05] INFO:     Uvicorn running on http://0.0.0.0:30000 (Press CTRL+C to quit)"
        )[0]
        == "other"
    )


def test_receive_and_finish_lines() -> None:
    receive = b"[2025-03-03 17:53:04] Receive: obj=GenerateReqInput(text='Hello', input_ids=None, sampling_params={'max_new_tokens': 8}, rid='abc123', stream=False)"
    finish = (
        b"[2025-10-01 21:25:35] Finish: obj=GenerateReqInput(text='Hello', rid='abc123'), "
        b"out={'text': ' world', 'output_ids': [1, 2], 'meta_info': {'id': 'abc123', "
        b"'finish_reason': {'type': 'stop', 'matched': 128009}, 'prompt_tokens': 5, "
        b"'completion_tokens': 2, 'cached_tokens': 3, 'e2e_latency': 0.5, 'ttft': 0.1}}"
    )
    results, _ = parse(receive, finish)
    (k1, e1), (k2, e2) = results
    assert k1 == k2 == "sglang.request"
    assert e1 is not None and e2 is not None
    r, f = dict(e1[1]), dict(e2[1])
    assert r["request_id"] == "abc123" and r["state"] == "received" and r["prompt"] == "Hello"
    assert "prompt_tokens" not in r
    assert f == {
        "request_id": "abc123",
        "prompt_tokens": 5,
        "completion_tokens": 2,
        "cached_tokens": 3,
        "latency_s": 0.5,
        "ttft_s": 0.1,
        "timing_from": "meta_info",
        "finish_reason": "stop",
        "state": "finished",
        "completion": " world",
        "finished_ts": time.mktime((2025, 10, 1, 21, 25, 35, 0, 0, -1)),
        "ts": time.mktime((2025, 10, 1, 21, 25, 35, 0, 0, -1)),
    }


def test_finish_without_prefix_and_abbreviated_fields() -> None:
    # The newer RequestLogger has its own handler: no [ts] prefix; long fields abbreviated.
    line = (
        b"Finish: obj=GenerateReqInput(text=<text: 9000 chars, blake2b=ab12>, rid='r2'), "
        b"out={'text': <text: 5000 chars, blake2b=cd34>, 'meta_info': {'id': 'r2', "
        b"'finish_reason': {'type': 'abort', 'message': 'client gone'}, 'prompt_tokens': 9000, "
        b"'completion_tokens': 10, 'cached_tokens': 8192, 'e2e_latency': nan}}"
    )
    kind, payload = one(line)
    assert kind == "sglang.request" and payload is not None
    assert payload["state"] == "aborted" and payload["cached_tokens"] == 8192
    assert "latency_s" not in payload and "completion" not in payload


def test_json_request_log_lines() -> None:
    received = b'{"timestamp": 1700000000.0, "event": "request.received", "rid": "j1", "obj": {"input_ids": [1, 2, 3]}, "headers": {}}'
    finished = b'{"timestamp": 1700000001.5, "event": "request.finished", "rid": "j1", "obj": {}, "out": {"meta_info": {"id": "j1", "prompt_tokens": 3, "completion_tokens": 4, "cached_tokens": 0, "e2e_latency": 1.5, "finish_reason": {"type": "length", "length": 4}}}}'
    results, _ = parse(received, finished)
    payloads = [dict(e[1]) for _, e in results if e is not None]
    assert [k for k, _ in results] == ["sglang.request", "sglang.request"]
    assert payloads[0]["prompt_tokens"] == 3 and payloads[0]["state"] == "received"
    assert payloads[1]["completion_tokens"] == 4 and payloads[1]["finished_ts"] == 1700000001.5


def test_generate_results_json_and_list() -> None:
    body = b'[{"text": "a", "meta_info": {"id": "b1", "prompt_tokens": 2, "completion_tokens": 1, "cached_tokens": 0}}, {"text": "b", "meta_info": {"id": "b2", "prompt_tokens": 3, "completion_tokens": 1, "cached_tokens": 1}}]'
    results, pending = parse(body)
    assert results[0][0] == "api.response"
    ids = [dict(results[0][1][1])["request_id"]] + [dict(p)["request_id"] for _, p in pending]  # type: ignore[index]
    assert ids == ["b1", "b2"]


def test_expert_distribution_csv() -> None:
    results, _ = parse(b"layer_id,expert_id,count", b"0,5,7", b"23,49,2")
    assert [k for k, _ in results] == ["sglang.expert_dist"] * 3


def test_scheduler_exception_with_interleaved_prefixed_line() -> None:
    lines = [
        b"[2025-01-01 10:00:00 TP0] Scheduler hit an exception: Traceback (most recent call last):",
        b'  File "/s/scheduler.py", line 1, in event_loop',
        b"    self.run_batch()",
        b"[2025-01-01 10:00:00 TP1] " + DECODE,  # another rank writing meanwhile
        b"RuntimeError: CUDA error: out of memory rid='deadbeef01'",
        b"[2025-01-01 10:00:01] Received sigquit from a child process. It usually means the child failed.",
    ]
    results, errors = parse(*lines)
    assert [k for k, _ in results] == ["traceback"] * 3 + ["sglang.decode", "traceback", "other"]
    (err,) = [dict(p) for _, p in errors]
    assert err["lines"] == 4 and err["exception"] == "RuntimeError"
    assert err["request_id"] == "deadbeef01"
    assert err["ts"] == time.mktime((2025, 1, 1, 10, 0, 0, 0, 0, -1))


def test_noise_and_unparsed() -> None:
    results, _ = parse(
        b"2025-05-31 22:58:28,427 - INFO - flashinfer.jit: Prebuilt kernels not found",
        b"/x/launch_server.py:51: UserWarning: deprecated",
        b"  warnings.warn(",
        b"INFO 10-31 21:55:00 weight_utils.py:243] Using model weights format",
        b"Cache flushed.",
    )
    assert [k for k, _ in results] == ["other"] * 4 + ["unparsed"]


def test_sniff() -> None:
    assert sglang.FAMILY.sniff([b"[2024-10-31 21:55:11 TP0] " + PREFILL] * 5) > 0.9
    kv = [
        b"[2025-01-01 10:00:00] Request completed | req_id=abc | prompt_tokens=5 | hit_cache=True"
    ] * 20
    assert sglang.FAMILY.sniff(kv) < 0.2
    vllm_ext = [
        b"[2024-07-08 15:17:34] INFO 07-08 07:17:34 metrics.py:334] Avg prompt throughput: 1.0 tokens/s"
    ]
    assert sglang.FAMILY.sniff(vllm_ext) < 0.5


def test_every_traceback_reaches_the_extractor(tmp_path: Any) -> None:
    # The Extractor drains a parser's pending events by swapping in a new list; the
    # traceback tracker used to keep appending to the first one, so every error after the
    # first was lost (summary said "errors: 1" for a log with three tracebacks).
    from sparseety_tui.ingest.batch import Options, ingest_paths

    lines = []
    for i in range(3):
        lines += [
            f"[2026-03-01 10:00:0{i} TP0] Scheduler hit an exception: Traceback (most recent call last):",
            '  File "/sglang/srt/managers/scheduler.py", line 77, in event_loop',
            f"RuntimeError: boom {i}",
            f"[2026-03-01 10:00:0{i} TP0] Decode batch. #running-req: 1, #token: 9, token usage: 0.01, gen throughput (token/s): 1.00, #queue-req: 0",
        ]
    path = tmp_path / "sglang.log"
    path.write_text("\n".join(lines) + "\n")
    extractor = ingest_paths(Options(), [str(path)])
    assert extractor.error_count == 3
    assert [e["message"] for e in extractor.errors] == ["boom 0", "boom 1", "boom 2"]
