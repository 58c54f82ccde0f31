"""A trace with timestamps in ms, us and ns and numbers no float holds, split between
forked range workers: the ignored values counted are those of one process (the numbers
themselves are checked in tests/unit/test_cli_numbers.py)."""

from __future__ import annotations

from pathlib import Path

import orjson
import pytest

import sparseety_tui.ingest.parallel as parallel
from sparseety_tui.cli.main import run

LINES = (
    # 2024-11-30T12:00:00.123Z, in seconds, milliseconds, microseconds and nanoseconds
    b'{"request_id": "s", "ts": 1732968000.123, "prompt_tokens": 10, "completion_tokens": 1}\n'
    b'{"request_id": "ms", "ts": 1732968000123, "prompt_tokens": 10, "completion_tokens": 2}\n'
    b'{"request_id": "us", "ts": 1732968000123000, "prompt_tokens": 10, "completion_tokens": 3}\n'
    b'{"request_id": "ns", "ts": 1732968000123000000, "prompt_tokens": 10, "completion_tokens": 4}\n'
    # numbers no float holds, and a time that is no date: that field only is unknown
    b'{"request_id": "inf", "ts": 1732968000, "prompt_tokens": 10, "completion_tokens": 5,'
    b' "latency_s": 1e400}\n'
    b'{"request_id": "digits", "prompt_tokens": 1' + b"0" * 5000 + b', "completion_tokens": 6}\n'
    b'{"request_id": "nan", "prompt_tokens": 10, "completion_tokens": 7, "ttft_s": NaN}\n'
    b'{"request_id": "future", "ts": 1e300, "prompt_tokens": 10, "completion_tokens": 8}\n'
)


@pytest.fixture
def trace(tmp_path: Path) -> Path:
    path = tmp_path / "units.jsonl"
    path.write_bytes(LINES)
    return path


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
