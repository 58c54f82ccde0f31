"""Memory under sustained load: the totals' transient peak does not grow with the store
(the live worker handing freed pages back is in tests/integration/test_memory_bounds_live.py;
bench/tail_memory.py measures the bytes per request)."""

from __future__ import annotations

from pathlib import Path

from totals_helpers import append_finished, totals_and_peak


def test_the_totals_transient_memory_does_not_grow_with_the_rows(tmp_path: Path) -> None:
    small, big = tmp_path / "small.jsonl", tmp_path / "big.jsonl"
    append_finished(small, 0, 70_000)
    append_finished(big, 0, 280_000)
    per_added_row = (totals_and_peak(big)[1] - totals_and_peak(small)[1]) / 210_000
    # What must grow: the latency and TTFT values kept for exact quantiles (2 x 8 B a row)
    # and small per-chunk results. Whole-store temporaries cost ~300 B a row.
    assert per_added_row < 64
