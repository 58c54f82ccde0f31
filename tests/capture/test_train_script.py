"""scripts/train_tiny_moe.py (the sample model's training) runs, and the sample model
loads its output and samples only the ids it was trained on."""

from __future__ import annotations

import json
import math
import sys
from pathlib import Path

SCRIPTS = Path(__file__).resolve().parents[2] / "scripts"


def test_a_few_training_steps_write_weights_the_sample_model_loads(tmp_path: Path) -> None:
    sys.path.insert(0, str(SCRIPTS))
    import tiny_moe
    import train_tiny_moe

    assert train_tiny_moe.main(["--out", str(tmp_path), "--steps", "3"]) == 0
    info = json.loads((tmp_path / "train.json").read_text())
    assert info["steps"] == 3 and info["corpus_tokens"] > 100_000
    assert math.isfinite(info["loss_first"]) and info["loss_first"] < 1.1 * math.log(
        len(info["used_ids"])
    )
    tiny = tiny_moe.TinyMoe(tmp_path)
    assert tiny.name == tiny_moe.TRAINED_NAME
    gen = tiny.generate(tiny.encode("Return the number of"), 6)
    assert set(gen.completion_ids) <= set(info["used_ids"]) - set(tiny.special_ids)
    assert len(gen.routing) == len(gen.prompt_ids) + len(gen.completion_ids) - 1
