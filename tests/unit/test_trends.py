"""core.figures on real logs: per-minute figures recomputed here from the store's rows and the
engine's stats lines with plain numpy, gaps as None, counts 0 only inside the input's span."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from sparseety_tui.core.figures._trends import Trends, compute_trends
from sparseety_tui.core.store._frozen import FrozenExtractor
from sparseety_tui.ingest.batch import Options, ingest_paths

REAL = Path(__file__).resolve().parents[1] / "data" / "real_logs"
SAMPLES = Path(__file__).resolve().parents[2] / "sample_logs"
SGLANG = REAL / "sglang_docsci_20260405_native_api_latest.log"
SGLANG_PREFILL = REAL / "sglang_0.5_prefill_no_tp_prefix_trailing_comma_13023.log"
VLLM_STATS = REAL / "vllm_0.5.4_idle_metrics_406_6689.log"
VLLM_RECEIVED = REAL / "vllm_0.8_v0_cpu_received_added_metrics_uvicorn_17954.log"
COUNTS = SAMPLES / "count_only_500.jsonl"


def state_of(*paths: Path) -> FrozenExtractor:
    return ingest_paths(Options(), [str(p) for p in paths]).freeze()


def values(trends: Trends, key: str, name: str) -> tuple[float | None, ...]:
    return next(line.values for line in trends.get(key).lines if line.name == name)


def names(trends: Trends, key: str) -> list[str]:
    return [line.name for line in trends.get(key).lines]


def ends(state: FrozenExtractor) -> tuple[Any, Any, Any]:
    """Each request's end (finish, else arrival + latency), latency and TTFT, as the test
    reads them from the store."""
    cols = state.store.numeric_view()
    finished, received, latency = cols["finished_ts"], cols["received_ts"], cols["latency_s"]
    end = np.where(np.isnan(finished), received + latency, finished)
    return end, latency, cols["ttft_s"]


def expected_quantiles(
    minutes: Sequence[int], end: Any, metric: Any, q: float
) -> list[float | None]:
    out: list[float | None] = []
    for minute in minutes:
        inside = (end >= minute) & (end < minute + 60) & ~np.isnan(metric)
        chosen = metric[inside].astype(np.float64)
        # nearest rank: numpy's inverted CDF
        out.append(float(np.quantile(chosen, q, method="inverted_cdf")) if chosen.size else None)
    return out


@pytest.mark.parametrize("path", [SGLANG, COUNTS], ids=["sglang-real", "count-only-500"])
def test_latency_and_ttft_percentiles_per_minute_match_numpy(path: Path) -> None:
    state = state_of(path)
    trends = compute_trends(state)
    end, latency, ttft = ends(state)
    assert trends.minutes
    assert all(b - a == 60 for a, b in zip(trends.minutes, trends.minutes[1:]))
    for key, metric in (("latency", latency), ("ttft", ttft)):
        for name, q in (("p50", 0.5), ("p95", 0.95), ("p99", 0.99)):
            got = values(trends, key, name)
            want = expected_quantiles(trends.minutes, end, metric, q)
            assert got == pytest.approx(want), (key, name)


def test_sglang_real_log_minutes_without_requests_are_gaps_not_zeros() -> None:
    state = state_of(SGLANG)
    trends = compute_trends(state)
    latency = values(trends, "latency", "p99")
    # Two requests, minutes apart: the minutes between have no latency (None), while the
    # request rate there is a true 0 (the log covers those minutes).
    known = [i for i, v in enumerate(latency) if v is not None]
    assert len(known) == 2 and known[1] - known[0] > 1
    gap = range(known[0] + 1, known[1])
    assert all(latency[i] is None for i in gap)
    finished = values(trends, "requests", "finished")
    assert all(finished[i] == 0.0 for i in gap)
    assert finished[known[0]] == pytest.approx(1 / 60)
    # TTFT was never logged: the whole trend is unknown, not 0.
    assert not trends.get("ttft").known


def test_vllm_real_log_engine_throughput_per_minute_and_no_made_up_requests() -> None:
    state = state_of(VLLM_STATS)
    trends = compute_trends(state)
    points = list(state.engine.points)
    assert len(trends.minutes) == 2
    for key, name, field, scale in (
        ("tokens", "gen", "generation_throughput", 1.0),
        ("queue", "waiting", "waiting", 1.0),
        ("kv", "KV", "kv_usage", 100.0),
    ):
        want = []
        for minute in trends.minutes:
            inside = [p[field] for p in points if minute <= p["ts"] < minute + 60]
            want.append(scale * float(np.mean(inside)))
        assert list(values(trends, key, name)) == pytest.approx(want)
    assert trends.get("tokens").source == "engine stats"
    # No request line in this log: no request rate at all (not a line at 0), no latency.
    assert trends.get("requests").lines == ()
    assert not trends.get("latency").known


def test_vllm_request_without_finish_counts_as_received_only() -> None:
    state = state_of(VLLM_RECEIVED)
    trends = compute_trends(state)
    assert names(trends, "requests") == ["received"]
    received = values(trends, "requests", "received")
    assert sum(v * 60 for v in received if v is not None) == pytest.approx(len(state.store))
    assert "finish times not logged" in trends.get("requests").source


def test_sglang_prefill_cache_rate_from_engine_token_counts() -> None:
    state = state_of(SGLANG_PREFILL)
    trends = compute_trends(state)
    cache = trends.get("cache")
    assert cache.source.startswith("engine cached")
    want: list[float | None] = []
    for minute in trends.minutes:
        inside = [p for p in state.engine.points if minute <= p.get("ts", -1) < minute + 60]
        cached = sum(p.get("cached_tokens", 0) for p in inside)
        new = sum(p.get("new_tokens", 0) for p in inside)
        want.append(100.0 * cached / (cached + new) if cached + new else None)
    assert list(cache.lines[0].values) == pytest.approx(want)
    assert names(trends, "queue") == ["queue-req"]
    # No input throughput in these prefill lines: prefill tokens/s is #new-token / 60.
    prefill = values(trends, "tokens", "prefill")
    for i, minute in enumerate(trends.minutes):
        inside = [p for p in state.engine.points if minute <= p.get("ts", -1) < minute + 60]
        assert prefill[i] == pytest.approx(sum(p.get("new_tokens", 0) for p in inside) / 60)
    assert "#new-token / 60" in trends.get("tokens").source


def test_request_cache_rate_and_request_tokens_per_minute() -> None:
    state = state_of(COUNTS)
    trends = compute_trends(state)
    cols = state.store.numeric_view()
    end, _, _ = ends(state)
    rate = values(trends, "cache", "hit")
    gen = values(trends, "tokens", "gen")
    assert trends.get("tokens").source.startswith("tokens of requests finished")
    finished = cols["finished_ts"]
    for i, minute in enumerate(trends.minutes):
        inside = (end >= minute) & (end < minute + 60)
        both = inside & ~np.isnan(cols["cached_tokens"]) & ~np.isnan(cols["prompt_tokens"])
        want = 100 * cols["cached_tokens"][both].sum() / cols["prompt_tokens"][both].sum()
        assert rate[i] == pytest.approx(want)
        by_finish = (finished >= minute) & (finished < minute + 60)
        tokens = cols["completion_tokens"][by_finish]
        assert gen[i] == pytest.approx(np.nansum(tokens) / 60)


def test_window_and_filtered_rows() -> None:
    state = state_of(COUNTS)
    whole = compute_trends(state)
    first, last = whole.minutes[0], whole.minutes[-1]
    window = compute_trends(state, since=first + 60, until=last - 1)
    assert window.minutes == whole.minutes[1:-1]
    assert values(window, "latency", "p50") == values(whole, "latency", "p50")[1:-1]
    rows = np.arange(0, len(state.store), 2)
    half = compute_trends(state, rows=rows)
    counted = sum(v * 60 for v in values(half, "requests", "received") if v is not None)
    received = state.store.numeric_view()["received_ts"][rows]
    assert counted == pytest.approx(int((~np.isnan(received)).sum()))


def test_minute_cap_keeps_the_latest_and_says_how_many_were_left_out() -> None:
    state = state_of(COUNTS)
    whole = compute_trends(state)
    capped = compute_trends(state, max_minutes=2)
    assert capped.minutes == whole.minutes[-2:]
    assert capped.older_minutes == len(whole.minutes) - 2
    assert values(capped, "latency", "p99") == values(whole, "latency", "p99")[-2:]


def test_errors_per_minute_are_the_error_records_of_each_minute() -> None:
    """A real SGLang log with KV transfer failures, tracebacks and a router's HTTP 500s:
    each minute's errors and 5xx are its error records, counted here from the records."""
    state = state_of(
        REAL / "sglang_0.5.8_pd_prefill_decode_transfer_failed_mooncake_tp16_2node_slurmv4.log"
    )
    trends = compute_trends(state)
    expected: dict[int, list[int]] = {}
    for record in state.error_log.records:
        assert record.ts is not None
        counts = expected.setdefault(int(record.ts // 60) * 60, [0, 0])
        counts[record.kind == "http_5xx"] += 1
    assert sum(c[1] for c in expected.values()) > 0  # the log has 5xx lines
    errors, http = values(trends, "errors", "errors"), values(trends, "errors", "5xx")
    for i, minute in enumerate(trends.minutes):
        other, five = expected.get(minute, [0, 0])
        assert (errors[i], http[i]) == (other, five)  # a minute without any: a true 0


def test_nothing_timestamped_gives_no_minutes() -> None:
    trends = compute_trends(state_of(SAMPLES / "two_records.jsonl"))
    assert trends.minutes == () and trends.trends == ()


def test_requests_without_a_time_leave_the_cache_rate_to_the_engine() -> None:
    """This SGLang log's two requests report cached and prompt tokens but no time: they
    cannot make a minute's rate, so the engine's prefill counts do (not a plot of gaps)."""
    path = REAL / "sglang_docsci_20250630_native_api_prefill_token_field_expert_pt.log"
    state = state_of(path)
    cols = state.store.numeric_view()
    assert (~np.isnan(cols["cached_tokens"]) & ~np.isnan(cols["prompt_tokens"])).any()
    cache = compute_trends(state).get("cache")
    assert cache.source.startswith("engine cached") and cache.known


TIMING = Path("tests/app/data/timing.jsonl")


def test_parts_p95_per_minute_match_numpy_and_say_nothing_without_parts() -> None:
    state = state_of(TIMING)
    trends = compute_trends(state)
    end, _, _ = ends(state)
    cols = state.store.numeric_view()
    assert names(trends, "parts") == ["queue", "prefill", "decode"]
    for name in ("queue", "prefill", "decode"):
        want = expected_quantiles(trends.minutes, end, cols[f"{name}_s"], 0.95)
        assert values(trends, "parts", name) == pytest.approx(want), name
    # The spike: queue p95 above a second in its minutes, under 0.1 s outside them.
    queue = values(trends, "parts", "queue")
    assert max(v for v in queue if v is not None) > 5 > 0.1 > (queue[0] or 0)
    # A log that never says where its time went has no line to draw (not a line at 0).
    assert compute_trends(state_of(COUNTS)).get("parts").lines == ()
