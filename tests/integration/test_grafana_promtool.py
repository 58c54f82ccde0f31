"""docs/grafana/sparseety-dashboard.json against the real tools: every metric it queries
is exported by a running `serve`, every expression is valid PromQL to `promtool check
rules`, and promtool does catch a broken one (the dashboard's content is checked in
tests/unit/test_grafana_dashboard.py)."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
from pathlib import Path

from grafana_helpers import DASHBOARD, ROOT, generator
from prometheus_client.parser import text_string_to_metric_families
from serve_helpers import serving

from sparseety_tui.serve.settings import ServeSettings

PROMTOOL = shutil.which("promtool")
#: Grafana's own variable, replaced by a range before Prometheus sees the expression.
RANGE_VARIABLE = "$__rate_interval"


def exported_names() -> set[str]:
    """Every series name `serve` exports (expert series on), families with no sample too."""
    logs = [str(ROOT / "sample_logs" / "moe_trace.jsonl")]
    with serving(logs, settings=ServeSettings(port=0, expert_series=True)) as server:
        text = server.get("/metrics").body.decode()
    names: set[str] = set()
    suffixes = {"counter": ("_total",), "histogram": ("_bucket", "_count", "_sum")}
    for family in text_string_to_metric_families(text):
        names.update(family.name + s for s in suffixes.get(family.type, ("",)))
    return names


def test_every_queried_metric_is_exported() -> None:
    exprs = generator().expressions(json.loads(DASHBOARD.read_text()))
    queried = {name for expr in exprs for name in re.findall(r"\bsparseety_[a-z_]+", expr)}
    exported = exported_names()
    assert queried - exported == set()
    # And the dashboard shows every family the issue lists.
    for name in (
        "sparseety_requests_total",
        "sparseety_tokens_total",
        "sparseety_skipped_tokens_total",
        "sparseety_effective_compute_tokens_total",
        "sparseety_request_skip_ratio_bucket",
        "sparseety_request_latency_seconds_bucket",
        "sparseety_ttft_seconds_bucket",
        "sparseety_request_queue_seconds_bucket",
        "sparseety_request_prefill_seconds_bucket",
        "sparseety_request_decode_seconds_bucket",
        "sparseety_expert_load_imbalance",
        "sparseety_head_skip_ratio",
        "sparseety_lines_total",
        "sparseety_errors_total",
        "sparseety_engine_running",
        "sparseety_engine_waiting",
        "sparseety_engine_kv_usage_ratio",
        "sparseety_engine_prefix_cache_hit_ratio",
        "sparseety_engine_generation_tokens_per_second",
    ):
        assert name in queried, name


def test_every_expression_parses_with_promtool(tmp_path: Path) -> None:
    assert PROMTOOL is not None, "promtool missing: apt-get install prometheus (.ci/run does)"
    exprs = generator().expressions(json.loads(DASHBOARD.read_text()))
    rules = [
        f"      - record: dashboard:expr_{i}\n        expr: {json.dumps(e.replace(RANGE_VARIABLE, '5m'))}\n"
        for i, e in enumerate(exprs)
    ]
    path = tmp_path / "rules.yml"
    path.write_text("groups:\n  - name: dashboard\n    rules:\n" + "".join(rules))
    checked = subprocess.run(
        [PROMTOOL, "check", "rules", str(path)], capture_output=True, text=True, timeout=30
    )
    assert checked.returncode == 0, checked.stdout + checked.stderr
    assert f"SUCCESS: {len(exprs)} rules found" in checked.stdout


def test_promtool_catches_a_broken_expression(tmp_path: Path) -> None:
    """The check above can fail: a dashboard typo does not parse."""
    assert PROMTOOL is not None
    path = tmp_path / "rules.yml"
    path.write_text(
        "groups:\n  - name: d\n    rules:\n      - record: d:x\n"
        '        expr: "sum by (le (rate(sparseety_requests_total[5m]))"\n'
    )
    checked = subprocess.run(
        [PROMTOOL, "check", "rules", str(path)], capture_output=True, text=True, timeout=30
    )
    assert checked.returncode != 0
