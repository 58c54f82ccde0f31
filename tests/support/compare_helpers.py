"""Trace files for the compare, plot and replay tests (imported by test modules)."""

from __future__ import annotations

import random
from pathlib import Path
from typing import Any

import orjson

#: 2026-11-30T12:00:00Z, the samples' base time.
BASE_TS = 1796040000.0


def trace_records(
    n: int = 200,
    topk: int = 8,
    experts: int = 8,
    seed: int = 1,
    latency_shift: float = 0.0,
    id_prefix: str = "req",
    start: float = BASE_TS,
    with_prompt: bool = False,
) -> list[dict[str, Any]]:
    """``n`` request records, the same workload for every ``topk`` (the seed draws the
    counts and base latencies; ``latency_shift`` is added to every latency)."""
    rng = random.Random(seed)
    out = []
    at = start
    for i in range(n):
        at += rng.uniform(0.5, 1.5)
        prompt = rng.randint(20, 400)
        completion = rng.randint(5, 120)
        cached = rng.choice((0, 0, 16, 32))
        latency = rng.uniform(0.2, 3.0) * (0.6 + 0.4 * topk / experts)
        record: dict[str, Any] = {
            "request_id": f"{id_prefix}-{i:04d}",
            "prompt_tokens": prompt,
            "completion_tokens": completion,
            "cached_tokens": cached,
            "latency_s": round(latency + latency_shift, 3),
            "ttft_s": round(latency / 8, 3),
            "received_ts": round(at, 3),
            "finished_ts": round(at + latency + latency_shift, 3),
            "model": "tiny-moe",
            "sparse": {"topk_experts": topk, "total_experts": experts},
        }
        if with_prompt:
            record["prompt"] = f"prompt number {i} of seed {seed}"
        out.append(record)
    return out


def write_trace(path: Path, records: list[dict[str, Any]]) -> Path:
    path.write_bytes(b"".join(orjson.dumps(r) + b"\n" for r in records))
    return path


#: An email planted in request ids, which --redact must keep from leaving the tool.
EMAIL = "ann.lee@example.com"


def sides(tmp_path: Path) -> tuple[str, str]:
    """The same 20 requests, ids carrying an email; the candidate 0.5 s slower (so every
    pair is a regression and its ids are listed)."""
    base = write_trace(tmp_path / "base.jsonl", trace_records(n=20, id_prefix=EMAIL))
    cand = write_trace(
        tmp_path / "cand.jsonl", trace_records(n=20, id_prefix=EMAIL, latency_shift=0.5)
    )
    return str(base), str(cand)
