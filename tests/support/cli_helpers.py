"""Running the batch commands in-process as a user would, for tests (imported by test
modules of any tier: pyproject.toml puts tests/support on sys.path)."""

from __future__ import annotations

import random
from typing import Any

import orjson
import pytest

from sparseety_tui.cli.main import run


def summary_json(capsys: pytest.CaptureFixture[str], *args: str) -> dict[str, Any]:
    """``summary --json ARGS...``, which must succeed, as a dict."""
    assert run(["summary", "--json", *args]) == 0
    document: dict[str, Any] = orjson.loads(capsys.readouterr().out)
    return document


def extract_records(capsys: pytest.CaptureFixture[str], *args: str) -> list[dict[str, Any]]:
    """``extract ARGS...``, which must succeed, as its records."""
    assert run(["extract", *args]) == 0
    return [orjson.loads(line) for line in capsys.readouterr().out.splitlines() if line]


def count_only(n: int, seed: int = 7) -> bytes:
    """``n`` JSONL records that carry counts only (no text), the same for the same ``seed``."""
    rng = random.Random(seed)
    lines = []
    for i in range(1, n + 1):
        record: dict[str, Any] = {
            "request_id": f"req-{i:04d}",
            "prompt_tokens": rng.randint(1, 4000),
            "completion_tokens": rng.randint(1, 800),
            "sparse": {
                "topk_experts": rng.choice([1, 2, 4]),
                "total_experts": 8,
                "skipped_attention_heads": rng.randint(0, 8),
            },
        }
        if i % 3 == 0:
            record["cached_tokens"] = rng.randint(0, record["prompt_tokens"])
        if i % 2 == 0:
            record["latency_s"] = round(rng.uniform(0.1, 9), 3)
            record["ttft_s"] = round(rng.uniform(0.01, 0.5), 3)
            record["ts"] = 1796040000 + i
        lines.append(orjson.dumps(record))
    return b"\n".join(lines) + b"\n"
