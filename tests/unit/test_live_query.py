"""The filter language and the view the live table shows (``parse_filter``,
``compute_view``), without a worker (the worker itself is in
tests/integration/test_live.py)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from live_helpers import record, write

from sparseety_tui.core.extraction import Extractor
from sparseety_tui.core.figures import DEFAULT_SHAPE
from sparseety_tui.core.query._query import (
    Clause,
    FilterError,
    ViewQuery,
    compute_view,
    parse_filter,
)


def test_parse_filter() -> None:
    assert parse_filter("skip>0.5 latency > 2 state=finished") == (
        Clause("skip", ">", 0.5),
        Clause("latency", ">", 2.0),
        Clause("state", "=", "finished"),
    )
    assert parse_filter("ttft<300ms skip>=50%") == (
        Clause("ttft", "<", 0.3),
        Clause("skip", ">=", 0.5),
    )
    assert parse_filter("Llama !moe") == (
        Clause("", "~", "llama"),
        Clause("", "~", "moe", negate=True),
    )
    assert parse_filter("model~qwen id!=abc") == (
        Clause("model", "~", "qwen"),
        Clause("id", "!=", "abc"),
    )
    for bad in ("nope>1", "latency>fast", "state=sleeping", "state>1", "skip~1"):
        with pytest.raises(FilterError):
            parse_filter(bad)


def test_compute_view_filters_and_sorts(tmp_path: Path) -> None:
    log = tmp_path / "a.jsonl"
    write(log, [record(i) for i in range(50)] + [record(99, state="failed")])
    extractor = Extractor()
    extractor.feed(extractor.add_file(str(log)), _lines(log))
    rows = len(extractor.store)
    view = compute_view(
        extractor.store,
        DEFAULT_SHAPE,
        ViewQuery(clauses=parse_filter("latency>2"), sort="latency", reverse=True),
        rows,
    )
    latencies = [extractor.store.columns["latency_s"][r] for r in view]
    assert latencies == sorted(latencies, reverse=True) and min(latencies) > 2
    failed = compute_view(
        extractor.store, DEFAULT_SHAPE, ViewQuery(clauses=parse_filter("state=failed")), rows
    )
    assert [extractor.store.ids[r] for r in failed] == ["r0099"]
    text = compute_view(
        extractor.store, DEFAULT_SHAPE, ViewQuery(clauses=parse_filter("r004")), rows
    )
    assert len(text) == 10
    by_id = compute_view(extractor.store, DEFAULT_SHAPE, ViewQuery(sort="id", reverse=True), rows)
    assert extractor.store.ids[int(by_id[0])] == "r0099"
    assert isinstance(by_id, np.ndarray)


def _lines(path: Path) -> list[object]:
    from sparseety_tui.sources import iter_lines

    return list(iter_lines(path))
