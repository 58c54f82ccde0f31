"""Epoch timestamps in any unit, and times that are no date (issue #9, item 3).

A number's unit is told by its size (formats/_timestamps.py); what is still out of range
(before 1970, NaN, infinite, the year 10000 or later) is unknown and counted as an ignored
value of its line; every place that turns a time into a date shows an unknown one as "—"
and never raises.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from totals_helpers import totals_and_peak

from sparseety_tui.core.detail._timing import derive_times
from sparseety_tui.core.extraction._extractor import Extractor
from sparseety_tui.formats._kvline import KvLineParser
from sparseety_tui.formats._trace import TraceParser
from sparseety_tui.ingest.batch import ingest_file
from sparseety_tui.ui.fmt import fmt_clock, fmt_day, fmt_time, known_ts

#: 2024-11-30T12:00:00.123456789Z in every unit.
SECONDS = 1732968000.123
MILLIS = 1732968000123
MICROS = 1732968000123456
NANOS = 1732968000123456789


def request(line: bytes) -> tuple[dict[str, Any], TraceParser]:
    parser = TraceParser()
    kind, event = parser.parse(line)
    assert kind == "trace.request" and event is not None and event[0] == "request"
    return dict(event[1]), parser


@pytest.mark.parametrize(
    ("number", "seconds"),
    [
        (1732968000, 1732968000.0),
        (SECONDS, SECONDS),
        (MILLIS, 1732968000.123),
        (MICROS, 1732968000.123456),
        (NANOS, NANOS / 1e9),
        (1.732968000123e12, 1732968000.123),  # a float in milliseconds
        (1e11, 1e8),  # the smallest millisecond number: 1973-03-03
    ],
)
def test_the_unit_of_an_epoch_number_is_told_by_its_size(number: float, seconds: float) -> None:
    for field in ("ts", "received_ts", "first_token_ts", "finished_ts"):
        payload, parser = request(b'{"request_id": "r", "%s": %r}' % (field.encode(), number))
        assert payload[field] == pytest.approx(seconds, abs=1e-6)
        assert parser.ignored == {}


@pytest.mark.parametrize(
    ("value", "reason"),
    [
        ("-1", "timestamp out of range"),
        ("-1732968000.5", "timestamp out of range"),
        ("2.6e20", "timestamp out of range"),  # 10000-01-01 and later, in ns
        ("1e300", "timestamp out of range"),
        ("1" + "0" * 21, "timestamp out of range"),  # 10**21 ns: the year 33658
        ('"1969-12-31T23:59:59Z"', "timestamp out of range"),
        ('"yesterday"', "not a timestamp"),
        ("true", "not a timestamp"),
        ("[1732968000]", "not a timestamp"),
    ],
)
def test_a_timestamp_that_is_no_date_is_unknown_and_counted(value: str, reason: str) -> None:
    line = b'{"request_id": "r", "ts": %s, "prompt_tokens": 4}' % value.encode()
    payload, parser = request(line)
    assert "ts" not in payload and payload["prompt_tokens"] == 4  # the rest is read
    assert parser.ignored == {f"ts: {reason}": 1}


def test_a_null_timestamp_is_not_said_and_not_counted() -> None:
    payload, parser = request(b'{"request_id": "r", "ts": null}')
    assert "ts" not in payload and parser.ignored == {}


def test_token_event_timestamps_follow_the_same_rule() -> None:
    parser = TraceParser()
    _, event = parser.parse(b'{"type": "token", "request_id": "r", "ts": %d}' % MILLIS)
    assert event is not None and event[1]["ts"] == pytest.approx(1732968000.123)
    _, event = parser.parse(b'{"type": "token", "request_id": "r", "ts": -5}')
    assert event is not None and "ts" not in event[1]
    assert parser.ignored == {"ts: timestamp out of range": 1}


def test_a_kv_line_dated_before_1970_keeps_its_request_without_a_time() -> None:
    parser = KvLineParser()
    kind, event = parser.parse(b"1969-07-20 20:17:40 INFO:x:done | req_id=a | prompt_tokens=3")
    assert kind == "kv.request" and event is not None
    assert "ts" not in event[1] and event[1]["prompt_tokens"] == 3
    assert parser.ignored == {"ts: timestamp out of range": 1}


def test_ignored_values_are_counted_per_file_in_every_path(tmp_path: Path) -> None:
    # Far more lines than one block: the native scanner and the Python block path hand
    # the lines they cannot take to the per-line path, which counts what it ignores.
    lines = [
        b'{"request_id": "r%d", "ts": %d, "prompt_tokens": 1}' % (i, MILLIS) for i in range(99)
    ]
    lines[40] = b'{"request_id": "bad1", "ts": -3, "prompt_tokens": 1}'
    lines[70] = b'{"request_id": "bad2", "finished_ts": 1e300, "prompt_tokens": 1}'
    path = tmp_path / "t.jsonl"
    path.write_bytes(b"\n".join(lines) + b"\n")
    extractor = Extractor()
    ingest_file(extractor, str(path))
    state = extractor.files[0]
    assert state.by_kind == {"trace.request": 99}
    assert state.ignored == {
        "ts: timestamp out of range": 1,
        "finished_ts: timestamp out of range": 1,
    }
    assert extractor.freeze().files[0].ignored == state.ignored
    finished = extractor.store.columns["finished_ts"]
    assert finished[0] == pytest.approx(1732968000.123)
    assert math.isnan(finished[40]) and math.isnan(finished[70])


@pytest.mark.parametrize(
    "ts", [1e18, -1e18, 1.7e18, 2.6e11, -1.0, math.inf, -math.inf, 2.0**70, 10**30]
)
def test_times_that_are_no_date_are_shown_as_unknown_never_raised(ts: Any) -> None:
    # The live view read `"ts": 1732968000123` as seconds and exited with OSError 75.
    assert fmt_time(ts) == "—"
    assert fmt_clock(ts) == "—"
    assert fmt_day(ts) == ""
    assert not known_ts(ts)
    # ... while every date up to the last second of 9999 is shown
    assert (fmt_time(SECONDS), fmt_clock(SECONDS)) == ("12:00:00", "12:00:00.123")
    assert (fmt_day(SECONDS), fmt_day(253402300799.0)) == ("2024-11-30", "9999-12-31")


def test_a_start_derived_before_1970_stays_unknown() -> None:
    times = derive_times(
        received=math.nan, first_token=math.nan, finished=1e9, ttft=math.nan, latency=3e38
    )
    assert math.isnan(times.received)
    times = derive_times(
        received=math.nan, first_token=math.nan, finished=1e9, ttft=math.nan, latency=2.0
    )
    assert times.received == 1e9 - 2.0


def test_a_start_before_1970_is_unknown_on_every_path(tmp_path: Path) -> None:
    lines = [
        b'{"request_id": "r%d", "ts": 1000, "latency_s": %s}' % (i, b"5000" if i % 2 else b"1")
        for i in range(80)
    ]
    path = tmp_path / "t.jsonl"
    path.write_bytes(b"\n".join(lines) + b"\n")
    extractor = Extractor()
    ingest_file(extractor, str(path))
    received = np.asarray(extractor.store.columns["received_ts"])
    assert np.isnan(received[1::2]).all()  # 1000 - 5000 s: before 1970
    assert (received[0::2] == 999.0).all()


def test_minutes_far_apart_do_not_allocate_every_minute_between(tmp_path: Path) -> None:
    # A stale timestamp years before the others made the per-minute totals allocate one
    # bucket for every minute in between (205 PiB for a nanosecond stamp read as seconds).
    path = tmp_path / "t.jsonl"
    path.write_bytes(
        b'{"request_id": "old", "ts": 1600000000, "prompt_tokens": 1, "completion_tokens": 2}\n'
        b'{"request_id": "new", "ts": 1732968000, "prompt_tokens": 3, "completion_tokens": 4}\n'
    )
    totals, peak, _ = totals_and_peak(path)
    assert totals["throughput_per_minute"] == [
        {
            "minute": 1600000000 // 60 * 60,
            "requests": 1,
            "prompt_tokens": 1,
            "completion_tokens": 2,
        },
        {
            "minute": 1732968000 // 60 * 60,
            "requests": 1,
            "prompt_tokens": 3,
            "completion_tokens": 4,
        },
    ]
    assert peak < 4 << 20  # the dense count over 2.2 M minutes took 17 MB per array
