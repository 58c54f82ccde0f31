"""A trace with timestamps in ms, us and ns and numbers no float holds, split between
forked range workers: the ignored values counted are those of one process (the numbers
themselves are checked in tests/unit/test_cli_numbers.py)."""

from __future__ import annotations

from pathlib import Path

import orjson
import pytest
from number_trace import LINES

import sparseety_tui.ingest.parallel as parallel
from sparseety_tui.cli.main import run


def test_a_split_read_counts_the_same_ignored_values(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "big.jsonl"
    path.write_bytes(LINES * 200)  # the same ids again: merged across the ranges
    assert run(["summary", "--json", "--jobs", "1", str(path)]) == 0
    single = orjson.loads(capsys.readouterr().out)
    monkeypatch.setattr(parallel, "PARALLEL_MIN_BYTES", 1)
    monkeypatch.setattr(parallel, "_scanner_takes_most", lambda path: False)
    assert run(["summary", "--json", "--jobs", "3", str(path)]) == 0
    split = orjson.loads(capsys.readouterr().out)
    assert split == single
    assert single["files"][0]["ignored_values"]["ts: timestamp out of range"] == 200
