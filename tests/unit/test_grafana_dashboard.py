"""docs/grafana/sparseety-dashboard.json: current with its generator, its rows, and panels
that follow the dashboard's variables (its metrics and PromQL against a running `serve` and
promtool are in tests/integration/test_grafana_promtool.py)."""

from __future__ import annotations

import json

import pytest
from grafana_helpers import DASHBOARD, generator


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
