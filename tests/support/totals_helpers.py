"""Totals of a file with the peak of what computing them allocated, and a writer of many
finished requests to measure them on (imported by test modules of any tier:
pyproject.toml puts tests/support on sys.path)."""

from __future__ import annotations

import json
import tracemalloc
from pathlib import Path
from typing import Any

from sparseety_tui.core.extraction._extractor import Extractor
from sparseety_tui.core.figures._costmodel import DEFAULT_SHAPE
from sparseety_tui.core.figures._totals import compute_totals
from sparseety_tui.ingest.batch import ingest_file


def totals_and_peak(path: Path) -> tuple[dict[str, Any], int, Extractor]:
    """``compute_totals`` of ``path`` read whole (as its JSON), the peak bytes it allocated (traced,
    after one warm-up call so that lazy imports and set-up do not count), and the
    Extractor."""
    extractor = Extractor()
    ingest_file(extractor, str(path))
    compute_totals(extractor, DEFAULT_SHAPE)
    tracemalloc.start()
    try:
        totals = compute_totals(extractor, DEFAULT_SHAPE)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    return totals.to_json(), peak, extractor


def append_finished(path: Path, start: int, n: int) -> None:
    """Append ``n`` finished request records numbered from ``start`` to ``path``."""
    with path.open("a") as f:
        for i in range(start, start + n):
            record = {
                "request_id": f"r{i:08d}",
                "prompt_tokens": 100 + i % 900,
                "completion_tokens": 20 + i % 200,
                "latency_s": 0.5 + (i % 1000) / 1000,
                "ttft_s": 0.05,
                "state": "finished",
            }
            f.write(json.dumps(record) + "\n")
