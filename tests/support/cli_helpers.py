"""Running the batch commands in-process as a user would, for tests (imported by test
modules of any tier: pyproject.toml puts tests/support on sys.path)."""

from __future__ import annotations

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
