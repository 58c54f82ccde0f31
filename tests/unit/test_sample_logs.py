"""The real CLI over every file of sample_logs/: counts, accounting and totals hold.

Each test runs `sparseety-tui extract` / `summary --json` in-process (``cli.run``) and checks
the output against numbers recomputed here from the input files themselves (token counts
with the tokenizer, expert counts from the routing arrays), so a regression in parsing,
merging, counting or the totals shows up as a wrong number, not only as a crash.
"""

from __future__ import annotations

import json
import random
from collections import Counter
from datetime import datetime, timezone
from itertools import pairwise
from pathlib import Path
from typing import Any

import pytest
from sample_helpers import ROOT, SAMPLES, extract, summary, tokenizer

MODEL_CONFIG = SAMPLES / "models" / "tiny-qwen3-moe" / "config.json"
LOG_FILES = sorted(p for p in SAMPLES.iterdir() if p.suffix in (".jsonl", ".log"))
SKIP_FIELDS = (
    "cached_tokens",
    "evicted_kv_positions",
    "masked_kv_positions",
    "dropped_expert_slots",
    "inactive_expert_slots",
    "skipped_head_slots",
)


def count_tokens(text: str) -> int:
    return len(tokenizer().encode(text, add_special_tokens=False).ids)


def read_jsonl(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]


def unix(value: Any) -> float:
    if isinstance(value, (int, float)):
        return float(value)
    parsed = datetime.fromisoformat(value.replace("Z", "+00:00"))
    if parsed.tzinfo is None:
        parsed = parsed.replace(tzinfo=timezone.utc)
    return parsed.timestamp()


# -- every file ----------------------------------------------------------------------


@pytest.mark.parametrize("path", LOG_FILES, ids=lambda p: p.name)
def test_every_line_is_accounted_for(capsys: pytest.CaptureFixture[str], path: Path) -> None:
    doc = summary(capsys, str(path))
    (file_report,) = doc["files"]
    lines = file_report["lines"]
    physical = path.read_bytes().count(b"\n")
    assert lines["total"] == physical
    assert sum(lines["by_kind"].values()) == lines["total"]
    assert file_report["format"] == ("kv" if path.suffix == ".log" else "trace")


@pytest.mark.parametrize("path", LOG_FILES, ids=lambda p: p.name)
def test_summary_totals_equal_the_sum_of_extract_rows(
    capsys: pytest.CaptureFixture[str], path: Path
) -> None:
    rows = extract(capsys, str(path))
    doc = summary(capsys, str(path))
    totals = doc["requests"]
    assert totals["count"] == len(rows)

    def known_sum(values: list[Any]) -> Any:
        known = [v for v in values if v is not None]
        return sum(known) if known else None

    for field in ("prompt_tokens", "completion_tokens", "cached_tokens", "logical_tokens"):
        assert totals[field] == known_sum([r[field] for r in rows]), field
    effective = known_sum([r["effective_compute_tokens"] for r in rows])
    assert totals["effective_compute_tokens"] == pytest.approx(effective, abs=0.01 * len(rows))
    skipped = known_sum([r["sparse_skipped_tokens"] for r in rows])
    assert totals["sparse_skipped_tokens"] == pytest.approx(skipped, abs=0.01 * len(rows))
    for field in SKIP_FIELDS:
        expected = known_sum([r["skipped"][field] for r in rows])
        assert doc["skipped"][field]["value"] == expected, field
    # Same tokenizer and cost model named everywhere.
    assert {r["tokenizer"] for r in rows} == {doc["tokenizer"]}
    assert {r["cost_model"] for r in rows} == {doc["cost_model"]}


# -- two_records.jsonl ---------------------------------------------------------------


def test_two_records_counts_come_from_the_named_tokenizer(
    capsys: pytest.CaptureFixture[str],
) -> None:
    path = SAMPLES / "two_records.jsonl"
    inputs = read_jsonl(path)
    rows = extract(capsys, str(path))
    assert [r["request_id"] for r in rows] == ["req-001", "req-0007"]
    text, counts = rows

    assert text["prompt_tokens"] == count_tokens(inputs[0]["prompt"]) == 7
    assert text["completion_tokens"] == count_tokens(inputs[0]["completion"]) == 7
    assert text["token_counts_from"] == {"prompt": "tokenizer", "completion": "tokenizer"}
    assert text["tokenizer"].startswith("deepseek-v4")
    assert text["model"] == "fake-moe-model"

    assert (counts["prompt_tokens"], counts["completion_tokens"]) == (131, 42)
    assert counts["token_counts_from"] == {"prompt": "reported", "completion": "reported"}

    for row in rows:
        assert row["state"] == "finished"
        assert row["experts"]["total"] == 8
        assert row["logical_tokens"] == row["prompt_tokens"] + row["completion_tokens"]
        assert row["effective_compute_tokens"] is not None
        assert row["sparse_skipped_tokens"] is not None
        assert 0 < row["effective_compute_tokens"] < row["logical_tokens"]
        assert row["effective_compute_tokens"] + row["sparse_skipped_tokens"] == pytest.approx(
            row["logical_tokens"], abs=0.011
        )
        assert row["cached_tokens"] is None  # not reported: unknown, not 0
        assert row["latency_s"] is None


# -- count_only_500.jsonl ------------------------------------------------------------


def test_count_only_500_rows_match_their_input_lines(capsys: pytest.CaptureFixture[str]) -> None:
    path = SAMPLES / "count_only_500.jsonl"
    inputs = read_jsonl(path)
    rows = extract(capsys, str(path))
    assert len(inputs) == len(rows) == 500
    assert [r["request_id"] for r in rows] == [f"req-{i:04d}" for i in range(1, 501)]
    for src, row in zip(inputs, rows, strict=True):
        assert row["request_id"] == src["request_id"]
        assert row["prompt_tokens"] == src["prompt_tokens"]
        assert row["completion_tokens"] == src["completion_tokens"]
        assert row["cached_tokens"] == src.get("cached_tokens")
        assert row["model"] == src.get("model")
        for field in ("latency_s", "ttft_s"):
            if field in src:
                assert row[field] == pytest.approx(src[field], rel=1e-6), field
            else:
                assert row[field] is None, field
        if "ts" in src:
            assert row["finished_ts"] == pytest.approx(unix(src["ts"]), abs=1e-3)
        else:
            assert row["finished_ts"] is None
        assert row["experts"] == {
            "topk": src["sparse"]["topk_experts"],
            "total": src["sparse"]["total_experts"],
        }
        sparse = src["sparse"]
        if "kv_total" in sparse:
            gap = sparse["kv_total"] - sparse["kv_kept"]
            kind = "masked" if sparse["kv_skip"] == "masked" else "evicted"
            other = "evicted" if kind == "masked" else "masked"
            assert row["skipped"][f"{kind}_kv_positions"] == gap
            assert row["skipped"][f"{other}_kv_positions"] == 0
        else:
            assert row["skipped"]["evicted_kv_positions"] is None


def test_count_only_500_has_the_variety_it_promises() -> None:
    inputs = read_jsonl(SAMPLES / "count_only_500.jsonl")
    ts_kinds = Counter(
        "none"
        if "ts" not in r
        else "unix"
        if isinstance(r["ts"], (int, float))
        else "iso-z"
        if r["ts"].endswith("Z")
        else "iso-naive"
        for r in inputs
    )
    assert set(ts_kinds) == {"none", "unix", "iso-z", "iso-naive"}
    assert sum(1 for r in inputs if r.get("cached_tokens", 0) > 0) >= 50
    assert sum(1 for r in inputs if r.get("cached_tokens") == 0) >= 10
    skips = Counter(r["sparse"].get("kv_skip") for r in inputs)
    assert skips["evicted"] >= 20 and skips["masked"] >= 20
    times = [unix(r["ts"]) for r in inputs if "ts" in r]
    assert min(times) >= unix("2026-11-30T12:00:00Z")


# -- kv_lines.log --------------------------------------------------------------------


def test_kv_lines_are_requests_with_units_converted(capsys: pytest.CaptureFixture[str]) -> None:
    path = SAMPLES / "kv_lines.log"
    lines = path.read_text(encoding="utf-8").splitlines()
    request_lines = [line for line in lines if "req_id=" in line]
    rows = extract(capsys, str(path))
    assert len(rows) == len(request_lines) == 60
    for line, row in zip(request_lines, rows, strict=True):
        fields = dict(part.split("=", 1) for part in line.split(" | ")[1:])
        assert row["request_id"] == fields["req_id"]
        assert row["prompt_tokens"] == int(fields["prompt_tokens"])
        assert row["completion_tokens"] == int(fields["completion_tokens"])
        latency = fields["latency"]
        seconds = float(latency[:-2]) / 1000 if latency.endswith("ms") else float(latency[:-1])
        assert row["latency_s"] == pytest.approx(seconds, rel=1e-6)
        assert row["cached_tokens"] is None  # hit_cache is a flag, never a token count
        assert row["model"] == fields["model"]
        assert row["state"] == "finished"
        if line[:4].isdigit():
            assert row["finished_ts"] == pytest.approx(unix(line[:19]), abs=1e-3)
    doc = summary(capsys, str(path))
    hits = sum(1 for line in request_lines if "hit_cache=True" in line)
    assert doc["requests"]["cache_hit_requests"] == {"hit": hits, "reported": 60}


# -- moe_trace.jsonl -----------------------------------------------------------------


def recount_routing(
    records: list[dict[str, Any]], default_layers: list[int]
) -> Counter[tuple[int, int]]:
    counts: Counter[tuple[int, int]] = Counter()
    for rec in records:
        sparse = rec.get("sparse", {})
        layers = sparse.get("moe_layers") or default_layers
        for token in sparse.get("routing", []):
            for j, experts in enumerate(token):
                for expert in experts:
                    if expert >= 0:
                        counts[(layers[j], expert)] += 1
    return counts


def heat_to_counter(heat: dict[str, Any]) -> Counter[tuple[int, int]]:
    out: Counter[tuple[int, int]] = Counter()
    for layer, row in zip(heat["layers"], heat["counts"], strict=True):
        for expert, n in enumerate(row):
            if n:
                out[(layer, expert)] = n
    return out


def test_moe_trace_expert_counts_equal_a_recount_of_the_routing(
    capsys: pytest.CaptureFixture[str],
) -> None:
    path = SAMPLES / "moe_trace.jsonl"
    lines = read_jsonl(path)
    meta, records = lines[0], lines[1:]
    assert meta["type"] == "meta"
    assert meta["moe_layers"] == [1, 2, 3]
    doc = summary(capsys, str(path))
    assert doc["files"][0]["lines"]["by_kind"] == {"trace.meta": 1, "trace.request": 16}

    expected = recount_routing(records, meta["moe_layers"])
    assert heat_to_counter(doc["experts"]) == expected
    assert doc["experts"]["layers"] == [1, 2, 3]  # the dense layer 0 never appears
    assert doc["experts"]["total"] == sum(expected.values())

    dropped = Counter(
        (layer, expert) for r in records for _pos, layer, expert in r["sparse"].get("dropped", [])
    )
    assert dropped and heat_to_counter(doc["dropped_experts"]) == dropped


def test_moe_trace_records_are_real_captures(capsys: pytest.CaptureFixture[str]) -> None:
    """Shape invariants of routing captured with hooks, and counts taken from the ids."""
    path = SAMPLES / "moe_trace.jsonl"
    records = read_jsonl(path)[1:]
    rows = {r["request_id"]: r for r in extract(capsys, str(path))}
    scripts = Counter()
    for rec in records:
        sparse = rec["sparse"]
        prompt, completion = rec["prompt_token_ids"], rec["completion_token_ids"]
        # the last sampled token is never fed back: P + C - 1 routed positions
        assert sparse["routing_start"] + len(sparse["routing"]) == len(prompt) + len(completion) - 1
        assert sparse["routing_start"] == rec.get("cached_tokens", 0)
        for token, weights in zip(sparse["routing"], sparse["routing_weights"], strict=True):
            assert len(token) == len(sparse["moe_layers"]) == 3
            for experts, w in zip(token, weights, strict=True):
                assert len(set(experts)) == 2 and all(0 <= e < 8 for e in experts)
                assert sum(w) == pytest.approx(1.0, abs=2e-4)  # norm_topk_prob
        # the prompt ids are the tokenizer's own encoding of the prompt text
        assert prompt == tokenizer().encode(rec["prompt"], add_special_tokens=False).ids
        row = rows[rec["request_id"]]
        assert row["prompt_tokens"] == len(prompt) == count_tokens(rec["prompt"])
        assert row["completion_tokens"] == len(completion)
        assert row["token_counts_from"] == {"prompt": "token_ids", "completion": "token_ids"}
        assert row["cached_tokens"] == rec.get("cached_tokens")
        assert row["state"] == "finished"
        assert row["latency_s"] == pytest.approx(rec["latency_s"], rel=1e-6)
        if any("\u4e00" <= ch <= "\u9fff" for ch in rec["prompt"]):
            scripts["zh"] += 1
        if any(ord(ch) > 0x1F000 for ch in rec["prompt"]):
            scripts["emoji"] += 1
        if "def " in rec["prompt"] or "fn main" in rec["prompt"]:
            scripts["code"] += 1
    assert 12 <= len(records) <= 20
    assert scripts["zh"] >= 2 and scripts["emoji"] >= 2 and scripts["code"] >= 2
    kinds = {r["request_id"]: r["skipped"] for r in rows.values()}
    assert any(s["evicted_kv_positions"] for s in kinds.values())
    assert any(s["masked_kv_positions"] for s in kinds.values())
    assert any(s["cached_tokens"] for s in kinds.values())
    assert sum(s["dropped_expert_slots"] or 0 for s in kinds.values()) == 4


def test_moe_trace_with_the_models_config(capsys: pytest.CaptureFixture[str]) -> None:
    """--model-config switches the cost model to the tiny model's real shape."""
    path = SAMPLES / "moe_trace.jsonl"
    rows = extract(capsys, str(path), "--model-config", str(MODEL_CONFIG))
    for row in rows:
        assert row["cost_model"].startswith("config.json: ")
        computed = row["prompt_tokens"] - (row["cached_tokens"] or 0) + row["completion_tokens"]
        # 3 MoE layers (layer 0 is dense), 8 experts, 2 routed per token and layer
        assert row["skipped"]["inactive_expert_slots"] == computed * 3 * (8 - 2)


# -- token_stream.jsonl --------------------------------------------------------------


def test_token_stream_merges_events_into_four_requests(
    capsys: pytest.CaptureFixture[str],
) -> None:
    path = SAMPLES / "token_stream.jsonl"
    lines = read_jsonl(path)
    meta = lines[0]
    tokens = [x for x in lines if x.get("type") == "token"]
    records = [x for x in lines if "type" not in x]
    doc = summary(capsys, str(path))
    assert doc["files"][0]["lines"]["by_kind"] == {
        "trace.meta": 1,
        "trace.request": len(records),
        "trace.token": len(tokens),
    }
    ids = sorted({t["request_id"] for t in tokens})
    assert len(ids) == 4
    # interleaved: the events of one request are not one contiguous block
    order = [t["request_id"] for t in tokens]
    assert sum(1 for a, b in pairwise(order) if a != b) > 4

    rows = {r["request_id"]: r for r in extract(capsys, str(path))}
    assert sorted(rows) == ids
    finals = {r["request_id"]: r for r in records if r.get("state") == "finished"}
    for rid, row in rows.items():
        assert row["state"] == "finished"
        assert row["source"]["lines"] == 2 + sum(1 for t in tokens if t["request_id"] == rid)
        events = [t for t in tokens if t["request_id"] == rid]
        assert row["prompt_tokens"] == sum(1 for t in events if t["phase"] == "prompt")
        assert row["completion_tokens"] == sum(1 for t in events if t["phase"] == "completion")
        assert row["cached_tokens"] == finals[rid].get("cached_tokens")

    for record in records:
        if "prompt" in record:  # the display texts of the prompt events spell the prompt
            texts = [
                t["text"]
                for t in tokens
                if t["request_id"] == record["request_id"] and t["phase"] == "prompt"
            ]
            assert "".join(texts) == record["prompt"]

    expected: Counter[tuple[int, int]] = Counter()
    for t in tokens:
        for j, experts in enumerate(t.get("experts", [])):
            for expert in experts:
                expected[(meta["moe_layers"][j], expert)] += 1
    assert heat_to_counter(doc["experts"]) == expected
    dropped = Counter(tuple(d) for t in tokens for d in t.get("dropped", []))
    assert heat_to_counter(doc["dropped_experts"]) == dropped
    heads: Counter[tuple[int, int]] = Counter()
    for t in tokens:
        for layer, skipped in t.get("heads_skipped", {}).items():
            for head in skipped:
                heads[(int(layer), head)] += 1
    assert heat_to_counter(doc["head_skips"]) == heads


def test_detail_view_decodes_moe_trace_prompts_back_to_their_text() -> None:
    from sparseety_tui.core.detail._detail import build_detail
    from sparseety_tui.ingest.batch import Options, ingest_paths

    path = SAMPLES / "moe_trace.jsonl"
    records = {r["request_id"]: r for r in read_jsonl(path)[1:]}
    extractor = ingest_paths(Options(), [str(path)])
    for row in range(len(extractor.store)):
        detail = build_detail(extractor, row)
        prompt = "".join(t.text for t in detail.tokens if t.phase == "prompt")
        assert prompt == records[detail.request_id]["prompt"], detail.request_id


# -- a long Chinese prompt -----------------------------------------------------------


def long_chinese_text(n: int = 3000) -> str:
    passage = (
        "稀疏模型在推理时只激活一部分专家，因此每个词元实际消耗的计算量远小于稠密模型。"
        "前缀缓存命中的词元不需要重新计算，但后续词元仍然会关注它们。"
    )
    rng = random.Random(3000)
    common = "".join(chr(c) for c in range(0x4E00, 0x4E00 + 2000))
    text = (passage * (n // len(passage) + 1))[: n // 2]
    text += "".join(rng.choice(common) for _ in range(n - len(text)))
    assert len(text) == n
    return text


def test_a_3000_character_chinese_prompt_is_counted_and_returned_whole(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    text = long_chinese_text()
    path = tmp_path / "long.jsonl"
    record = {"request_id": "zh-3000", "prompt": text, "completion_tokens": 5}
    path.write_text(json.dumps(record, ensure_ascii=False) + "\n", encoding="utf-8")

    # The only line is > 4 KiB: format detection must not need a whole line.
    doc = summary(capsys, str(path))
    assert doc["files"][0]["format"] == "trace"
    assert doc["files"][0]["lines"]["by_kind"] == {"trace.request": 1}

    (row,) = extract(capsys, str(path))
    assert row["prompt_tokens"] == count_tokens(text)
    assert row["prompt_tokens"] > 1000  # really counted, not by characters / 4
    assert row["token_counts_from"]["prompt"] == "tokenizer"

    (with_text,) = extract(capsys, str(path), "--text")
    assert with_text["prompt"] == text
    assert with_text["completion"] is None
    assert with_text["prompt_tokens"] == row["prompt_tokens"]


# -- the generator -------------------------------------------------------------------


def test_sample_logs_stay_small() -> None:
    total = sum(p.stat().st_size for p in SAMPLES.rglob("*") if p.is_file())
    assert total <= 1_000_000


# -- docs/cost-model.md's worked example ----------------------------------------------


def test_cost_model_worked_example_is_what_the_code_prints(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    import re

    text = (ROOT / "docs" / "cost-model.md").read_text(encoding="utf-8")
    (line,) = re.findall(r"```json\n(.*?)\n```", text, flags=re.S)
    path = tmp_path / "ex.jsonl"
    path.write_text(line + "\n", encoding="utf-8")
    (row,) = extract(capsys, str(path))
    assert row["effective_compute_tokens"] == 163.26
    assert row["sparse_skipped_tokens"] == 1036.74
    assert row["skip_ratio"] == 0.863947
    assert row["compute_vs_nominal"] == 0.49565
    assert row["skipped"] == {
        "cached_tokens": 600,
        "evicted_kv_positions": 0,
        "masked_kv_positions": 687,
        "dropped_expert_slots": None,
        "inactive_expert_slots": 115200,
        "skipped_head_slots": 76800,
    }
    for quoted in ("163.26", "1,036.74", "0.863947", "0.49565", "115,200", "76,800"):
        assert quoted in text
