"""The batch commands as a user runs them: outputs, agreement, errors, directory batches."""

from __future__ import annotations

import os
import random
from pathlib import Path
from typing import Any

import orjson
import pytest
from cli_helpers import count_only

from sparseety_tui.cli.main import run

TWO_RECORDS = (
    b'{"request_id": "req-001", "prompt": "Hello, how are you today?", "completion": "I am fine, thank you!", "model": "fake-moe-model", "sparse": {"topk_experts": 2, "total_experts": 8, "skipped_attention_heads": 4}}\n'
    b'{"request_id": "req-002", "prompt": "Who is the president of France?", "completion": "The current president is Emmanuel Macron.", "model": "fake-moe-model", "sparse": {"topk_experts": 1, "total_experts": 8, "skipped_attention_heads": 6}}\n'
)


def run_json_lines(capsys: pytest.CaptureFixture[str], *args: str) -> list[dict[str, Any]]:
    assert run(list(args)) == 0
    out = capsys.readouterr().out
    return [orjson.loads(line) for line in out.splitlines() if line]


def test_two_records_with_tokenizer_counts(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from tokenizers import Tokenizer

    from sparseety_tui.core.tokens._tokens import default_tokenizer_file

    path = tmp_path / "two.jsonl"
    path.write_bytes(TWO_RECORDS)
    rows = run_json_lines(capsys, "extract", str(path))
    tokenizer = Tokenizer.from_file(str(default_tokenizer_file()))
    assert [r["request_id"] for r in rows] == ["req-001", "req-002"]
    texts = [orjson.loads(line) for line in TWO_RECORDS.splitlines()]
    for row, text in zip(rows, texts):
        assert row["prompt_tokens"] == len(
            tokenizer.encode(text["prompt"], add_special_tokens=False).ids
        )
        assert row["completion_tokens"] == len(
            tokenizer.encode(text["completion"], add_special_tokens=False).ids
        )
        assert row["token_counts_from"] == {"prompt": "tokenizer", "completion": "tokenizer"}
        assert "deepseek" in row["tokenizer"]
        assert row["sparse_skipped_tokens"] is not None
        assert row["effective_compute_tokens"] is not None
        assert 0 < row["effective_compute_tokens"] < row["logical_tokens"]
        assert row["cost_model"].startswith("default-estimate")
        assert row["cached_tokens"] is None  # never reported: null, not 0


def test_count_only_500_in_order(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    data = count_only(500)
    path = tmp_path / "batch.jsonl"
    path.write_bytes(data)
    rows = run_json_lines(capsys, "extract", str(path))
    inputs = [orjson.loads(line) for line in data.splitlines()]
    assert len(rows) == 500
    assert [r["request_id"] for r in rows] == [i["request_id"] for i in inputs]
    assert [r["prompt_tokens"] for r in rows] == [i["prompt_tokens"] for i in inputs]
    assert [r["source"]["line"] for r in rows] == list(range(1, 501))
    assert (
        run_json_lines(capsys, "extract", "--limit", "3", str(path))[-1]["request_id"] == "req-0003"
    )


def test_summary_and_extract_agree(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "batch.jsonl"
    path.write_bytes(count_only(300) + TWO_RECORDS)
    rows = run_json_lines(capsys, "extract", str(path))
    assert run(["summary", "--json", str(path)]) == 0
    doc = orjson.loads(capsys.readouterr().out)
    requests = doc["requests"]
    assert requests["count"] == len(rows) == 302

    def total(key: str) -> Any:
        return sum(r[key] for r in rows if r[key] is not None)

    assert requests["prompt_tokens"] == total("prompt_tokens")
    assert requests["completion_tokens"] == total("completion_tokens")
    assert requests["cached_tokens"] == total("cached_tokens")
    assert requests["logical_tokens"] == total("logical_tokens")
    assert requests["effective_compute_tokens"] == pytest.approx(
        total("effective_compute_tokens"), abs=0.01 * len(rows)
    )
    assert requests["sparse_skipped_tokens"] == pytest.approx(
        total("sparse_skipped_tokens"), abs=0.01 * len(rows)
    )
    for key, item in doc["skipped"].items():
        if key == "compute_vs_nominal":
            continue
        known = [r["skipped"][key] for r in rows if r["skipped"][key] is not None]
        assert item["value"] == (sum(known) if known else None), key
    latencies = sorted(r["latency_s"] for r in rows if r["latency_s"] is not None)
    assert doc["latency_s"]["count"] == len(latencies)
    assert doc["latency_s"]["max"] == pytest.approx(latencies[-1], rel=1e-6)
    assert doc["latency_s"]["p50"] == pytest.approx(
        latencies[(len(latencies) + 1) // 2 - 1], rel=1e-6
    )
    file = doc["files"][0]
    assert sum(file["lines"]["by_kind"].values()) == file["lines"]["total"] == 302
    assert doc["tokenizer"] and doc["cost_model"]


def test_summary_text_report(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "two.jsonl"
    path.write_bytes(TWO_RECORDS)
    assert run(["summary", str(path)]) == 0
    out = capsys.readouterr().out
    for needle in ("Requests", "Skips by kind", "Latency", "tokenizer: deepseek", "cost model:"):
        assert needle in out


def test_directory_batch_with_markers_and_failures(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    inputs = tmp_path / "in"
    inputs.mkdir()
    (inputs / "a.jsonl").write_bytes(TWO_RECORDS)
    (inputs / "b.jsonl").write_bytes(count_only(5))
    out = tmp_path / "out"
    assert run(["extract", str(inputs), "-o", str(out)]) == 0
    assert sorted(os.listdir(out)) == [
        "a.jsonl.done",
        "a.jsonl.requests.jsonl",
        "b.jsonl.done",
        "b.jsonl.requests.jsonl",
    ]
    assert len((out / "b.jsonl.requests.jsonl").read_bytes().splitlines()) == 5
    first = (out / "a.jsonl.requests.jsonl").stat().st_mtime_ns
    assert run(["extract", str(inputs), "-o", str(out)]) == 0  # rerun: skipped, untouched
    assert (out / "a.jsonl.requests.jsonl").stat().st_mtime_ns == first
    assert "2 already done" in capsys.readouterr().err
    # A file that fails (a FIFO cannot be read as a log) goes to failed.log, after retries.
    os.mkfifo(inputs / "c.jsonl")
    os.chmod(inputs / "c.jsonl", 0o000)
    code = run(["extract", str(inputs), "-o", str(out), "--retries", "2"])
    failed = (out / "failed.log").read_text()
    assert code == 1
    assert "c.jsonl" in failed and "not a regular file" in failed
    assert not (out / "c.jsonl.done").exists()


def test_chinese_prompt_counted_and_kept_whole(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from sparseety_tui.core.tokens._tokens import TokenCounter

    rng = random.Random(3)
    prompt = "".join(chr(rng.randint(0x4E00, 0x9FA5)) for _ in range(3000))
    path = tmp_path / "zh.jsonl"
    path.write_bytes(
        orjson.dumps({"request_id": "zh", "prompt": prompt, "completion": "好的"}) + b"\n"
    )
    rows = run_json_lines(capsys, "extract", "--text", str(path))
    assert rows[0]["prompt"] == prompt
    assert rows[0]["prompt_tokens"] == TokenCounter().count(prompt)
    assert rows[0]["prompt_tokens"] > 1000


def test_the_tool_never_writes_to_its_inputs(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "ro.jsonl"
    path.write_bytes(TWO_RECORDS)
    path.chmod(0o444)
    before = (path.read_bytes(), path.stat().st_mtime_ns, sorted(os.listdir(tmp_path)))
    run_json_lines(capsys, "extract", str(path))
    assert run(["summary", "--json", str(path)]) == 0
    assert (path.read_bytes(), path.stat().st_mtime_ns, sorted(os.listdir(tmp_path))) == before


def test_format_help_lists_the_registered_families(monkeypatch: pytest.MonkeyPatch) -> None:
    from sparseety_tui.cli.main import build_parser
    from sparseety_tui.cli.shared_args import subcommands
    from sparseety_tui.formats import _registry as registry

    monkeypatch.setitem(registry.FAMILIES, "newfmt", registry.FAMILIES["trace"])
    for name in ("extract", "summary", "tail", "serve", "compare", "redact"):
        shown = " ".join(subcommands(build_parser())[name].format_help().split())
        assert "force a format: trace, kv, vllm, sglang, otlp, newfmt " in shown, name
