"""``summary`` (text and --json) and ``extract`` on a trace with timestamps in ms, us and ns
and with numbers no float holds: the same numbers everywhere, nothing raised, nothing lost
(issue #9, items 3 and 10)."""

from __future__ import annotations

from pathlib import Path

import orjson
import pytest
from number_trace import LINES

from sparseety_tui.cli.main import run


@pytest.fixture
def trace(tmp_path: Path) -> Path:
    path = tmp_path / "units.jsonl"
    path.write_bytes(LINES)
    return path


def test_summary_json_reads_every_unit_and_keeps_every_line(
    trace: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert run(["summary", "--json", str(trace)]) == 0
    doc = orjson.loads(capsys.readouterr().out)
    file = doc["files"][0]
    assert file["lines"] == {"total": 8, "by_kind": {"trace.request": 8}}
    assert file["ignored_values"] == {
        "latency_s: number not representable": 1,
        "prompt_tokens: number not representable": 1,
        "ttft_s: number not representable": 1,
        "ts: timestamp out of range": 1,
    }
    assert doc["requests"]["count"] == 8
    assert doc["requests"]["completion_tokens"] == sum(range(1, 9))
    # the digits line has no prompt count: 7 known prompts of 10 tokens
    assert (doc["requests"]["prompt_tokens"], doc["requests"]["with_prompt_tokens"]) == (70, 7)
    minute = 1732968000 // 60 * 60
    assert doc["throughput_per_minute"] == [
        {"minute": minute, "requests": 5, "prompt_tokens": 50, "completion_tokens": 15}
    ]


def test_summary_text_shows_the_minute_as_a_date(
    trace: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    # It crashed: "year 56885 is out of range".
    monkeypatch.setenv("COLUMNS", "400")  # one table row per line
    assert run(["summary", str(trace)]) == 0
    out = capsys.readouterr().out
    assert "2024-11-30 12:00" in out
    assert "values left unknown: latency_s: number not representable 1" in out


def test_extract_gives_each_request_its_time_in_seconds(
    trace: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "out.jsonl"
    assert run(["extract", str(trace), "-o", str(out)]) == 0
    records = {r["request_id"]: r for r in map(orjson.loads, out.read_bytes().splitlines())}
    assert list(records) == ["s", "ms", "us", "ns", "inf", "digits", "nan", "future"]
    for rid in ("s", "ms", "us", "ns"):
        assert records[rid]["finished_ts"] == 1732968000.123, rid
    assert records["inf"]["finished_ts"] == 1732968000.0
    assert records["inf"]["latency_s"] is None and records["inf"]["received_ts"] is None
    assert records["digits"]["prompt_tokens"] is None
    assert records["digits"]["completion_tokens"] == 6
    assert records["nan"]["ttft_s"] is None
    assert records["future"]["finished_ts"] is None
