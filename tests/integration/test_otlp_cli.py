"""``serve``/``tail --otlp``/``--otlp-grpc`` as a user runs them: a receiver alone is a valid
command, the SDK's exporters reach it, ``/health`` counts what it took, and every refusal
to start is one clear line with exit status 2."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import orjson
import pytest
from opentelemetry.exporter.otlp.proto.grpc.trace_exporter import (
    OTLPSpanExporter as GrpcExporter,
)
from opentelemetry.exporter.otlp.proto.http.trace_exporter import (
    OTLPSpanExporter as HttpExporter,
)
from otlp_helpers import attributes, send_vllm_spans, serve_with_receivers, spool_spans
from waiting import wait_for

from sparseety_tui.formats import FAMILIES


def cli(*args: str, prelude: str = "") -> subprocess.CompletedProcess[str]:
    code = f"{prelude}from sparseety_tui.cli.main import main; main()"
    return subprocess.run(
        [sys.executable, "-c", code, *args],
        capture_output=True,
        text=True,
        timeout=60,
        stdin=subprocess.DEVNULL,
    )


def one_line_error(done: subprocess.CompletedProcess[str], *words: str) -> None:
    assert done.returncode == 2, done.stderr
    assert done.stderr.count("\n") == 1 and "Traceback" not in done.stderr, done.stderr
    for word in words:
        assert word in done.stderr, done.stderr


@pytest.mark.parametrize("command", ["serve", "tail"])
@pytest.mark.parametrize("option", ["--otlp", "--otlp-grpc"])
def test_a_remote_receiver_needs_allow_remote(command: str, option: str) -> None:
    one_line_error(cli(command, option, "0.0.0.0:4318"), "not a loopback address", "--allow-remote")


def test_allow_remote_without_a_token_is_refused(tmp_path: Path) -> None:
    one_line_error(cli("tail", "--otlp", "0.0.0.0:0", "--allow-remote"), "needs --token-file")


def test_tail_needs_a_path_or_a_receiver() -> None:
    one_line_error(cli("tail"), "tail needs a PATH", "--otlp")


def test_a_bad_address_is_one_line() -> None:
    one_line_error(cli("serve", "--otlp", "host:port"), "not [HOST:]PORT")
    one_line_error(cli("serve", "--otlp", "::1:4318"), "IPv6 address in brackets")


def test_the_spool_may_not_be_a_log_being_read(tmp_path: Path) -> None:
    log = tmp_path / "server.log"
    log.write_text("INFO hello\n")
    one_line_error(
        cli("serve", str(log), "--otlp", "0", "--otlp-spool", str(log)), "is one of the logs"
    )
    one_line_error(
        cli("serve", str(tmp_path), "--otlp", "0", "--otlp-spool", str(tmp_path / "spool")),
        "whose files are read as logs",
    )


def test_without_the_extra_it_says_what_to_install() -> None:
    done = cli("serve", "--otlp-grpc", "0", prelude="import sys; sys.modules['grpc'] = None; ")
    one_line_error(done, "pip install 'sparseety-tui[otlp]'", "grpc missing")


def test_serve_with_receivers_alone_takes_spans_from_both_exporters(tmp_path: Path) -> None:
    spool = tmp_path / "spans.jsonl"
    with serve_with_receivers(["--otlp-spool", str(spool)]) as (server, http, grpc):
        send_vllm_spans(HttpExporter(endpoint=f"http://127.0.0.1:{http}/v1/traces"), range(3))
        send_vllm_spans(GrpcExporter(endpoint=f"http://127.0.0.1:{grpc}"), range(3, 5))
        health = wait_for(
            lambda: (doc := server.get("/health").json())["otlp"]["accepted_spans"] == 5 and doc,
            what="five spans counted",
        )
        assert health["status"] == "ok" and health["otlp"]["refused"] == {}
        assert health["otlp"]["spool"]["path"] == str(spool)
        assert health["otlp"]["listening"] == {
            "http": f"127.0.0.1:{http}",
            "grpc": f"127.0.0.1:{grpc}",
        }
        spans = wait_for(lambda: len(s := spool_spans(str(spool))) == 5 and s, what="the spool")
        ids = [attributes(item["span"])["gen_ai.request.id"] for item in spans]
        assert sorted(ids) == [f"cmpl-{i:04d}-0" for i in range(5)]
        if "otlp" not in FAMILIES:
            pytest.skip("the otlp format family (branch h-otlpfmt) is not on this branch yet")
        rows = wait_for(
            lambda: len(r := server.get("/requests").body.splitlines()) == 5 and r,
            what="five rows at /requests",
        )
        got = sorted(orjson.loads(row)["request_id"] for row in rows)
        assert got == [f"cmpl-{i:04d}-0" for i in range(5)]
    assert spool.exists(), "a given spool is kept"
