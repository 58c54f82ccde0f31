"""Hostile input for both server families: random bytes, invalid UTF-8, huge lines, and
real lines mutated. A parser never raises and always returns a known kind."""

from __future__ import annotations

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from sparseety_tui.formats import sglang, vllm

SEEDS = [
    b"(APIServer pid=1) INFO 07-29 06:22:21 [loggers.py:310] Engine 000: Avg prompt throughput: 0.0 tokens/s, Avg generation throughput: 25.0 tokens/s, Running: 0 reqs, Waiting: 0 reqs, GPU KV cache usage: 0.0%, Prefix cache hit rate: 64.4%",
    b"INFO 05-11 12:04:17 [logger.py:39] Received request c-1: prompt: 'x', params: SamplingParams(n=1), prompt_token_ids: [1, 2], lora_request: None.",
    b"[2024-10-31 21:55:11 TP0] Prefill batch. #new-seq: 1, #new-token: 48, #cached-token: 1, cache hit rate: 1.79%, token usage: 0.00, #running-req: 0, #queue-req: 0",
    b"[2025-10-01 21:25:35] Finish: obj=GenerateReqInput(rid='r'), out={'text': 'a', 'meta_info': {'id': 'r', 'prompt_tokens': 1, 'routed_experts': 'AAAA'}}",
    b'{"id": "x", "usage": {"prompt_tokens": 1}, "choices": [{"routed_experts": "k05VTVBZAQB2AHsn"}]}',
    b'(EngineCore_DP0 pid=1)   File "/x.py", line 1, in f',
    b"Traceback (most recent call last):",
]
KNOWN_VLLM = set(vllm.KINDS)
KNOWN_SGLANG = set(sglang.KINDS)


def check(lines: list[bytes]) -> None:
    for family, known in ((vllm.FAMILY, KNOWN_VLLM), (sglang.FAMILY, KNOWN_SGLANG)):
        parser = family.new_parser()
        for line in lines:
            kind, event = parser.parse(line)
            assert kind in known
            if kind == "unparsed":
                assert parser.last_reason
                # the catch-all in parse() must never be what handled the line
                assert not parser.last_reason.startswith("parser error"), parser.last_reason
            # meta: a start-up line naming the model (formats/_startup.py); expert_count:
            # a row of an SGLang expert-distribution dump (``layer,expert,count``)
            allowed = ("request", "stats", "error", "meta", "expert_count")
            assert event is None or event[0] in allowed
        parser.finish()
        family.sniff(lines)


@settings(max_examples=300, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.binary(max_size=400), max_size=8))
def test_random_bytes(lines: list[bytes]) -> None:
    check([line.replace(b"\n", b"") for line in lines])


@settings(max_examples=300, suppress_health_check=[HealthCheck.too_slow])
@given(
    st.sampled_from(SEEDS),
    st.integers(min_value=0, max_value=300),
    st.integers(min_value=0, max_value=300),
    st.binary(max_size=20),
)
def test_mutated_real_lines(seed: bytes, cut: int, at: int, junk: bytes) -> None:
    junk = junk.replace(b"\n", b"")
    check([seed[:cut], seed[:at] + junk + seed[at:], seed[cut:], b"\xff\xfe" + seed])


@settings(max_examples=100)
@given(st.text(max_size=300))
def test_random_text(text: str) -> None:
    check([text.replace("\n", " ").encode("utf-8", "surrogatepass")])


def test_huge_and_invalid_lines() -> None:
    huge = b"x" * (1 << 20)
    lines = [
        huge,
        b"[2024-10-31 21:55:11 TP0] Prefill batch. " + b"#new-seq: 1, " * 80_000,
        b"INFO 05-11 12:04:17 [logger.py:39] Received request c-1: prompt: '" + huge + b"'",
        b"(" * 100_000,
        b"{" * 100_000,
        b"[" * 100_000 + b"]" * 100_000,
        b"Finish: obj=X(rid='a'), out={" + b"'a': [" * 5000,
        b"\xc3\x28\xa0\xa1\xe2\x28\xa1\xf0\x28\x8c\xbc",
        b"\x00\x01\x02\x1b[31m\x1b[",
    ]
    check(lines)
