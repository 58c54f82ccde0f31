"""A request's detail is bounded whatever its lines hold: a 50 MB line, a million tokens or
hostile values cost the detail a bounded amount of text and objects, never the session."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from sparseety_tui.core.detail import _detail as detail_mod
from sparseety_tui.core.detail._detail import build_detail
from sparseety_tui.core.detail._reread import RAW_BUDGET_BYTES, RAW_HEAD_BYTES, RAW_TAIL_BYTES
from sparseety_tui.core.extraction._extractor import Extractor
from sparseety_tui.ingest.batch import ingest_file

REAL = Path(__file__).resolve().parents[1] / "data" / "real_logs"
VLLM_LINE = (REAL / "vllm_0.2_received_request_ray_worker_2177.log").read_text().splitlines()[1]


def _extract(path: Path) -> Extractor:
    extractor = Extractor()
    ingest_file(extractor, str(path))
    return extractor


def _huge_vllm_line(tmp_path: Path, filler: str, copies: int) -> tuple[Path, bytes]:
    """A real vLLM "Received request" line whose prompt holds ``copies`` of ``filler``."""
    line = VLLM_LINE.replace("ping", filler * copies, 1).encode()
    path = tmp_path / "server.log"
    path.write_bytes(line + b"\n")
    return path, line


def test_a_50_mb_line_shows_its_head_and_tail_and_counts_what_is_elided(
    tmp_path: Path,
) -> None:
    path, line = _huge_vllm_line(tmp_path, "ping ", 10_000_000)
    assert len(line) > 50_000_000
    extractor = _extract(path)
    assert len(extractor.store) == 1  # the line's head still names the request

    detail = build_detail(extractor, 0)
    (shown,) = detail.raw_lines
    assert not shown.whole
    head, tail = shown.head.encode(), shown.tail.encode()
    assert len(head) <= RAW_HEAD_BYTES and len(tail) <= RAW_TAIL_BYTES
    assert line.startswith(head) and line.endswith(tail)
    assert tail.endswith(b"29901, 13].")  # the true end of the line, past the 8 MiB cap
    assert len(head) + shown.elided + len(tail) == len(line)


def test_head_and_tail_never_split_a_character(tmp_path: Path) -> None:
    # Three-byte characters: most cut points fall inside one.
    path, line = _huge_vllm_line(tmp_path, "稀", 30_001)
    detail = build_detail(_extract(path), 0)
    (shown,) = detail.raw_lines
    assert "\ufffd" not in shown.head + shown.tail
    head, tail = shown.head.encode(), shown.tail.encode()
    assert len(head) + shown.elided + len(tail) == len(line)


def test_a_line_that_fits_is_shown_whole(tmp_path: Path) -> None:
    path = tmp_path / "server.log"
    path.write_text(VLLM_LINE + "\n")
    (shown,) = build_detail(_extract(path), 0).raw_lines
    assert shown.whole and shown.head == VLLM_LINE and shown.tail == ""


def test_many_lines_stop_at_the_budget_and_are_counted(tmp_path: Path) -> None:
    lines = [json.dumps({"request_id": "r1", "state": "running", "x_pad": "p" * 4000})]
    lines += [
        json.dumps({"type": "token", "request_id": "r1", "pos": i, "text": "t" * 4000})
        for i in range(200)
    ]
    path = tmp_path / "trace.jsonl"
    path.write_text("\n".join(lines) + "\n")
    detail = build_detail(_extract(path), 0)
    shown = sum(len(line.head) + len(line.tail) for line in detail.raw_lines)
    assert shown <= RAW_BUDGET_BYTES + RAW_HEAD_BYTES + RAW_TAIL_BYTES
    assert detail.raw_omitted > 0
    assert len(detail.raw_lines) + detail.raw_omitted == len(lines)


def test_tokens_stop_at_the_bound_and_heatmaps_count_them_all(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(detail_mod, "DETAIL_MAX_TOKENS", 100)
    n = 250
    record = {
        "request_id": "r1",
        "prompt_token_ids": list(range(n)),
        "completion_token_ids": [7, 8],
        "sparse": {"moe_layers": [0], "routing": [[[1, 2]] for _ in range(n + 2)]},
    }
    path = tmp_path / "trace.jsonl"
    path.write_text(json.dumps(record) + "\n")
    detail = build_detail(_extract(path), 0)
    assert [t.pos for t in detail.tokens] == list(range(100))
    assert detail.tokens_omitted == n + 2 - 100
    assert detail.expert_counts == {0: {1: n + 2, 2: n + 2}}


def test_long_text_is_tokenized_up_to_the_bound_only(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(detail_mod, "DETAIL_MAX_TOKENS", 50)
    monkeypatch.setattr(detail_mod, "DETAIL_MAX_TEXT_CHARS", 400)
    seen: list[int] = []
    path = tmp_path / "trace.jsonl"
    path.write_text(json.dumps({"request_id": "r1", "prompt": "ping " * 100_000}) + "\n")
    extractor = _extract(path)
    encode = extractor.tokens.encode

    def spy(text: str) -> list[int]:
        seen.append(len(text))
        return encode(text)

    monkeypatch.setattr(extractor.tokens, "encode", spy)
    detail = build_detail(extractor, 0)
    assert seen == [400]
    assert len(detail.tokens) == 50 and detail.tokens_omitted > 0
    assert "the prompt's first 400 of 500,000 characters" in detail.token_source


def test_hostile_head_and_layer_values_cost_nothing_but_themselves(tmp_path: Path) -> None:
    lines = [
        {
            "request_id": "r1",
            "sparse": {"head_masks": {"layers": ["¹²", 3], "skipped": [[1], [2, "x", "٣"]]}},
        },
        {"type": "token", "request_id": "r1", "pos": 0, "experts": [[1]], "text": "a"},
        {
            "type": "token",
            "request_id": "r1",
            "pos": 0,
            "heads_skipped": {"²": [1], "5": [4, "bad", 10**30], "x": "y"},
        },
    ]
    path = tmp_path / "trace.jsonl"
    path.write_text("\n".join(json.dumps(line) for line in lines) + "\n")
    detail = build_detail(_extract(path), 0)
    assert detail.head_skips == {3: {2: 1}, 5: {4: 1}}  # 10**30 is out of range


def test_a_cut_prompt_keeps_its_note_and_places_no_completion(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The completion's tokens would follow the cut prompt's prefix, not the prompt: their
    positions (and the routing matched by them) would be wrong, so they are not shown."""
    monkeypatch.setattr(detail_mod, "DETAIL_MAX_TEXT_CHARS", 400)
    path = tmp_path / "trace.jsonl"
    record = {"request_id": "r1", "prompt": "ping " * 1000, "completion": "pong pong"}
    path.write_text(json.dumps(record) + "\n")
    detail = build_detail(_extract(path), 0)
    assert "the prompt's first 400 of 5,000 characters" in detail.token_source
    assert "the completion is not shown" in detail.token_source
    assert {t.phase for t in detail.tokens} == {"prompt"}


def test_detail_heat_maps_read_ids_as_the_extractor_does(tmp_path: Path) -> None:
    """A layer written as 3.0 or " 2 " is the same layer in the request's heat map and the
    Extractor's (they read ids with one function, core.store.heat_index)."""
    path = tmp_path / "trace.jsonl"
    record = {
        "request_id": "r1",
        "sparse": {"head_masks": {"num_heads": 4, "layers": [3.0, " 2 "], "skipped": [[1], [0]]}},
    }
    path.write_text(json.dumps(record) + "\n")
    extractor = _extract(path)
    detail = build_detail(extractor, 0)
    assert detail.head_skips == extractor.head_skips.counts == {3: {1: 1}, 2: {0: 1}}
