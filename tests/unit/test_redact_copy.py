"""`sparseety-tui redact IN -o OUT`: a copy in the log's own format that holds none of the
planted values, and whose `summary --json` is the original's apart from file names and text
fields, on the acceptance trace, the sample logs and every real log."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import orjson
import pytest
from cli_helpers import summary_json
from hypothesis import given, settings
from hypothesis import strategies as st
from test_redact_cli import PLANTED, planted_trace
from test_redact_rules import SECRETS, _value

from sparseety_tui.cli.main import main, run
from sparseety_tui.core.redact._logcopy import redact_line
from sparseety_tui.core.redact._policy import RedactSettings, make_redactor

ROOT = Path(__file__).resolve().parents[2]
REAL_LOGS = sorted((ROOT / "tests" / "data" / "real_logs").glob("*.log"))
#: Fields that hold text or a file's name: redacted (or named after the copy), not figures.
TEXT_FIELDS = frozenset({"path", "text", "message", "exception", "name"})


def figures(document: Any) -> Any:
    """A summary document without its text fields (what redaction may change)."""
    if isinstance(document, dict):
        return {k: figures(v) for k, v in document.items() if k not in TEXT_FIELDS}
    if isinstance(document, list):
        return [figures(v) for v in document]
    return document


def redacted_copy(capsys: pytest.CaptureFixture[str], log: Path, out: Path, *flags: str) -> str:
    assert run(["redact", *flags, str(log), "-o", str(out)]) == 0
    err = capsys.readouterr().err
    assert "lost their experts" not in err
    return out.read_text(encoding="utf-8", errors="surrogateescape")


def same_figures(capsys: pytest.CaptureFixture[str], log: Path, copy: Path) -> None:
    original = summary_json(capsys, "--jobs", "1", str(log))
    redacted = summary_json(capsys, "--jobs", "1", str(copy))
    assert figures(redacted) == figures(original)


def test_the_planted_trace(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    trace = planted_trace(tmp_path)
    copy = tmp_path / "copy.jsonl"
    text = redacted_copy(capsys, trace, copy)
    for name, value in PLANTED.items():
        assert value not in text, name
    assert "alice-77" not in text
    same_figures(capsys, trace, copy)
    records = [orjson.loads(line) for line in text.splitlines()]
    assert records[0]["prompt"].startswith("I am [email:")  # still a trace, text redacted


def test_each_secret_counted_once(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A record whose count comes from its text: the check that the text changes (so its
    count is frozen) counts nothing; the redaction after it counts the email once."""
    log = tmp_path / "t.jsonl"
    log.write_text(
        '{"request_id": "a", "prompt": "mail ann@example.com now", "completion": "ok"}\n'
    )
    assert run(["redact", str(log), "-o", str(tmp_path / "c.jsonl")]) == 0
    assert "email 1" in capsys.readouterr().err


def test_text_dropped_counts_frozen(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """two_records' first record is counted from its text: dropping the text writes the
    count in, so summary still agrees."""
    log = ROOT / "sample_logs" / "two_records.jsonl"
    copy = tmp_path / "two.jsonl"
    text = redacted_copy(capsys, log, copy, "--redact", "text")
    first = orjson.loads(text.splitlines()[0])
    assert first["prompt"] is None and first["prompt_tokens"] == 7
    same_figures(capsys, log, copy)


@pytest.mark.parametrize("name", ["moe_trace.jsonl", "token_stream.jsonl", "kv_lines.log"])
def test_sample_logs_keep_their_counts(
    name: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    log = ROOT / "sample_logs" / name
    copy = tmp_path / name
    text = redacted_copy(capsys, log, copy)
    assert '"prompt_token_ids":' not in text and '"token_id":' not in text
    streamed: dict[tuple[str, int], list[int]] = {}
    for line in text.splitlines() if name.endswith(".jsonl") else ():
        record = orjson.loads(line)
        routing = record.get("sparse", {}).get("routing")
        for j in range(len(routing[0]) if routing else 0):  # each layer's ids: in no token order
            ids = [e for row in routing for e in row[j] if e >= 0]
            assert ids == sorted(ids)
        for j, chosen in enumerate(record.get("experts") or []):  # token lines: likewise
            streamed.setdefault((record["request_id"], j), []).extend(e for e in chosen if e >= 0)
    assert all(ids == sorted(ids) for ids in streamed.values())
    assert bool(streamed) == (name == "token_stream.jsonl")
    original = figures(summary_json(capsys, "--jobs", "1", str(log)))
    redacted = figures(summary_json(capsys, "--jobs", "1", str(copy)))
    assert redacted["requests"] == original["requests"]
    assert redacted["latency_s"] == original["latency_s"]
    assert redacted["files"] == original["files"]  # every line read as the same kind
    assert redacted == original  # routing sorted, not dropped: every aggregate stays
    kept = tmp_path / ("kept-" + name)
    redacted_copy(capsys, log, kept, "--keep-routing")
    same_figures(capsys, log, kept)  # with the routing kept, the heat maps too


@pytest.mark.parametrize("log", REAL_LOGS, ids=lambda p: p.name[:60])
def test_every_real_log(log: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    copy = tmp_path / log.name
    redacted_copy(capsys, log, copy)
    same_figures(capsys, log, copy)


def test_text_logs_keep_their_shape_and_lose_ids(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    log = tmp_path / "vllm.log"
    log.write_text(
        "INFO 11-30 12:00:00 [logger.py:39] Received request cmpl-1: prompt: 'mail "
        "ann@example.com from 10.1.2.3', params: SamplingParams(n=1, max_tokens=16), "
        "prompt_token_ids: [101, 2002, 3003], lora_request: None.\n"
    )
    text = redacted_copy(capsys, log, tmp_path / "copy.log")
    assert "ann@example.com" not in text and "10.1.2.3" not in text
    assert "prompt_token_ids: [0, 0, 0]" in text and text.startswith("INFO 11-30 12:00:00")
    same_figures(capsys, log, tmp_path / "copy.log")


def test_sglang_input_ids_are_zeroed(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """SGLang logs a request's ``input_ids`` (its prompt, to anyone with the tokenizer):
    the copy keeps their number, so the prompt count stays, and loses the ids."""
    log = tmp_path / "sglang.log"
    log.write_text(
        "[2025-03-03 17:53:04] Receive: obj=GenerateReqInput(text=None, "
        "input_ids=[151646, 198, 5405], sampling_params={'max_new_tokens': 8}, rid='r1')\n"
    )
    text = redacted_copy(capsys, log, tmp_path / "copy.log")
    assert "input_ids=[0, 0, 0]" in text and "151646" not in text
    same_figures(capsys, log, tmp_path / "copy.log")


def test_never_over_an_input(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    trace = planted_trace(tmp_path)
    before = trace.read_bytes()
    with pytest.raises(SystemExit) as exc:
        main(["redact", str(trace), "-o", str(trace)])
    assert exc.value.code == 2 and trace.read_bytes() == before
    assert "refusing to overwrite" in capsys.readouterr().err


def test_desequence_keeps_each_layers_counts_and_placeholders() -> None:
    from collections import Counter

    from sparseety_tui.core.redact._logcopy import desequence

    routing = [[[5, 1], [-1, -1]], [[0, 7], [3, -1]], [[5, 2], [6, 3]]]
    weights = [[[0.9, 0.1], [0.0, 0.0]], [[0.6, 0.4], [1.0, 0.0]], [[0.7, 0.3], [0.5, 0.5]]]
    before = [Counter(e for row in routing for e in row[j]) for j in range(2)]
    desequence(routing, weights)
    assert [Counter(e for row in routing for e in row[j]) for j in range(2)] == before
    assert routing[0][1] == [-1, -1] and routing[1][1][1] == -1  # placeholders stay put
    assert [e for row in routing for e in row[0]] == [0, 1, 2, 5, 5, 7]
    assert sorted(w for row in weights for w in row[0]) == [w for row in weights for w in row[0]]


def test_a_wrapped_vllm_line_loses_its_ids(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    inner = (
        "INFO 11-30 12:00:00 [logger.py:39] Received request cmpl-1: prompt: 'hi "
        "ann@example.com', params: SamplingParams(n=1), prompt_token_ids: [101, 2002], "
        "lora_request: None."
    )
    log = tmp_path / "docker.log"
    log.write_bytes(
        orjson.dumps({"log": inner + "\n", "stream": "stdout", "time": "2026-11-30T12:00:00Z"})
        + b"\n"
    )
    text = redacted_copy(capsys, log, tmp_path / "copy.log")
    assert "prompt_token_ids: [0, 0]" in text and "ann@example.com" not in text
    same_figures(capsys, log, tmp_path / "copy.log")


def test_redact_text_on_a_server_log_says_what_it_kept(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    log = tmp_path / "vllm.log"
    log.write_text(
        "INFO 11-30 12:00:00 [logger.py:39] Received request cmpl-1: prompt: 'mail "
        "ann@example.com', params: SamplingParams(n=1), lora_request: None.\n"
    )
    assert run(["redact", "--redact", "text", str(log), "-o", str(tmp_path / "c.log")]) == 0
    assert "1 server-log lines keep their prompt text" in capsys.readouterr().err
    assert "ann@example.com" not in (tmp_path / "c.log").read_text()


LINE_TEXT = st.text(
    alphabet=st.characters(blacklist_categories=("Cs",), blacklist_characters="\n\r"),
    max_size=80,
)


@settings(max_examples=200, deadline=None)
@given(st.lists(st.tuples(LINE_TEXT, SECRETS, LINE_TEXT), min_size=1, max_size=5))
def test_planted_secrets_never_reach_the_copy(parts: list[tuple[str, str, str]]) -> None:
    """Any line (not JSON) with a secret planted anywhere: the copy's line holds no secret,
    and stays one line."""
    r = make_redactor(RedactSettings(mode="on"), b"0123456789abcdef0123456789abcdef")
    for before, secret, after in parts:
        line = f"{before} {secret} {after}"
        if line.lstrip().startswith("{"):
            line = "x" + line
        out = redact_line(line, r, len)
        assert _value(secret) not in out and "\n" not in out
