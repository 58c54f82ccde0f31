"""``--redact`` where text leaves the tool: ``extract``, ``summary``, ``analyze`` (``serve``
answers: tests/integration/test_redact_serve.py); the per-install key; the acceptance trace of issue #14."""

from __future__ import annotations

import stat
from pathlib import Path

import orjson
import pytest
from cli_helpers import extract_records, summary_json
from redact_helpers import EMAIL, PLANTED, no_planted, planted_trace

from sparseety_tui.cli.main import main, run
from sparseety_tui.cli.redact_key import default_key_path


def test_extract_text_redact_leaves_none_of_them(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    trace = planted_trace(tmp_path)
    assert run(["extract", "--text", "--redact", str(trace)]) == 0
    out, err = capsys.readouterr()
    no_planted(out)
    first, second = (orjson.loads(line) for line in out.splitlines())
    token = first["prompt"].split("I am ")[1].split(",")[0]
    assert token.startswith("[email:") and token in second["prompt"]  # the same token twice
    assert "redacted: api_key 1, card 1, email 2, ipv4 1, phone 2" in err
    # the figures are untouched
    plain = extract_records(capsys, str(trace))
    for a, b in zip((first, second), plain):
        assert {k: v for k, v in a.items() if k not in ("prompt", "completion")} == b


def test_without_redact_the_values_are_there(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The test above can fail: without --redact the output holds every planted value."""
    assert run(["extract", "--text", str(planted_trace(tmp_path))]) == 0
    out = capsys.readouterr().out
    assert all(v in out for v in PLANTED.values())


def test_redact_text_drops_prompts_and_completions(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    records = extract_records(capsys, "--text", "--redact", "text", str(planted_trace(tmp_path)))
    assert [(r["prompt"], r["completion"]) for r in records] == [(None, None)] * 2
    assert records[0]["token_counts_from"] == {"prompt": "reported", "completion": "reported"}


def test_a_log_after_redact_is_a_path_not_a_mode(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    trace = planted_trace(tmp_path)
    records = extract_records(capsys, "--text", "--redact", str(trace))
    assert len(records) == 2 and EMAIL not in repr(records)


def test_summary_redacts_and_says_what(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    trace = planted_trace(tmp_path)
    bad = tmp_path / "with_noise.log"
    bad.write_text(f"garbage line from {EMAIL} at 10.20.30.40\n" + trace.read_text())
    document = summary_json(capsys, "--redact", str(bad))
    text = orjson.dumps(document).decode()
    assert EMAIL not in text and "10.20.30.40" not in text
    assert document["redaction"]["rules"]["email"] >= 1
    plain = summary_json(capsys, str(bad))
    assert document["requests"] == plain["requests"]
    assert document["latency_s"] == plain["latency_s"]


def test_the_key_is_made_once_mode_600_and_reused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    trace = planted_trace(tmp_path)
    key = Path(default_key_path())
    assert not key.exists()
    first = extract_records(capsys, "--text", "--redact", str(trace))
    assert stat.S_IMODE(key.stat().st_mode) == 0o600
    again = extract_records(capsys, "--text", "--redact", str(trace))
    assert first == again  # the same key: the same tokens, run after run
    other = tmp_path / "other.key"
    other.write_text("f" * 64)
    other.chmod(0o600)
    elsewhere = extract_records(
        capsys, "--text", "--redact", "--redact-key-file", str(other), str(trace)
    )
    assert elsewhere[0]["prompt"] != first[0]["prompt"]


def test_a_key_others_can_read_is_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    key = tmp_path / "open.key"
    key.write_text("f" * 64)
    key.chmod(0o644)
    with pytest.raises(SystemExit) as exc:
        main(["extract", "--redact", "--redact-key-file", str(key), str(planted_trace(tmp_path))])
    assert exc.value.code == 2
    err = capsys.readouterr().err
    assert "readable by others" in err and len(err.strip().splitlines()) == 1


def test_analyze_with_redact_still_counts(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert run(["analyze", "--redact", "--input", str(planted_trace(tmp_path))]) == 0
    assert "Total prompt tokens: 50" in capsys.readouterr().out
