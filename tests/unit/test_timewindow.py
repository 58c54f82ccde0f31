"""Time windows (issue #11 item 2): ``--since``/``--until`` parsing, resolution against
the newest time in the logs, and ``summary``/``extract`` over a window, checked against
counts read from the logs here, not copied from the tool."""

from __future__ import annotations

import re
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import numpy as np
import orjson
import pytest
from cli_helpers import extract_records, summary_json

from sparseety_tui.cli.main import main
from sparseety_tui.core.extraction._extractor import Extractor
from sparseety_tui.core.figures._costmodel import DEFAULT_SHAPE
from sparseety_tui.core.figures._totals import compute_totals
from sparseety_tui.core.query._query import ViewQuery, compute_view
from sparseety_tui.core.query._timewindow import (
    TimeWindow,
    WindowedEngineSeries,
    WindowError,
    parse_bound,
    parse_window,
    window_from_args,
)
from sparseety_tui.events import StatsPayload
from sparseety_tui.ingest.batch import ingest_file

REPO = Path(__file__).resolve().parents[2]
COUNTS = REPO / "sample_logs" / "count_only_500.jsonl"
VLLM_STATS = REPO / "tests" / "data" / "real_logs" / "vllm_0.6_metrics_449_12314.log"
UTC = timezone.utc


# -- parsing -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "back"),
    [("90s", 90), ("10m", 600), ("2h", 7200), ("1d", 86400), ("1h30m", 5400), ("now", 0)],
)
def test_relative_times_count_back_from_the_anchor(text: str, back: float) -> None:
    bound = parse_bound(text)
    assert bound.relative and bound.back == back
    assert bound.resolve(1_800_000_000.0) == 1_800_000_000.0 - back
    assert bound.resolve(None) is None  # no time in the data: nothing to count from


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("2026-11-30T10:00", datetime(2026, 11, 30, 10, 0, tzinfo=UTC)),
        ("2026-11-30 10:00:00", datetime(2026, 11, 30, 10, 0, tzinfo=UTC)),
        ("2026-11-30T10:00Z", datetime(2026, 11, 30, 10, 0, tzinfo=UTC)),
        ("2026-11-30T12:00+02:00", datetime(2026, 11, 30, 10, 0, tzinfo=UTC)),
        ("2026-11-30", datetime(2026, 11, 30, tzinfo=UTC)),
        ("1796032800", datetime(2026, 11, 30, 10, 0, tzinfo=UTC)),
        ("1796032800000", datetime(2026, 11, 30, 10, 0, tzinfo=UTC)),  # ms, told by size
    ],
)
def test_absolute_times_naive_is_utc(text: str, expected: datetime) -> None:
    bound = parse_bound(text)
    assert not bound.relative
    assert bound.resolve(None) == expected.timestamp()


def test_a_time_of_day_is_on_the_anchors_utc_day() -> None:
    anchor = datetime(2026, 11, 30, 12, 4, 18, tzinfo=UTC).timestamp()
    assert (
        parse_bound("10:30").resolve(anchor)
        == datetime(2026, 11, 30, 10, 30, tzinfo=UTC).timestamp()
    )


@pytest.mark.parametrize(
    "text", ["", "yesterday", "10x", "1h1h", "25:00", "2026-13-01", "-5m", "10m ago", "1e400"]
)
def test_bad_times_say_why(text: str) -> None:
    with pytest.raises(WindowError):
        parse_bound(text)


def test_window_prompt_forms() -> None:
    assert parse_window("") is None and parse_window("  ") is None and parse_window("..") is None
    spec = parse_window("10m")
    assert spec is not None and spec.since is not None and spec.until is None
    spec = parse_window("10:00..10:30")
    assert spec is not None and spec.since and spec.until and spec.since.clock == 36000
    spec = parse_window("..2026-11-30T10:00")
    assert spec is not None and spec.since is None and spec.until is not None
    with pytest.raises(WindowError):
        parse_window("10:30..10:00")  # since not before until
    with pytest.raises(WindowError):
        window_from_args("5m", "10m")  # 5 minutes ago is after 10 minutes ago


def test_window_is_half_open_and_unknown_is_outside() -> None:
    window = TimeWindow(100.0, 200.0)
    times = np.array([99.9, 100.0, 150.0, 199.99, 200.0, np.nan])
    assert window.mask(times).tolist() == [False, True, True, True, False, False]
    assert window.contains(100.0) and not window.contains(200.0) and not window.contains(None)


def test_bad_since_is_exit_2(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exc:
        main(["summary", "--since", "soon", str(COUNTS)])
    assert exc.value.code == 2
    assert "'soon' is not a time" in capsys.readouterr().err


# -- summary and extract over a window, against the log read here ---------------------------


def _log_times() -> list[tuple[str, float | None, dict[str, Any]]]:
    """(id, time, record) of every request of COUNTS, its time read here. Its ``ts`` is
    ISO with Z, naive ISO (UTC), unix seconds, or absent; a finished record's ``ts`` is
    its finish (docs/trace-format.md), so it was received ``latency_s`` before that, and a
    request is placed at its received time, else its finish time."""
    out = []
    for line in COUNTS.read_bytes().splitlines():
        record = orjson.loads(line)
        ts = record.get("ts")
        when: float | None
        if ts is None:
            when = None
        elif isinstance(ts, (int, float)):
            when = float(ts)
        else:
            parsed = datetime.fromisoformat(ts.replace("Z", "+00:00"))
            when = (parsed if parsed.tzinfo else parsed.replace(tzinfo=UTC)).timestamp()
        record["_logged_ts"] = when
        if when is not None and record.get("latency_s") is not None:
            when -= record["latency_s"]
        out.append((record["request_id"], when, record))
    return out


def test_summary_since_until_counts_the_requests_in_the_window(
    capsys: pytest.CaptureFixture[str],
) -> None:
    requests = _log_times()
    # The anchor: the newest time the log holds (finish times are newer than receipts).
    newest = max(r["_logged_ts"] for _, _, r in requests if r["_logged_ts"] is not None)
    since, until = newest - 150.0, datetime(2026, 11, 30, 12, 3, 30, tzinfo=UTC).timestamp()
    inside = [r for _, t, r in requests if t is not None and since <= t < until]
    timed = sum(1 for _, t, _ in requests if t is not None)
    assert 0 < len(inside) < timed

    doc = summary_json(capsys, "--since", "150s", "--until", "2026-11-30 12:03:30", str(COUNTS))
    window = doc["window"]
    assert window["requests_in"] == doc["requests"]["count"] == len(inside)
    assert window["requests_without_time"] == len(requests) - timed
    assert window["requests_outside"] == timed - len(inside)
    assert window["anchor"]["epoch"] == round(newest, 3)
    assert window["since"]["epoch"] == round(since, 3)
    assert window["until"]["utc"] == "2026-11-30T12:03:30Z"
    assert doc["requests"]["prompt_tokens"] == sum(r["prompt_tokens"] for r in inside)
    assert doc["requests"]["completion_tokens"] == sum(r["completion_tokens"] for r in inside)
    # Every line is still read and counted.
    assert doc["files"][0]["lines"]["total"] == len(requests)


def test_extract_since_until_writes_the_requests_in_the_window(
    capsys: pytest.CaptureFixture[str],
) -> None:
    requests = _log_times()
    since = datetime(2026, 11, 30, 12, 1, tzinfo=UTC).timestamp()
    until = datetime(2026, 11, 30, 12, 2, tzinfo=UTC).timestamp()
    expected = [rid for rid, t, _ in requests if t is not None and since <= t < until]
    records = extract_records(
        capsys, "--since", "2026-11-30T12:01Z", "--until", "1796040120", str(COUNTS)
    )
    assert [r["request_id"] for r in records] == expected
    limited = extract_records(
        capsys, "--since", "2026-11-30T12:01Z", "--until", "12:02", "--limit", "3", str(COUNTS)
    )
    assert [r["request_id"] for r in limited] == expected[:3]


def _stats_stamps() -> list[tuple[datetime, float]]:
    """(stamp, generation throughput) of each vLLM metrics line of VLLM_STATS."""
    pattern = re.compile(r"INFO (\d\d-\d\d \d\d:\d\d:\d\d) .*generation throughput: ([\d.]+)")
    out = []
    for line in VLLM_STATS.read_text().splitlines():
        m = pattern.search(line)
        if m:
            out.append((datetime.strptime(m.group(1), "%m-%d %H:%M:%S"), float(m.group(2))))
    return out


def test_summary_window_keeps_only_the_engine_stats_in_it(
    capsys: pytest.CaptureFixture[str],
) -> None:
    stats = _stats_stamps()
    newest = max(stamp for stamp, _ in stats)  # the log has no requests: stats are newest
    inside = [gen for stamp, gen in stats if stamp >= newest - timedelta(seconds=12)]
    assert 0 < len(inside) < len(stats)
    doc = summary_json(capsys, "--since", "12s", str(VLLM_STATS))
    assert doc["engine"]["stats_lines"] == len(inside)
    assert doc["engine"]["mean"]["generation_throughput"] == round(sum(inside) / len(inside), 4)
    assert doc["window"]["engine_complete"] is True
    whole = summary_json(capsys, str(VLLM_STATS))
    assert whole["engine"]["stats_lines"] == len(stats)
    assert "window" not in whole


def test_windowed_engine_series_drops_only_what_no_anchor_can_reach() -> None:
    spec = window_from_args("10s", None)
    assert spec is not None
    series = WindowedEngineSeries(spec)
    for ts in (100.0, 105.0, 95.0, 112.0, 130.0, 125.0):
        series.add(StatsPayload(ts=ts, running=1))
    # 130 is the newest so far: lines older than 120 can never be in the window.
    assert sorted(p["ts"] for p in series.kept) == [125.0, 130.0]
    window = spec.resolve(130.0)
    assert series.windowed(window).count == 2
    assert series.count == 6  # the whole-file series is unchanged


# -- totals over a row subset ----------------------------------------------------------------


def _counts_extractor() -> Extractor:
    extractor = Extractor()
    ingest_file(extractor, str(COUNTS))
    return extractor


def test_totals_over_every_row_as_a_subset_equal_the_whole() -> None:
    extractor = _counts_extractor()
    whole = compute_totals(extractor, DEFAULT_SHAPE)
    rows = np.arange(len(extractor.store))[::-1]
    assert compute_totals(extractor, DEFAULT_SHAPE, rows=rows) == whole


def test_totals_over_a_filter_equal_the_totals_of_its_rows_alone(tmp_path: Path) -> None:
    """The rows a filter keeps, totalled in place, give what a log of only those rows
    gives (extras, skips and quantiles found by the row's own place)."""
    extractor = _counts_extractor()
    view = compute_view(
        extractor.store,
        DEFAULT_SHAPE,
        ViewQuery(clauses=_clauses("prompt>300")),
        len(extractor.store),
    )
    picked = set(extractor.store.ids[int(r)] for r in view)
    alone = tmp_path / "alone.jsonl"
    alone.write_bytes(
        b"".join(
            line + b"\n"
            for line in COUNTS.read_bytes().splitlines()
            if orjson.loads(line)["request_id"] in picked
        )
    )
    other = Extractor()
    ingest_file(other, str(alone))
    subset = compute_totals(extractor, DEFAULT_SHAPE, rows=view)
    whole = compute_totals(other, DEFAULT_SHAPE)
    # The split by file names each group by its path: the two logs' paths differ.
    docs = [subset.to_json(), whole.to_json()]
    for doc in docs:
        for group in doc["splits"]["file"]:
            group.pop("name")
    assert docs[0] == docs[1]
    assert 0 < subset.requests.count < len(extractor.store)
    empty = compute_totals(extractor, DEFAULT_SHAPE, rows=np.zeros(0, dtype=np.int64))
    assert empty.requests.count == 0 and empty.requests.prompt_tokens is None


def _clauses(text: str) -> Any:
    from sparseety_tui.core.query._query import parse_filter

    return parse_filter(text)


def test_a_windowed_summary_keeps_to_the_schema(capsys: pytest.CaptureFixture[str]) -> None:
    import json

    from jsonschema import Draft202012Validator

    schema = json.loads((REPO / "docs" / "summary.schema.json").read_text())
    logs = sorted((REPO / "tests" / "data" / "real_logs").glob("*.log"))
    for args in (("--since", "1m"), ("--until", "2026-11-30T12:02Z"), ("--since", "12:01")):
        document = summary_json(capsys, *args, *map(str, logs), str(COUNTS))
        errors = [e.message for e in Draft202012Validator(schema).iter_errors(document)]
        assert errors == [] and document["window"]["requests_in"] >= 0


@pytest.mark.parametrize("command", ["tail", "extract", "summary"])
def test_every_command_refuses_a_bad_window_before_reading(
    command: str, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit) as exc:
        main([command, "--since", "10m", "--until", "20m", str(COUNTS)])
    assert exc.value.code == 2
    assert "is not before --until" in capsys.readouterr().err


@pytest.mark.parametrize(
    "name", ["moe_trace.jsonl", "token_stream.jsonl", "kv_lines.log", "count_only_500.jsonl"]
)
def test_subset_totals_find_each_rows_extras(name: str) -> None:
    """Per-token data lives beside the columns (extras, by row): a subset's totals must
    take each picked row's own, which the per-request records of those rows add up to."""
    from sparseety_tui.core.figures._figures import SKIP_FIELDS
    from sparseety_tui.core.report._report import request_records

    extractor = Extractor()
    ingest_file(extractor, str(REPO / "sample_logs" / name))
    frozen = extractor.freeze()
    rows = np.arange(1, len(frozen.store), 2)
    totals = compute_totals(frozen, DEFAULT_SHAPE, rows=rows)
    records = list(request_records(frozen, DEFAULT_SHAPE, rows=rows.tolist()))
    assert totals.requests.count == len(records) == len(rows)
    for field in SKIP_FIELDS:
        values = [r["skipped"][field] for r in records if r["skipped"][field] is not None]
        assert dict(totals.skipped.kinds())[field].value == (sum(values) if values else None), field
    known = [r["effective_compute_tokens"] for r in records]
    if any(v is not None for v in known):
        # Each record is rounded to 2 decimals, the total once.
        assert totals.requests.effective_compute_tokens == pytest.approx(
            sum(v for v in known if v is not None), abs=0.005 * len(known) + 0.01
        )
