"""`/metrics` over HTTP as Prometheus asks for it: OpenMetrics with exemplars when the
`Accept` header asks (Prometheus' own header), the plain text format without; the queue,
prefill and decode histograms count what `summary --json` counts; each exemplar is a real
request of its bucket, the slowest of the bucket's recent ones, as `/requests` gives them."""

from __future__ import annotations

import math
import shutil
from collections import defaultdict
from pathlib import Path
from typing import Any

import numpy as np
import orjson
from prometheus_client.openmetrics.parser import text_string_to_metric_families
from serve_helpers import serving

from sparseety_tui.serve.exemplars import RECENT_S, exemplar_labels
from sparseety_tui.serve.metrics import TIMING_HISTOGRAMS

ROOT = Path(__file__).resolve().parents[2]
#: What Prometheus 2.x sends on every scrape.
PROMETHEUS_ACCEPT = (
    "application/openmetrics-text;version=1.0.0,application/openmetrics-text;version=0.0.1;"
    "q=0.75,text/plain;version=0.0.4;q=0.5,*/*;q=0.1"
)


def figure(record: dict[str, Any], column: str) -> float | None:
    value = record["timing"].get(column)
    return None if value is None else float(value)


def stored(value: float) -> float:
    """``value`` as a float32 holds it: the histograms compare a float32 column's figure
    with the bounds as float32 too, so a 0.1 logged counts in ``le="0.1"``."""
    return float(np.float32(value))


def when(record: dict[str, Any]) -> float:
    """The request's time as the exemplars order them (-inf: unknown)."""
    for key in ("finished_ts", "received_ts"):
        if record[key] is not None:
            return float(record[key])
    return -math.inf


def test_openmetrics_exemplars_name_each_buckets_slowest_recent_request(
    tmp_path: Path,
) -> None:
    logs = []
    for source in (
        ROOT / "sample_logs/count_only_500.jsonl",
        ROOT / "tests/data/otlp/vllm_spans.jsonl",
    ):
        shutil.copy(source, tmp_path / source.name)
        logs.append(str(tmp_path / source.name))
    with serving(logs) as server:
        plain = server.get("/metrics")
        om = server.get("/metrics", headers={"Accept": PROMETHEUS_ACCEPT})
        summary = server.get("/summary").json()
        records = [
            orjson.loads(line) for line in server.get("/requests?limit=100000").body.splitlines()
        ]
    assert plain.headers["content-type"] == "text/plain; version=0.0.4; charset=utf-8"
    assert b" # {" not in plain.body and b"request_id" not in plain.body
    assert om.headers["content-type"].startswith("application/openmetrics-text; version=1.0.0")
    assert om.body.endswith(b"# EOF\n")
    families = {f.name: f for f in text_string_to_metric_families(om.body.decode())}
    assert len(records) == summary["requests"]["count"] == 506

    by_group: dict[tuple[str, str], list[dict[str, Any]]] = defaultdict(list)
    for record in records:
        by_group[
            (str(Path(record["source"]["file"]).resolve()), record["model"] or "unknown model")
        ].append(record)
    seen = 0
    for name, column, bounds, _ in TIMING_HISTOGRAMS:
        samples = families[name].samples
        count = sum(s.value for s in samples if s.name.endswith("_count"))
        assert count == summary["timing"][column]["count"]  # unknown is never observed
        for sample in samples:
            if not sample.name.endswith("_bucket"):
                continue
            le = float(sample.labels["le"])
            low = max((b for b in bounds if b < le), default=-math.inf)
            group = by_group[(sample.labels["file"], sample.labels["model"])]
            inside = [
                r
                for r in group
                if (v := figure(r, column)) is not None and stored(low) < stored(v) <= stored(le)
            ]
            exemplar = sample.exemplar
            assert (exemplar is None) == (not inside), (name, sample.labels)
            if exemplar is None:
                continue
            newest = max(when(r) for r in inside)
            recent = [r for r in inside if when(r) >= newest - RECENT_S]
            slowest = max(figure(r, column) or 0.0 for r in recent)
            ids = {
                exemplar_labels(r["request_id"], r["trace"]["trace_id"])["request_id"]: r
                for r in recent
                if figure(r, column) == slowest
            }
            record = ids[exemplar.labels["request_id"]]
            assert exemplar.value == slowest
            assert exemplar.labels.get("trace_id") == record["trace"]["trace_id"]
            stamp = when(record)
            assert (exemplar.timestamp is None) == (stamp == -math.inf)
            if exemplar.timestamp is not None:
                assert abs(float(exemplar.timestamp) - stamp) < 0.002
            seen += 1
    assert seen > 20
    # The spans' figures show in the new histograms, the trace's only in latency and TTFT.
    assert summary["timing"]["queue_s"]["count"] == 6
