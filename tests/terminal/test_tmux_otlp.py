"""``tail --otlp`` alone in a real terminal: spans sent by the OpenTelemetry SDK's own
HTTP exporter become rows on screen, and ids holding markup or escape sequences are shown
as their literal text (never styling, never driving the terminal)."""

from __future__ import annotations

import socket
import sys
import time
from pathlib import Path

from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from otlp_spans import VllmRequest, trace_requests
from test_tmux import (  # noqa: F401  (tmux: the fixture)
    Tmux,
    start_sized,
    tmux,
)
from waiting import wait_for

WIDTH, HEIGHT = 160, 30


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def span_of(rid: str) -> VllmRequest:
    return VllmRequest(
        request_id=rid,
        prompt_tokens=7,
        completion_tokens=3,
        queue_s=0.1,
        ttft_s=0.2,
        latency_s=1.0,
        prefill_s=0.1,
        decode_s=0.8,
        inference_s=0.9,
        start_ns=time.time_ns(),
    )


def test_span_ids_with_markup_and_escapes_show_literally(tmux: Tmux, tmp_path: Path) -> None:  # noqa: F811
    port = free_port()
    start_sized(tmux, tmp_path, (WIDTH, HEIGHT), "tail", "--otlp", str(port))
    tmux.wait_for(lambda s: "requests 0" in s, "the app with no rows")
    ids = ["[bold]x[/]", "\x1b[31mred", "[red]r", "plain-last"]
    exporter = OTLPSpanExporter(endpoint=f"http://127.0.0.1:{port}/v1/traces")
    trace_requests([span_of(rid) for rid in ids], SimpleSpanProcessor(exporter))
    screen = tmux.wait_for(lambda s: "plain-last" in s, "the spans' rows")
    assert "[bold]x[/]" in screen and "[red]r" in screen  # markup as text
    assert "\\x1b[31mred" in screen  # the escape written out, not obeyed
    styled = tmux.run("capture-pane", "-p", "-e", "-t", "app")
    assert "\x1b[31mred" not in styled  # no red from the id itself
    tmux.wait_for(lambda s: "requests 4 " in s, "the totals of the four spans")


def test_a_closed_terminal_removes_the_private_spool(tmux: Tmux, tmp_path: Path) -> None:  # noqa: F811
    # The spool's private directory goes where TMPDIR says: here, a directory of the test.
    temp = tmp_path / "tmp"
    temp.mkdir()
    port = free_port()
    tmux.run(
        "new-session", "-d", "-s", "app", "-x", str(WIDTH), "-y", str(HEIGHT),
        "-e", "TERM=xterm-256color", "-e", f"TMPDIR={temp}",
        f"env -u COLUMNS -u LINES {sys.executable} -m sparseety_tui tail --otlp {port}",
    )  # fmt: skip
    tmux.wait_for(lambda s: "requests 0" in s, "the app with no rows")
    exporter = OTLPSpanExporter(endpoint=f"http://127.0.0.1:{port}/v1/traces")
    trace_requests([span_of("held-span")], SimpleSpanProcessor(exporter))
    tmux.wait_for(lambda s: "held-span" in s, "the span's row")
    (spool_dir,) = temp.glob("sparseety-otlp-*")
    assert (spool_dir / "spans.otlp.jsonl").stat().st_size > 0
    tmux.run("kill-server")  # the terminal goes away: SIGHUP
    wait_for(lambda: not spool_dir.exists(), what="the private spool removed")
