"""The tutorials' commands as written (``sparseety_tui`` for ``sparseety``), on the
tutorial's own two records and its 500-line batch, as a user runs them: their outputs agree
with ``summary --json``. And summary's figures the SGLang tutorial computes."""

from __future__ import annotations

from pathlib import Path

import orjson
import pytest
from cli_helpers import summary_json

from sparseety_tui.cli.main import parse

ROOT = Path(__file__).resolve().parents[2]
SAMPLES = ROOT / "sample_logs"


def test_serve_takes_host_port_and_worker() -> None:
    args = parse(["serve", "--host", "127.0.0.1", "--port", "8765", "--worker", "4"])[1]
    assert (args.host, args.port, args.workers) == ("127.0.0.1", 8765, 4)


def test_summary_has_the_sglang_tutorials_figures(capsys: pytest.CaptureFixture[str]) -> None:
    document = summary_json(capsys, str(SAMPLES / "kv_lines.log"))
    r = document["requests"]
    # kv lines only flag hits (hit_cache=True): the rate is hits over flagged requests.
    assert r["cache_hit_requests"] == {"hit": 25, "reported": 60}
    assert r["cache_hit_rate"] == round(25 / 60, 6) and r["cache_hit_rate_by"] == "requests"
    assert r["completion_per_prompt_tokens"] == round(
        r["completion_tokens"] / r["prompt_tokens"], 6
    )  # every kv line has both counts
    minutes = document["throughput_per_minute"]
    span = (minutes[-1]["minute"] - minutes[0]["minute"]) // 60 + 1
    assert r["requests_per_minute"] == round(sum(m["requests"] for m in minutes) / span, 3)
    latencies = document["latency_s"]
    assert latencies["p50"] <= latencies["max"] and latencies["mean"] is not None


def test_average_latency_is_the_mean(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    log = tmp_path / "t.jsonl"
    log.write_text(
        "".join(
            orjson.dumps({"request_id": f"r{i}", "prompt_tokens": 10, "latency_s": v}).decode()
            + "\n"
            for i, v in enumerate([0.5, 1.0, 3.0])
        )
    )
    document = summary_json(capsys, str(log))
    assert document["latency_s"]["mean"] == 1.5
    assert document["requests"]["cache_hit_rate_by"] is None  # nothing said of the cache
    assert document["requests"]["requests_per_minute"] is None  # no times


def test_token_cache_rate_stays_by_tokens(capsys: pytest.CaptureFixture[str]) -> None:
    document = summary_json(capsys, str(SAMPLES / "count_only_500.jsonl"))
    assert document["requests"]["cache_hit_rate_by"] == "tokens"
