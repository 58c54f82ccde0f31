"""Expert load per model, read by forked range workers, is the heat one process gives
(splits by file and model are in tests/unit/test_splits.py)."""

from __future__ import annotations

from pathlib import Path

import pytest
from cli_helpers import summary_json
from splits_helpers import three_models

import sparseety_tui.ingest.parallel as parallel

# -- expert load per model ------------------------------------------------------------------


def test_parallel_read_gives_the_same_per_model_heat(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    # Request records name their model (split exactly), then a token stream whose records
    # name it only in their first line, far from later token events: a later byte range
    # cannot know the model, so the file is read whole rather than counted elsewhere.
    records = three_models(tmp_path)
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
