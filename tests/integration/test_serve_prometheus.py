"""A real Prometheus (Debian's `prometheus` package; .ci/run installs it) scrapes a real
`sparseety-tui serve` on 127.0.0.1, and its HTTP API gives `summary --json`'s figures; a
log that grows moves the counters; with exemplar storage on, a request slow on purpose is
the exemplar Prometheus returns for its bucket. Both processes are stopped in a
``finally``."""

from __future__ import annotations

import dataclasses
import json
import shutil
import socket
import subprocess
import time
import urllib.parse
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from otlp_spans import protobuf_body, vllm_requests, vllm_spans
from serve_helpers import serve_process
from waiting import wait_for

from sparseety_tui.cli.main import run
from sparseety_tui.formats.otlp import lines_from_proto_body

ROOT = Path(__file__).resolve().parents[2]
PROMETHEUS = shutil.which("prometheus")


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


@contextmanager
def prometheus(target: str, folder: Path, *flags: str) -> Iterator[str]:
    """Prometheus on a free loopback port scraping ``target`` every second (``flags``:
    more command-line flags, e.g. ``--enable-feature=exemplar-storage``)."""
    assert PROMETHEUS is not None, "prometheus missing: apt-get install prometheus (.ci/run)"
    config = folder / "prometheus.yml"
    config.write_text(
        "global:\n  scrape_interval: 1s\n  evaluation_interval: 1s\n"
        "scrape_configs:\n  - job_name: sparseety\n"
        f"    static_configs:\n      - targets: ['{target}']\n"
    )
    port = free_port()
    proc = subprocess.Popen(
        [
            PROMETHEUS,
            f"--config.file={config}",
            f"--storage.tsdb.path={folder / 'data'}",
            f"--web.listen-address=127.0.0.1:{port}",
            "--log.level=warn",
            *flags,
        ],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        stdin=subprocess.DEVNULL,
    )
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        proc.terminate()
        try:
            proc.wait(10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(5)


def api(base: str, path: str, **params: str) -> Any:
    """The ``data`` of Prometheus' answer to ``path?params``, or None (not up yet)."""
    url = f"{base}{path}?" + urllib.parse.urlencode(params)
    try:
        with urllib.request.urlopen(url, timeout=5) as response:
            return json.load(response)["data"]
    except OSError:
        return None


def query(base: str, expr: str) -> float | None:
    """The one value of ``expr`` now, or None (no sample yet, or not up yet)."""
    data = api(base, "/api/v1/query", query=expr)
    result = data["result"] if data is not None else []
    return float(result[0]["value"][1]) if result else None


def summary(capsys: Any, log: Path) -> dict[str, Any]:
    assert run(["summary", "--json", str(log)]) == 0
    document: dict[str, Any] = json.loads(capsys.readouterr().out)
    return document


def test_prometheus_scrapes_what_summary_says(tmp_path: Path, capsys: Any) -> None:
    lines = (ROOT / "sample_logs" / "count_only_500.jsonl").read_bytes().splitlines(True)
    log = tmp_path / "requests.jsonl"
    log.write_bytes(b"".join(lines[:200]))
    expected = summary(capsys, log)["requests"]
    assert expected["count"] == 200
    with (
        serve_process([str(log)]) as server,
        prometheus(f"{server.host}:{server.port}", tmp_path) as base,
    ):
        wait_for(
            lambda: server.get("/summary").json()["requests"]["count"] == 200,
            what="serve to read the 200 requests",
        )

        def scraped(expr: str, wanted: float) -> bool:
            return query(base, expr) == wanted

        wait_for(
            lambda: scraped("sum(sparseety_requests_total)", expected["count"]),
            60,
            "Prometheus to scrape the requests",
            every=0.25,
        )
        prompt = 'sum(sparseety_tokens_total{kind="prompt"})'
        assert query(base, prompt) == expected["prompt_tokens"]
        assert (
            query(base, 'sum(sparseety_tokens_total{kind="completion"})')
            == (expected["completion_tokens"])
        )

        with log.open("ab") as f:  # the log grows: the counters follow
            f.write(b"".join(lines[200:350]))
        grown = summary(capsys, log)["requests"]
        assert grown["count"] == 350
        wait_for(
            lambda: scraped("sum(sparseety_requests_total)", 350),
            what="Prometheus to scrape the grown count",
            every=0.25,
        )
        wait_for(
            lambda: scraped(prompt, grown["prompt_tokens"]),
            what="Prometheus to scrape the grown prompt tokens",
            every=0.25,
        )
        # A rate over the growth is positive: dashboards see the traffic.
        assert (query(base, "sum(increase(sparseety_requests_total[1m]))") or 0) > 0


SLOW_ID = "chatcmpl-slow-in-queue"
#: An id with markup, an escape sequence, a backslash and a newline: Prometheus' own
#: OpenMetrics parser must read it back from the exemplar, literally but for the two
#: characters an exemplar cannot carry (serve.exemplars).
HOSTILE_ID = "chatcmpl-[b]x[/b]\x1b[2J\\n\nend"


def test_prometheus_keeps_the_slow_request_as_the_exemplar_of_its_bucket(
    tmp_path: Path,
) -> None:
    """vLLM spans (the SDK's, as vLLM sends them) of requests that ended a minute ago, one
    kept 42 s in the queue and one 30 s in prefill; Prometheus with exemplar storage
    scrapes `serve` in OpenMetrics and `/api/v1/query_exemplars` names them."""
    now_ns = time.time_ns() - 60_000_000_000
    requests = [
        dataclasses.replace(r, start_ns=now_ns + i * 250_000_000)
        for i, r in enumerate(vllm_requests(6))
    ]
    requests[2] = dataclasses.replace(
        requests[2], request_id=SLOW_ID, queue_s=42.0, ttft_s=42.1, latency_s=43.0
    )
    requests[4] = dataclasses.replace(
        requests[4], request_id=HOSTILE_ID, prefill_s=30.0, ttft_s=31.0, latency_s=32.0
    )
    spans = vllm_spans(requests)
    traces = {s.attributes["gen_ai.request.id"]: f"{s.context.trace_id:032x}" for s in spans}
    lines, rejected = lines_from_proto_body(protobuf_body(spans))
    assert rejected == 0
    log = tmp_path / "spans.jsonl"
    log.write_bytes(b"".join(line + b"\n" for line in lines))
    with (
        serve_process([str(log)]) as server,
        prometheus(
            f"{server.host}:{server.port}", tmp_path, "--enable-feature=exemplar-storage"
        ) as base,
    ):
        wait_for(
            lambda: server.get("/summary").json()["requests"]["count"] == 6,
            what="serve to read the 6 spans",
        )
        window = {"start": str(time.time() - 3600), "end": str(time.time() + 3600)}

        def exemplars(metric: str) -> dict[str, tuple[dict[str, str], dict[str, Any]]]:
            """Each exemplar's request id -> (its series' labels, the exemplar)."""
            data = api(base, "/api/v1/query_exemplars", query=metric, **window) or []
            return {
                e["labels"]["request_id"]: (series["seriesLabels"], e)
                for series in data
                for e in series["exemplars"]
            }

        queue = wait_for(
            lambda: (
                SLOW_ID in exemplars("sparseety_request_queue_seconds_bucket")
                and exemplars("sparseety_request_queue_seconds_bucket")
            ),
            60,
            "Prometheus to store the slow request's exemplar",
            every=0.25,
        )
        series, exemplar = queue[SLOW_ID]
        assert series["le"] == "80.0"  # 42 s: TTFT buckets ... 40, 80
        assert exemplar["labels"] == {"request_id": SLOW_ID, "trace_id": traces[SLOW_ID]}
        assert float(exemplar["value"]) == 42.0
        end = requests[2].end_ns / 1e9
        assert abs(float(exemplar["timestamp"]) - end) < 0.002
        # The exemplar's id opens the request in serve: the dashboard's link.
        detail = server.get("/requests/" + urllib.parse.quote(SLOW_ID)).json()
        assert detail["request"]["timing"]["queue_s"] == 42.0

        prefill = wait_for(
            lambda: exemplars("sparseety_request_prefill_seconds_bucket"),
            what="the prefill exemplars",
            every=0.25,
        )
        # What needs an escape is U+FFFD (Prometheus keeps exemplar escapes as written).
        series, exemplar = prefill[HOSTILE_ID.replace("\\", "\ufffd").replace("\n", "\ufffd")]
        assert series["le"] == "40.0" and float(exemplar["value"]) == 30.0
        targets = api(base, "/api/v1/targets")["activeTargets"]
        assert [(t["health"], t["lastError"]) for t in targets] == [("up", "")]
