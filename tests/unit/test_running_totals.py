"""RunningTotals: the totals of a growing store, from the sums of the rows it added up
before, equal compute_totals over every row, byte for byte, and start again whenever the
rows they came from changed."""

from __future__ import annotations

import random
from dataclasses import replace
from typing import Any

import orjson
import pytest

from sparseety_tui.core.extraction._extractor import Extractor
from sparseety_tui.core.figures import _sums
from sparseety_tui.core.figures._costmodel import DEFAULT_SHAPE, ModelShape
from sparseety_tui.core.figures._running_totals import RunningTotals
from sparseety_tui.core.figures._totals import compute_totals
from sparseety_tui.core.store import SEGMENT_ROWS
from sparseety_tui.core.text import json_bytes
from sparseety_tui.ingest.heavy import HeavyJob, run_job
from sparseety_tui.sources import RawLine


def _record(rng: random.Random, rid: int) -> dict[str, Any]:
    rec: dict[str, Any] = {
        "request_id": f"r{rid}",
        "model": rng.choice(["moe-a", "moe-b", "dense"]),
        "prompt_tokens": rng.randint(1, 999),
        "ts": 1_800_000_000 + rid * 0.01,
    }
    if rng.random() < 0.7:
        rec["completion_tokens"] = rng.randint(1, 99)
        rec["latency_s"] = rng.random() * 3
        rec["ttft_s"] = rng.random() / 5
    if rng.random() < 0.3:
        rec["cached_tokens"] = rng.randint(0, rec["prompt_tokens"])
    if rng.random() < 0.1:
        rec["sparse"] = {
            "routing": [[[rng.randint(0, 7), rng.randint(0, 7)]]],
            "moe_layers": [0],
            "topk_experts": 2,
            "total_experts": 8,
        }
    return rec


class _Log:
    def __init__(self) -> None:
        self.extractor = Extractor()
        self.files = [self.extractor.add_file(f"/logs/{name}.jsonl") for name in "ab"]
        self.rng = random.Random(11)
        self.rows = 0
        self.offset = 0

    def feed(self, records: list[dict[str, Any]]) -> None:
        lines = []
        for rec in records:
            data = orjson.dumps(rec)
            lines.append(RawLine(self.offset, len(data) + 1, data, False))
            self.offset += len(data) + 1
        self.extractor.feed(self.files[self.rng.randrange(2)], lines)

    def grow(self, count: int) -> None:
        self.feed([_record(self.rng, self.rows + i) for i in range(count)])
        self.rows += count


def _same(running: RunningTotals, log: _Log, shape: ModelShape = DEFAULT_SHAPE) -> int:
    state = log.extractor.freeze()
    kept, whole = running.compute(state, shape), compute_totals(state, shape)
    # The JSON text ``summary --json`` writes, so that a float that differs in its last
    # bit is a difference; and the typed documents themselves, field by field.
    assert json_bytes(kept.to_json(), orjson.OPT_INDENT_2) == json_bytes(
        whole.to_json(), orjson.OPT_INDENT_2
    )
    assert kept == whole
    return running.reused_rows


def test_running_totals_are_the_totals_of_every_row(monkeypatch: pytest.MonkeyPatch) -> None:
    chunk = SEGMENT_ROWS  # small chunks: several whole ones in a few thousand rows
    monkeypatch.setattr(_sums, "CHUNK_ROWS", chunk)
    log, running = _Log(), RunningTotals()
    assert _same(running, log) == 0  # no row yet
    log.grow(2 * chunk + 300)
    assert _same(running, log) == 0
    log.grow(chunk)  # a third whole chunk: the first two are not added up again
    assert _same(running, log) == 2 * chunk
    log.grow(50)
    assert _same(running, log) == 3 * chunk
    assert _same(running, log) == 3 * chunk  # the same freeze again
    # A late line for a request of the second chunk changes that row in place: its
    # segment is copied at the next freeze, and the sums start again from row 0.
    log.feed([{"request_id": f"r{chunk + 5}", "completion_tokens": 7, "latency_s": 9.5}])
    assert _same(running, log) == 0
    log.grow(chunk)
    assert _same(running, log) == 3 * chunk
    # A late line in the last (partial) chunk: the whole chunks before it are kept.
    log.feed([{"request_id": f"r{log.rows - 3}", "completion_tokens": 1}])
    assert _same(running, log) == 4 * chunk
    # Another model shape costs every row otherwise: nothing is kept.
    other = replace(DEFAULT_SHAPE, name="other", hidden=DEFAULT_SHAPE.hidden * 2)
    assert _same(running, log, other) == 0
    assert _same(running, log, other) == 4 * chunk


def test_the_totals_threads_job_gives_the_totals_of_every_row(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The live totals thread's job (``run_job`` with its ``RunningTotals``) gives the
    typed totals ``compute_totals`` gives, freeze after freeze."""
    monkeypatch.setattr(_sums, "CHUNK_ROWS", SEGMENT_ROWS)
    log, running = _Log(), RunningTotals()
    for count in (SEGMENT_ROWS + 7, SEGMENT_ROWS, 3):
        log.grow(count)
        state = log.extractor.freeze()
        result = run_job(HeavyJob(state, DEFAULT_SHAPE, totals=True, query=None), running)
        assert result.error is None and result.totals is not None
        whole = compute_totals(state, DEFAULT_SHAPE)
        assert result.totals == whole
        assert json_bytes(result.totals.to_json()) == json_bytes(whole.to_json())
    assert running.reused_rows == 2 * SEGMENT_ROWS  # the last job started from the sums


def test_a_store_that_is_not_the_same_one_is_added_up_anew(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(_sums, "CHUNK_ROWS", SEGMENT_ROWS)
    running = RunningTotals()
    first, second = _Log(), _Log()
    first.grow(2 * SEGMENT_ROWS + 1)
    second.grow(3 * SEGMENT_ROWS + 1)  # a replay's seek: a new store, more rows
    assert _same(running, first) == 0
    assert _same(running, second) == 0
    assert _same(running, first) == 0
