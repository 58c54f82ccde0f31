"""vLLM family on synthetic variants of real lines: colours, line endings, wrappers, cut
lines, request lifecycle, interleaved tracebacks, year inference."""

from __future__ import annotations

import time
from typing import Any

import pytest

from sparseety_tui.events import Event, ParsedLine
from sparseety_tui.formats import vllm

V1 = (
    b"(APIServer pid=1) INFO 07-29 06:22:21 [loggers.py:310] Engine 000: Avg prompt throughput: "
    b"657.5 tokens/s, Avg generation throughput: 1.1 tokens/s, Running: 1 reqs, Waiting: 0 reqs, "
    b"GPU KV cache usage: 22.0%, Prefix cache hit rate: 72.2%, MM cache hit rate: 75.0%"
)
V0 = (
    b"INFO 02-22 16:52:30 metrics.py:161] Avg prompt throughput: 0.9 tokens/s, Avg generation "
    b"throughput: 0.0 tokens/s, Running: 1 reqs, Swapped: 0 reqs, Pending: 0 reqs, GPU KV cache "
    b"usage: 0.0%, CPU KV cache usage: 0.0%"
)
RECEIVED = (
    b"INFO 05-11 12:04:17 [logger.py:39] Received request chatcmpl-b73b: prompt: 'Tell me', "
    b"params: SamplingParams(n=1, max_tokens=32735), prompt_token_ids: [1, 2, 3], "
    b"lora_request: None, prompt_adapter_request: None."
)
REF = time.mktime((2025, 8, 1, 0, 0, 0, 0, 0, -1))


def parse(*lines: bytes, **options: Any) -> tuple[list[ParsedLine], list[Event]]:
    parser = vllm.FAMILY.new_parser(reference_time=REF, **options)
    out: list[ParsedLine] = []
    pending: list[Event] = []
    for line in lines:
        out.append(parser.parse(line))
        pending.extend(parser.pending)
        parser.pending.clear()
    parser.finish()
    pending.extend(parser.pending)
    return out, pending


def stats(line: bytes) -> dict[str, Any]:
    (result,), _ = parse(line)
    assert result[0] == "vllm.stats", result
    assert result[1] is not None
    return dict(result[1][1])


def test_v1_plain() -> None:
    s = stats(V1)
    assert s["prompt_throughput"] == 657.5 and s["running"] == 1 and s["waiting"] == 0
    assert s["kv_usage"] == pytest.approx(0.22) and s["prefix_cache_hit_rate"] == 0.722
    assert s["ts"] == time.mktime((2025, 7, 29, 6, 22, 21, 0, 0, -1))


def test_ansi_colours_like_a_tty() -> None:
    coloured = (
        b"\x1b[1;36m(APIServer pid=1)\x1b[0;0m \x1b[32mINFO\x1b[0m \x1b[90m07-29 06:22:21\x1b[0m "
        b"\x1b[90m[loggers.py:310]\x1b[0m" + V1.split(b"[loggers.py:310]", 1)[1]
    )
    assert stats(coloured) == stats(V1)


def test_crlf_continuation_and_bare_cr() -> None:
    assert stats(V1 + b"\r") == stats(V1)
    assert stats(b"\r 10%|#   | 1/10\r" + V1) == stats(V1)


@pytest.mark.parametrize(
    "wrapper",
    [
        b"2026-05-12T08:01:39.331095044Z ",
        b"[2026-08-21T19:42:37Z] ",
        b"vllm-mxfp4  | ",
        b"vllm-1 | 2025-04-04T10:00:00.5Z ",
        b"vllm-7d9f8c6b5-x2k9p vllm ",
        b"[2024-07-08 15:17:34] ",
        b"2024-06-25 12:27:28.331 ",
        b"> ",
    ],
)
def test_every_wrapper(wrapper: bytes) -> None:
    s = stats(wrapper + V1)
    base = stats(V1)
    for key in ("prompt_throughput", "running", "kv_usage", "prefix_cache_hit_rate", "engine"):
        assert s[key] == base[key]


def test_docker_zone_stamp_wins_for_ts() -> None:
    s = stats(b"2026-05-12T08:01:39.5Z " + V1)
    assert s["ts"] == pytest.approx(1778572899.5)


def test_v0_and_unbracketed_file_info() -> None:
    s = stats(V0)
    assert s == {
        "phase": "engine",
        "ts": time.mktime((2025, 2, 22, 16, 52, 30, 0, 0, -1)),
        "prompt_throughput": 0.9,
        "generation_throughput": 0.0,
        "running": 1,
        "swapped": 0,
        "waiting": 0,
        "kv_usage": 0.0,
    }
    assert stats(V0 + b".")["running"] == 1
    assert stats(b"[" + V0)["running"] == 1  # PR #7606 pasted a leading '['


def test_shortened_path_and_glitch_and_nested_procs() -> None:
    shortened = V1.replace(b"[loggers.py:310]", b"[v1/metrics/loggers.py:310]")
    glitch = V1.replace(b"[loggers.py:310]", b"[loggers.py:310[]")
    nested = b"(EngineCore pid=925) (RayWorkerProc pid=8272) " + V1.split(b") ", 1)[1]
    ray_data = b"(MapWorker(MapBatches(vLLMEngineStageUDF)) pid=20874) " + V1.split(b") ", 1)[1]
    for line in (shortened, glitch, nested, ray_data):
        assert stats(line)["prompt_throughput"] == 657.5


def test_future_fields_in_any_order_still_read() -> None:
    line = (
        b"INFO 07-29 06:22:21 [loggers.py:1] Engine 002: Avg prompt throughput: 1.0 tokens/s, "
        b"Avg generation throughput: 2.0 tokens/s, Running: 3 reqs, Waiting: 4 reqs, "
        b"Brand new: 9 things, KV cache usage: 12.5%, Prefix cache hit rate: 5.0%"
    )
    s = stats(line)
    assert (s["engine"], s["running"], s["waiting"]) == ("2", 3, 4)
    assert s["kv_usage"] == 0.125 and s["prefix_cache_hit_rate"] == 0.05


def test_aggregated_engines_and_deferred_preemptions() -> None:
    line = (
        b"INFO 07-29 06:22:21 [loggers.py:1] 2 Engines Aggregated: Avg prompt throughput: 1.0 "
        b"tokens/s, Avg generation throughput: 2.0 tokens/s, Running: 3 reqs, Waiting: 4 reqs, "
        b"Deferred: 1 reqs, Preemptions: 2, GPU KV cache usage: 10.0%, Prefix cache hit rate: "
        b"5.0%, Corrupted: 0 reqs, External prefix cache hit rate: 1.0%"
    )
    s = stats(line)
    assert s["engine"] == "all" and s["waiting"] == 4


def test_spec_decode_both_formats_and_v0() -> None:
    old = b"INFO 09-09 11:51:35 [metrics.py:96] SpecDecoding metrics: Draft acceptance rate: 88.8%, Mean acceptance length: 5.44, Accepted: 262 tokens"
    new = b"INFO 07-29 06:22:21 [metrics.py:120] SpecDecoding metrics: Mean acceptance length: 3.97, Per-position acceptance rate: 1.000, 0.968, Avg Draft acceptance rate: 98.9%"
    v0 = b"INFO 08-01 10:00:00 spec_decode_worker.py:1] Speculative metrics: Draft acceptance rate: 0.607, System efficiency: 0.510"
    assert (stats(old)["spec_accept_rate"], stats(old)["spec_accept_length"]) == (0.888, 5.44)
    assert (stats(new)["spec_accept_rate"], stats(new)["spec_accept_length"]) == (0.989, 3.97)
    assert stats(v0)["spec_accept_rate"] == 0.607 and stats(v0)["phase"] == "spec"


def test_request_lifecycle() -> None:
    results, pending = parse(
        RECEIVED,
        b"INFO 05-11 12:04:17 [engine.py:310] Added request chatcmpl-b73b.",
        b"INFO 05-11 12:04:18 [logger.py:70] Generated response chatcmpl-b73b: output: 'A joke', "
        b"output_token_ids: [7, 8], finish_reason: stop",
        b"INFO 05-11 12:04:18 [async_llm_engine.py:1] Finished request chatcmpl-b73b.",
        b"INFO 05-11 12:04:19 [async_llm.py:1] Aborted request(s) x1,x2.",
    )
    assert [k for k, _ in results] == ["vllm.request"] * 5
    payloads = [dict(e[1]) for _, e in results if e is not None]
    assert payloads[0]["prompt"] == "Tell me" and payloads[0]["prompt_tokens"] == 3
    assert payloads[0]["state"] == "received"
    assert payloads[1]["state"] == "running"
    assert payloads[2]["completion"] == "A joke" and payloads[2]["completion_tokens"] == 2
    assert payloads[2]["finish_reason"] == "stop" and payloads[2]["state"] == "finished"
    assert payloads[3]["state"] == "finished"
    assert payloads[4]["request_id"] == "x1" and payloads[4]["state"] == "aborted"
    assert [dict(p)["request_id"] for _, p in pending] == ["x2"]


def test_received_wordings() -> None:
    v02 = (
        b"INFO 12-19 14:27:21 async_llm_engine.py:379] Received request cmpl-1: prompt: 'a', "
        b"sampling params: SamplingParams(n=1), prompt token ids: [1, 2]."
    )
    v03 = (
        b"INFO 02-22 16:52:30 async_llm_engine.py:1] Received request 7f: prompt: 'hi', "
        b"prefix_pos: None,sampling_params: SamplingParams(n=1), prompt_token_ids: None, "
        b"lora_request: None."
    )
    v015 = (
        b"(APIServer pid=9) INFO 02-13 11:33:33 [logger.py:49] Received request chatcmpl-a2: "
        b"params: SamplingParams(n=1, max_tokens=100), lora_request: None."
    )
    tricky = (
        b"INFO 02-13 11:33:33 [logger.py:39] Received request r-9: prompt: 'say "
        b"\\'prompt_token_ids: [5]\\'', params: SamplingParams(n=1), prompt_token_ids: [4], "
        b"lora_request: None, prompt_adapter_request: None."
    )
    results, _ = parse(v02, v03, v015, tricky, keep_token_ids=True)
    got = [dict(e[1]) for _, e in results if e is not None]
    assert [g["request_id"] for g in got] == ["cmpl-1", "7f", "chatcmpl-a2", "r-9"]
    assert got[0]["prompt_tokens"] == 2
    assert "prompt_tokens" not in got[1] and got[1]["prompt"] == "hi"
    assert "prompt" not in got[2]
    assert got[3]["prompt"] == "say 'prompt_token_ids: [5]'" and got[3]["prompt_token_ids"] == [4]


def test_cut_line_fragments_then_joined() -> None:
    # A line cut in two by a writer (the follower normally joins partial lines): each
    # fragment alone is accounted for without raising; the joined line parses.
    # Cut inside the stats body: the head is an incomplete stats record, held for one
    # line; the tail has no prefix and completes it, so both fragments are stats lines
    # and the record comes whole with the tail (formats/_termwrap.py, issue #10 item 4).
    head, tail = V1[:140], V1[140:]
    (a, b), _ = parse(head, tail)
    assert a == ("vllm.stats", None) and b[0] == "vllm.stats"
    assert b[1] is not None
    assert dict(b[1][1]) == stats(head + tail)
    # Followed by a line of its own instead, the head is a truncated record: the fields
    # it still holds, the others unknown.
    (a, b), _ = parse(head, V0)
    assert a == ("vllm.stats", None) and b[0] == "vllm.stats" and b[1] is not None
    partial = dict(b[1][1])
    assert partial["prompt_throughput"] == 657.5 and "kv_usage" not in partial
    # Cut between prefix and message: the tail still carries a whole stats body, so it
    # is read as stats, only without a timestamp (the head had it).
    head, tail = V1[:55], V1[55:]
    (a, b), _ = parse(head, tail)
    assert a[0] == "other" and b[0] == "vllm.stats"
    assert b[1] is not None and "ts" not in b[1][1]


def test_interleaved_tracebacks_from_two_processes() -> None:
    lines = [
        b"(EngineCore_DP0 pid=10) ERROR 04-17 23:05:06 [core.py:390] EngineCore hit an exception: Traceback (most recent call last):",
        b"(EngineCore_DP1 pid=11) ERROR 04-17 23:05:06 [core.py:390] EngineCore hit an exception: Traceback (most recent call last):",
        b'(EngineCore_DP0 pid=10) ERROR 04-17 23:05:06 [core.py:390]   File "/v/core.py", line 1, in run',
        b'(EngineCore_DP1 pid=11) ERROR 04-17 23:05:06 [core.py:390]   File "/v/core.py", line 2, in step',
        b"(EngineCore_DP0 pid=10) ERROR 04-17 23:05:06 [core.py:390]     self.step()",
        b"(EngineCore_DP1 pid=11) ERROR 04-17 23:05:06 [core.py:390] ValueError: bad request_id=chatcmpl-0123456789",
        b"(EngineCore_DP0 pid=10) ERROR 04-17 23:05:06 [core.py:390] torch.OutOfMemoryError: CUDA out of memory.",
        b"(EngineCore_DP0 pid=10) INFO 04-17 23:05:07 [core.py:1] shutting down",
        b'(APIServer pid=1) INFO:     127.0.0.1:1 - "POST /v1/completions HTTP/1.1" 500 Internal Server Error',
    ]
    results, errors = parse(*lines)
    assert [k for k, _ in results] == ["traceback"] * 7 + ["other", "http.access"]
    by_exc = {dict(p)["exception"]: dict(p) for _, p in errors}
    assert by_exc["ValueError"]["lines"] == 3
    assert by_exc["ValueError"]["request_id"] == "chatcmpl-0123456789"
    assert by_exc["torch.OutOfMemoryError"]["lines"] == 4
    assert by_exc["torch.OutOfMemoryError"]["message"] == "CUDA out of memory."


def test_raw_traceback_with_process_prefix_and_uvicorn_header() -> None:
    lines = [
        b"ERROR:    Exception in ASGI application",
        b"Traceback (most recent call last):",
        b'  File "/u/h11_impl.py", line 403, in run_asgi',
        b"    result = await app(",
        b"RuntimeError: boom",
        b"",
        b'INFO:     127.0.0.1:2 - "GET /health HTTP/1.1" 200 OK',
    ]
    results, errors = parse(*lines)
    assert [k for k, _ in results] == ["traceback"] * 5 + ["blank", "http.access"]
    assert dict(errors[0][1])["lines"] == 5


def test_chained_exception_stays_one_error() -> None:
    lines = [
        b"Traceback (most recent call last):",
        b'  File "a.py", line 1, in f',
        b"KeyError: 'x'",
        b"",
        b"The above exception was the direct cause of the following exception:",
        b"",
        b"Traceback (most recent call last):",
        b'  File "b.py", line 2, in g',
        b"RuntimeError: wrapped",
        b"INFO 04-17 23:05:07 [core.py:1] next",
    ]
    results, errors = parse(*lines)
    kinds = [k for k, _ in results]
    assert kinds.count("traceback") == 7 and kinds.count("blank") == 2
    assert len(errors) == 1 and dict(errors[0][1])["exception"] == "RuntimeError"


def test_year_rolls_forward_over_new_year_and_never_back() -> None:
    ref = time.mktime((2025, 1, 2, 12, 0, 0, 0, 0, -1))  # mtime early January
    parser = vllm.FAMILY.new_parser(reference_time=ref)
    years = []
    for stamp in (b"12-31 23:59:50", b"12-31 23:59:59", b"01-01 00:00:05", b"12-31 23:59:58"):
        line = V0.replace(b"02-22 16:52:30", stamp)
        _, event = parser.parse(line)
        assert event is not None
        years.append(time.localtime(dict(event[1])["ts"]).tm_year)
    # The first stamp (Dec) lies after the reference (Jan): the log began in 2024.
    assert years == [2024, 2024, 2025, 2025]


def test_unparsed_has_reason_and_prefixed_unknown_is_other() -> None:
    (a, b, c), _ = parse(
        b"hello world", b"(APIServer pid=1) something", b"INFO:     Started server process [1]"
    )
    assert a[0] == "unparsed" and b[0] == "other" and c[0] == "other"
    parser = vllm.FAMILY.new_parser()
    parser.parse(b"hello world")
    assert parser.last_reason


def test_sniff_rejects_other_families() -> None:
    kv = [
        b"2025-01-01 10:00:00 INFO Request completed | req_id=abc | prompt_tokens=5 | hit_cache=True"
    ] * 20
    assert vllm.FAMILY.sniff(kv) < 0.2
    trace = [b'{"request_id": "r1", "prompt": "hi", "completion": "yo"}'] * 20
    assert vllm.FAMILY.sniff(trace) < 0.3
    assert vllm.FAMILY.sniff([V1] * 5) > 0.9


def test_the_year_comes_from_the_file_mtime(tmp_path: Any) -> None:
    """A vLLM log read long after it was written: its stamps are dated against the file's
    mtime, the same in summary, extract and the detail view (not against today)."""
    import os

    from sparseety_tui.core.detail._detail import build_detail
    from sparseety_tui.core.extraction._extractor import Extractor
    from sparseety_tui.ingest.batch import ingest_file

    log = tmp_path / "old-vllm.log"
    log.write_bytes(
        b"INFO 03-15 10:00:00 [logger.py:43] Received request cmpl-1: prompt: 'hi', "
        b"params: SamplingParams(max_tokens=4), prompt_token_ids: [1, 2, 3], lora_request: None.\n"
        b"INFO 03-15 10:00:01 [engine.py:1] Finished request cmpl-1.\n"
    )
    written = time.mktime((2024, 6, 1, 12, 0, 0, 0, 0, -1))
    os.utime(log, (written, written))
    extractor = Extractor()
    ingest_file(extractor, str(log))
    assert extractor.files[0].format_name == "vllm"
    received = extractor.store.get("received_ts", 0)
    assert received is not None and time.localtime(received).tm_year == 2024
    detail = build_detail(extractor, 0)
    assert not detail.problems
