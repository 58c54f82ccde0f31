"""The typed totals document: ``to_json`` is what ``summary --json`` prints, and reading
that JSON back (``from_json``, after redaction) gives the same typed document."""

from __future__ import annotations

from pathlib import Path

import orjson
import pytest

from sparseety_tui.core.extraction._extractor import Extractor
from sparseety_tui.core.figures import HeatMap, Quantiles, Totals
from sparseety_tui.core.figures._costmodel import DEFAULT_SHAPE
from sparseety_tui.core.query import Selection, parse_window
from sparseety_tui.core.report import SummaryDocument, summary_document
from sparseety_tui.ingest.batch import ingest_file

REPO = Path(__file__).resolve().parents[2]
SAMPLES = sorted((REPO / "sample_logs").glob("*.jsonl")) + sorted(
    (REPO / "sample_logs").glob("*.log")
)
REAL = REPO / "tests" / "data" / "real_logs"
#: Logs with engine stats, errors and several engines: every optional part is filled.
MORE = [
    REAL / "sglang_docsci_20250331_moe_expert_distribution_csv_dump.log",
    REAL / "vllm_0.9.1_ascend_dp2_engine000_001_idle_enginecore_traceback_ascend1170.log",
]


def _read(*paths: Path) -> Extractor:
    extractor = Extractor()
    for path in paths:
        ingest_file(extractor, str(path))
    return extractor


@pytest.mark.parametrize("path", SAMPLES + MORE, ids=lambda p: p.name)
def test_the_json_reads_back_as_the_same_document(path: Path) -> None:
    document = summary_document(_read(path), DEFAULT_SHAPE)
    text = orjson.dumps(document.to_json())
    again = SummaryDocument.from_json(orjson.loads(text))
    assert again == document
    assert orjson.dumps(again.to_json()) == text


def test_a_window_and_a_filter_read_back_too() -> None:
    extractor = _read(REPO / "sample_logs" / "count_only_500.jsonl")
    selection = Selection("state=finished", parse_window("1m"))
    document = summary_document(extractor, DEFAULT_SHAPE, selection)
    assert document.window is not None and document.filter is not None
    data = orjson.loads(orjson.dumps(document.to_json()))
    # After the totals, as always; the timing keys come last, after everything older.
    assert list(data)[-7:-5] == ["window", "filter"]
    assert list(data)[-2:] == ["timing", "slow"]
    assert SummaryDocument.from_json(data) == document


def test_parts_are_frozen_and_hold_no_list() -> None:
    totals = summary_document(_read(*MORE), DEFAULT_SHAPE).totals
    assert isinstance(totals, Totals) and totals.engine is not None
    with pytest.raises(AttributeError):
        totals.requests.count = 0  # type: ignore[misc]
    heat = totals.expert_distribution
    assert isinstance(heat, HeatMap) and isinstance(heat.counts, tuple)
    assert all(isinstance(row, tuple) for row in heat.counts)
    assert isinstance(totals.latency_s, Quantiles)
    assert isinstance(totals.errors.records, tuple) and totals.errors.listed is not None


def test_reading_leaves_keys_it_has_no_field_for() -> None:
    """A redacted document carries ``redaction``; a totals part's optional keys may be
    missing: the defaults then hold."""
    document = summary_document(_read(REPO / "sample_logs" / "moe_trace.jsonl"), DEFAULT_SHAPE)
    data = document.to_json()
    data["redaction"] = {"rules": {}}
    assert data["experts"] is not None and "out_of_range" not in data["experts"]
    again = SummaryDocument.from_json(data)
    assert again.totals.experts is not None and again.totals.experts.out_of_range == 0
    assert again == document
