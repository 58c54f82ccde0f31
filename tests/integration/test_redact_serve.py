"""``--redact`` on what `serve` answers: summaries, extracts and a request's detail carry
no planted secret, each text is counted once, and routing and token ids leave only with
``--keep-routing`` (the CLI side is in tests/unit/test_redact_cli.py)."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from redact_helpers import EMAIL, no_planted, planted_trace
from serve_helpers import serving

from sparseety_tui.cli.main import parse
from sparseety_tui.cli.redaction import redactor_of
from sparseety_tui.serve.settings import ServeSettings


def _get(server: Any, path: str) -> Any:
    answer = server.get(path)
    assert answer.status == 200, answer.body
    return answer


def test_serve_answers_are_redacted(tmp_path: Path) -> None:
    trace = planted_trace(tmp_path)
    args = parse(["serve", "--redact", str(trace)])[1]
    settings = ServeSettings(port=0, text=True, redactor=redactor_of(args))
    with serving([str(trace)], settings) as server:
        for path in ("/summary", "/requests", "/requests/r-1", "/requests/r-2"):
            no_planted(_get(server, path).body.decode())
        detail = _get(server, "/requests/r-1").json()
        assert detail["redaction"]["rules"]["email"] >= 1
        posted = server.post("/extract", trace.read_bytes(), "application/x-ndjson")
        assert posted.status == 200
        no_planted(posted.body.decode())
    with serving([str(trace)], ServeSettings(port=0, text=True)) as server:
        assert EMAIL in _get(server, "/requests/r-1").body.decode()  # the test can fail


def test_serve_detail_counts_each_text_once(tmp_path: Path) -> None:
    """``--redact text``: a detail drops the request's prompt and completion, counted once
    each (a second pass over the answer counted every token's emptied text again)."""
    trace = planted_trace(tmp_path)
    args = parse(["serve", "--redact", "text", str(trace)])[1]
    settings = ServeSettings(port=0, text=True, redactor=redactor_of(args))
    with serving([str(trace)], settings) as server:
        detail = _get(server, "/requests/r-1").json()
    assert detail["tokens"] and not any(t.get("text") for t in detail["tokens"])
    assert detail["request"]["prompt"] is None and detail["request"]["completion"] is None
    assert detail["redaction"]["rules"]["text"] == 2


def test_routing_and_token_ids_leave_only_with_keep_routing(tmp_path: Path) -> None:
    sample = os.path.join(os.path.dirname(__file__), "..", "..", "sample_logs", "moe_trace.jsonl")
    for keep in (False, True):
        argv = ["serve", "--redact", sample] + (["--keep-routing"] if keep else [])
        args = parse(argv)[1]
        settings = ServeSettings(port=0, text=True, keep_routing=keep, redactor=redactor_of(args))
        with serving([sample], settings) as server:
            detail = _get(server, "/requests/moe-01").json()
        tokens = detail["tokens"]
        assert detail["expert_counts"]  # the aggregates stay
        if keep:
            assert any(t.get("experts") for t in tokens) and any(t.get("token_id") for t in tokens)
        else:
            assert not any(t.get("experts") or t.get("token_id") is not None for t in tokens)
            assert any(t.get("text") for t in tokens)  # the text (redacted) is there
            assert "prompt_token_ids" not in repr(detail)
