"""Key values of the round-2 real excerpts (issue #10), through `summary` / `extract` as a
user runs them: wrappers, fleets, PD failures, CI tails, crash loops under journald.

Each value was read off the file by hand (tests/data/real_logs/MANIFEST.md, "Round 2").
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from cli_helpers import extract_records, summary_json

DATA = Path(__file__).resolve().parent.parent / "data" / "real_logs"


def summary(capsys: pytest.CaptureFixture[str], name: str) -> dict[str, Any]:
    return summary_json(capsys, str(DATA / name))


def extract(capsys: pytest.CaptureFixture[str], name: str) -> list[dict[str, Any]]:
    return extract_records(capsys, str(DATA / name))


def test_vllm_data_parallel_engines_are_a_fleet(capsys: pytest.CaptureFixture[str]) -> None:
    engine = summary(capsys, "vllm_0.14_dp8_engine000_001_mm_cache_waiting_36748.log")["engine"]
    assert engine["engines"] == 2
    last = engine["last"]
    # Engine 000 + Engine 001: 51 + 31 running, 117 + 108 waiting, 1157.2 + 809.3 tok/s
    assert (last["running"], last["waiting"]) == (82, 225)
    assert last["generation_throughput"] == pytest.approx(1966.5)
    assert last["prompt_throughput"] == pytest.approx(16.5)
    assert last["kv_usage"] == pytest.approx((1.0 + 0.986) / 2)  # a ratio: averaged
    assert last["mm_cache_hit_rate"] == 0.0
    assert engine["by_engine"]["0"]["last"]["running"] == 51
    assert engine["by_engine"]["1"]["last"]["waiting"] == 108


def test_cloudwatch_export_with_attention_cp_ranks(capsys: pytest.CaptureFixture[str]) -> None:
    name = "sglang_0.5.10_cloudwatch_export_attn_cp_pp_prefill_finish_traceback_25887.log"
    document = summary(capsys, name)
    assert document["files"][0]["wrapper"] == "cloudwatch"
    engine = document["engine"]
    # ATTN_CP0..7 report one prefill batch: one engine, the batch counted once.
    assert engine["engines"] == 1 and engine["replicated_reports_folded"] == 7
    assert engine["prefill_tokens"]["new"] == 128
    assert engine["prefill_tokens"]["cached"] == 57856
    # The `Finish:` line has no SGLang prefix: the request is there all the same.
    assert document["requests"]["by_state"] == {"aborted": 1}
    [error] = document["errors"]["recent"]
    assert error["exception"] == "RuntimeError" and error["lines"] == 32
    [request] = extract(capsys, name)
    assert request["request_id"] == "bf890d9ca8ce4008bef7ef25d97f8fba"
    assert (request["prompt_tokens"], request["completion_tokens"]) == (32472, 23297)
    assert request["cached_tokens"] == 32320
    # meta_info's request_received_ts / request_finished_ts (the wrapper's time is 08:02:44.565)
    assert request["finished_ts"] == pytest.approx(1779264164.565)
    assert request["received_ts"] == pytest.approx(1779262962.641)
    assert request["latency_s"] == pytest.approx(1201.924, abs=1e-3)


@pytest.mark.parametrize(
    ("name", "failures"),
    [
        # 5 ranks report one bootstrap failure
        ("sglang_aug2025_pd_prefill_bootstrap_failed_kvtransfererror_tp_ep_9266.log", 1),
        ("sglang_sep2025_pd_decode_transfer_failed_kvtransfererror_access_10560.log", 1),
        # 7 prefill + 7 decode reports, interleaved with blank and access lines: 2 failures
        ("sglang_0.5.8_pd_prefill_decode_transfer_failed_mooncake_tp16_2node_slurmv4.log", 2),
    ],
)
def test_pd_failures_fail_their_requests(
    capsys: pytest.CaptureFixture[str], name: str, failures: int
) -> None:
    document = summary(capsys, name)
    assert document["errors"]["by_kind"]["kv_transfer"] == failures
    assert document["requests"]["by_state"] == {"failed": failures}
    for error in document["errors"]["recent"]:
        if error.get("kind") != "http_5xx":  # the 0.5.8 file's router got a 500 too
            assert error["exception"] == "KVTransferError" and error["request_id"]


def test_pd_queue_fields(capsys: pytest.CaptureFixture[str]) -> None:
    name = "sglang_apr2026_pd_compose_prealloc_inflight_transfer_retracted_23272.log"
    mean = summary(capsys, name)["engine"]["mean"]
    # prefill node: #prealloc-req 24, #inflight-req 8; decode node: pre-allocated usage
    # 0.88, #prealloc-req 6, #transfer-req 26, #retracted-req 0
    assert (mean["bootstrap_queue"], mean["transferring"]) == (24, 8)
    assert mean["preallocated_usage"] == pytest.approx(0.88)
    assert (mean["prealloc_queue"], mean["transfer_queue"], mean["retracted"]) == (6, 26, 0)


def test_a_ci_tail_of_tracebacks(capsys: pytest.CaptureFixture[str]) -> None:
    document = summary(capsys, "vllm_0.9dev_ci_buildkite_traceback_only_18417.log")
    assert document["files"][0]["format"] == "unknown"
    errors = document["errors"]
    assert errors["count"] == 2
    assert errors["recent"][0]["exception"] == "RuntimeError"
    assert errors["recent"][0]["ts"] == 1747718671.0  # the CI's [2025-05-20T05:24:31Z]


def test_a_crash_loop_under_journald(capsys: pytest.CaptureFixture[str]) -> None:
    name = "vllm_0.15.1_journald_python3.12_prefix_user_unit_crashloop_clawd.log"
    document = summary(capsys, name)
    assert document["files"][0]["wrapper"] == "journald"
    messages = [e["message"] for e in document["errors"]["recent"]]
    assert "openclaw-vllm.service: Main process exited, code=exited, status=1/FAILURE" in messages
    # The model path the server logged is not on this host: the default, saying so.
    assert document["tokenizer_source"] == "default"
    assert "/opt/models/qwen2_5_14b_instruct_awq" in document["tokenizer"]


def test_a_collector_prefix_with_offset_and_zone_name(
    capsys: pytest.CaptureFixture[str],
) -> None:
    name = "vllm_0.11_nanosecond_offset_tz_collector_prefix_qwen3vl1700.log"
    document = summary(capsys, name)
    assert document["files"][0]["lines"]["by_kind"] == {"http.access": 2, "vllm.stats": 2}
    last = document["engine"]["last"]
    assert (last["running"], last["waiting"], last["kv_usage"]) == (12, 19, 0.923)


def test_v1_request_ended_by_an_idle_engine(capsys: pytest.CaptureFixture[str]) -> None:
    # Received and Added at 23:35:35, no completion line (V1), then at 23:35:44 the engine
    # reports 0 running and 0 waiting: the request ended by then, its end not logged.
    name = "vllm_0.8.5_v1_openshift_received_added_access_idle_stats_rhaiis.log"
    [request] = extract(capsys, name)
    assert request["request_id"] == "chatcmpl-d220fcd41bfd42c2995db5cd34ce4427"
    assert request["state"] == "end_unlogged"
    assert request["ended_by_ts"] - request["received_ts"] == 9.0
    assert request["latency_s"] is None
    assert request["sampling"] == {"max_tokens": 500, "temperature": 0.3, "top_p": 0.9, "n": 1}


def test_v1_request_added_after_the_idle_line_is_running(
    capsys: pytest.CaptureFixture[str],
) -> None:
    # Here the idle stats come BEFORE Received/Added: nothing says the request ended.
    [request] = extract(capsys, "vllm_0.8_v1_idle_stats_received_prompt_added_16361.log")
    assert request["state"] == "running" and request["ended_by_ts"] is None
    assert request["sampling"]["max_tokens"] == 8174
    assert request["sampling"]["temperature"] == pytest.approx(0.7)
