"""docs/grafana/sparseety-dashboard.json: current with its generator, its rows, and panels
that follow the dashboard's variables (its metrics and PromQL against a running `serve` and
promtool are in tests/integration/test_grafana_promtool.py)."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path
from types import ModuleType

import pytest

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "scripts" / "make_grafana_dashboard.py"
DASHBOARD = ROOT / "docs" / "grafana" / "sparseety-dashboard.json"


def generator() -> ModuleType:
    spec = importlib.util.spec_from_file_location("make_grafana_dashboard", SCRIPT)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_committed_dashboard_is_what_the_script_writes() -> None:
    assert DASHBOARD.read_bytes() == generator().render()


def test_rows_cover_the_issue() -> None:
    panels = json.loads(DASHBOARD.read_text())["panels"]
    rows = [p["title"] for p in panels if p["type"] == "row"]
    assert rows == [
        "Traffic",
        "Latency and time to first token",
        "Skip composition",
        "Expert imbalance",
        "Engine",
        "Errors and lines",
    ]


@pytest.mark.parametrize("variable", ["$job", "$instance", "$model"])
def test_panels_follow_the_variables(variable: str) -> None:
    exprs = generator().expressions(json.loads(DASHBOARD.read_text()))
    if variable == "$model":
        assert sum(variable in e for e in exprs) >= 10
    else:
        assert all(variable in e for e in exprs)
