"""Totals compute a chunk's per-row figures a slice of rows at a time (``SLICE_ROWS``), to
keep the cost formula's temporaries small; every sum must stay the very float it was when
the chunk was computed at once (``summary`` output is byte-identical)."""

from __future__ import annotations

import json
import tracemalloc
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from totals_helpers import totals_and_peak

from sparseety_tui.core.extraction._extractor import Extractor
from sparseety_tui.core.figures import _sums
from sparseety_tui.core.figures._costmodel import DEFAULT_SHAPE, ModelShape, shape_from_config
from sparseety_tui.core.figures._document import Totals
from sparseety_tui.core.figures._figures import column_skip_rows, column_skip_sums, skip_sums
from sparseety_tui.core.figures._sums import CHUNK_ROWS
from sparseety_tui.core.figures._totals import compute_totals
from sparseety_tui.ingest.batch import ingest_file

SAMPLES = Path(__file__).resolve().parents[2] / "sample_logs"
#: Request rows, then rows with per-token data (extras), then KV lines: slices of a few
#: rows fall before, across and after the rows with extras.
MIXED = ("count_only_500.jsonl", "moe_trace.jsonl", "token_stream.jsonl", "kv_lines.log")


def _mixed_extractor() -> Extractor:
    extractor = Extractor()
    for name in MIXED:
        ingest_file(extractor, str(SAMPLES / name))
    assert extractor.store.extras  # the slices must have extras to place
    return extractor


def _shapes() -> list[ModelShape]:
    return [DEFAULT_SHAPE, shape_from_config(str(SAMPLES / "models" / "tiny-qwen3-moe"))]


def _totals(monkeypatch: pytest.MonkeyPatch, slice_rows: int, **kw: Any) -> Totals:
    monkeypatch.setattr(_sums, "SLICE_ROWS", slice_rows)
    return compute_totals(**kw)


@pytest.mark.parametrize("shape", _shapes(), ids=["default", "config"])
@pytest.mark.parametrize("slice_rows", [1, 7, 64])
def test_totals_in_slices_are_the_totals_of_whole_chunks(
    monkeypatch: pytest.MonkeyPatch, shape: ModelShape, slice_rows: int
) -> None:
    extractor = _mixed_extractor()
    rows = np.arange(1, len(extractor.store), 3)  # a filter's rows: extras among them
    for subset in (None, rows):
        whole = _totals(monkeypatch, CHUNK_ROWS, extractor=extractor, shape=shape, rows=subset)
        sliced = _totals(monkeypatch, slice_rows, extractor=extractor, shape=shape, rows=subset)
        # The JSON text, so that a float that differs in its last bit is a difference.
        assert json.dumps(sliced.to_json()) == json.dumps(whole.to_json())
        assert whole.requests.count == len(extractor.store if subset is None else rows)
        assert whole.skipped.dropped_expert_slots.value is not None  # extras seen


def test_skip_sums_of_slices_put_end_to_end_are_the_sums_of_all_rows() -> None:
    extractor = _mixed_extractor()
    store = extractor.store
    n = len(store)
    cols = store.numeric_view(0, n)
    rows, routed = column_skip_rows(store, DEFAULT_SHAPE, cols)
    pieces = [
        column_skip_rows(store, DEFAULT_SHAPE, store.numeric_view(a, a + 5), a)
        for a in range(0, n, 5)
    ]
    joined = {name: np.concatenate([p[0][name] for p in pieces]) for name in rows}
    assert sum(p[1] for p in pieces) == routed > 0
    for name, values in rows.items():
        np.testing.assert_array_equal(joined[name], values)
    assert skip_sums(joined, routed, cols["prompt_tokens"]) == column_skip_sums(
        store, DEFAULT_SHAPE, cols
    )


def test_a_chunk_of_totals_allocates_a_slice_of_formula_temporaries(tmp_path: Path) -> None:
    # One whole chunk of plain request rows. Computed at once, the cost formula's
    # temporaries were ~370 B a row at the peak; in slices what stays is the chunk's
    # columns and the per-row figures the sums read (~140 B a row).
    log = tmp_path / "chunk.jsonl"
    with log.open("w") as f:
        for i in range(CHUNK_ROWS):
            record = {
                "request_id": f"r{i:06d}",
                "prompt_tokens": 100 + i % 900,
                "completion_tokens": 20 + i % 200,
                "cached_tokens": i % 64,
                "latency_s": 0.5 + (i % 1000) / 1000,
                "ttft_s": 0.05,
                "sparse": {"topk_experts": 8, "total_experts": 256, "kv_kept": 90, "kv_total": 120},
            }
            f.write(json.dumps(record) + "\n")
    result, peak, _extractor = totals_and_peak(log)
    assert result["requests"]["count"] == CHUNK_ROWS
    assert not tracemalloc.is_tracing()
    assert peak / CHUNK_ROWS < 200
