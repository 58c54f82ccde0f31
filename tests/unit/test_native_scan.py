"""The native scanner (native/scan.c) gives exactly what the per-line path gives.

It takes only the lines it fully understands and stops at any other; these tests throw
every kind of value and line at both paths and compare the whole store, byte for byte.
"""

from __future__ import annotations

import json
import math
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import numpy as np
import orjson
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from native_marks import needs_native

import sparseety_tui.core.extraction._chunks as chunks_module
import sparseety_tui.core.extraction._extractor as extractor_module
import sparseety_tui.formats._trace as trace_module
from sparseety_tui import _scan
from sparseety_tui.core.extraction._extractor import Extractor
from sparseety_tui.core.tokens._tokens import TokenCounter
from sparseety_tui.formats import _timestamps as timestamps
from sparseety_tui.formats import parse_timestamp
from sparseety_tui.formats._trace import BATCH_SCANNER
from sparseety_tui.formats._trace_native import SCANNER, ScanResult
from sparseety_tui.ingest.batch import ingest_file

MAX_LINE = 1 << 20


def scan(data: bytes, start: int = 0, max_records: int = 1 << 16) -> ScanResult:
    return ScanResult(*_scan.scan_requests(data, start, max_records, MAX_LINE))


def floats_of(result: ScanResult) -> Any:
    return np.frombuffer(result.floats, dtype=np.float64).reshape(5, result.n)


def counts_of(result: ScanResult) -> Any:
    return np.frombuffer(result.counts, dtype=np.int32).reshape(9, result.n)


@needs_native
def test_the_scanner_is_built() -> None:
    # pip builds it wherever a C compiler is found (the test set-up has one); without it
    # the package falls back to the pure-Python block path.
    assert SCANNER is not None
    assert trace_module.FAMILY.scan_requests is BATCH_SCANNER is not None


def test_the_scanner_takes_the_fields_the_python_block_path_takes() -> None:
    # The same field lists in C and in Python: a field added to one must reach the other.
    assert set(_scan.TOP_KEYS) == trace_module.BULK_REQUEST_KEYS
    assert set(_scan.SPARSE_KEYS) == trace_module.SPARSE_SUMMARY_KEYS


# -- one scan --------------------------------------------------------------------------


def test_scan_reads_values_offsets_and_stops_at_the_first_odd_line() -> None:
    lines = [
        b'{"request_id": "a", "prompt_tokens": 12, "latency_s": 0.25, "model": "m1",'
        b' "ts": "2026-11-30T12:00:00.500Z", "sparse": {"topk_experts": 2, "kv_skip": "masked"}}',
        b'{"request_id":"b","completion_tokens":-4,"cache_hit":true,"model":"m2","state":"received"}\r',
        b'{"request_id":"c","prompt":"text to tokenize"}',
        b'{"request_id":"d"}',
    ]
    data = b"\n".join(lines) + b"\n"
    result = scan(data)
    assert (result.n, result.reason) == (2, _scan.STOP_NOT_SIMPLE)
    first_two = len(lines[0]) + len(lines[1]) + 2
    assert result.end == first_two
    assert result.next_end == first_two + len(lines[2]) + 1
    assert np.frombuffer(result.offsets, dtype=np.int64).tolist() == [0, len(lines[0]) + 1]
    assert np.frombuffer(result.lengths, dtype=np.uint32).tolist() == [
        len(lines[0]) + 1,
        len(lines[1]) + 1,
    ]
    counts = counts_of(result)
    assert counts[0].tolist() == [12, -1]  # prompt_tokens
    assert counts[1].tolist() == [-1, -1]  # a negative count is unknown
    assert counts[3].tolist() == [2, -1]  # sparse.topk_experts
    floats = floats_of(result)
    assert floats[0, 0] == 0.25 and math.isnan(floats[0, 1])
    assert floats[2, 0] == parse_timestamp("2026-11-30T12:00:00.500Z")
    assert result.name_tables == [["m1", "m2"], ["received"], ["masked"]]
    assert np.frombuffer(result.cache_hit, dtype=np.uint8).tolist() == [0, 2]
    assert result.id_blob == b"ab"
    assert np.frombuffer(result.id_hashes, dtype=np.int64).tolist() == [hash("a"), hash("b")]
    # From the next line on, the scan goes on to the end (no newline on the last line).
    tail = scan(data[:-1], result.next_end)
    assert (tail.n, tail.reason, tail.end) == (1, _scan.STOP_END, len(data) - 1)


def test_names_of_a_rejected_line_are_forgotten() -> None:
    data = (
        b'{"request_id":"a","model":"kept"}\n{"request_id":"b","model":"dropped","unknown_key":1}\n'
    )
    result = scan(data)
    assert result.n == 1
    assert result.name_tables[0] == ["kept"]


def test_limits_stop_the_scan_without_rejecting_the_line() -> None:
    data = b"".join(b'{"request_id":"r%d","model":"m%d"}\n' % (i, i) for i in range(300))
    assert scan(data, max_records=10)[:3] == (
        10,
        data.index(b'{"request_id":"r10"'),
        _scan.STOP_FULL,
    )
    full = scan(data)  # 255 model names fit one scan's table
    assert (full.n, full.reason) == (255, _scan.STOP_FULL)
    assert scan(data, full.end).n == 45


@pytest.mark.parametrize(
    "text",
    [
        "0",
        "-0",
        "0.0",
        "-0.0",
        "1.355",
        "0.058",
        "1e-3",
        "2.5E+2",
        "123456789.123456789",
        "0.1000000000000000055511151231257827",
        "9007199254740993",
        "9007199254740995",  # ties round to even, as float(int) does
        "9999999999999999999",
        "-9999999999999999999",
        "10000000000000000000",
        "1.7976931348623157e308",
        "4.9e-324",
        "2.2250738585072011e-308",
        "12345678901234567890.5",
        "-1.5",
        "-7",
    ],
)
def test_seconds_are_parsed_like_python(text: str) -> None:
    result = scan(b'{"request_id":"x","latency_s":%s}\n' % text.encode())
    expected = json.loads(text)
    if isinstance(expected, int) and len(str(abs(expected))) > 19:
        assert result.n == 0  # beyond a uint64: left to the per-line path
        return
    assert result.n == 1
    latency = floats_of(result)[0, 0]
    want = float(expected)
    if want < 0:
        assert math.isnan(latency)
    else:
        assert latency == want and math.copysign(1, latency) == math.copysign(1, want)


@pytest.mark.parametrize(
    "text",
    [
        "0",
        "-0",
        "-0.0",
        "1.355",
        "1732968000",
        "1732968000.5",
        "99999999999.99998",  # the last seconds below 1e11
        "100000000000",  # 1e11: milliseconds (1973)
        "1732968000123",
        "1732968000123.5",
        "99999999999999.98",
        "100000000000000",  # 1e14: microseconds
        "1732968000123456",
        "9007199254740992",
        "1.732968000123456e15",
        "1e17",  # nanoseconds
        "1732968000123456789",
        "1732968000123456787",
        "1.732968000123456789e18",
        "2.534023007999e20",  # 9999-12-31 in ns
        "2.534023008e20",  # 10000-01-01: no date
        "1.7976931348623157e308",
        "-1.5",
        "-7",
    ],
)
def test_epoch_numbers_are_read_like_python(text: str) -> None:
    # The unit is told by the size, in C exactly as in formats/_timestamps.py; a number
    # that is no date goes to the per-line path, which counts it as ignored.
    result = scan(b'{"request_id":"x","ts":%s}\n' % text.encode())
    want = parse_timestamp(json.loads(text))
    if want is None:
        assert result.n == 0
        return
    assert result.n == 1
    ts = floats_of(result)[2, 0]
    assert ts == want and math.copysign(1, ts) == math.copysign(1, want)


def test_the_scanner_tells_the_epoch_unit_by_the_python_thresholds() -> None:
    assert _scan.EPOCH_SECONDS_BELOW == timestamps.SECONDS_BELOW
    assert _scan.EPOCH_MILLIS_BELOW == timestamps.MILLIS_BELOW
    assert _scan.EPOCH_MICROS_BELOW == timestamps.MICROS_BELOW
    assert _scan.TIME_END == timestamps.TIME_END


@given(st.floats(min_value=0, allow_nan=False, allow_infinity=False))
def test_any_float_round_trips(value: float) -> None:
    text = orjson.dumps(value)
    result = scan(b'{"request_id":"x","ttft_s":%s}\n' % text)
    assert result.n == 1
    assert floats_of(result)[1, 0] == orjson.loads(text)


@given(st.integers(0, 10**19 - 1))
def test_any_integer_of_a_uint64_converts_as_float_int_does(value: int) -> None:
    result = scan(b'{"request_id":"x","ttft_s":%d,"ts":%d}\n' % (value, value))
    want = parse_timestamp(value)
    if want is None:  # a time that is no date: the per-line path counts it
        assert result.n == 0
        return
    assert result.n == 1
    assert floats_of(result)[1, 0] == float(value) and floats_of(result)[2, 0] == want


@given(
    st.datetimes(min_value=datetime(1, 1, 1), max_value=datetime(9999, 12, 31, 23, 59, 59)),
    st.sampled_from(["T", " "]),
    st.sampled_from([0, 3, 6]),
    st.booleans(),
)
def test_iso_timestamps_match_fromisoformat(
    moment: datetime, sep: str, digits: int, zulu: bool
) -> None:
    text = (
        f"{moment.year:04d}-{moment.month:02d}-{moment.day:02d}{sep}"
        f"{moment.hour:02d}:{moment.minute:02d}:{moment.second:02d}"
    )
    if digits:
        text += "." + f"{moment.microsecond:06d}"[:digits]
    text += "Z" if zulu else ""
    result = scan(b'{"request_id":"x","ts":"%s"}\n' % text.encode())
    parsed = datetime.fromisoformat(text.replace("Z", "+00:00")).replace(tzinfo=timezone.utc)
    micros = (parsed - datetime(1970, 1, 1, tzinfo=timezone.utc)) // timedelta(microseconds=1)
    if micros < 0 or micros > 2**53:
        # Before 1970 no date the tool shows (the per-line path counts it as ignored);
        # after 2255 not exact in a double: both left to the per-line path.
        assert result.n == 0
        return
    assert result.n == 1
    assert floats_of(result)[2, 0] == parse_timestamp(text)


@pytest.mark.parametrize(
    "text",
    [
        "2026-02-29T00:00:00",
        "2026-13-01T00:00:00",
        "2026-11-30T24:00:00",
        "0000-01-01T00:00:00",
        "2026-11-30T12:00:00+00:00",
        "2026-11-30T12:00:00.1234",
        "2026-11-30",
        "yesterday",
    ],
)
def test_other_timestamp_strings_are_left_to_the_per_line_path(text: str) -> None:
    assert scan(b'{"request_id":"x","ts":"%s"}\n' % text.encode()).n == 0


@pytest.mark.parametrize(
    "line",
    [
        b'{"request_id":"a","request_id":"b"}',  # a repeated key
        b'{"request_id":"a\\u0041"}',  # an escape
        '{"request_id":"é"}'.encode(),  # non-ASCII
        b'{"request_id":"a","prompt_tokens":01}',  # not JSON
        b'{"request_id":"a","prompt_tokens":1.0}',  # a float count
        b'{"request_id":"a","prompt_tokens":2147483648}',  # beyond int32
        b'{"request_id":"a","prompt_tokens":true}',
        b'{"request_id":"a","latency_s":1e400}',
        b'{"request_id":"a","sparse":null}',
        b'{"request_id":"a","sparse":{"routing":[[[1,2]]]}}',
        b'{"request_id":"a"} x',
        b'{"request_id":"a"',
        b'{"request_id":""}',
        b'{"request_id":7}',
        b'{"prompt_tokens":1}',
        b'{"type":"request","request_id":"a"}',
        b"",
        b"   ",
        b"[1]",
    ],
)
def test_lines_the_scanner_does_not_take(line: bytes) -> None:
    result = scan(line + b"\n" + b'{"request_id":"z"}\n')
    assert (result.n, result.end, result.next_end) == (0, 0, len(line) + 1)


# -- the whole store: native == per line ------------------------------------------------

_names = st.one_of(
    st.none(),
    st.integers(-1, 3),
    st.text(max_size=4),
    st.sampled_from(
        ["m1", "m2", "", "finished", "received", "running", "aborted", "evicted", "masked"]
    ),
)
_counts = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-3, 3000),
    st.integers(2**31 - 2, 2**31 + 1),
    st.floats(-2, 50, allow_nan=False),
    st.text(max_size=2),
)
_seconds = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-3, 10**6),
    st.floats(-1, 1e7, allow_nan=False),
    st.text(max_size=2),
    # beyond what a float32 column holds: unknown, never stored as infinity
    st.sampled_from([3.4028234663852886e38, 3.4028235e38, 1e39, 1e300, 2.0**128, 2**64 - 1]),
)
_stamp = datetime(2026, 11, 30, 12, tzinfo=timezone.utc)
#: Epoch numbers in every unit, and out of range (before 1970, from the year 10000 on).
_epochs = st.one_of(
    st.integers(1_700_000_000, 1_800_000_000),
    st.integers(1_700_000_000_000, 1_800_000_000_000),
    st.integers(1_700_000_000_000_000, 1_800_000_000_000_000),
    st.integers(1_700_000_000_000_000_000, 1_800_000_000_000_000_000),
    st.floats(1.7e9, 1.8e9),
    st.floats(1.7e12, 1.8e12),
    st.floats(1.7e15, 1.8e15),
    st.floats(1.7e18, 1.8e18),
    st.sampled_from([0, -1, -1.5, 1e11, 1e14, 1e17, 2.5e20, 2.6e20, 1e300, 2**64 - 1]),
)
_times = st.one_of(
    st.none(),
    st.booleans(),
    _epochs,
    st.text(max_size=3),
    st.builds(
        lambda ms, fmt: (_stamp + timedelta(milliseconds=ms)).strftime(fmt)[:-3] + "Z",
        st.integers(0, 10**8),
        st.sampled_from(["%Y-%m-%dT%H:%M:%S.%f", "%Y-%m-%d %H:%M:%S.%f"]),
    ),
    st.sampled_from(["2026-11-30T12:00:00", "2026-11-30T12:00:01+02:00", "2026-02-30T00:00:00"]),
)
_sparse = st.one_of(
    st.none(),
    st.integers(-9, 9),
    st.fixed_dictionaries(
        {},
        optional={
            "topk_experts": _counts,
            "total_experts": _counts,
            "skipped_attention_heads": _counts,
            "total_attention_heads": _counts,
            "kv_kept": _counts,
            "kv_total": _counts,
            "kv_skip": _names,
            "kv_policy": _names,
            "routing": st.just([[[1, 2]]]),
        },
    ),
)
_record = st.fixed_dictionaries(
    {
        "request_id": st.one_of(
            st.sampled_from([f"r{i}" for i in range(60)]), st.text(max_size=3), st.integers(0, 9)
        )
    },
    optional={
        "ts": _times,
        "model": _names,
        "prompt_tokens": _counts,
        "completion_tokens": _counts,
        "cached_tokens": _counts,
        "latency_s": _seconds,
        "ttft_s": _seconds,
        "sparse": _sparse,
        "state": _names,
        "received_ts": _times,
        "finished_ts": _times,
        "cache_hit": _seconds,
        "finish_reason": _names,
        "type": st.sampled_from(["request", "token", "meta"]),
        "prompt": st.text(max_size=5),
        "other": st.integers(-(2**63), 2**63 - 1),
    },
)

# Records of the right types (what real request logs hold): mostly taken by the scanner.
_good_count = st.one_of(st.none(), st.integers(-2, 5000))
_good_seconds = st.one_of(st.none(), st.integers(0, 100), st.floats(-1, 1e4, allow_nan=False))
_good_times = st.one_of(
    st.none(),
    st.integers(1_700_000_000, 1_800_000_000),
    st.integers(1_700_000_000_000, 1_800_000_000_000),
    st.floats(1.7e15, 1.8e15),
    _times.filter(lambda t: isinstance(t, str) and t.endswith("Z")),
)
_good_names = st.one_of(
    st.none(),
    st.sampled_from(
        ["m1", "m2", "", "finished", "received", "running", "aborted", "evicted", "zz"]
    ),
)
_tame_record = st.fixed_dictionaries(
    {"request_id": st.sampled_from([f"t{i}" for i in range(400)])},
    optional={
        "ts": _good_times,
        "model": _good_names,
        "prompt_tokens": _good_count,
        "completion_tokens": _good_count,
        "cached_tokens": _good_count,
        "latency_s": _good_seconds,
        "ttft_s": _good_seconds,
        "state": _good_names,
        "received_ts": _good_times,
        "finished_ts": _good_times,
        "cache_hit": st.one_of(st.none(), st.booleans()),
        "finish_reason": _good_names,
        "sparse": st.fixed_dictionaries(
            {},
            optional={
                "topk_experts": _good_count,
                "total_experts": _good_count,
                "skipped_attention_heads": _good_count,
                "kv_kept": _good_count,
                "kv_total": _good_count,
                "kv_skip": _good_names,
                "kv_policy": _good_names,
            },
        ),
    },
)


def _line(record: dict[str, Any], style: int) -> bytes:
    if style == 0:
        return orjson.dumps(record)
    if style == 1:  # spaces, and \\u escapes for anything non-ASCII
        return json.dumps(record).encode()
    if style == 2:
        return (
            b"  " + json.dumps(record, ensure_ascii=False, separators=(" ,", ": ")).encode() + b" "
        )
    return orjson.dumps(record) + b"\r"  # a CRLF ending


_lines = st.lists(
    st.one_of(
        st.tuples(_record, st.integers(0, 3)).map(lambda rs: _line(*rs)),
        st.tuples(_tame_record, st.sampled_from([0, 0, 0, 2, 3])).map(lambda rs: _line(*rs)),
        st.tuples(_tame_record, st.sampled_from([0, 0, 0, 2, 3])).map(lambda rs: _line(*rs)),
        st.sampled_from(
            [
                b"",
                b"   ",
                b"{not json",
                b"[1, 2]",
                b'{"request_id": "x"} trailing',
                b'{"request_id":"dup","request_id":"dup2"}',
                b"\xff\xfe{",
                b"\x1b[31m[bold]",
                # numbers no float holds: the field is ignored, the record kept
                b'{"request_id": "big1", "prompt_tokens": 3, "latency_s": 1e400}',
                b'{"request_id": "big2", "ts": -1e400, "sparse": {"total_experts": 1e999}}',
                b'{"request_id": "nan1", "ttft_s": NaN, "finished_ts": Infinity}',
                b'{"request_id": "big3", "completion_tokens": 1' + b"0" * 5000 + b"}",
            ]
        ),
    ),
    min_size=1,
    max_size=90,
)


def _snapshot(extractor: Extractor) -> tuple[Any, ...]:
    store = extractor.store
    state = extractor.files[0]
    return (
        list(store.ids),
        store.models,
        {name: column.tobytes() for name, column in store.columns.items()},
        store.offset.tobytes(),
        store.length.tobytes(),
        dict(store.more_lines.items()),
        state.lines_total,
        state.by_kind,
        [(d.line_no, d.offset, d.reason) for d in state.diagnostics],
        state.ignored,
    )


#: One tokenizer for every example (loading it is the slow part of an Extractor).
_TOKENS = TokenCounter()


def _ingest(path: Path, **patches: Any) -> Extractor:
    with pytest.MonkeyPatch.context() as patch:
        for name, value in patches.items():
            module = trace_module if name == "BATCH_SCANNER" else extractor_module
            patch.setattr(module, name, value)
        extractor = Extractor(tokens=_TOKENS)
        ingest_file(extractor, str(path))
    return extractor


@settings(
    max_examples=150,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(lines=_lines, trailing_newline=st.booleans(), meta_first=st.booleans())
def test_native_path_equals_per_line_path(
    tmp_path: Path, lines: list[bytes], trailing_newline: bool, meta_first: bool
) -> None:
    if meta_first:  # a meta header fills in expert counts on every row, both ways
        lines = [b'{"type": "meta", "total_experts": 64, "topk_experts": 4}', *lines]
    content = b"\n".join(lines) + (b"\n" if trailing_newline else b"")
    path = tmp_path / "trace.jsonl"
    path.write_bytes(content)
    per_line = _ingest(path, BATCH_SCANNER=None, BULK_MIN_LINES=10**9)
    native_always = _ingest(path, BULK_MIN_LINES=1)
    native_default = _ingest(path)
    python_blocks = _ingest(path, BATCH_SCANNER=None, BULK_MIN_LINES=1)
    expected = _snapshot(per_line)
    assert _snapshot(native_always) == expected
    assert _snapshot(native_default) == expected
    assert _snapshot(python_blocks) == expected


@needs_native
def test_native_path_is_taken_for_request_records(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    taken: list[int] = []
    real = chunks_module.apply_batch

    def spy(*args: Any) -> bool:
        ok = real(*args)
        taken.append(args[1].n if ok else 0)
        return ok

    monkeypatch.setattr(chunks_module, "apply_batch", spy)
    path = tmp_path / "requests.jsonl"
    path.write_bytes(
        b"".join(
            orjson.dumps({"request_id": f"q{i}", "prompt_tokens": i, "model": "m"}) + b"\n"
            for i in range(500)
        )
    )
    extractor = Extractor()
    ingest_file(extractor, str(path))
    assert sum(taken) == 500
    assert extractor.store.get("prompt_tokens", 499) == 499
    assert extractor.files[0].by_kind == {"trace.request": 500}
