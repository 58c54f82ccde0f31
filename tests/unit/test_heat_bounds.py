"""One line with an absurd layer, expert or head number must not make every heatmap and
summary allocate a row that wide (or fail to sort): it is counted as out of range."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from sparseety_tui.core.extraction._extractor import Extractor
from sparseety_tui.core.figures._costmodel import DEFAULT_SHAPE
from sparseety_tui.core.figures._totals import compute_totals
from sparseety_tui.ingest.batch import ingest_file


def _totals(tmp_path: Path, records: list[dict[str, object]]) -> dict[str, Any]:
    path = tmp_path / "trace.jsonl"
    path.write_text("\n".join(json.dumps(r) for r in records) + "\n")
    extractor = Extractor()
    ingest_file(extractor, str(path))
    return compute_totals(extractor, DEFAULT_SHAPE).to_json()


def test_an_expert_id_of_a_billion_is_out_of_range_not_a_billion_columns(
    tmp_path: Path,
) -> None:
    records: list[dict[str, object]] = [
        {"request_id": "ok", "sparse": {"moe_layers": [0], "routing": [[[1, 3]]]}},
        {"request_id": "bad", "sparse": {"moe_layers": [0], "routing": [[[10**9, 2]]]}},
        {"request_id": "neg-layer", "sparse": {"moe_layers": [-5], "routing": [[[1]]]}},
    ]
    experts = _totals(tmp_path, records)["experts"]
    assert isinstance(experts, dict)
    assert experts["width"] == 4 and experts["layers"] == [0]
    assert experts["counts"] == [[0, 1, 1, 1]]
    assert experts["out_of_range"] == 2  # the billion, and the negative layer


def test_layer_names_that_are_not_numbers_do_not_break_the_totals(tmp_path: Path) -> None:
    records: list[dict[str, object]] = [
        {"request_id": "a", "sparse": {"moe_layers": ["x", 2], "routing": [[[1], [2]]]}},
        {"request_id": "b", "sparse": {"moe_layers": [[1], 2], "routing": [[[1], [2]]]}},
    ]
    experts = _totals(tmp_path, records)["experts"]
    assert isinstance(experts, dict)
    assert experts["layers"] == [2] and experts["counts"] == [[0, 0, 2]]
    assert experts["out_of_range"] == 2
