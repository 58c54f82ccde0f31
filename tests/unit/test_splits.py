"""Splits, never blends: file names, expert load per model, totals per model and file,
SGLang expert-distribution dumps, and the engine figures the panel shares with summary."""

from __future__ import annotations

from pathlib import Path

import pytest
from cli_helpers import summary_json
from splits_helpers import model_records, three_models

from sparseety_tui.core.extraction import Extractor
from sparseety_tui.core.figures import fleet, prefill_cached, worst_imbalance
from sparseety_tui.core.figures._costmodel import DEFAULT_SHAPE
from sparseety_tui.core.figures._totals import compute_totals
from sparseety_tui.core.text import short_names
from sparseety_tui.ingest.batch import ingest_file
from sparseety_tui.ui.widgets.heatmap import axis_labels, top_text

REAL = Path(__file__).resolve().parents[1] / "data" / "real_logs"
SGLANG_CACHE = REAL / "sglang_0.3_prefill_cache_hit_rate_chunked_2255.log"
SGLANG_DUMP = REAL / "sglang_docsci_20250331_moe_expert_distribution_csv_dump.log"


# -- short unique file names ----------------------------------------------------------------


def test_short_names_take_the_shortest_suffix_that_tells_files_apart() -> None:
    names = short_names(["/srv/a/server.log", "/srv/b/server.log", "/srv/a/vllm.log"])
    assert names == {
        "/srv/a/server.log": "a/server.log",
        "/srv/b/server.log": "b/server.log",
        "/srv/a/vllm.log": "vllm.log",
    }
    # deeper: the same parent name under two roots
    deep = short_names(["/x/node1/logs/s.log", "/x/node2/logs/s.log"])
    assert deep == {
        "/x/node1/logs/s.log": "node1/logs/s.log",
        "/x/node2/logs/s.log": "node2/logs/s.log",
    }
    assert short_names(["logs/one.log"]) == {"logs/one.log": "one.log"}
    # a path that is a suffix of another cannot be shortened: it keeps its whole text
    assert short_names(["server.log", "a/server.log"]) == {
        "server.log": "server.log",
        "a/server.log": "a/server.log",
    }
    names = short_names(["/a/x.log", "/b/x.log", "/c/y.log"])
    assert len(set(names.values())) == 3


# -- expert load per model ------------------------------------------------------------------


def test_expert_imbalance_is_per_model_never_over_models_added_together(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = three_models(tmp_path)
    doc = summary_json(capsys, str(path))
    experts = doc["experts"]
    assert experts["models"] == 3
    assert sorted(experts["by_model"]) == ["big-256e", "mid-128e", "small-8e"]
    # Each model alone is (nearly) even: 8 x 64 x 2 x 2 slots over 8 experts, etc.
    for name, width in (("small-8e", 8), ("mid-128e", 128), ("big-256e", 256)):
        mine = experts["by_model"][name]
        assert mine["width"] == width
        assert mine["layers"] == [3, 5]
        assert mine["imbalance_max_over_mean"] == [1.0, 1.0]
    # Added together, ids 0-7 of the small model dominate a 256-wide row: that blend
    # (131 / 6 = 21.8x, of three models each at 1.0x) is what the top level no longer
    # reports.
    blended = max(max(row) / (sum(row) / len(row)) for row in experts["counts"] if sum(row))
    assert round(blended, 2) == 21.83
    assert experts["imbalance_max_over_mean"] is None
    extractor = Extractor()
    ingest_file(extractor, str(path))
    typed = compute_totals(extractor, DEFAULT_SHAPE).experts
    assert typed is not None and typed.to_json() == experts  # what summary printed
    worst, models = worst_imbalance(typed)
    assert worst == 1.0 and models == 3
    # the counts themselves still add up: every model's slots are in the total
    assert experts["total"] == sum(m["total"] for m in experts["by_model"].values())


def test_one_model_keeps_its_imbalance_at_the_top_level(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "one.jsonl"
    path.write_bytes(b"\n".join(model_records("only", 16, 8)) + b"\n")
    experts = summary_json(capsys, str(path))["experts"]
    assert experts["models"] == 1
    assert (
        experts["imbalance_max_over_mean"] == experts["by_model"]["only"]["imbalance_max_over_mean"]
    )


def test_routing_of_a_request_without_a_model_counts_under_its_files_model(tmp_path: Path) -> None:
    meta = b'{"type": "meta", "model": "from-header", "moe_layers": [0]}'
    record = b'{"request_id": "r", "prompt_tokens": 1, "completion_tokens": 1, "sparse": {"routing": [[[1, 2]]]}}'
    named = b'{"request_id": "s", "model": "own", "sparse": {"routing": [[[3]]]}}'
    bare = tmp_path / "bare.jsonl"
    bare.write_bytes(record + b"\n")
    headed = tmp_path / "headed.jsonl"
    headed.write_bytes(meta + b"\n" + record.replace(b'"r"', b'"q"') + b"\n" + named + b"\n")
    extractor = _read(bare, headed)
    by_model = {name: heat.total() for name, heat in extractor.expert_by_model.items()}
    assert by_model == {"unknown model": 2, "from-header": 2, "own": 1}


# -- totals per model and per file ----------------------------------------------------------


def test_splits_give_each_model_and_file_its_own_figures(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    a, b = tmp_path / "a", tmp_path / "b"
    a.mkdir()
    b.mkdir()
    (a / "trace.jsonl").write_bytes(
        b'{"request_id": "1", "model": "m1", "prompt_tokens": 10, "latency_s": 1.0}\n'
        b'{"request_id": "2", "model": "m1", "prompt_tokens": 20, "latency_s": 3.0}\n'
    )
    (b / "trace.jsonl").write_bytes(
        b'{"request_id": "3", "model": "m2", "completion_tokens": 5, "state": "failed"}\n'
        b'{"request_id": "4", "prompt_tokens": 7}\n'
    )
    doc = summary_json(capsys, str(a / "trace.jsonl"), str(b / "trace.jsonl"))
    models = {g["name"]: g for g in doc["splits"]["model"]}
    assert models["m1"] == {
        "name": "m1",
        "requests": 2,
        "failed": 0,
        "prompt_tokens": 30,
        "completion_tokens": None,  # none of m1's requests reports one: unknown, not 0
        "latency_p50_s": 1.0,
    }
    assert models["m2"]["prompt_tokens"] is None and models["m2"]["completion_tokens"] == 5
    assert models["unknown model"]["requests"] == 1
    files = {g["name"]: g["requests"] for g in doc["splits"]["file"]}
    assert files == {str(a / "trace.jsonl"): 2, str(b / "trace.jsonl"): 2}
    assert sum(files.values()) == doc["requests"]["count"]


# -- SGLang expert-distribution dumps -------------------------------------------------------


def test_sglang_expert_distribution_dump_feeds_expert_counts(
    capsys: pytest.CaptureFixture[str],
) -> None:
    doc = summary_json(capsys, str(SGLANG_DUMP))
    dump = doc["expert_distribution"]
    assert dump is not None and doc["experts"] is None  # counts, not per-token routing
    assert list(dump["by_model"]) == ["Qwen/Qwen1.5-MoE-A2.7B"]  # the server's model
    # The rows as the log prints them: "0,5,7", "0,38,4", "0,3,3" ...
    rows: dict[tuple[int, int], int] = {}
    for line in SGLANG_DUMP.read_bytes().splitlines():
        parts = line.strip().split(b",")
        if len(parts) == 3 and all(p.isdigit() for p in parts):
            layer, expert, count = map(int, parts)
            rows[(layer, expert)] = rows.get((layer, expert), 0) + count
    assert dump["total"] == sum(rows.values())
    layer0 = dump["counts"][dump["layers"].index(0)]
    assert layer0[5] == 7 and layer0[38] == 4 and layer0[3] == 3
    kinds = doc["files"][0]["lines"]["by_kind"]
    assert kinds["sglang.expert_dist"] == len(rows) + 1  # every row and the header
    assert sum(kinds.values()) == doc["files"][0]["lines"]["total"]


# -- the engine figures the panel shows -----------------------------------------------------


def test_prefill_cached_share_is_summarys(capsys: pytest.CaptureFixture[str]) -> None:
    # The log prints "cache hit rate: 0.00%" on batches with 2,048 of 4,096 tokens cached.
    doc = summary_json(capsys, str(SGLANG_CACHE))
    extractor = _read(SGLANG_CACHE)
    ratio = prefill_cached(fleet(extractor.engine).engines)[2]
    assert ratio is not None and round(ratio, 6) == doc["engine"]["prefill_tokens"]["cached_ratio"]
    assert round(ratio * 100, 1) == 49.4
    assert doc["engine"]["mean"]["prefix_cache_hit_rate"] == 0.0  # the line's own figure


# -- heatmap axis and top list --------------------------------------------------------------


def test_axis_names_every_few_cells_without_overlap() -> None:
    assert axis_labels(8, 1, 4) == "0   1   2   3   4   5   6   7"
    axis = axis_labels(60, 2, 1)
    labels = axis.split()
    assert labels[0] == "0" and all(int(x) % 2 == 0 for x in labels)
    assert len(axis) <= 60
    # every label sits where its cell starts (cell = id // 2 experts per cell)
    for label in labels:
        at = int(label) // 2
        assert axis[at : at + len(label)] == label
    assert axis_labels(1, 1, 1) == "0"


def test_top_text_gives_ids_and_shares_busiest_first() -> None:
    assert top_text([0, 7, 0, 3, 10], 2) == "4 50.0%  1 35.0%"
    assert top_text([0, 0], 3) == "—"
    assert top_text([5, 5], 3) == "0 50.0%  1 50.0%"  # a tie: the lower id first


def _read(*paths: Path) -> Extractor:
    extractor = Extractor()
    for path in paths:
        ingest_file(extractor, str(path))
    return extractor


def test_a_frozen_copy_keeps_its_per_model_counts(tmp_path: Path) -> None:
    first, second = tmp_path / "a.jsonl", tmp_path / "b.jsonl"
    first.write_bytes(b"\n".join(model_records("one", 4, 2)) + b"\n")
    second.write_bytes(b"\n".join(model_records("two", 4, 2)) + b"\n")
    extractor = _read(first)
    frozen = extractor.freeze()
    assert frozen.expert_load is frozen.expert_by_model["one"]  # one model: one copy
    before = frozen.expert_by_model["one"].total()
    ingest_file(extractor, str(second))
    again = extractor.freeze()
    assert frozen.expert_by_model["one"].total() == before  # the reader's copy stands
    assert list(frozen.expert_by_model) == ["one"]
    assert again.expert_by_model["one"] is frozen.expert_by_model["one"]  # unchanged: shared
    assert again.expert_load.total() == 2 * before  # both models, added when read
