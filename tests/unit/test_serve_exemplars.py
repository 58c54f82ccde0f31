"""Exemplars of `serve`'s timing histograms: each bucket names its slowest recent request,
chunk by chunk as on one pass; labels stay within OpenMetrics' 128 characters whatever the
ids hold, and prometheus-client's own OpenMetrics parser reads the exposition back; the
plain text format carries none; a request whose figure is unknown is not observed."""

from __future__ import annotations

import math
import random
from pathlib import Path
from typing import Any

import numpy as np
import orjson
import pytest
from prometheus_client.exposition import generate_latest as text_latest
from prometheus_client.openmetrics.exposition import generate_latest as om_latest
from prometheus_client.openmetrics.parser import text_string_to_metric_families
from prometheus_client.registry import CollectorRegistry

from sparseety_tui.core.extraction._extractor import Extractor
from sparseety_tui.core.figures._costmodel import DEFAULT_SHAPE
from sparseety_tui.core.store import FrozenExtractor
from sparseety_tui.ingest.batch import ingest_file
from sparseety_tui.serve.exemplars import (
    LABEL_CHARS,
    RECENT_S,
    BucketPicks,
    clean,
    exemplar_labels,
)
from sparseety_tui.serve.metrics import TTFT_BUCKETS, SparseetyCollector

BOUNDS = (0.1, 1.0, 10.0)
T0 = 1_750_000_000.0
TRACE_ID = "0af7651916cd43dd8448eb211c80319c"


def brute_force(values: list[float], times: list[float]) -> list[int | None]:
    """The exemplar row of each bucket by the definition: of the bucket's requests within
    RECENT_S of its newest (unknown time: -inf), the largest value."""
    out: list[int | None] = []
    for b in range(len(BOUNDS) + 1):
        low = BOUNDS[b - 1] if b else -math.inf
        high = BOUNDS[b] if b < len(BOUNDS) else math.inf
        rows = [i for i, v in enumerate(values) if not math.isnan(v) and low < v <= high]
        if not rows:
            out.append(None)
            continue
        t = [-math.inf if math.isnan(times[i]) else times[i] for i in rows]
        recent = [r for r, x in zip(rows, t) if x >= max(t) - RECENT_S]
        out.append(max(recent, key=lambda r: values[r]))
    return out


def picks(values: list[float], times: list[float], chunk: int) -> list[int | None]:
    found = BucketPicks(BOUNDS)
    for first in range(0, len(values), chunk):
        last = first + chunk
        found.add(
            np.asarray(values[first:last]),
            np.asarray(times[first:last]),
            np.arange(first, min(last, len(values))),
        )
    return [None if p is None else p.row for p in found.picks()]


@pytest.mark.parametrize("seed", range(6))
@pytest.mark.parametrize("chunk", [1, 7, 10_000])
def test_each_bucket_names_its_slowest_recent_request(seed: int, chunk: int) -> None:
    rng = random.Random(seed)
    n = 400
    values = [rng.choice([math.nan, rng.uniform(0, 12)]) for _ in range(n)]
    times = [rng.choice([math.nan, T0 + rng.uniform(0, 4 * RECENT_S)]) for _ in range(n)]
    if seed == 0:
        times = [math.nan] * n  # no time known: the largest of each bucket
    assert picks(values, times, chunk) == brute_force(values, times)


def test_an_old_slow_request_gives_way_to_the_recent_slowest() -> None:
    values = [9.0, 2.0, 3.0, 2.5]
    times = [T0, T0 + RECENT_S + 10, T0 + RECENT_S + 20, T0 + RECENT_S + 30]
    assert picks(values, times, 1) == [None, None, 2, None]
    assert picks(values[:1], times[:1], 1) == [None, None, 0, None]


def test_labels_fit_openmetrics_and_keep_what_fits() -> None:
    assert exemplar_labels("chat-1", TRACE_ID) == {"request_id": "chat-1", "trace_id": TRACE_ID}
    assert exemplar_labels("chat-1", None) == {"request_id": "chat-1"}
    longest_with_trace = "x" * (LABEL_CHARS - len("request_idtrace_id") - 32)
    assert "trace_id" in exemplar_labels(longest_with_trace, TRACE_ID)
    assert exemplar_labels(longest_with_trace + "y", TRACE_ID) == {
        "request_id": longest_with_trace + "y"
    }
    cut = exemplar_labels("é" * 500, TRACE_ID)["request_id"]
    assert len("request_id") + len(cut) == LABEL_CHARS and cut.endswith("…")
    assert clean("a\ud800b") == "a\ufffdb"
    assert clean('q"\\\n\r\x1b[b]') == "q\ufffd\ufffd\ufffd\r\x1b[b]"


HOSTILE = [
    'quote" back\\slash',
    "new\nline and \r return",
    "\x1b[31mred\x1b[0m [b]markup[/b]",
    '} # {fake="exemplar"} 1 2',
    "ünï😀" * 40,  # 200 characters, 280 bytes
]


def frozen(tmp_path: Path, records: list[dict[str, Any]]) -> FrozenExtractor:
    path = tmp_path / "trace.jsonl"
    path.write_bytes(b"".join(orjson.dumps(r) + b"\n" for r in records))
    extractor = Extractor()
    ingest_file(extractor, str(path))
    return extractor.freeze()


class _Source:
    def __init__(self, state: FrozenExtractor) -> None:
        self.state = state

    def current(self) -> tuple[int, FrozenExtractor]:
        return 1, self.state


def registry(state: FrozenExtractor) -> CollectorRegistry:
    out = CollectorRegistry(auto_describe=False)
    out.register(SparseetyCollector(_Source(state), DEFAULT_SHAPE))
    return out


def records() -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    for i, request_id in enumerate([f"ok-{i}" for i in range(8)] + HOSTILE):
        record: dict[str, Any] = {
            "request_id": request_id,
            "model": "m",
            "prompt_tokens": 10,
            "completion_tokens": 5,
            "received_ts": T0 + i,
            "finished_ts": T0 + i + 1.5,
            "timing_from": "trace",
            "latency_s": 1.5,
        }
        if i % 3:  # the others have no queue figure: never observed as 0
            record["queue_s"] = 0.01 * i
        if i >= 8:  # the hostile ids: each the slowest of a bucket of its own
            record["queue_s"] = TTFT_BUCKETS[12 + i - 8] - 0.5
            record["trace_id"] = TRACE_ID
        out.append(record)
    return out


def test_openmetrics_buckets_carry_exemplars_the_parser_reads(tmp_path: Path) -> None:
    sent = records()
    families = {
        f.name: f
        for f in text_string_to_metric_families(
            om_latest(registry(frozen(tmp_path, sent))).decode()
        )
    }
    queue = families["sparseety_request_queue_seconds"]
    count = next(s.value for s in queue.samples if s.name.endswith("_count"))
    assert count == sum("queue_s" in r for r in sent) < len(sent)
    exemplars = {
        s.exemplar.labels["request_id"]: (s.labels["le"], s.exemplar)
        for s in queue.samples
        if s.exemplar is not None
    }
    for record in sent[8:]:
        request_id = exemplar_labels(record["request_id"], TRACE_ID)["request_id"]
        assert request_id == clean(record["request_id"][: len(request_id) - 1]) + "…" or (
            request_id == clean(record["request_id"])
        )
        le, exemplar = exemplars[request_id]
        assert float(le) == min(b for b in TTFT_BUCKETS if b >= record["queue_s"])
        assert exemplar.value == pytest.approx(record["queue_s"], rel=1e-6)
        assert float(exemplar.timestamp) == record["finished_ts"]
        assert exemplar.labels.get("trace_id") in (TRACE_ID, None)
        assert sum(len(k) + len(v) for k, v in exemplar.labels.items()) <= LABEL_CHARS
    # Latency: one bucket, all requests; its exemplar is the newest of equals.
    latency = [s for s in families["sparseety_request_latency_seconds"].samples if s.exemplar]
    assert [s.exemplar.labels["request_id"] for s in latency] == [
        exemplar_labels(sent[-1]["request_id"], TRACE_ID)["request_id"]
    ]
    # Prefill and decode: no request said them, no observation and no exemplar.
    for name in ("sparseety_request_prefill_seconds", "sparseety_request_decode_seconds"):
        samples = families[name].samples
        assert all(s.value == 0 and s.exemplar is None for s in samples)


def test_the_text_format_has_no_exemplar(tmp_path: Path) -> None:
    text = text_latest(registry(frozen(tmp_path, records())))
    assert b"sparseety_request_queue_seconds_bucket" in text
    assert b" # {" not in text and b"ok-1" not in text and b"request_id" not in text


def test_a_figure_logged_at_a_bound_counts_in_that_bounds_bucket(tmp_path: Path) -> None:
    """The store keeps seconds as float32 (0.1 is 0.10000000149...): compared with the
    float64 bound it would fall in the next bucket; it is the bound as logged."""
    at = TTFT_BUCKETS.index(0.1)
    bound, above = TTFT_BUCKETS[at], TTFT_BUCKETS[at + 1]
    assert float(np.float32(bound)) > bound  # the case: float32 holds it a little above
    sent = [
        {"request_id": f"r{i}", "ttft_s": ttft, "queue_s": ttft, "latency_s": 1.5}
        for i, ttft in enumerate([bound, bound, above])
    ]
    exposition = om_latest(registry(frozen(tmp_path, sent))).decode()
    for family in ("sparseety_ttft_seconds", "sparseety_request_queue_seconds"):
        buckets = {
            s.labels["le"]: s.value
            for f in text_string_to_metric_families(exposition)
            if f.name == family
            for s in f.samples
            if s.name.endswith("_bucket")
        }
        assert buckets[repr(bound)] == 2, (family, buckets)
        assert buckets[repr(above)] == 3
