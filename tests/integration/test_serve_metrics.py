"""The exporter: every value is `summary --json`'s over the same logs, the exposition
passes `promtool check metrics`, no request id is a label, expert series keep their
budget."""

from __future__ import annotations

import shutil
import subprocess
from collections import defaultdict
from pathlib import Path
from typing import Any

import orjson
import pytest
from prometheus_client.parser import text_string_to_metric_families
from serve_helpers import Server, serving
from waiting import wait_for

from sparseety_tui.serve.metrics import (
    ENGINE_GAUGES,
    REQUEST_LATENCY_BUCKETS,
    SKIP_KINDS,
    TOKEN_KINDS,
    TTFT_BUCKETS,
)
from sparseety_tui.serve.settings import ServeSettings

ROOT = Path(__file__).resolve().parents[2]
SAMPLES = ROOT / "sample_logs"
VLLM = (
    ROOT
    / "tests/data/real_logs/vllm_0.9.1_ascend_dp2_engine000_001_idle_enginecore_traceback_ascend1170.log"
)
PROMTOOL = shutil.which("promtool")


@pytest.fixture(scope="module")
def logs(tmp_path_factory: pytest.TempPathFactory) -> list[str]:
    """Every sample (trace, kv, token stream, routing) and a vLLM log with engine stats
    and errors, copied: several files, formats and models at once."""
    folder = tmp_path_factory.mktemp("logs")
    sources = [*sorted(SAMPLES.glob("*.jsonl")), SAMPLES / "kv_lines.log", VLLM]
    for source in sources:
        shutil.copy(source, folder / source.name)
    return [str(folder / source.name) for source in sources]


@pytest.fixture(scope="module")
def exposition(logs: list[str]) -> tuple[bytes, dict[str, Any]]:
    """/metrics and /summary of one server over ``logs``."""
    with serving(logs) as server:
        return server.get("/metrics").body, server.get("/summary").json()


def samples(text: bytes) -> dict[str, list[tuple[dict[str, str], float]]]:
    out: dict[str, list[tuple[dict[str, str], float]]] = defaultdict(list)
    for family in text_string_to_metric_families(text.decode()):
        for sample in family.samples:
            out[sample.name].append((sample.labels, sample.value))
    return out


def total(found: list[tuple[dict[str, str], float]], **match: str) -> float:
    return sum(v for labels, v in found if all(labels.get(k) == x for k, x in match.items()))


def test_counters_add_up_to_the_summary(exposition: tuple[bytes, dict[str, Any]]) -> None:
    text, summary = exposition
    got = samples(text)
    requests = summary["requests"]
    assert requests["count"] > 500
    assert total(got["sparseety_requests_total"]) == requests["count"]
    for state, n in requests["by_state"].items():
        assert total(got["sparseety_requests_total"], state=state) == n
    for kind, name in TOKEN_KINDS.items():
        assert total(got["sparseety_tokens_total"], kind=kind) == requests[name]
    for kind, name in SKIP_KINDS.items():
        assert (
            total(got["sparseety_skipped_tokens_total"], kind=kind)
            == (summary["skipped"][name]["value"])
        )
    # Each group's sum is rounded to 0.01 as the summary rounds its own.
    groups = len(got["sparseety_effective_compute_tokens_total"])
    assert groups >= 4  # files x models: the labels split them
    assert total(got["sparseety_effective_compute_tokens_total"]) == pytest.approx(
        requests["effective_compute_tokens"], abs=0.005 * groups
    )
    # Per file, the lines by kind.
    for report in summary["files"]:
        for kind, n in report["lines"]["by_kind"].items():
            assert total(got["sparseety_lines_total"], file=report["path"], kind=kind) == n
    for kind, n in summary["errors"]["by_kind"].items():
        assert total(got["sparseety_errors_total"], **{"class": kind}) == n
    assert summary["errors"]["count"] > 0


def test_histograms_count_what_the_summary_counts(
    exposition: tuple[bytes, dict[str, Any]],
) -> None:
    text, summary = exposition
    got = samples(text)
    assert total(got["sparseety_request_latency_seconds_count"]) == summary["latency_s"]["count"]
    assert total(got["sparseety_ttft_seconds_count"]) == summary["ttft_s"]["count"]
    assert summary["latency_s"]["count"] > 0 and summary["ttft_s"]["count"] > 0
    # vLLM's bucket boundaries, exactly.
    bounds = {labels["le"] for labels, _ in got["sparseety_request_latency_seconds_bucket"]}
    assert bounds == {*(repr(b) for b in REQUEST_LATENCY_BUCKETS), "+Inf"}
    bounds = {labels["le"] for labels, _ in got["sparseety_ttft_seconds_bucket"]}
    assert bounds == {*(repr(b) for b in TTFT_BUCKETS), "+Inf"}
    # The p50 lies in the bucket where the cumulative count crosses half of it.
    p50 = summary["latency_s"]["p50"]
    count = summary["latency_s"]["count"]
    by_le = defaultdict(float)
    for labels, value in got["sparseety_request_latency_seconds_bucket"]:
        by_le[labels["le"]] += value
    below = max((b for b in REQUEST_LATENCY_BUCKETS if b < p50), default=None)
    if below is not None:
        assert by_le[repr(below)] < count / 2 + 1
    above = min(b for b in REQUEST_LATENCY_BUCKETS if b >= p50)
    assert by_le[repr(above)] >= count / 2


def test_engine_heat_and_head_figures_are_the_summary(
    exposition: tuple[bytes, dict[str, Any]],
) -> None:
    text, summary = exposition
    got = samples(text)
    last = summary["engine"]["last"]
    for name, (key, _) in ENGINE_GAUGES.items():
        if last.get(key) is None:
            assert name not in got  # unknown: no sample, never 0
        else:
            assert got[name] == [({}, last[key])]
    assert any(last.get(key) is not None for key, _ in ENGINE_GAUGES.values())
    expected = {
        (model, str(layer)): value
        for model, heat in summary["experts"]["by_model"].items()
        for layer, value in zip(heat["layers"], heat["imbalance_max_over_mean"])
        if value is not None
    }
    imbalance = {
        (labels["model"], labels["layer"]): v
        for labels, v in got["sparseety_expert_load_imbalance"]
    }
    assert imbalance == expected and expected
    heads = summary["head_skips"]
    assert {labels["layer"]: v for labels, v in got["sparseety_head_skips_total"]} == {
        str(layer): sum(row) for layer, row in zip(heads["layers"], heads["counts"])
    }
    assert got["sparseety_head_skip_ratio"] == [
        ({}, summary["skipped"]["skipped_head_slots"]["ratio"])
    ]


def test_no_request_id_is_a_label(exposition: tuple[bytes, dict[str, Any]]) -> None:
    text, _ = exposition
    families = text_string_to_metric_families(text.decode())
    names = {name for family in families for s in family.samples for name in s.labels}
    assert names <= {"model", "server", "file", "state", "kind", "class", "layer", "le"}
    assert b"moe-01" not in text and b"req-0" not in text


def test_promtool_accepts_the_exposition(logs: list[str]) -> None:
    assert PROMTOOL is not None, "promtool missing: apt-get install prometheus (.ci/run does)"
    settings = ServeSettings(port=0, expert_series=True)
    with serving(logs, settings=settings) as server:
        text = server.get("/metrics").body
    assert b"sparseety_expert_load_total{" in text
    checked = subprocess.run(
        [str(PROMTOOL), "check", "metrics"], input=text, capture_output=True, timeout=30
    )
    assert checked.returncode == 0, checked.stdout + checked.stderr


def test_expert_series_keep_their_budget(logs: list[str]) -> None:
    with serving(logs[:3]) as off:
        assert b"sparseety_expert_load_total" not in off.get("/metrics").body
        summary = off.get("/summary").json()
    every = sum(
        len(row) for heat in summary["experts"]["by_model"].values() for row in heat["counts"]
    )
    assert every > 5
    settings = ServeSettings(port=0, expert_series=True, expert_series_budget=5)
    with serving(logs[:3], settings=settings) as on:
        got = samples(on.get("/metrics").body)
    assert len(got["sparseety_expert_load_total"]) == 5
    assert got["sparseety_expert_series_omitted"] == [({}, every - 5)]


def test_counters_move_when_the_log_grows(tmp_path: Path) -> None:
    log = tmp_path / "live.jsonl"
    lines = (SAMPLES / "count_only_500.jsonl").read_bytes().splitlines(keepends=True)
    log.write_bytes(b"".join(lines[:100]))
    with serving([str(log)]) as server:

        def requests(server: Server = server) -> float:
            return total(samples(server.get("/metrics").body)["sparseety_requests_total"])

        assert requests() == 100
        with log.open("ab") as f:
            f.write(b"".join(lines[100:250]))
        wait_for(lambda: requests() == 250, what="the counter to reach 250 requests")
        summary = server.get("/summary").json()
        assert summary["requests"]["count"] == 250


def test_metrics_equal_summary_json_of_the_cli(
    logs: list[str], exposition: tuple[bytes, dict[str, Any]], capsys: Any
) -> None:
    """The /summary the metrics were checked against is the CLI's own (byte-equal in
    test_serve_api; here: the same figures as summary --json run separately)."""
    from sparseety_tui.cli.main import run

    assert run(["summary", "--json", *logs]) == 0
    cli = orjson.loads(capsys.readouterr().out)
    _, served = exposition
    assert cli["requests"] == served["requests"]
    assert cli["skipped"] == served["skipped"]
