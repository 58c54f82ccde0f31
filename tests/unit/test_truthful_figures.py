"""Issue #11 item 8, "unknown is unknown" and "one subset per ratio": figures the log does
not give are null / "—", never 0 or a guess, and every cost-model figure says which
requests it covers."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from cli_helpers import summary_json
from rich.console import Console

from sparseety_tui.cli.summary_view import render_summary
from sparseety_tui.core.extraction._extractor import Extractor
from sparseety_tui.core.figures._costmodel import DEFAULT_SHAPE
from sparseety_tui.core.figures._document import Totals
from sparseety_tui.core.figures._figures import row_skip
from sparseety_tui.core.figures._totals import compute_totals
from sparseety_tui.ingest.batch import ingest_file
from sparseety_tui.ui.widgets.totals_strip import totals_items

REPO = Path(__file__).resolve().parents[2]
KV_LINES = REPO / "sample_logs" / "kv_lines.log"


def _text(document: dict[str, object]) -> str:
    console = Console(width=200, record=True, file=open("/dev/null", "w"))  # noqa: SIM115
    console.print(render_summary(document))
    return console.export_text()


def _totals(*paths: Path) -> Totals:
    """The typed totals of ``paths`` read whole (what the TUI's strip is given)."""
    extractor = Extractor()
    for path in paths:
        ingest_file(extractor, str(path))
    return compute_totals(extractor, DEFAULT_SHAPE)


def test_no_head_data_means_no_head_skip_figure(capsys: pytest.CaptureFixture[str]) -> None:
    # kv_lines.log has token counts and hit flags, nothing about heads or experts: the old
    # code said "0 of 11,195,392 head slots" (0.0 %) and "0 of 0 expert slots".
    doc = summary_json(capsys, str(KV_LINES))
    heads = doc["skipped"]["skipped_head_slots"]
    assert heads == {"value": None, "of": None, "ratio": None}
    assert doc["skipped"]["inactive_expert_slots"]["value"] is None


def test_head_figure_covers_only_the_requests_that_logged_heads(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    log = tmp_path / "t.jsonl"
    records = [
        {"request_id": "a", "prompt_tokens": 10, "completion_tokens": 2, "cached_tokens": 0},
        {
            "request_id": "b",
            "prompt_tokens": 10,
            "completion_tokens": 2,
            "cached_tokens": 0,
            "sparse": {"total_attention_heads": 32, "skipped_attention_heads": 8},
        },
    ]
    log.write_text("".join(json.dumps(r) + "\n" for r in records))
    heads = summary_json(capsys, str(log))["skipped"]["skipped_head_slots"]
    layers = DEFAULT_SHAPE.layers
    # Only "b": 12 computed tokens x layers x 8 of 32 heads; "a" neither adds 0 nor slots.
    assert heads["value"] == 12 * layers * 8
    assert heads["of"] == 12 * layers * 32
    assert heads["ratio"] == 0.25


def test_cost_figures_say_which_requests_they_cover(capsys: pytest.CaptureFixture[str]) -> None:
    # kv_lines: 60 requests with counts, 25 flag a prefix hit without a count, so only
    # 35 can be costed. Old output: logical 18,136 next to effective 10,933 and skip 0.0 %
    # with nothing saying the two are over different requests.
    doc = summary_json(capsys, str(KV_LINES))
    req = doc["requests"]
    assert (req["count"], req["with_effective_compute"]) == (60, 35)
    assert req["logical_tokens"] == 18136
    # The whole the effective figure is a part of is over the same 35 requests.
    assert req["logical_tokens_for_effective"] == 10933
    text = _text(doc)
    assert "10,933.0 (over 35 of 60 requests)" in text
    assert "100.0% (over 35 of 60 requests)" in text
    strip = ["".join(t for t, _ in item) for item in totals_items(_totals(KV_LINES), (), 0)]
    assert "skip 0.0% (35 of 60 req)" in strip


def _write(tmp_path: Path, records: list[dict[str, object]]) -> Extractor:
    log = tmp_path / "c.jsonl"
    log.write_text("".join(json.dumps(r) + "\n" for r in records))
    extractor = Extractor()
    ingest_file(extractor, str(log))
    return extractor


def test_skip_is_unknown_where_cache_use_is_unknown(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    records: list[dict[str, object]] = [
        {"request_id": "plain", "prompt_tokens": 100, "completion_tokens": 10},
        {"request_id": "said", "prompt_tokens": 100, "completion_tokens": 10, "cached_tokens": 0},
        {
            "request_id": "moe",
            "prompt_tokens": 100,
            "completion_tokens": 10,
            "sparse": {"topk_experts": 2, "total_experts": 8},
        },
    ]
    store = _write(tmp_path, records).store
    rows = {store.ids[i]: i for i in range(len(store))}
    # Nothing said of the cache, nothing else skipped: no figure (was 0.0).
    assert row_skip(store, DEFAULT_SHAPE, rows["plain"]) == (None, False)
    # The log says no prefix hit: 0.0 is then the figure.
    assert row_skip(store, DEFAULT_SHAPE, rows["said"]) == (0.0, False)
    # Experts skipped, cache unknown: a lower bound.
    ratio, lower = row_skip(store, DEFAULT_SHAPE, rows["moe"])
    assert ratio is not None and ratio > 0 and lower

    only_plain = tmp_path / "p.jsonl"
    only_plain.write_text(json.dumps(records[0]) + "\n")
    req = summary_json(capsys, str(only_plain))["requests"]
    assert req["skip_ratio"] is None and req["sparse_skipped_tokens"] is None
    assert req["with_cache_unknown"] == 1
    all_three = summary_json(capsys, str(tmp_path / "c.jsonl"))
    assert all_three["requests"]["with_cache_unknown"] == 2
    text = _text(all_three)
    assert "≥" in text and "cache use not logged (costed as no hit)" in text
    typed = _totals(tmp_path / "c.jsonl")
    assert typed.requests.with_cache_unknown == 2
    strip = ["".join(t for t, _ in item) for item in totals_items(typed, (), 0)]
    assert any(s.startswith("skip ≥") for s in strip)


def test_totals_while_a_big_file_loads_say_they_are_partial() -> None:
    doc = _totals(KV_LINES)
    loading = ["".join(t for t, _ in item) for item in totals_items(doc, (), 0, partial=True)]
    assert loading[0] == "requests 60 so far: older part loading"
    done = ["".join(t for t, _ in item) for item in totals_items(doc, (), 0)]
    assert done[0] == "requests 60"
