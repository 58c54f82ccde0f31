"""`summary --json` keeps to docs/summary.schema.json; docs/summary-json.md names every key.

The schema forbids keys it does not list (``additionalProperties: false`` on every object
whose keys are fixed), so a key added to the output without being documented fails here.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest
from cli_helpers import summary_json
from jsonschema import Draft202012Validator

ROOT = Path(__file__).resolve().parents[2]
SCHEMA = json.loads((ROOT / "docs" / "summary.schema.json").read_text())
REAL_LOGS = sorted((ROOT / "tests" / "data" / "real_logs").glob("*.log"))
SAMPLE_LOGS = sorted(p for p in (ROOT / "sample_logs").iterdir() if p.is_file())


def summary_of(capsys: pytest.CaptureFixture[str], *paths: Path) -> dict[str, Any]:
    return summary_json(capsys, *map(str, paths))


def errors_of(document: dict[str, Any]) -> list[str]:
    validator = Draft202012Validator(SCHEMA)
    return [
        f"{'/'.join(map(str, e.absolute_path))}: {e.message}"
        for e in validator.iter_errors(document)
    ]


def test_the_schema_is_a_valid_schema() -> None:
    Draft202012Validator.check_schema(SCHEMA)


@pytest.mark.parametrize("path", REAL_LOGS + SAMPLE_LOGS, ids=lambda p: p.name)
def test_every_log_gives_a_document_the_schema_holds(
    path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert errors_of(summary_of(capsys, path)) == []


def test_all_logs_together(capsys: pytest.CaptureFixture[str]) -> None:
    document = summary_of(capsys, *REAL_LOGS, *SAMPLE_LOGS)
    assert errors_of(document) == []
    # The run covers the optional blocks, so their definitions are exercised too.
    assert document["engine"] is not None and document["experts"] is not None


def test_an_undocumented_key_fails(capsys: pytest.CaptureFixture[str]) -> None:
    document = summary_of(capsys, SAMPLE_LOGS[0])
    document["requests"]["surprise"] = 1
    document["files"][0]["surprise"] = 1
    assert len(errors_of(document)) == 2


def _documented_keys(node: Any) -> set[str]:
    """Every property name the schema declares, at any depth."""
    keys: set[str] = set()
    if isinstance(node, dict):
        for key, value in node.items():
            if key == "properties" and isinstance(value, dict):
                keys.update(value)
            keys |= _documented_keys(value)
    elif isinstance(node, list):
        for item in node:
            keys |= _documented_keys(item)
    return keys


def test_the_docs_name_every_key() -> None:
    page = (ROOT / "docs" / "summary-json.md").read_text()
    section = page.split("## `summary --json`", 1)[1].split("\n## ", 1)[0]
    named = set(re.findall(r"`([a-z_0-9]+)", section))
    assert sorted(_documented_keys(SCHEMA) - named) == []


def test_the_wrapper_names_are_the_schemas() -> None:
    from sparseety_tui.formats._wrappers import WRAPPERS

    enum = SCHEMA["$defs"]["file"]["properties"]["wrapper"]["enum"]
    assert set(enum) == {None} | {kind.name for kind in WRAPPERS}
