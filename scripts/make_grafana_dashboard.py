#!/usr/bin/env python3
"""Write docs/grafana/sparseety-dashboard.json: the Grafana dashboard of `serve`'s metrics.

    python scripts/make_grafana_dashboard.py           # write it
    python scripts/make_grafana_dashboard.py --check   # exit 1 if the file is not current

Generated, never edited by hand (tests/unit/test_grafana_dashboard.py regenerates it and
compares bytes, checks that every metric it queries exists in the exporter, and that every
expression parses with `promtool check rules`). Plain dicts, as vLLM's own generator does.

Rows: traffic, latency and TTFT quantiles, where the time went (queue, prefill, decode
p95), skip composition, expert imbalance, engine, errors. The timing panels ask Prometheus
for exemplars (each bucket's slowest recent request, with its `request_id`): the link from
an exemplar to `serve`'s `/requests/ID` is a setting of the Prometheus data source
(`exemplarTraceIdDestinations`, docs/grafana/datasource-exemplar-link.yaml). Variables: the Prometheus data source, `job`, `instance` (one per host scraped) and
`model`, so one dashboard shows a fleet and drills down to one host or model.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

OUT = Path(__file__).resolve().parents[1] / "docs" / "grafana" / "sparseety-dashboard.json"

#: The selector every panel uses: the dashboard's variables.
SEL = 'job=~"$job", instance=~"$instance"'
MSEL = SEL + ', model=~"$model"'
RATE = "$__rate_interval"


def _target(expr: str, legend: str, ref: str, exemplar: bool = False) -> dict[str, Any]:
    target = {
        "datasource": {"type": "prometheus", "uid": "${datasource}"},
        "expr": expr,
        "legendFormat": legend,
        "refId": ref,
    }
    if exemplar:  # Grafana then also asks /api/v1/query_exemplars for the expression
        target["exemplar"] = True
    return target


class _Layout:
    """Panels in a 24-column grid: rows, then panels left to right."""

    def __init__(self) -> None:
        self.panels: list[dict[str, Any]] = []
        self.y = 0
        self.x = 0
        self.next_id = 1

    def _id(self) -> int:
        self.next_id += 1
        return self.next_id - 1

    def row(self, title: str) -> None:
        if self.x:
            self.y += 8
            self.x = 0
        self.panels.append(
            {
                "type": "row",
                "id": self._id(),
                "title": title,
                "collapsed": False,
                "gridPos": {"h": 1, "w": 24, "x": 0, "y": self.y},
                "panels": [],
            }
        )
        self.y += 1

    def panel(
        self,
        title: str,
        description: str,
        targets: list[tuple[str, str]],
        unit: str = "short",
        width: int = 8,
        kind: str = "timeseries",
        exemplar: str | None = None,
    ) -> None:
        """``exemplar``: the legend of the one target that shows exemplars (one is enough:
        each target of a panel would show the same ones again)."""
        if self.x + width > 24:
            self.y += 8
            self.x = 0
        self.panels.append(
            {
                "type": kind,
                "id": self._id(),
                "title": title,
                "description": description,
                "datasource": {"type": "prometheus", "uid": "${datasource}"},
                "gridPos": {"h": 8, "w": width, "x": self.x, "y": self.y},
                "fieldConfig": {"defaults": {"unit": unit}, "overrides": []},
                "options": {"legend": {"displayMode": "list", "placement": "bottom"}},
                "targets": [
                    _target(expr, legend, chr(ord("A") + i), legend == exemplar)
                    for i, (expr, legend) in enumerate(targets)
                ],
            }
        )
        self.x += width


def _quantiles(metric: str, qs: tuple[float, ...] = (0.5, 0.95, 0.99)) -> list[tuple[str, str]]:
    return [
        (
            f"histogram_quantile({q}, sum by (le, model) "
            f"(rate({metric}_bucket{{{MSEL}}}[{RATE}])))",
            f"p{int(q * 100)} {{{{model}}}}",
        )
        for q in qs
    ]


P95 = "p95 {{model}}"
EXEMPLARS = (
    " Dots: exemplars, each bucket's slowest recent request (request_id, trace_id); "
    "the link to serve's /requests/ID is a data source setting (docs/serve.md)."
)


def dashboard() -> dict[str, Any]:
    grid = _Layout()
    grid.row("Traffic")
    grid.panel(
        "Requests / s by state",
        "Requests read from the logs per second (sparseety_requests_total).",
        [(f"sum by (state) (rate(sparseety_requests_total{{{MSEL}}}[{RATE}]))", "{{state}}")],
        "reqps",
    )
    grid.panel(
        "Tokens / s by kind",
        "Prompt, completion and cached tokens per second (sparseety_tokens_total).",
        [(f"sum by (kind) (rate(sparseety_tokens_total{{{MSEL}}}[{RATE}]))", "{{kind}}")],
    )
    grid.panel(
        "Requests / s by host",
        "Per scraped host (instance).",
        [(f"sum by (instance) (rate(sparseety_requests_total{{{MSEL}}}[{RATE}]))", "{{instance}}")],
        "reqps",
    )
    grid.row("Latency and time to first token")
    grid.panel(
        "End-to-end latency quantiles",
        "From sparseety_request_latency_seconds (vLLM's buckets)." + EXEMPLARS,
        _quantiles("sparseety_request_latency_seconds"),
        "s",
        12,
        exemplar=P95,
    )
    grid.panel(
        "TTFT quantiles",
        "From sparseety_ttft_seconds (vLLM's buckets)." + EXEMPLARS,
        _quantiles("sparseety_ttft_seconds"),
        "s",
        12,
        exemplar=P95,
    )
    grid.row("Where the time went")
    for title, metric, what in (
        ("Queue time p95", "sparseety_request_queue_seconds", "waiting in the scheduler's queue"),
        ("Prefill time p95", "sparseety_request_prefill_seconds", "in prefill"),
        ("Decode time p95", "sparseety_request_decode_seconds", "in decode"),
    ):
        grid.panel(
            title,
            f"Time each request spent {what}, as its server said (spans, SGLang meta_info, "
            f"vLLM's per-request metrics), from {metric}." + EXEMPLARS,
            _quantiles(metric, (0.95,)),
            "s",
            exemplar=P95,
        )
    grid.row("Skip composition")
    grid.panel(
        "Skipped tokens / s by kind",
        "Cached, evicted, masked and dropped (sparseety_skipped_tokens_total).",
        [(f"sum by (kind) (rate(sparseety_skipped_tokens_total{{{MSEL}}}[{RATE}]))", "{{kind}}")],
    )
    grid.panel(
        "Effective compute share",
        "Effective compute tokens over logical (prompt + completion) tokens: 1 = dense.",
        [
            (
                f"sum(rate(sparseety_effective_compute_tokens_total{{{MSEL}}}[{RATE}])) / "
                f'sum(rate(sparseety_tokens_total{{{MSEL}, kind=~"prompt|completion"}}[{RATE}]))',
                "effective / logical",
            )
        ],
        "percentunit",
    )
    grid.panel(
        "Request skip ratio quantiles",
        "Each request's skip ratio (sparseety_request_skip_ratio).",
        _quantiles("sparseety_request_skip_ratio"),
        "percentunit",
    )
    grid.panel(
        "Attention-head skips / s by layer",
        "(token, head) skips logged per layer (sparseety_head_skips_total).",
        [
            (
                f"sum by (layer) (rate(sparseety_head_skips_total{{{SEL}}}[{RATE}]))",
                "layer {{layer}}",
            )
        ],
        width=12,
    )
    grid.panel(
        "Head-slot skip ratio",
        "Share of (token, layer, head) slots skipped, by the cost model.",
        [(f"sparseety_head_skip_ratio{{{SEL}}}", "{{instance}}")],
        "percentunit",
        12,
    )
    grid.row("Expert imbalance")
    grid.panel(
        "Expert load imbalance (max / mean) by layer",
        "Per MoE layer: tokens of the busiest expert over the mean (1 = balanced).",
        [
            (
                f"max by (model, layer) (sparseety_expert_load_imbalance{{{MSEL}}})",
                "{{model}} L{{layer}}",
            )
        ],
        width=12,
    )
    grid.panel(
        "Tokens per expert (needs serve --expert-series)",
        "sparseety_expert_load_total per (layer, expert); only with --expert-series.",
        [
            (
                f"sum by (layer, expert) (rate(sparseety_expert_load_total{{{MSEL}}}[{RATE}]))",
                "L{{layer}} E{{expert}}",
            )
        ],
        width=12,
    )
    grid.row("Engine")
    grid.panel(
        "Running and waiting requests",
        "From the newest engine stats line of each host.",
        [
            (f"sum by (instance) (sparseety_engine_running{{{SEL}}})", "running {{instance}}"),
            (f"sum by (instance) (sparseety_engine_waiting{{{SEL}}})", "waiting {{instance}}"),
        ],
    )
    grid.panel(
        "KV cache usage and prefix-cache hits",
        "Ratios 0-1 from the newest engine stats line.",
        [
            (f"sparseety_engine_kv_usage_ratio{{{SEL}}}", "KV usage {{instance}}"),
            (f"sparseety_engine_prefix_cache_hit_ratio{{{SEL}}}", "prefix hits {{instance}}"),
        ],
        "percentunit",
    )
    grid.panel(
        "Generation throughput",
        "Tokens/s the engines logged.",
        [(f"sparseety_engine_generation_tokens_per_second{{{SEL}}}", "{{instance}}")],
    )
    grid.row("Errors and lines")
    grid.panel(
        "Errors / s by class",
        "Tracebacks, error lines, 5xx, engine deaths... (sparseety_errors_total).",
        [(f"sum by (class) (rate(sparseety_errors_total{{{SEL}}}[{RATE}]))", "{{class}}")],
        width=12,
    )
    grid.panel(
        "Lines / s by kind",
        "Every line read gets one kind; unparsed lines show here (sparseety_lines_total).",
        [(f"sum by (kind) (rate(sparseety_lines_total{{{SEL}}}[{RATE}]))", "{{kind}}")],
        width=12,
    )

    def variable(name: str, query: str) -> dict[str, Any]:
        return {
            "name": name,
            "type": "query",
            "datasource": {"type": "prometheus", "uid": "${datasource}"},
            "query": {"query": query, "refId": name},
            "definition": query,
            "includeAll": True,
            "multi": True,
            "allValue": ".*",
            "current": {"text": "All", "value": "$__all"},
            "refresh": 2,
            "sort": 1,
        }

    return {
        "title": "sparseety-tui: sparse serving",
        "uid": "sparseety-serve",
        "description": "Generated by scripts/make_grafana_dashboard.py from the metrics of "
        "`sparseety-tui serve`; do not edit by hand.",
        "tags": ["sparseety", "llm", "moe"],
        "editable": True,
        "schemaVersion": 39,
        "version": 1,
        "refresh": "30s",
        "time": {"from": "now-1h", "to": "now"},
        "timezone": "utc",
        "templating": {
            "list": [
                {
                    "name": "datasource",
                    "type": "datasource",
                    "query": "prometheus",
                    "current": {},
                },
                variable("job", "label_values(sparseety_lines_total, job)"),
                variable("instance", 'label_values(sparseety_lines_total{job=~"$job"}, instance)'),
                variable("model", 'label_values(sparseety_requests_total{job=~"$job"}, model)'),
            ]
        },
        "panels": grid.panels,
    }


def render() -> bytes:
    return (json.dumps(dashboard(), indent=2, ensure_ascii=False) + "\n").encode()


def expressions(document: dict[str, Any]) -> list[str]:
    """Every PromQL expression of the dashboard's panels."""
    return [t["expr"] for p in document["panels"] for t in p.get("targets", [])]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--check", action="store_true", help="exit 1 if the file is stale")
    args = parser.parse_args()
    data = render()
    if args.check:
        if not OUT.exists() or OUT.read_bytes() != data:
            print(f"{OUT} is not current: run scripts/make_grafana_dashboard.py", file=sys.stderr)
            return 1
        return 0
    OUT.parent.mkdir(parents=True, exist_ok=True)
    OUT.write_bytes(data)
    print(f"wrote {OUT}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
