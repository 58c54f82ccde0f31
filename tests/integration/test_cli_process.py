"""The batch commands as a user runs them: outputs, agreement, errors, directory batches."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import orjson
import pytest
from cli_helpers import count_only

import sparseety_tui.ingest.parallel as parallel
from sparseety_tui.cli.main import run


def _cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "sparseety_tui", *args], capture_output=True, text=True, timeout=120
    )


def test_errors_are_one_clear_line(tmp_path: Path) -> None:
    missing = _cli("summary", str(tmp_path / "nope.log"))
    assert missing.returncode == 2
    assert (
        missing.stderr.strip()
        == f"sparseety-tui: error: cannot read '{tmp_path / 'nope.log'}': no such file or directory"
    )
    bad_option = _cli("summary", "--bogus", str(tmp_path))
    assert bad_option.returncode == 2 and "unrecognized arguments" in bad_option.stderr
    bad_format = _cli("summary", "--format", "xml", __file__)
    assert bad_format.returncode == 2 and "unknown format 'xml'" in bad_format.stderr
    bad_tokenizer = _cli("extract", "--tokenizer", str(tmp_path / "none"), __file__)
    assert bad_tokenizer.returncode == 2 and "tokenizer not found" in bad_tokenizer.stderr
    assert _cli("extract", "--limit", "-1", __file__).returncode == 2


def test_extract_never_overwrites_an_input(tmp_path: Path) -> None:
    log = tmp_path / "server.jsonl"
    log.write_bytes(count_only(20))
    before = log.read_bytes()
    link = tmp_path / "same.jsonl"
    link.symlink_to(log)
    for target in (log, link):  # the input itself, or another name for the same file
        refused = _cli("extract", str(log), "-o", str(target))
        assert refused.returncode == 2 and "is one of the inputs" in refused.stderr
    assert log.read_bytes() == before


def test_help_does_not_import_heavy_modules() -> None:
    code = (
        "import sys; from sparseety_tui.cli.main import build_parser; build_parser(); "
        "import sparseety_tui; bad = [m for m in ('transformers', 'torch', 'textual', "
        "'tokenizers', 'numpy') if m in sys.modules]; print(bad)"
    )
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=60
    )
    assert result.stdout.strip() == "[]"
    assert _cli("--help").returncode == 0


def test_parallel_summary_equals_single_process(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    # A request id in both halves (merged), a bad line, per-token lines: all must match.
    data = count_only(400) + b"garbage\n" + count_only(50, seed=9).replace(b"req-", b"dup-")
    data += b'{"request_id": "req-0001", "completion_tokens": 999}\n'
    path = tmp_path / "big.jsonl"
    path.write_bytes(data)
    assert run(["summary", "--json", "--jobs", "1", str(path)]) == 0
    single = orjson.loads(capsys.readouterr().out)
    monkeypatch.setattr(parallel, "PARALLEL_MIN_BYTES", 1)
    assert run(["summary", "--json", "--jobs", "3", str(path)]) == 0
    split = orjson.loads(capsys.readouterr().out)
    assert split == single
    assert single["requests"]["count"] == 450
