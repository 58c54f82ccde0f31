"""Issue #11 item 8: the token trace agrees with the header. Completion ids go after the
prompt, logged token ids win over re-tokenised text, and what the log cut is labelled."""

from __future__ import annotations

import json
from pathlib import Path

from sparseety_tui.core.detail._detail import RequestDetail, build_detail
from sparseety_tui.core.extraction._extractor import Extractor
from sparseety_tui.ingest.batch import ingest_file
from sparseety_tui.ui.widgets.counts import count_text


def _detail(path: Path, request_id: str) -> tuple[Extractor, int, RequestDetail]:
    extractor = Extractor()
    ingest_file(extractor, str(path))
    row = extractor.store.ids.index(request_id) if request_id in extractor.store.ids else None
    assert row is not None
    return extractor, row, build_detail(extractor, row)


def test_completion_ids_without_prompt_ids_go_after_the_prompt(tmp_path: Path) -> None:
    completion = [1000 + i for i in range(111)]
    record = {
        "request_id": "r",
        "prompt_tokens": 111,
        "completion_token_ids": completion,
        # One routing row per fed position: prompt + completion - 1.
        "sparse": {
            "moe_layers": [0],
            "total_experts": 8,
            "topk_experts": 2,
            "routing": [[[i % 8, (i + 1) % 8]] for i in range(221)],
        },
    }
    log = tmp_path / "t.jsonl"
    log.write_text(json.dumps(record) + "\n")
    _, _, detail = _detail(log, "r")
    phases = [t.phase for t in detail.tokens]
    # Before: the ids took positions 0..110 and routing 111..220 made 110 more
    # "completion" tokens (221 shown, header 111), the prompt's routing on them.
    assert phases.count("completion") == 111
    assert phases.count("prompt") == 111  # routed prompt positions, text not logged
    first = next(t for t in detail.tokens if t.phase == "completion")
    assert (first.pos, first.token_id) == (111, 1000)
    assert first.experts == [[111 % 8, 112 % 8]]  # its own routing row, not row 0


def test_completion_ids_are_not_placed_when_the_prompt_length_is_unknown(
    tmp_path: Path,
) -> None:
    log = tmp_path / "t.jsonl"
    log.write_text(json.dumps({"request_id": "r", "completion_token_ids": [5, 6, 7]}) + "\n")
    _, _, detail = _detail(log, "r")
    assert detail.tokens == []
    assert "the prompt's length is unknown" in detail.token_source


VLLM_REQUEST = (
    "INFO 11-30 12:00:00 [logger.py:43] Received request cmpl-1: prompt: 'call that kv "
    "by made', params: SamplingParams(n=1, temperature=0.0, max_tokens=256), "
    "prompt_token_ids: [{ids}], prompt_embeds shape: None, lora_request: None.\n"
)
STARTUP = (
    "INFO 11-30 11:59:58 [cli_args.py:309] non-default args: {{'model': "
    "'Qwen/Qwen3-30B-A3B', 'max_log_len': {cut}}}\n"
)


def test_logged_ids_win_over_retokenised_text(tmp_path: Path) -> None:
    ids = [45800, 44227, 18963, 50556, 140122, 30873, 121461, 83143, 43705, 13922]
    log = tmp_path / "v.log"
    log.write_text(STARTUP.format(cut=100) + VLLM_REQUEST.format(ids=", ".join(map(str, ids))))
    extractor, row, detail = _detail(log, "cmpl-1")
    assert extractor.store.columns["prompt_tokens"][row] == 10
    # Before: the parser re-read the line without the ids, and the trace was the
    # tokenizer's reading of the 5-word text, disagreeing with the header's 10.
    assert [t.token_id for t in detail.tokens] == ids
    assert detail.token_source.startswith("token ids")
    assert detail.cut == ()


def test_ids_the_log_cut_are_labelled_a_prefix_and_a_lower_bound(tmp_path: Path) -> None:
    ids = list(range(100, 164))  # 64 ids: exactly the --max-log-len the server logged
    log = tmp_path / "v.log"
    log.write_text(STARTUP.format(cut=64) + VLLM_REQUEST.format(ids=", ".join(map(str, ids))))
    extractor, row, detail = _detail(log, "cmpl-1")
    assert detail.cut == ("prompt",)
    assert len(detail.tokens) == 64
    assert "cut it (--max-log-len): a prefix" in detail.token_source
    columns = extractor.store.columns
    assert count_text(columns["prompt_tokens"][row], columns["prompt_source"][row]) == "≥64"
