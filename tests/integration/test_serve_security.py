"""`serve` is safe by default: loopback unless told otherwise, and then only with a token;
whatever a client sends, it gets a 4xx (or an answer), never a 500, and the server stays
healthy."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import orjson
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from serve_helpers import Server, serve_process, serving

from sparseety_tui.receive import is_loopback
from sparseety_tui.serve.settings import ServeSettings


def serve_cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "sparseety_tui", "serve", *args],
        capture_output=True,
        text=True,
        timeout=30,
        stdin=subprocess.DEVNULL,
    )


def test_any_address_but_loopback_exits_2_with_one_line() -> None:
    done = serve_cli("--host", "0.0.0.0")
    assert done.returncode == 2
    assert done.stderr.count("\n") == 1 and "is not a loopback address" in done.stderr
    assert "--allow-remote and --token-file" in done.stderr and "Traceback" not in done.stderr


def test_remote_with_token_serves_and_checks_the_token(token_file: Path) -> None:
    """--allow-remote with a token: it starts, and every route wants the token. (Bound to
    127.0.0.2, a loopback address, so the test reaches nothing outside the machine; the
    check is by --host, so --allow-remote is needed only for a non-loopback one.)"""
    with serve_process(["--host", "127.0.0.2", "--token-file", str(token_file)]) as server:
        assert server.get("/health").status == 401
        server.headers["Authorization"] = "Bearer " + token_file.read_text().strip()
        assert server.get("/health").status == 200


def test_a_loopback_server_answers_only_to_its_own_names(fuzzed: Server) -> None:
    for host in ("127.0.0.1", f"127.0.0.1:{fuzzed.port}", "localhost:1", "[::1]:8765"):
        assert fuzzed.get("/health", headers={"Host": host}).status == 200, host
    rebound = fuzzed.get("/health", headers={"Host": "attacker.example:8765"})
    assert rebound.status == 400
    assert rebound.json() == {"error": "Host is not this loopback server's"}


def test_default_binds_loopback_only() -> None:
    assert ServeSettings().host == "127.0.0.1"
    assert is_loopback("127.0.0.1") and is_loopback("::1") and is_loopback("localhost")
    assert not is_loopback("0.0.0.0") and not is_loopback("::") and not is_loopback("myhost")
    with serve_process([]) as server:
        assert server.host == "127.0.0.1"
        assert server.get("/health").json()["status"] == "ok"


# -- fuzz ---------------------------------------------------------------------------------

FIELDS = [
    "request_id",
    "prompt_tokens",
    "completion_tokens",
    "sparse",
    "model",
    "type",
    "latency_s",
    "received_ts",
    "topk_experts",
    "routing",
    "x",
]
json_values = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(min_value=-(2**70), max_value=2**70)
    | st.floats(allow_nan=False)
    | st.text(max_size=20),
    lambda children: (
        st.lists(children, max_size=4)
        | st.dictionaries(
            st.sampled_from(FIELDS),
            children,
            max_size=5,
        )
    ),
    max_leaves=20,
)
bodies = st.one_of(
    st.binary(max_size=300),
    # The standard library writes integers of any size (and Infinity): huge numbers.
    json_values.map(lambda value: json.dumps(value).encode()),
    st.integers(min_value=1, max_value=3000).map(lambda depth: b"[" * depth + b"]" * depth),
    st.integers(min_value=1, max_value=40).map(lambda n: b'{"a":' * n + b"1" + b"}" * n),
)


@pytest.fixture(scope="module")
def fuzzed() -> Any:
    with serving(settings=ServeSettings(port=0, max_body=64 * 1024)) as server:
        yield server


@settings(
    max_examples=80,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(body=bodies, ndjson=st.booleans())
def test_any_body_is_an_answer_or_a_4xx(fuzzed: Server, body: bytes, ndjson: bool) -> None:
    content_type = "application/x-ndjson" if ndjson else "application/json"
    answer = fuzzed.post("/extract", body, content_type)
    if answer.status == 200:
        assert answer.body.endswith(b"\n")
        for line in answer.body.splitlines():
            assert "request_id" in orjson.loads(line)
    else:
        assert answer.status in (400, 413, 422), answer.body
        assert list(orjson.loads(answer.body)) == ["error"]
        assert b"\n" not in answer.body


def test_server_is_healthy_after_hostile_bodies(fuzzed: Server) -> None:
    for body in (os.urandom(50_000), b"\xff" * 1000, b"[" * 100_000, b"9" * 60_000):
        assert 400 <= fuzzed.post("/extract", body).status < 500
    assert fuzzed.post("/extract", b"x" * (10 << 20)).status == 413  # 10 MB
    assert fuzzed.get("/health").json()["status"] == "ok"


def test_the_cli_parser_loads_no_http_stack() -> None:
    """`--help` stays instant and `tail`/`summary` run without the serve extra: building
    every subcommand's parser imports none of it."""
    code = (
        "import sys; from sparseety_tui.cli.main import build_parser; build_parser(); "
        "print(sorted(m for m in ('starlette', 'uvicorn', 'prometheus_client', 'anyio') "
        "if m in sys.modules))"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=30, check=True
    )
    assert done.stdout.strip() == "[]"
