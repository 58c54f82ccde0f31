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
        "Where the time went",
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


def test_timing_panels_show_exemplars() -> None:
    """Each panel of a timing histogram asks for exemplars on one target (its p95)."""
    panels = json.loads(DASHBOARD.read_text())["panels"]
    timing = (
        "sparseety_request_latency_seconds",
        "sparseety_ttft_seconds",
        "sparseety_request_queue_seconds",
        "sparseety_request_prefill_seconds",
        "sparseety_request_decode_seconds",
    )
    shown: dict[str, list[str]] = {}
    for panel in panels:
        for target in panel.get("targets", []):
            if target.get("exemplar"):
                shown.setdefault(panel["title"], []).append(target["expr"])
    assert sorted(shown) == sorted(
        ["End-to-end latency quantiles", "TTFT quantiles"]
        + [f"{part} time p95" for part in ("Queue", "Prefill", "Decode")]
    )
    for metric in timing:
        (panel,) = [exprs for exprs in shown.values() if metric + "_bucket" in exprs[0]]
        assert len(panel) == 1 and panel[0].startswith("histogram_quantile(0.95,")


def test_the_data_source_example_links_request_id_to_serve() -> None:
    """docs/grafana/datasource-exemplar-link.yaml: the exemplar label serve writes, linked
    to its /requests/ID route (``$$`` is provisioning's literal ``$``)."""
    import yaml

    from sparseety_tui.serve.exemplars import exemplar_labels

    example = DASHBOARD.parent / "datasource-exemplar-link.yaml"
    (source,) = yaml.safe_load(example.read_text())["datasources"]
    assert source["type"] == "prometheus"
    (link,) = source["jsonData"]["exemplarTraceIdDestinations"]
    assert link["name"] in exemplar_labels("chat-1", "0" * 32)
    assert link["url"].replace("$$", "$").endswith("/requests/${__value.raw}")
    assert "datasourceUid" not in link  # an external URL, not a Grafana data source
