"""Shared line cleaning (ANSI, carriage returns, wrappers, noise) and the safe literal parser."""

from __future__ import annotations

import math

import pytest

from sparseety_tui.formats import _clean as clean
from sparseety_tui.formats import _prometheus as prometheus
from sparseety_tui.formats._pylit import UNKNOWN, LiteralError, parse_literal, parse_value_at


def test_ansi_removed() -> None:
    line = b"\x1b[1;36m(APIServer pid=1)\x1b[0;0m \x1b[32mINFO\x1b[0m \x1b[90m07-29 06:22:21\x1b[0m"
    assert clean.basic_clean(line) == b"(APIServer pid=1) INFO 07-29 06:22:21"


def test_carriage_returns_keep_what_a_terminal_shows() -> None:
    assert clean.basic_clean(b"\r  0%|   | 0/3\r 33%|#  | 1/3") == b" 33%|#  | 1/3"
    assert clean.basic_clean(b"text\r") == b"text"  # a trailing \r (from \r\n joins)
    assert clean.basic_clean(b"\r\r") == b""


@pytest.mark.parametrize(
    ("line", "rest", "ts"),
    [
        (b"2026-05-12T08:01:39.331095044Z X", b"X", b"2026-05-12T08:01:39.331095044Z"),
        (b"[2026-08-21T19:42:37Z] X", b"X", b"[2026-08-21T19:42:37Z]"),
        (b"qwen3-vl-32b  | X", b"X", None),
        (b"vllm-1 | X", b"X", None),
        (b"[2024-07-08 15:17:34] INFO X", b"INFO X", b"[2024-07-08 15:17:34]"),
        (b"2025-05-14 17:45:10.901 1647689 kserve", b"1647689 kserve", b"2025-05-14 17:45:10.901"),
        (b"vllm-7d9f8c6b5-x2k9p vllm (APIServer pid=1) X", b"(APIServer pid=1) X", None),
        (b"> > INFO X", b"INFO X", None),
        (b"svc-1  | 2025-04-04T10:00:00Z > X", b"X", b"2025-04-04T10:00:00Z"),
    ],
)
def test_wrappers(line: bytes, rest: bytes, ts: bytes | None) -> None:
    assert clean.strip_wrappers(line) == (rest, ts)


def test_wrapper_stops_at_family_prefix() -> None:
    import re

    stop = re.compile(rb"\[\d{4}-\d\d-\d\d \d\d:\d\d:\d\d TP0\]")
    line = b"2025-04-04T10:00:00Z [2025-04-04 10:00:00 TP0] msg"
    assert clean.strip_wrappers(line, stop)[0] == b"[2025-04-04 10:00:00 TP0] msg"


def test_wrapper_time() -> None:
    year, instant = clean.wrapper_time(b"2026-05-12T08:01:39.5Z")
    assert year == 2026 and instant == pytest.approx(1778572899.5)
    assert clean.wrapper_time(b"2026-05-12T10:01:39+02:00")[1] == pytest.approx(1778572899.0)
    assert clean.wrapper_time(b"[2024-07-08 15:17:34]") == (2024, None)


@pytest.mark.parametrize(
    "line",
    [
        b"2025-05-31 22:58:28,427 - INFO - flashinfer.jit: Prebuilt kernels not found",
        b"[2026-01-20 21:24:54,336] LMCache INFO: Stored 80 out of total 135 tokens.",
        b"/usr/lib/python3.10/site-packages/x.py:51: UserWarning: careful",
        b"[Gloo] Rank 0 is connected to 0 peer ranks.",
        b"[rank0]:[W205 16:55:27.3 ProcessGroupNCCL.cpp:1565] Warning: x",
        b"host:1234:1234 [0] NCCL INFO Bootstrap : Using eth0",
        b"Loading safetensors checkpoint shards:  50% Completed | 1/2 [00:01<00:01,  1.52s/it]",
    ],
)
def test_known_noise(line: bytes) -> None:
    assert clean.is_known_noise(line)


def test_not_noise() -> None:
    assert not clean.is_known_noise(b"reward: -24.375")


def test_local_clock_matches_mktime() -> None:
    import time

    c = clean.LocalClock()
    assert c.to_unix(2025, 3, 1, 10, 5, 7.5) == time.mktime((2025, 3, 1, 10, 5, 7, 0, 0, -1)) + 0.5


def test_prometheus_lines() -> None:
    assert prometheus.is_exposition_line(b"# HELP vllm:num_requests_running Number of ...")
    line = b'sglang:time_to_first_token_seconds_bucket{le="+Inf",model_name="m"} 11008.0'
    assert prometheus.parse_sample(line) == (
        "sglang:time_to_first_token_seconds_bucket",
        {"le": "+Inf", "model_name": "m"},
        11008.0,
    )
    assert prometheus.parse_sample(b"sglang:token_usage 2.8e-01") == (
        "sglang:token_usage",
        {},
        0.28,
    )
    assert not prometheus.is_exposition_line(b"reward: -24.375")
    assert not prometheus.is_exposition_line(b"Token Count: 9")


# ---- pylit ----------------------------------------------------------------------------


def test_python_and_json_spellings() -> None:
    assert parse_literal("{'a': None, 'b': True, \"c\": null, 'd': false}") == {
        "a": None,
        "b": True,
        "c": None,
        "d": False,
    }
    assert parse_literal("[1, -2, 3.5, 1e3, (4, 5), (6,), ()]") == [
        1,
        -2,
        3.5,
        1000.0,
        (4, 5),
        (6,),
        (),
    ]
    value = parse_literal("[nan, inf, -inf]")
    assert math.isnan(value[0]) and value[1] == math.inf and value[2] == -math.inf


def test_strings_with_escapes() -> None:
    assert parse_literal(r"'it\'s a \"test\"\n\x41\u00e9'") == 'it\'s a "test"\nAé'
    assert parse_literal('"What\u2019s"') == "What\u2019s"
    assert parse_literal("b'raw'") == "raw"


def test_calls_and_abbreviations() -> None:
    text = (
        "GenerateReqInput(text=None, input_ids=[1, 2], sampling_params={'max_new_tokens': 8}, "
        "rid='x', f=<text: 2048 chars, blake2b=ab>)"
    )
    value = parse_literal(text)
    assert value["__class__"] == "GenerateReqInput"
    assert value["input_ids"] == [1, 2]
    assert value["rid"] == "x"
    assert value["f"] is UNKNOWN
    usage = parse_literal(
        "CompletionUsage(completion_tokens=73, prompt_tokens=24, total_tokens=97, "
        "completion_tokens_details=None, "
        "prompt_tokens_details=PromptTokensDetails(audio_tokens=None, cached_tokens=16))"
    )
    assert usage["prompt_tokens_details"]["cached_tokens"] == 16


def test_parse_value_at_reads_one_value() -> None:
    text = "Finish: obj=X(rid='r'), out={'text': 'a}b', 'meta_info': {'id': 'r'}} trailing"
    pos = text.index("{")
    value, end = parse_value_at(text, pos)
    assert value == {"text": "a}b", "meta_info": {"id": "r"}}
    assert text[end:] == " trailing"


@pytest.mark.parametrize("bad", ["{'a': ", "[1, 2", "'open", "(", "{1: 2,, 3}", "1j", "@"])
def test_bad_literals_raise_literal_error(bad: str) -> None:
    with pytest.raises(LiteralError):
        parse_literal(bad)


def test_depth_bounded() -> None:
    with pytest.raises(LiteralError):
        parse_literal("[" * 500 + "]" * 500)
