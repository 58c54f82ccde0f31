"""`serve`'s HTTP API answers what the CLI prints for the same input, byte for byte, and a
bad body is a 4xx with one line of JSON, never a 500 or a stack trace."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import orjson
import pytest
from serve_helpers import Server, serving

from sparseety_tui import __version__
from sparseety_tui.cli.main import run
from sparseety_tui.core.text._literal import json_bytes
from sparseety_tui.serve.extraction import BODY_LABEL
from sparseety_tui.serve.openapi import EXAMPLES
from sparseety_tui.serve.settings import ServeSettings

ROOT = Path(__file__).resolve().parents[2]
SAMPLES = ROOT / "sample_logs"
TUTORIAL = (
    b'{"request_id": "req-001", "prompt_tokens": 100, "completion_tokens": 50, "model": '
    b'"fake-moe-model", "sparse": {"topk_experts": 2, "total_experts": 8, '
    b'"skipped_attention_heads": 4}}'
)


def cli(capsysbinary: pytest.CaptureFixture[bytes], *args: str) -> bytes:
    assert run(list(args)) == 0
    out: bytes = capsysbinary.readouterr().out
    return out


@pytest.fixture(scope="module")
def logs(tmp_path_factory: pytest.TempPathFactory) -> list[str]:
    """Copies of a trace with routing and of a key=value log (two formats, three models)."""
    folder = tmp_path_factory.mktemp("logs")
    out = []
    for name in ("moe_trace.jsonl", "kv_lines.log"):
        shutil.copy(SAMPLES / name, folder / name)
        out.append(str(folder / name))
    return out


@pytest.fixture(scope="module")
def server(logs: list[str]) -> Any:
    with serving(logs) as running:
        yield running


def test_health_says_ok_and_the_version(server: Server) -> None:
    answer = server.get("/health")
    assert answer.status == 200
    assert answer.json() == {"status": "ok", "version": __version__}


def test_summary_is_summary_json_byte_for_byte(
    server: Server, logs: list[str], capsysbinary: pytest.CaptureFixture[bytes]
) -> None:
    expected = cli(capsysbinary, "summary", "--json", *logs)
    answer = server.get("/summary")
    assert answer.status == 200
    assert answer.body == expected
    # A filter narrows the requests as summary --filter does.
    expected = cli(capsysbinary, "summary", "--json", "--filter", "model=qwen-7b", *logs)
    assert server.get("/summary?filter=model%3Dqwen-7b").body == expected
    # And a time window, relative to the newest time read, as --since is.
    expected = cli(capsysbinary, "summary", "--json", "--since", "2m", *logs)
    windowed = server.get("/summary?since=2m")
    assert windowed.body == expected
    assert 0 < windowed.json()["requests"]["count"] < orjson.loads(answer.body)["requests"]["count"]


def test_requests_is_extract_filter_limit_byte_for_byte(
    server: Server, logs: list[str], capsysbinary: pytest.CaptureFixture[bytes]
) -> None:
    expected = cli(capsysbinary, "extract", "--filter", "skip>0.5", "--limit", "7", *logs)
    answer = server.get("/requests?filter=skip%3E0.5&limit=7")
    assert answer.status == 200
    assert answer.headers["content-type"].startswith("application/x-ndjson")
    assert answer.body == expected
    assert len(answer.body.splitlines()) == 7
    everything = cli(capsysbinary, "extract", *logs)
    assert server.get("/requests").body == everything  # 76 rows, under the default limit


@pytest.mark.parametrize(
    ("path", "why"),
    [
        ("/requests?filter=bogus%3E1", "filter: unknown field 'bogus'"),
        ("/requests?limit=-1", "limit must be a whole number"),
        ("/summary?since=yesterday-ish", "since/until:"),
    ],
)
def test_bad_query_is_400_with_one_line(server: Server, path: str, why: str) -> None:
    answer = server.get(path)
    assert answer.status == 400
    assert answer.body.count(b"\n") == 0
    assert answer.json()["error"].startswith(why)


def test_unknown_route_and_method_are_json_errors(server: Server) -> None:
    assert server.get("/nope").status == 404
    assert server.get("/nope").json() == {"error": "Not Found"}
    assert server.get("/extract").status == 405


def _post_ndjson(server: Server, body: bytes) -> bytes:
    answer = server.post("/extract", body, "application/x-ndjson")
    assert answer.status == 200, answer.body
    return answer.body


def _cli_extract_as_body(
    capsysbinary: pytest.CaptureFixture[bytes], path: Path, *extra: str
) -> bytes:
    """``extract --format trace PATH``, its ``source.file`` naming the request body."""
    out = cli(capsysbinary, "extract", "--format", "trace", *extra, str(path))
    return out.replace(
        b'"source":{"file":' + json_bytes(str(path)) + b",",
        b'"source":{"file":' + json_bytes(BODY_LABEL) + b",",
    )


def test_post_extract_answers_what_extract_writes(
    server: Server, tmp_path: Path, capsysbinary: pytest.CaptureFixture[bytes]
) -> None:
    body = (SAMPLES / "moe_trace.jsonl").read_bytes()
    path = tmp_path / "body.jsonl"
    path.write_bytes(body)
    expected = _cli_extract_as_body(capsysbinary, path)
    assert b"request body" in expected and len(expected.splitlines()) == 16
    assert _post_ndjson(server, body) == expected


def test_post_extract_with_text_needs_text(
    logs: list[str], tmp_path: Path, capsysbinary: pytest.CaptureFixture[bytes]
) -> None:
    body = (SAMPLES / "two_records.jsonl").read_bytes()
    path = tmp_path / "body.jsonl"
    path.write_bytes(body)
    with serving(settings=ServeSettings(port=0, text=True)) as with_text:
        answer = _post_ndjson(with_text, body)
    assert answer == _cli_extract_as_body(capsysbinary, path, "--text")
    assert b"Hello, how are you today?" in answer
    with serving() as without:
        plain = _post_ndjson(without, body)
    assert b"Hello" not in plain
    assert all("prompt" not in orjson.loads(line) for line in plain.splitlines())


def test_tutorial_record(server: Server) -> None:
    answer = server.post("/extract", TUTORIAL)
    assert answer.status == 200
    record = orjson.loads(answer.body)
    assert record["prompt_tokens"] == 100
    assert record["completion_tokens"] == 50
    assert record["sparse_skipped_tokens"] is not None
    assert record["effective_compute_tokens"] is not None
    # A list of records is one line each (records with one id are one request, as in a log).
    other = TUTORIAL.replace(b"req-001", b"req-002")
    listed = server.post("/extract", b"[" + TUTORIAL + b"," + other + b"]")
    assert listed.status == 200 and len(listed.body.splitlines()) == 2


BAD_BODIES = [
    (b"", 400),
    (b"\x00\xff\xfe garbage", 400),
    (b'{"request_id": "r", "model": "\xff\xfe"}', 400),  # not UTF-8
    (b"[" * 5000 + b"]" * 5000, 400),  # deeper than any JSON reader goes
    (b'{"request_id": "r", "prompt_tokens": 1e400}', 400),
    (b'{"request_id": "r", "prompt_tokens": 123456789012345678901234567890}', 422),
    (b'{"request_id": "r", "prompt_tokens": 3000000000}', 422),  # above int32
    (b'{"request_id": "r", "prompt_tokens": "100"}', 422),
    (b'{"request_id": "r", "prompt_tokens": true}', 422),
    (b'{"request_id": "r", "sparse": [1, 2]}', 422),
    (b'{"request_id": "r", "sparse": {"topk_experts": -2}}', 422),
    (b'{"no_id": 1}', 422),
    (b"[]", 422),
    (b"[1, 2]", 422),
    (b'"just a string"', 422),
    (b"null", 422),
]


@pytest.mark.parametrize(("body", "status"), BAD_BODIES)
def test_bad_bodies_get_one_line_4xx(server: Server, body: bytes, status: int) -> None:
    answer = server.post("/extract", body)
    assert answer.status == status, answer.body
    assert answer.headers["content-type"] == "application/json"
    assert b"\n" not in answer.body and b"Traceback" not in answer.body
    assert answer.json()["error"]


def test_bad_ndjson_line_is_named(server: Server) -> None:
    answer = server.post("/extract", TUTORIAL + b"\n{oops\n", "application/x-ndjson")
    assert answer.status == 400
    assert answer.json()["error"].startswith("line 2 is not JSON")


def test_body_over_the_cap_is_413_declared_or_streamed(logs: list[str]) -> None:
    settings = ServeSettings(port=0, max_body=64 * 1024)
    with serving(settings=settings) as small:
        big = b'{"request_id": "r", "x": "' + b"a" * (10 << 20) + b'"}'
        answer = small.post("/extract", big)
        assert answer.status == 413
        assert answer.json()["error"].startswith("body larger than --max-body")

        def chunks() -> Any:  # no Content-Length: the cap holds while it streams
            for _ in range(40):
                yield b"a" * 4096

        streamed = small.request("POST", "/extract", body=chunks())
        assert streamed.status == 413
        assert small.get("/health").status == 200


def test_detail_leaves_out_text_and_routing_unless_asked(logs: list[str]) -> None:
    with serving(logs) as plain:
        assert plain.get("/requests/no-such-id").status == 404
        detail = plain.get("/requests/moe-01").json()
    assert detail["request"]["request_id"] == "moe-01"
    assert detail["left_out"] == ["text", "routing", "raw_lines"]
    assert detail["tokens"] and all(
        set(t) <= {"pos", "phase", "skips", "kv"} for t in detail["tokens"]
    )
    assert detail["expert_counts"]  # aggregates stay
    assert "raw_lines" not in detail and "prompt" not in detail["request"]
    settings = ServeSettings(port=0, text=True, keep_routing=True)
    with serving(logs, settings=settings) as full:
        detail = full.get("/requests/moe-01").json()
    assert detail["left_out"] == []
    assert any(t["experts"] for t in detail["tokens"])
    assert detail["raw_lines"][0]["head"].startswith('{"request_id": "moe-01"')
    assert "prompt" in detail["request"]


def test_openapi_describes_every_route(server: Server) -> None:
    paths = server.get("/openapi.json").json()["paths"]
    described = {(method.upper(), path) for path, ops in paths.items() for method in ops}
    assert described == {(method, path) for method, path, _ in EXAMPLES}
    for method, path, _ in EXAMPLES:  # and each route exists: no 404/405
        concrete = path.replace("{request_id}", "moe-01")
        body = TUTORIAL if method == "POST" else None
        assert server.request(method, concrete, body=body).status == 200, path


def test_bearer_token_is_required_when_set(logs: list[str]) -> None:
    token = b"0123456789abcdef0123"
    with serving(token=token) as guarded:
        assert guarded.get("/health").status == 401
        wrong = guarded.get("/metrics", headers={"Authorization": "Bearer nope"})
        assert wrong.status == 401 and wrong.headers["www-authenticate"] == "Bearer"
        right = guarded.get("/health", headers={"Authorization": "Bearer " + token.decode()})
        assert right.status == 200


def test_metrics_content_type_is_negotiated(server: Server) -> None:
    plain = server.get("/metrics")
    assert plain.headers["content-type"].startswith("text/plain; version=0.0.4")
    openmetrics = server.get(
        "/metrics", headers={"Accept": "application/openmetrics-text; version=1.0.0"}
    )
    assert openmetrics.headers["content-type"].startswith("application/openmetrics-text")
    assert openmetrics.body.rstrip().endswith(b"# EOF")
