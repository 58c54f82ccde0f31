"""The receivers in a child process of their own (``ReceiverProcess``, what ``tail`` and
``serve`` run): the real SDK exporters' spans land in the spool the parent follows, the
counters come back through ``status``, a port in use is a one-line error, ``close``
writes what was taken, and a child that dies leaves a status that says so."""

from __future__ import annotations

import os
import re
import signal
import socket
import subprocess
import sys
from pathlib import Path

import pytest
from opentelemetry.exporter.otlp.proto.grpc.trace_exporter import (
    OTLPSpanExporter as GrpcExporter,
)
from opentelemetry.exporter.otlp.proto.http.trace_exporter import (
    OTLPSpanExporter as HttpExporter,
)
from otlp_helpers import RECEIVING, post, send_vllm_spans, spool_spans
from waiting import wait_for

from sparseety_tui.receive import Endpoint, ReceiveError, ReceiverProcess, ReceiveSettings


def settings(**kw: object) -> ReceiveSettings:
    return ReceiveSettings(
        http=Endpoint("127.0.0.1", 0),
        grpc=Endpoint("127.0.0.1", 0),
        **kw,  # type: ignore[arg-type]
    )


def test_spans_from_both_exporters_reach_the_spool_and_the_counters(tmp_path: Path) -> None:
    spool = tmp_path / "spool.jsonl"
    running = ReceiverProcess(settings(spool=str(spool)))
    assert running.spool_path == str(spool) and spool.exists()  # known before start
    running.start()
    try:
        assert running.status()["listening"] == {
            kind: where.shown() for kind, where in running.bound.items()
        }
        assert [line.split(" on ")[0] for line in running.describe()] == [
            "OTLP/HTTP",
            "OTLP/gRPC",
        ]
        http = running.bound["http"].port
        send_vllm_spans(HttpExporter(endpoint=f"http://127.0.0.1:{http}/v1/traces"), [1, 2])
        grpc_port = running.bound["grpc"].port
        send_vllm_spans(GrpcExporter(endpoint=f"http://127.0.0.1:{grpc_port}", insecure=True), [3])
        assert post(http, b"not protobuf")[0] == 400
        spans = wait_for(
            lambda: len(got := spool_spans(running.spool_path)) == 3 and got,
            what="3 spans in the spool",
        )
        ids = sorted(
            a["value"]["stringValue"]
            for s in spans
            for a in s["span"]["attributes"]
            if a["key"] == "gen_ai.request.id"
        )
        assert len(ids) == 3
        status = running.status()
        assert status["accepted_spans"] == 3
        assert status["refused"] == {"malformed": 1}
    finally:
        running.close()
    final = running.status()  # after close: what the child said as it closed
    assert final["accepted_spans"] == 3 and final["spool"]["pending_bytes"] == 0
    assert final["spool"]["failure"] is None
    assert len(spool_spans(str(spool))) == 3


def test_a_port_in_use_is_a_one_line_error_and_the_private_spool_goes(tmp_path: Path) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        running = ReceiverProcess(ReceiveSettings(http=Endpoint("127.0.0.1", port)))
        spool = Path(running.spool_path)
        assert spool.exists()
        with pytest.raises(
            ReceiveError, match=f"cannot listen on '127.0.0.1' port {port}: address already in use"
        ):
            running.start()
    assert not spool.parent.exists()  # closed with the failure: its private directory too


def test_a_spool_that_cannot_be_opened_is_an_error_at_once(tmp_path: Path) -> None:
    with pytest.raises(ReceiveError) as caught:
        ReceiverProcess(settings(spool=str(tmp_path / "missing-dir" / "spool.jsonl")))
    assert "\n" not in str(caught.value)


def test_a_child_that_dies_leaves_a_status_that_says_so(tmp_path: Path) -> None:
    running = ReceiverProcess(settings(spool=str(tmp_path / "spool.jsonl")))
    running.start()
    post(running.bound["http"].port, b"not protobuf")
    assert running.status()["refused"] == {"malformed": 1}
    pid = running._process.pid
    assert pid is not None
    os.kill(pid, signal.SIGKILL)
    running._process.join(30)
    status = running.status()  # never raises: the last counters, nothing listening, why
    assert status["refused"] == {"malformed": 1}
    assert status["listening"] == {}
    assert status["spool"]["failure"] == "the OTLP receivers' process ended"
    running.close()


def test_a_sigterm_to_the_whole_group_leaves_no_spool_behind(tmp_path: Path) -> None:
    # A service manager (or ``timeout``) signals every process of the group. The child
    # ignores it; however ``serve`` ends (uvicorn re-raises the signal once it has shut
    # down), the child sees its pipe end, writes what it took and removes the spool.
    temp = tmp_path / "tmp"
    temp.mkdir()
    proc = subprocess.Popen(
        [sys.executable, "-m", "sparseety_tui", "serve", *RECEIVING],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, "PYTHONUNBUFFERED": "1", "TMPDIR": str(temp)},
        start_new_session=True,
    )
    try:
        assert proc.stderr is not None
        lines = [proc.stderr.readline() for _ in range(2)]
        found = re.search(r"OTLP/HTTP on http://127\.0\.0\.1:(\d+)/", lines[1])
        assert found, lines
        (private,) = temp.glob("sparseety-otlp-*")
        spool = private / "spans.otlp.jsonl"
        send_vllm_spans(HttpExporter(endpoint=f"http://127.0.0.1:{found.group(1)}/v1/traces"), [1])
        wait_for(lambda: len(spool_spans(str(spool))) == 1, what="the span spooled")
        os.killpg(proc.pid, signal.SIGTERM)
        proc.wait(30)
        wait_for(lambda: not private.exists(), what="the private spool removed")
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait(5)
        if proc.stderr is not None:
            proc.stderr.close()
