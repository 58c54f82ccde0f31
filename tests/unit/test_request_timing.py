"""Where a request's time went: the timing a span or a trace record gives, where each
figure came from, the span's ids, one row per request whichever of a span and its log
lines comes first, and what ``extract``/``/requests/ID`` give of it (``timing``,
``timing_from``, ``trace``, ``why``, ``why_text``).

The span payloads are the ``timing_from: "span"`` records the OTLP reader hands the core;
here they are JSONL records, so the whole path (parser, merge, store, freeze, output) runs.
"""

from __future__ import annotations

import math
import statistics
from pathlib import Path
from typing import Any

import orjson
import pytest

from sparseety_tui.core.extraction._extractor import Extractor
from sparseety_tui.core.figures._costmodel import DEFAULT_SHAPE
from sparseety_tui.core.query import Selection, select_rows
from sparseety_tui.core.report import request_records
from sparseety_tui.ingest.batch import ingest_file

TRACE_ID = "0af7651916cd43dd8448eb211c80319c"
SPAN_ID = "b7ad6b7169203331"
SPAN = {
    "request_id": "chat-7-1a2b3c4d",  # vLLM's engine-side id: the API id and 8 hex
    "timing_from": "span",
    "queue_s": 8.25,
    "prefill_s": 0.25,
    "decode_s": 0.5,
    "inference_s": 0.75,
    "latency_s": 9.0,
    "preemptions": 1,
    "trace_id": TRACE_ID,
    "span_id": SPAN_ID,
}
LOG = {"request_id": "chat-7", "model": "m", "prompt_tokens": 512, "completion_tokens": 65}


def _write(path: Path, records: list[dict[str, Any]]) -> str:
    path.write_bytes(b"".join(orjson.dumps(r) + b"\n" for r in records))
    return str(path)


def _read(*paths: str) -> Extractor:
    extractor = Extractor()
    for path in paths:
        ingest_file(extractor, path)
    return extractor


def _records(extractor: Extractor) -> dict[str, dict[str, Any]]:
    frozen = extractor.freeze()
    return {r["request_id"]: r for r in request_records(frozen, DEFAULT_SHAPE)}


@pytest.mark.parametrize("span_first", [True, False], ids=["span first", "log first"])
def test_a_span_and_its_log_lines_are_one_request(tmp_path: Path, span_first: bool) -> None:
    records = [SPAN, LOG] if span_first else [LOG, SPAN]
    extractor = _read(_write(tmp_path / "t.jsonl", records))
    out = _records(extractor)
    assert len(out) == 1  # one row per request, never two
    (record,) = out.values()
    # The row keeps the id it was made under: the API id when the log came first.
    assert record["request_id"] == ("chat-7-1a2b3c4d" if span_first else "chat-7")
    assert record["model"] == "m" and record["prompt_tokens"] == 512
    assert record["timing"] == {
        "queue_s": 8.25,
        "prefill_s": 0.25,
        "decode_s": 0.5,
        "inference_s": 0.75,
        "ttft_s": None,
        "latency_s": 9.0,
        "tpot_s": round(0.5 / 64, 5),  # decode over the tokens after the first
        "preemptions": 1,
    }
    assert record["timing_from"] == {
        "queue_s": "span",
        "prefill_s": "span",
        "decode_s": "span",
        "inference_s": "span",
        "latency_s": "span",
        "tpot_s": "derived",
        "preemptions": "span",
    }
    assert record["trace"] == {
        "trace_id": TRACE_ID,
        "span_id": SPAN_ID,
        "traceparent": f"00-{TRACE_ID}-{SPAN_ID}-01",
    }
    # The API id finds it either way (serve's /requests/ID).
    frozen = extractor.freeze()
    assert frozen.find("chat-7") == 0 and frozen.find("chat-7-1a2b3c4d") == 0
    # The old keys come first, as they were; the timing keys after them.
    keys = list(record)
    assert keys[-5:] == ["timing", "timing_from", "trace", "why", "why_text"]
    assert keys.index("source") == len(keys) - 6


def test_a_span_of_a_request_never_logged_is_its_own_row(tmp_path: Path) -> None:
    other = {**SPAN, "request_id": "solo-deadbeef"}
    out = _records(_read(_write(tmp_path / "t.jsonl", [LOG, other])))
    assert sorted(out) == ["chat-7", "solo-deadbeef"]
    assert out["chat-7"]["timing"]["queue_s"] is None
    # Not an engine-side id (no 8-hex suffix): a span under it joins nothing else.
    plain = {**SPAN, "request_id": "chat-7-xyz"}
    out = _records(_read(_write(tmp_path / "u.jsonl", [LOG, plain])))
    assert sorted(out) == ["chat-7", "chat-7-xyz"]


def test_spans_and_log_files_join_in_either_file_order(tmp_path: Path) -> None:
    span_file = _write(tmp_path / "spans.jsonl", [SPAN])
    log_file = _write(tmp_path / "log.jsonl", [LOG, {"request_id": "other", "latency_s": 1.0}])
    for order in ((span_file, log_file), (log_file, span_file)):
        out = _records(_read(*order))
        assert len(out) == 2
        joined = next(r for r in out.values() if r["request_id"] != "other")
        assert joined["timing"]["queue_s"] == 8.25 and joined["prompt_tokens"] == 512


def test_a_later_value_wins_with_its_source(tmp_path: Path) -> None:
    # The span's latency, then a trace record's: the record's value and source win; a
    # TTFT from the first-token time is derived.
    later = {**LOG, "latency_s": 9.5, "received_ts": 1000.0, "first_token_ts": 1000.5}
    record = next(iter(_records(_read(_write(tmp_path / "t.jsonl", [SPAN, later]))).values()))
    assert record["timing"]["latency_s"] == 9.5
    assert record["timing_from"]["latency_s"] == "trace"
    assert record["timing_from"]["queue_s"] == "span"
    assert record["timing"]["ttft_s"] == 0.5 and record["timing_from"]["ttft_s"] == "derived"
    # A record naming its source: that source.
    said = {**LOG, "latency_s": 2.0, "timing_from": "meta_info"}
    record = next(iter(_records(_read(_write(tmp_path / "u.jsonl", [SPAN, said]))).values()))
    assert record["timing"]["latency_s"] == 2.0
    assert record["timing_from"]["latency_s"] == "meta_info"


@pytest.mark.parametrize("bad", ['"8.2"', "-1", "true", "[1]", "3.5e38"])
def test_bad_timing_values_are_unknown(tmp_path: Path, bad: str) -> None:
    line = (
        b'{"request_id": "r-1a2b3c4d", "timing_from": "span", "latency_s": 1.0, '
        + b", ".join(f'"{name}": {bad}'.encode() for name in ("queue_s", "prefill_s", "decode_s"))
        + f', "preemptions": {bad}, "trace_id": "XYZ", "span_id": "00"}}\n'.encode()
    )
    path = tmp_path / "t.jsonl"
    path.write_bytes(line)
    extractor = _read(str(path))
    (record,) = _records(extractor).values()
    timing = record["timing"]
    assert timing["queue_s"] is timing["prefill_s"] is timing["decode_s"] is None
    assert timing["preemptions"] is None and timing["latency_s"] == 1.0
    assert record["timing_from"] == {"latency_s": "span"}
    assert record["trace"] == {"trace_id": None, "span_id": None, "traceparent": None}
    assert record["why"] is None  # a latency alone says nothing of where it went
    assert extractor.files[0].by_kind == {"trace.request": 1}


def test_numbers_no_double_holds_are_unknown_and_counted(tmp_path: Path) -> None:
    path = tmp_path / "t.jsonl"
    path.write_bytes(b'{"request_id": "r", "queue_s": NaN, "decode_s": 1e400, "latency_s": 2}\n')
    extractor = _read(str(path))
    (record,) = _records(extractor).values()
    assert record["timing"]["queue_s"] is None and record["timing"]["decode_s"] is None
    assert extractor.files[0].ignored == {
        "queue_s: number not representable": 1,
        "decode_s: number not representable": 1,
    }


def _peers(tmp_path: Path) -> tuple[Extractor, dict[str, float]]:
    """Requests of model m, prompt 100..127 tokens (one power-of-two bucket), received in
    one 5-minute window; and some that are no peers of theirs."""
    t0 = 1_800_000_000.0 - 1_800_000_000.0 % 300  # a window's start
    queues = {"slow": 8.2, "p1": 0.1, "p2": 0.25, "p3": 0.05, "p4": 0.3, "p5": None}
    records: list[dict[str, Any]] = []
    for i, (rid, queue) in enumerate(queues.items()):
        record: dict[str, Any] = {
            "request_id": rid,
            "model": "m",
            "prompt_tokens": 100 + i,
            "completion_tokens": 10,
            "received_ts": t0 + 10 * i,
            "prefill_s": 0.2,
            "decode_s": 0.5,
            "latency_s": 9.0 if rid == "slow" else 1.0,
        }
        if queue is not None:
            record["queue_s"] = queue
        records.append(record)
    base = {"model": "m", "completion_tokens": 10, "prefill_s": 0.2, "latency_s": 6.0}
    records += [
        {**base, "request_id": "bucket", "prompt_tokens": 200, "received_ts": t0, "queue_s": 5},
        {**base, "request_id": "window", "prompt_tokens": 101, "received_ts": t0 + 300},
        {**base, "request_id": "model", "model": "x", "prompt_tokens": 101, "received_ts": t0},
    ]
    records[-2]["queue_s"] = records[-1]["queue_s"] = 5.0
    extractor = _read(_write(tmp_path / "t.jsonl", records))
    return extractor, {k: v for k, v in queues.items() if v is not None}


def test_why_names_the_dominant_part_against_its_peers(tmp_path: Path) -> None:
    extractor, queues = _peers(tmp_path)
    out = _records(extractor)
    why = out["slow"]["why"]
    expected_median = statistics.median(v for k, v in queues.items() if k != "slow")
    assert why["component"] == "queue" and why["seconds"] == pytest.approx(8.2, abs=1e-5)
    assert why["share"] == round(8.2 / 9.0, 4) and why["latency_s"] == 9.0
    assert why["peers"] == 5  # p1..p5: same model, bucket and window (p5 has no queue)
    assert why["peers_median_s"] == pytest.approx(expected_median, abs=1e-5)
    assert why["engine"] is None  # no stats lines were read
    assert out["slow"]["why_text"] == "queue 8.2 s = 91 % of 9.0 s (peers' median 0.2 s)"
    # p5 knows no queue: "other" is the latency minus the parts known.
    assert out["p5"]["why"]["component"] == "decode"
    assert out["p5"]["timing"]["queue_s"] is None
    # p1's decode (0.5 s) dominated: the peers' median is of their decode.
    assert out["p1"]["why"]["component"] == "decode"
    assert out["p1"]["why"]["peers_median_s"] == pytest.approx(0.5)
    # No peers outside the bucket, window and model.
    for rid in ("bucket", "window", "model"):
        assert out[rid]["why"]["peers"] == 0 and out[rid]["why"]["peers_median_s"] is None


def test_the_filter_keeps_the_requests_a_part_dominated(tmp_path: Path) -> None:
    extractor, _ = _peers(tmp_path)
    frozen = extractor.freeze()
    expected = {
        r["request_id"]
        for r in request_records(frozen, DEFAULT_SHAPE)
        if r["why"] is not None and r["why"]["component"] == "queue"
    }
    rows = select_rows(frozen, DEFAULT_SHAPE, Selection("why=queue")).rows.tolist()
    assert (
        {frozen.store.ids[row] for row in rows} == expected == {"slow", "bucket", "window", "model"}
    )
    rows = select_rows(frozen, DEFAULT_SHAPE, Selection("why!=queue queue>0.2")).rows.tolist()
    assert [frozen.store.ids[row] for row in rows] == ["p2", "p4"]


def test_an_unknown_why_is_a_one_line_error() -> None:
    from sparseety_tui.core.query import FilterError, parse_filter

    with pytest.raises(FilterError, match="why takes"):
        parse_filter("why=gpu")
    with pytest.raises(FilterError, match="why takes"):
        parse_filter("why>queue")


def test_engine_state_at_arrival_is_the_nearest_stats_line_before(tmp_path: Path) -> None:
    from sparseety_tui.core.figures._why import ArrivalStates
    from sparseety_tui.core.store import EngineSeries

    engine = EngineSeries()
    for ts, waiting, source, label in (
        (100.0, 3, "a.log", "0"),
        (110.0, 194, "a.log", "1"),
        (120.0, 7, "a.log", "1"),
        (115.0, 50, "b.log", "0"),
    ):
        engine.add({"ts": ts, "engine": label, "source": source, "waiting": waiting,
                    "running": 2, "kv_usage": 0.99})  # fmt: skip
    states = ArrivalStates(engine)
    at = states.at(118.0, "a.log")
    assert at is not None and (at.waiting, at.engine, at.ts, at.source) == (194, "1", 110.0, "line")
    assert at.kv_usage == 0.99 and at.running == 2
    at = states.at(118.0, "b.log")  # its own log's line, though a.log has a later one
    assert at is not None and at.waiting == 50
    at = states.at(118.0, "c.log")  # a log with no stats: the nearest of any
    assert at is not None and at.waiting == 50
    assert states.at(90.0, "a.log") is None  # nothing at or before it
    assert states.at(math.nan, "a.log") is None


def test_why_text_says_the_engine_state() -> None:
    from sparseety_tui.core.figures import EngineAtArrival, why_text

    engine = EngineAtArrival(194.0, 12.0, 0.99, 1.0, "1", "line")
    assert why_text("queue", 8.2, 9.0, 0.1, engine) == (
        "queue 8.2 s = 91 % of 9.0 s (peers' median 0.1 s); arrived behind 194 waiting, "
        "12 running on engine 1, KV 99 %"
    )
    assert why_text("decode", 0.05, 0.08, None, None) == "decode 50 ms = 62 % of 80 ms"


def test_spans_join_across_the_ranges_of_a_split_read(tmp_path: Path) -> None:
    from sparseety_tui.sources import iter_chunks

    filler = [{"request_id": f"f{i}", "latency_s": 1.0} for i in range(5)]
    later = {**SPAN, "request_id": "chat-8-0000ffff"}
    records = [SPAN, *filler, LOG, {**LOG, "request_id": "chat-8"}, *filler[:1], later]
    path = _write(tmp_path / "t.jsonl", records)
    whole = _records(_read(path))
    data = Path(path).read_bytes()
    starts = [0]
    for line_index in (3, 7, 9):  # ranges: a span in one, its request's line in another
        starts.append(sum(len(orjson.dumps(r)) + 1 for r in records[:line_index]))
    merged = Extractor()
    file = merged.add_file(path, format_name="trace")
    for start, end in zip(starts, [*starts[1:], len(data)]):
        part = Extractor(forced_format="trace")
        part_file = part.add_file(path)
        part.feed_chunks(part_file, iter_chunks(path, start, end))
        part.finish_file(part_file)
        merged.merge_part(file, part.export_part(part_file))
    split = _records(merged)
    assert len(split) == len(whole) == 7  # f0 twice is one request; each span joins
    assert split == whole
    assert split["chat-7-1a2b3c4d"]["prompt_tokens"] == 512
    assert split["chat-8"]["timing"]["queue_s"] == 8.25


def _nearest_rank(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[max(math.ceil(q * len(ordered)), 1) - 1]


def _f32(value: float) -> float:
    """A value as the store keeps it (float32)."""
    import numpy as np

    return float(np.float32(value))


def _expected_tpots(records: list[dict[str, Any]]) -> list[float]:
    """tpot_s of each request that has one, by its definition."""
    tpots = []
    for r in records:
        steps = r["completion_tokens"] - 1
        if steps < 1:
            continue
        if "decode_s" in r:
            tpots.append(_f32(r["decode_s"]) / steps)
        elif "latency_s" in r and "ttft_s" in r:
            rest = _f32(r["latency_s"]) - _f32(r["ttft_s"])
            if rest >= 0:
                tpots.append(rest / steps)
    return tpots


def _expected_components(slow: list[dict[str, Any]]) -> dict[str, int]:
    """The slow requests by the part of their latency that dominated."""
    counts = dict.fromkeys(("queue", "prefill", "decode", "other", "unknown"), 0)
    for r in slow:
        names = ("queue_s", "prefill_s", "decode_s")
        parts = {k[:-2]: _f32(r[k]) for k in names if k in r}
        latency = _f32(r["latency_s"])
        if not parts or latency <= 0:
            counts["unknown"] += 1
            continue
        if latency - sum(parts.values()) >= 0:
            parts["other"] = latency - sum(parts.values())
        counts[max(parts, key=parts.__getitem__)] += 1
    return counts


def test_summary_gives_each_timing_figure_and_the_slow_requests(tmp_path: Path) -> None:
    import random

    import numpy as np

    from sparseety_tui.core.report import summary_document

    rng = random.Random(29)
    records: list[dict[str, Any]] = []
    for i in range(60):
        record: dict[str, Any] = {"request_id": f"r{i}", "completion_tokens": rng.randint(1, 9)}
        for name in ("queue_s", "prefill_s", "decode_s", "latency_s", "ttft_s"):
            if rng.random() < 0.8:
                record[name] = round(rng.uniform(0.0, 3.0), 3)
        if rng.random() < 0.5:
            record["timing_from"] = "span"
        records.append(record)
    document = summary_document(_read(_write(tmp_path / "t.jsonl", records)), DEFAULT_SHAPE)
    out = document.to_json()
    assert list(out)[-2:] == ["timing", "slow"]
    for name in ("queue_s", "prefill_s", "decode_s", "latency_s", "ttft_s", "inference_s"):
        having = [r for r in records if name in r]
        values = [float(np.float32(r[name])) for r in having]  # the store keeps float32
        figure = out["timing"][name]
        assert figure["count"] == len(values)
        if not values:
            assert figure == {"count": 0, "p50": None, "p95": None, "p99": None, "max": None,
                              "from": {}}  # fmt: skip
            continue
        for key, q in (("p50", 0.5), ("p95", 0.95), ("p99", 0.99)):
            assert figure[key] == round(_nearest_rank(values, q), 5)
        assert figure["max"] == round(max(values), 5)
        spans = sum(1 for r in having if r.get("timing_from") == "span")
        expected = {"span": spans, "trace": len(values) - spans}
        assert figure["from"] == {k: v for k, v in expected.items() if v}
    assert out["timing"]["latency_s"]["p95"] == out["latency_s"]["p95"]  # one definition
    tpots = _expected_tpots(records)
    assert out["timing"]["tpot_s"]["count"] == len(tpots)
    assert out["timing"]["tpot_s"]["p50"] == round(_nearest_rank(tpots, 0.5), 5)
    assert out["timing"]["tpot_s"]["from"] == {"derived": len(tpots)}
    # slow: over the p95 latency, by what dominated each.
    latencies = [float(np.float32(r["latency_s"])) for r in records if "latency_s" in r]
    threshold = _nearest_rank(latencies, 0.95)
    slow = [r for r in records if "latency_s" in r and np.float32(r["latency_s"]) > threshold]
    counts = _expected_components(slow)
    assert out["slow"] == {
        "threshold_s": round(threshold, 5),
        "requests": len(slow),
        "by_component": counts,
    }
    assert sum(counts.values()) == len(slow) > 0
    # A filter's requests only.
    extractor = _read(str(tmp_path / "t.jsonl"))
    kept = summary_document(extractor, DEFAULT_SHAPE, Selection("latency>1.5")).to_json()
    over = [v for v in latencies if v > 1.5]
    assert kept["timing"]["latency_s"]["count"] == len(over) == kept["filter"]["requests"]
    assert kept["timing"]["latency_s"]["p50"] == round(_nearest_rank(over, 0.5), 5)


def test_summary_timing_without_any_timing_is_all_null(tmp_path: Path) -> None:
    from sparseety_tui.core.report import summary_document

    out = summary_document(_read(_write(tmp_path / "t.jsonl", [LOG])), DEFAULT_SHAPE).to_json()
    assert out["timing"]["queue_s"] == {
        "count": 0, "p50": None, "p95": None, "p99": None, "max": None, "from": {}
    }  # fmt: skip
    assert out["slow"] == {
        "threshold_s": None,
        "requests": 0,
        "by_component": {"queue": 0, "prefill": 0, "decode": 0, "other": 0, "unknown": 0},
    }


def test_the_fast_paths_join_spans_as_the_per_line_parser_does(tmp_path: Path) -> None:
    from test_fast_paths_differential import SCANNERS, documents, fast_paths_off

    spans = [{**SPAN, "request_id": f"r{i}-0000abcd"} for i in range(150, 160)]
    simple = [
        {"request_id": f"r{i}", "prompt_tokens": i, "completion_tokens": 3, "latency_s": 0.5}
        for i in range(300)
    ]
    path = Path(_write(tmp_path / "t.jsonl", [*spans, *simple, *spans[:2]]))
    fast = documents(path)
    with fast_paths_off((*SCANNERS, "decode_simple_block")):
        per_line = documents(path)
    assert fast == per_line
    assert len(per_line[1]) == 300  # each span joined its request: one row each
    joined = orjson.loads(per_line[1][5])  # the spans' rows come first
    assert joined["request_id"] == "r155-0000abcd" and joined["timing"]["queue_s"] == 8.25
    assert joined["prompt_tokens"] == 155 and joined["timing_from"]["latency_s"] == "trace"


def test_the_summary_view_has_a_timing_line_only_when_a_part_is_known(tmp_path: Path) -> None:
    from rich.console import Console

    from sparseety_tui.cli.summary_view import render_summary
    from sparseety_tui.core.report import summary_document

    def shown(records: list[dict[str, Any]], name: str) -> str:
        document = summary_document(_read(_write(tmp_path / name, records)), DEFAULT_SHAPE)
        console = Console(width=200, record=True, color_system=None)
        console.print(render_summary(document.to_json()))
        return console.export_text()

    slow = {**LOG, "request_id": "x", "latency_s": 20.0, "queue_s": 18.0}
    text = shown(
        [SPAN, LOG, *[{**LOG, "request_id": f"q{i}", "latency_s": 1.0} for i in range(30)], slow],
        "a.jsonl",
    )
    line = next(line for line in text.splitlines() if line.startswith("timing: "))
    assert line == (
        "timing: queue p95 18.000 s, prefill p95 0.250 s, decode p95 0.500 s, inference p95 "
        "0.750 s; over p95 latency 9.000 s: 1 (queue 1)"
    )
    assert "timing: " not in shown([LOG, {"request_id": "r", "latency_s": 1.0}], "b.jsonl")


def test_engine_state_at_arrival_reads_sglangs_queue(tmp_path: Path) -> None:
    """SGLang's ``#queue-req`` is its waiting queue: the engine state at arrival says it."""
    stats = [
        "[2026-11-30 12:00:00 TP0] Decode batch, #running-req: 9, #token: 48687, token usage:"
        " 0.24, cuda graph: True, gen throughput (token/s): 466.96, #queue-req: 194",
    ]
    log = tmp_path / "sglang.log"
    log.write_text("\n".join(stats) + "\n")
    trace = _write(
        tmp_path / "spans.jsonl",
        [{**SPAN, "request_id": "r1", "received_ts": "2026-11-30T12:00:05Z"}],
    )
    record = _records(_read(str(log), trace))["r1"]
    why = record["why"]
    assert why["component"] == "queue"
    assert why["engine"]["waiting"] == 194 and why["engine"]["running"] == 9
    assert "arrived behind 194 waiting" in record["why_text"]
