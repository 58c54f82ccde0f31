"""The demo replayer: finds samples, writes only to a temporary directory, keeps pace."""

from __future__ import annotations

import hashlib
import json
import time
from pathlib import Path

import pytest
from apphelpers import DATA, REPO

from sparseety_tui.ingest import replay


def digest(directory: Path) -> str:
    h = hashlib.sha256()
    for path in sorted(directory.rglob("*")):
        if path.is_file():
            h.update(path.name.encode() + path.read_bytes())
    return h.hexdigest()


def test_demo_replays_into_temp_logs_only(tmp_path: Path) -> None:
    samples = REPO / DATA
    before = digest(samples)
    plan = replay.plan(samples, tmp_path / "out")
    assert {p.parent for p in plan.outputs.values()} == {tmp_path / "out"}
    assert "trace" in plan.outputs and "vllm" in plan.outputs
    replayer = replay.Replayer(plan, rate=400, burst=50)
    replayer.start()
    try:
        deadline = time.monotonic() + 10
        while replayer.written < 120 and time.monotonic() < deadline:
            time.sleep(0.05)
    finally:
        replayer.stop()
    assert replayer.written >= 120
    trace = plan.outputs["trace"].read_text().splitlines()
    records = [json.loads(line) for line in trace if '"request_id"' in line]
    assert records and all(
        abs(r.get("ts", time.time()) - time.time()) < 3600
        for r in records
        if isinstance(r.get("ts"), float)
    )
    assert digest(samples) == before  # the samples are never written to


def test_demo_without_samples_says_where_it_looked(tmp_path: Path) -> None:
    with pytest.raises(replay.DemoError, match="sample logs not found"):
        replay.plan(tmp_path / "missing")


def test_retime_moves_timestamps_and_suffixes_ids() -> None:
    line = b'{"request_id": "a", "ts": 100.0, "received_ts": 98.5, "latency_s": 1.5}'
    out = json.loads(replay.retime(line, 1000.0, "-2"))
    assert out == {"request_id": "a-2", "ts": 1000.0, "received_ts": 998.5, "latency_s": 1.5}
    assert replay.retime(b"not json", 1.0, "") == b"not json"
