"""The timing a server reports per request, read by the per-line parsers and the saved
responses' reader (formats._timing): SGLang's ``meta_info`` and vLLM's per-request
``metrics`` object, each figure with its source, bad values left unknown and counted.

Lines: the SGLang ``Finish:`` line is real (sgl-project/sglang issue #25887, in
tests/data/real_logs); the JSON request-log line, the ``meta_info`` with the scheduler's
times and the vLLM lines and bodies are built from the servers' own code (SGLang
``req_time_stats.py`` ``convert_to_output_meta_info`` and ``request_logger.py``; vLLM
``RequestLogger.log_outputs``'s format string and ``build_per_request_timing_metrics``),
since no stored public log holds them with these fields."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import pytest

from sparseety_tui.capture.responses import ConvertOptions, convert_value
from sparseety_tui.core.extraction import Extractor
from sparseety_tui.core.figures import DEFAULT_SHAPE
from sparseety_tui.core.report import request_records, summary_document
from sparseety_tui.events import ParsedLine, RequestPayload
from sparseety_tui.formats import _registry as registry
from sparseety_tui.formats._responses import read_response_body
from sparseety_tui.formats._routing import RoutingOptions
from sparseety_tui.formats.sglang import FAMILY as SGLANG
from sparseety_tui.formats.sglang import SCANNER as SGLANG_SCANNER
from sparseety_tui.formats.vllm import FAMILY as VLLM
from sparseety_tui.ingest.batch import ingest_file

ROOT = Path(__file__).resolve().parents[2]
REAL = ROOT / "tests" / "data" / "real_logs"
FINISH_25887 = "sglang_0.5.10_cloudwatch_export_attn_cp_pp_prefill_finish_traceback_25887.log"


def _request(parsed: ParsedLine) -> RequestPayload:
    kind, event = parsed
    assert event is not None and event[0] == "request", (kind, event)
    return event[1]


def _real_finish_line() -> bytes:
    for line in (REAL / FINISH_25887).read_bytes().splitlines():
        if b"Finish: " in line:
            return line.split(b"\t", 2)[2]  # the CloudWatch export's two columns off
    raise AssertionError("no Finish: line")


def test_real_finish_line_gives_meta_info_timing_and_refuses_the_placeholders() -> None:
    parser = SGLANG.new_parser()
    p = _request(parser.parse(_real_finish_line()))
    assert p["request_id"] == "bf890d9ca8ce4008bef7ef25d97f8fba"
    assert p["timing_from"] == "meta_info"
    assert p["latency_s"] == 1201.9242150001228
    assert p["preemptions"] == 0  # total_retractions
    # decode = completion_tokens / decode_throughput, as SGLang divided them
    assert p["decode_s"] == pytest.approx(23297 / 19.428522417494694)
    # TTFT = latency - decode: the 2.8 s the first chunk took to reach the client
    # (response_sent_to_client_ts - request_received_ts on the same line)
    assert p["ttft_s"] == pytest.approx(1779262965.4523866 - 1779262962.6408873, abs=0.01)
    # queue_time 0.0 and an inference_time since the scheduler's clock origin: unknown
    assert "queue_s" not in p and "inference_s" not in p and "prefill_s" not in p
    assert sorted(parser.ignored) == [
        "meta_info.inference_time: longer than the request's e2e_latency",
        "meta_info.queue_time: exactly 0.0: the scheduler's times did not reach the server's"
        " front end",
    ]


def _json_finished(meta: dict[str, Any]) -> bytes:
    line = {
        "timestamp": 1779262962.5,
        "event": "request.finished",
        "rid": "j1",
        "out": {"text": "hi", "meta_info": meta},
    }
    return json.dumps(line).encode()


def test_json_request_log_gives_the_scheduler_times() -> None:
    meta = {
        "id": "j1",
        "finish_reason": {"type": "stop"},
        "prompt_tokens": 10,
        "completion_tokens": 20,
        "total_retractions": 2,
        "e2e_latency": 3.0,
        "forward_entry_time": 1779262961.25,
        "prefill_finished_time": 1779262961.75,
        "queue_time": 0.25,
        "prefill_waiting_latency": 0.01,
        "prefill_launch_latency": 0.02,
        "inference_time": 2.5,
        "decode_throughput": 10.0,
    }
    parser = SGLANG.new_parser()
    p = _request(parser.parse(_json_finished(meta)))
    assert p["timing_from"] == "meta_info"
    assert (p["queue_s"], p["prefill_s"], p["inference_s"]) == (0.25, 0.5, 2.5)
    assert (p["decode_s"], p["ttft_s"], p["latency_s"]) == (2.0, 1.0, 3.0)
    assert p["preemptions"] == 2
    assert parser.ignored == {}


def test_bad_meta_info_values_are_unknown_and_counted() -> None:
    line = (
        b"[2026-05-20 08:02:44] Finish: obj=GenerateReqInput(rid='b1'), out={'meta_info': "
        b"{'id': 'b1', 'finish_reason': {'type': 'stop'}, 'completion_tokens': 4, "
        b"'total_retractions': -1, 'queue_time': 'slow', 'inference_time': -0.5, "
        b"'e2e_latency': -2.0, 'decode_throughput': None}}"
    )
    parser = SGLANG.new_parser()
    p = _request(parser.parse(line))
    assert p["state"] == "finished"
    for key in ("latency_s", "queue_s", "inference_s", "decode_s", "ttft_s", "preemptions"):
        assert key not in p
    assert "timing_from" not in p  # no figure to speak for
    assert parser.ignored == {
        "meta_info.e2e_latency: negative": 1,
        "meta_info.queue_time: not a finite number": 1,
        "meta_info.inference_time: negative": 1,
        "meta_info.total_retractions: negative": 1,
    }


def test_the_native_scanner_leaves_finish_lines_to_the_per_line_parser() -> None:
    if SGLANG_SCANNER is None:
        pytest.skip("the SGLang C scanner was not built")
    prefill = (
        b"[2026-05-20 08:02:43 TP0] Prefill batch. #new-seq: 1, #new-token: 128, "
        b"#cached-token: 0, token usage: 0.50, #running-req: 0, #queue-req: 0\n"
    )
    data = prefill + b"[2026-05-20 08:02:44] " + _real_finish_line() + b"\n" + prefill
    batch = SGLANG_SCANNER(SGLANG.new_parser(), data, 0, 1 << 20)
    assert (batch.n, batch.end) == (1, len(prefill))  # stops at the Finish: line


def test_finish_lines_read_the_same_with_and_without_fast_paths(tmp_path: Path) -> None:
    prefill = (
        b"[2026-05-20 08:02:43 TP0] Prefill batch. #new-seq: 1, #new-token: 128, "
        b"#cached-token: 0, token usage: 0.50, #running-req: 0, #queue-req: 0\n"
    )
    body = prefill * 3 + b"[2026-05-20 08:02:44] " + _real_finish_line() + b"\n"
    log = tmp_path / "finish.log"
    log.write_bytes(body + _json_finished({"id": "j1", "e2e_latency": 1.0, "queue_time": 0.1}))
    fast = _documents(log)
    with pytest.MonkeyPatch.context() as patch:
        for family in registry.FAMILIES.values():
            patch.setattr(type(family), "scan_server", None)
        slow = _documents(log)
    assert fast == slow
    summary = json.loads(fast[0])
    (state,) = summary["files"]
    assert state["ignored_values"]["meta_info.queue_time: exactly 0.0: the scheduler's times"
                                   " did not reach the server's front end"] == 1  # fmt: skip


def _documents(path: Path) -> tuple[str, list[str]]:
    """``summary --json`` and ``extract`` of a file, as JSON text."""
    extractor = Extractor()
    ingest_file(extractor, str(path))
    frozen = extractor.freeze()
    summary = json.dumps(summary_document(frozen, DEFAULT_SHAPE).to_json(), sort_keys=True)
    return summary, [json.dumps(r, sort_keys=True) for r in request_records(frozen, DEFAULT_SHAPE)]


def _vllm(*lines: bytes) -> list[ParsedLine]:
    parser = VLLM.new_parser()
    return [parser.parse(line) for line in lines]


def test_vllm_streaming_complete_is_an_end_time_not_a_finish_reason() -> None:
    # RequestLogger.log_outputs: "Generated response %s%s: output: %r, output_token_ids: %s,
    # finish_reason: %s", the stream's end logged with finish_reason="streaming_complete"
    head = b"INFO 05-20 08:02:4"
    delta, done = _vllm(
        head + b"3 [logger.py:71] Generated response chatcmpl-s1 (streaming delta): "
        b"output: '.', output_token_ids: None, finish_reason: stop",
        head + b"4 [logger.py:71] Generated response chatcmpl-s1 (streaming complete): "
        b"output: 'Paris.', output_token_ids: None, finish_reason: streaming_complete",
    )
    d, c = _request(delta), _request(done)
    assert d["finish_reason"] == "stop" and "state" not in d
    assert c["state"] == "finished" and "finish_reason" not in c
    assert c["finished_ts"] - d["ts"] == 1.0  # whole seconds: vLLM's stamps have no fraction
    assert "latency_s" not in c and "timing_from" not in c  # the core pairs the two times


def test_vllm_finished_request_line_is_an_end_time() -> None:
    (parsed,) = _vllm(b"INFO 05-20 08:02:44 async_llm_engine.py:140] Finished request cmpl-9.")
    p = _request(parsed)
    assert p["state"] == "finished" and "finished_ts" in p and "latency_s" not in p


def _openai_body(metrics: dict[str, Any] | None, choices: int = 1) -> dict[str, Any]:
    return {
        "id": "cmpl-m1",
        "object": "text_completion",
        "model": "m",
        "choices": [{"index": i, "text": "x", "finish_reason": "length"} for i in range(choices)],
        "usage": {"prompt_tokens": 5, "completion_tokens": 9, "total_tokens": 14},
        "metrics": metrics,
    }


METRICS = {
    "time_to_first_token_ms": 120.0,
    "generation_time_ms": 800.0,
    "queue_time_ms": 40.0,
    "mean_itl_ms": 100.0,
    "tokens_per_second": 9.78,
}


def test_vllm_metrics_object_in_a_logged_body() -> None:
    ignored: dict[str, int] = {}
    recognised, (p,) = read_response_body(
        json.dumps(_openai_body(METRICS)), RoutingOptions(), ignored
    )
    assert recognised and p["timing_from"] == "response"
    assert p["queue_s"] == pytest.approx(0.04)
    assert p["prefill_s"] == pytest.approx(0.12)  # first token minus *scheduled*
    assert p["decode_s"] == pytest.approx(0.8)
    assert p["inference_s"] == pytest.approx(0.92)
    assert "ttft_s" not in p and "latency_s" not in p and ignored == {}


def test_saved_responses_with_metrics_become_timed_records() -> None:
    ignored: dict[str, int] = {}
    bad = dict(METRICS, queue_time_ms=math.nan, generation_time_ms="800", mean_itl_ms=None)
    records = [
        *convert_value(_openai_body(METRICS), ConvertOptions(), ignored),
        *convert_value(_openai_body(bad) | {"id": "cmpl-m2"}, ConvertOptions(), ignored),
    ]
    good, partial = records
    assert good["request_id"] == "cmpl-m1" and "sparse" not in good
    assert good["timing_from"] == "response"
    assert (good["queue_s"], good["prefill_s"], good["decode_s"]) == pytest.approx(
        (0.04, 0.12, 0.8)
    )
    assert partial["prefill_s"] == pytest.approx(0.12) and partial["timing_from"] == "response"
    for key in ("queue_s", "decode_s", "inference_s"):
        assert key not in partial
    assert ignored == {
        "metrics.queue_time_ms: not a finite number": 1,
        "metrics.generation_time_ms: not a finite number": 1,
    }
    json.dumps(records, allow_nan=False)  # what import-routing writes is valid JSON


def test_saved_sglang_generate_response_gives_meta_info_timing() -> None:
    resp = {
        "text": " Paris.",
        "meta_info": {
            "id": "g1",
            "finish_reason": {"type": "stop"},
            "prompt_tokens": 7,
            "completion_tokens": 8,
            "total_retractions": 1,
            "e2e_latency": 2.0,
            "queue_time": 0.5,
            "decode_throughput": 8.0,
        },
    }
    (rec,) = convert_value(resp, ConvertOptions())
    assert rec["timing_from"] == "meta_info"
    assert (rec["latency_s"], rec["queue_s"], rec["decode_s"], rec["ttft_s"]) == (
        2.0,
        0.5,
        1.0,
        1.0,
    )
    assert rec["preemptions"] == 1 and "sparse" not in rec


def test_responses_without_routing_or_timing_are_still_refused() -> None:
    from sparseety_tui.capture.responses import ResponseError

    with pytest.raises(ResponseError, match="no routed_experts"):
        list(convert_value(_openai_body(None), ConvertOptions()))
    with pytest.raises(ResponseError, match=r"no meta_info\.routed_experts"):
        list(convert_value({"meta_info": {"id": "g2", "prompt_tokens": 3}}, ConvertOptions()))
