"""Expert load per model, read by forked range workers, is the heat one process gives
(splits by file and model are in tests/unit/test_splits.py)."""

from __future__ import annotations

import itertools
import random
from pathlib import Path

import orjson
import pytest
from cli_helpers import summary_json

import sparseety_tui.ingest.parallel as parallel

# -- expert load per model ------------------------------------------------------------------


def _model_records(model: str, experts: int, requests: int) -> list[bytes]:
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


def _three_models(tmp_path: Path) -> Path:
    """An 8-, a 128- and a 256-expert model in one trace: the 8-expert model's many
    requests land on ids 0-7, which the bigger models have too."""
    lines = (
        _model_records("small-8e", 8, 64)
        + _model_records("mid-128e", 128, 16)
        + _model_records("big-256e", 256, 16)
    )
    random.Random(4).shuffle(lines)
    path = tmp_path / "mixed.jsonl"
    path.write_bytes(b"\n".join(lines) + b"\n")
    return path


def test_parallel_read_gives_the_same_per_model_heat(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    # Request records name their model (split exactly), then a token stream whose records
    # name it only in their first line, far from later token events: a later byte range
    # cannot know the model, so the file is read whole rather than counted elsewhere.
    records = _three_models(tmp_path)
    stream = tmp_path / "stream.jsonl"
    lines = [b'{"request_id": "t1", "model": "streamed", "prompt": "x"}']
    lines += [b'{"request_id": "pad-%d", "model": "other"}' % i for i in range(300)]
    lines += [
        b'{"type": "token", "request_id": "t1", "pos": %d, "experts": [[%d, 1]]}' % (i, i % 4)
        for i in range(40)
    ]
    stream.write_bytes(b"\n".join(lines) + b"\n")
    for path in (records, stream):
        single = summary_json(capsys, "--jobs", "1", str(path))
        with monkeypatch.context() as patched:
            patched.setattr(parallel, "PARALLEL_MIN_BYTES", 1)
            split = summary_json(capsys, "--jobs", "3", str(path))
        assert split["experts"] == single["experts"]
        assert split == single
    assert list(single["experts"]["by_model"]) == ["streamed"]
    assert single["experts"]["total"] == 80
