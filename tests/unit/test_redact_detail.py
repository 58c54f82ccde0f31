"""A request's detail redacted (what the TUI's detail screen and serve's /requests/ID
show): token texts over the joined text, routing and ids dropped, raw lines cleaned."""

from __future__ import annotations

from pathlib import Path

from sparseety_tui.core.detail._detail import build_detail
from sparseety_tui.core.redact._detail import raw_text, redact_detail
from sparseety_tui.core.redact._policy import RedactSettings, make_redactor
from sparseety_tui.ingest.batch import Options, ingest_file, make_extractor

KEY = b"0123456789abcdef0123456789abcdef"
ROOT = Path(__file__).resolve().parents[2]


def test_raw_json_line_loses_routing_and_ids_and_secrets() -> None:
    r = make_redactor(RedactSettings(mode="on"), KEY)
    line = (
        '{"request_id": "a", "prompt": "mail ann@example.com", "prompt_token_ids": [5, 6],'
        ' "sparse": {"routing": [[[1, 2]]], "topk_experts": 2}}'
    )
    shown = raw_text(line, r)
    assert "ann@" not in shown and "routing" not in shown and "token_ids" not in shown
    assert '"topk_experts":2' in shown
    kept = raw_text(line, make_redactor(RedactSettings(mode="on", keep_routing=True), KEY))
    assert '"routing":[[[1,2]]]' in kept and "ann@" not in kept


def test_raw_text_line_loses_id_lists() -> None:
    r = make_redactor(RedactSettings(mode="on"), KEY)
    line = (
        "INFO 11-30 12:00:00 [logger.py:39] Received request cmpl-1: prompt: 'hi from "
        "10.0.0.7', params: SamplingParams(n=1), prompt_token_ids: [1, 2, 3], lora_request: None"
    )
    shown = raw_text(line, r)
    assert "prompt_token_ids: [dropped]" in shown and "10.0.0.7" not in shown
    assert "SamplingParams(n=1)" in shown and r.counts["routing"] == 1


def test_raw_sglang_line_loses_input_ids() -> None:
    r = make_redactor(RedactSettings(mode="on"), KEY)
    line = "[2025-03-03 17:53:04] Receive: obj=GenerateReqInput(input_ids=[151646, 198], rid='a')"
    shown = raw_text(line, r)
    assert "input_ids=[dropped]" in shown and "151646" not in shown


def test_a_detail_redacted_keeps_its_figures() -> None:
    extractor = make_extractor(Options())
    ingest_file(extractor, str(ROOT / "sample_logs" / "moe_trace.jsonl"))
    state = extractor.freeze()
    row = state.find("moe-01")
    assert row is not None
    detail = build_detail(state, row)
    r = make_redactor(RedactSettings(mode="on"), KEY)
    shown = redact_detail(detail, r)
    assert [t.pos for t in shown.tokens] == [t.pos for t in detail.tokens]
    assert [t.skips for t in shown.tokens] == [t.skips for t in detail.tokens]
    assert any(t.experts for t in detail.tokens) and any(t.token_id for t in detail.tokens)
    assert not any(t.experts or t.weights or t.token_id is not None for t in shown.tokens)
    assert shown.expert_counts == detail.expert_counts  # the aggregates stay
    prompt = "".join(t.text for t in detail.tokens if t.phase == "prompt")
    assert "".join(t.text for t in shown.tokens if t.phase == "prompt") == r.text(prompt)
    assert "routing" not in repr(shown.fields) and "prompt_token_ids" not in shown.fields
    dropped = redact_detail(detail, make_redactor(RedactSettings(mode="text"), KEY))
    assert all(t.text == "" for t in dropped.tokens) and dropped.raw_lines == []
