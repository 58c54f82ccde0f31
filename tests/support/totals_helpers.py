"""Totals of a file with the peak of what computing them allocated (imported by test
modules of any tier: pyproject.toml puts tests/support on sys.path)."""

from __future__ import annotations

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
