"""A real Prometheus (Debian's `prometheus` package; .ci/run installs it) scrapes a real
`sparseety-tui serve` on 127.0.0.1, and its HTTP API gives `summary --json`'s figures; a
log that grows moves the counters. Both processes are stopped in a ``finally``."""

from __future__ import annotations

import json
import shutil
import socket
import subprocess
import urllib.parse
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from serve_helpers import serve_process
from waiting import wait_for

from sparseety_tui.cli.main import run

ROOT = Path(__file__).resolve().parents[2]
PROMETHEUS = shutil.which("prometheus")


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


@contextmanager
def prometheus(target: str, folder: Path) -> Iterator[str]:
    """Prometheus on a free loopback port scraping ``target`` every second."""
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


def query(base: str, expr: str) -> float | None:
    """The one value of ``expr`` now, or None (no sample yet, or not up yet)."""
    url = f"{base}/api/v1/query?" + urllib.parse.urlencode({"query": expr})
    try:
        with urllib.request.urlopen(url, timeout=5) as response:
            data: Any = json.load(response)
    except OSError:
        return None
    result = data["data"]["result"]
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
