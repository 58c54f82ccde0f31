"""A trace of three models with 8, 128 and 256 experts, shared by the unit and the parallel
(integration) halves of the split tests."""

from __future__ import annotations

import itertools
import random
from pathlib import Path

import orjson


def model_records(model: str, experts: int, requests: int) -> list[bytes]:
    """Requests of one model whose routing spreads evenly over its ``experts``: top 2 in
    each of two MoE layers, each layer a round robin of its own."""
    layers = (itertools.cycle(range(experts)), itertools.cycle(range(experts)))
    out = []
    for n in range(requests):
        tokens = [[[next(ids), next(ids)] for ids in layers] for _ in range(8)]
        record = {
            "request_id": f"{model}-{n}",
            "model": model,
            "prompt_tokens": 4,
            "completion_tokens": 4,
            "sparse": {"moe_layers": [3, 5], "routing": tokens},
        }
        out.append(orjson.dumps(record))
    return out


def three_models(tmp_path: Path) -> Path:
    """An 8-, a 128- and a 256-expert model in one trace: the 8-expert model's many
    requests land on ids 0-7, which the bigger models have too."""
    lines = (
        model_records("small-8e", 8, 64)
        + model_records("mid-128e", 128, 16)
        + model_records("big-256e", 256, 16)
    )
    random.Random(4).shuffle(lines)
    path = tmp_path / "mixed.jsonl"
    path.write_bytes(b"\n".join(lines) + b"\n")
    return path
