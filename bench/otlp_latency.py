"""Span-to-screen latency of ``tail --otlp``, and a burst that overflows the receiver's
queue, measured with a real terminal (tmux) and real OTLP/HTTP exports.

    python bench/otlp_latency.py latency [--rate 1000] [--markers 40] [--every-ms 10]
    python bench/otlp_latency.py burst [--queue-bytes 1048576] [--clients 8] [--seconds 5]

latency: ``tail --otlp PORT`` runs in a 160x48 tmux pane. A sender process posts vLLM
``llm_request`` spans (the OpenTelemetry SDK's spans, encoded by its own OTLP encoder) at
``--rate`` spans/s, one export every ``--every-ms`` ms, each span its own request id of 12
characters (the id column's width). At a marker the sender switches the ids it sends to
``mkKK-...`` and records when it began the first export holding them (T0); the harness
polls ``capture-pane`` every 10 ms and records when ``mkKK-`` first shows. delay = first
seen - T0 (the export's own round trip included, ~5 ms of polling slack on top), as
bench/tail_latency.py measures lines. CPU is the tail process's user+sys time over the
streaming phase (ingest and UI), and its children's (the receivers' process).

burst: ``serve --otlp PORT --otlp-queue-bytes N`` (a small queue on purpose) takes
``--clients`` senders posting exports of ``--batch`` spans as fast as they can for
``--seconds``. Every export's answer is counted: 200 (its spans accepted), 503/429
(refused, with Retry-After), anything else (an error). Then the check: spans sent =
accepted + refused, the spool holds exactly the accepted spans, one line each, and
``serve``'s store a row for each (``/summary`` ``requests.count``).
"""

from __future__ import annotations

import argparse
import contextlib
import http.client
import json
import multiprocessing as mp
import os
import platform
import re
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

from child import marker_delays  # bench/ is no package: its scripts import each other

SOCKET = f"sparseety-otlp-bench-{os.getpid()}"
WIDTH, HEIGHT = 160, 48
ID_CHARS = 12


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def tmux(*args: str) -> str:
    return subprocess.run(
        ["tmux", "-L", SOCKET, *args], capture_output=True, text=True, check=False
    ).stdout


class Template:
    """One export of ``count`` spans with placeholder ids, cut around them: an export with
    any ids of ID_CHARS characters is the parts joined with the ids (the protobuf length
    prefixes stay right), so the sender encodes nothing while it runs."""

    def __init__(self, count: int) -> None:
        from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans
        from opentelemetry.sdk.resources import Resource
        from opentelemetry.sdk.trace import TracerProvider
        from opentelemetry.sdk.trace.export import SimpleSpanProcessor
        from opentelemetry.sdk.trace.export.in_memory_span_exporter import (
            InMemorySpanExporter,
        )
        from opentelemetry.trace import SpanKind

        exporter = InMemorySpanExporter()
        provider = TracerProvider(resource=Resource({"service.name": "vllm"}))
        provider.add_span_processor(SimpleSpanProcessor(exporter))
        tracer = provider.get_tracer("vllm.v1.engine.output_processor")
        now = time.time_ns()
        marks = [f"Q{j:0{ID_CHARS - 1}d}".encode() for j in range(count)]
        for j, mark in enumerate(marks):
            span = tracer.start_span(
                "llm_request",
                kind=SpanKind.SERVER,
                start_time=now - 2_310_000_000,
                attributes={
                    "gen_ai.response.model": "Qwen/Qwen3-30B-A3B",
                    "gen_ai.request.id": mark.decode(),
                    "gen_ai.request.top_p": 1.0,
                    "gen_ai.request.max_tokens": 256,
                    "gen_ai.request.temperature": 0.7,
                    "gen_ai.request.n": 1,
                    "gen_ai.usage.prompt_tokens": 812 + j,
                    "gen_ai.usage.completion_tokens": 256,
                    "gen_ai.latency.time_in_queue": 0.012,
                    "gen_ai.latency.time_to_first_token": 0.143,
                    "gen_ai.latency.e2e": 2.31,
                    "gen_ai.latency.time_in_scheduler": 0.002,
                    "gen_ai.latency.time_in_model_forward": 2.0,
                    "gen_ai.latency.time_in_model_execute": 2.1,
                    "gen_ai.latency.time_in_model_prefill": 0.121,
                    "gen_ai.latency.time_in_model_decode": 2.17,
                    "gen_ai.latency.time_in_model_inference": 2.29,
                },
            )
            span.end(end_time=now)
        provider.shutdown()
        body = bytes(encode_spans(exporter.get_finished_spans()).SerializeToString())
        self.parts: list[bytes] = []
        for mark in marks:
            head, _, body = body.partition(mark)
            self.parts.append(head)
        self.parts.append(body)
        self.count = count

    def body(self, ids: list[bytes]) -> bytes:
        out = [self.parts[0]]
        for rid, part in zip(ids, self.parts[1:]):
            out.append(rid)
            out.append(part)
        return b"".join(out)


def ids_for(prefix: str, start: int, count: int) -> list[bytes]:
    digits = ID_CHARS - len(prefix)
    return [f"{prefix}{n % 10**digits:0{digits}d}".encode() for n in range(start, start + count)]


def sender(
    port: int,
    rate: float,
    every: float,
    marker: Any,
    t0s: Any,
    stop: Any,
    counts: Any,
) -> None:
    """Post an export every ``every`` s at ``rate`` spans/s; note when each marker's first
    export began. ``counts``: spans sent, accepted, refused; exports with another answer."""
    per = max(1, round(rate * every))
    template = Template(per)
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    seen = n = 0
    next_at = time.perf_counter()
    while not stop.is_set():
        k = marker.value
        prefix = f"mk{k:02d}-" if k > 0 else "bg-"
        body = template.body(ids_for(prefix, n, per))
        n += per
        if k > seen:
            t0s[k] = time.monotonic()
            seen = k
        try:
            conn.request("POST", "/v1/traces", body, {"Content-Type": "application/x-protobuf"})
            response = conn.getresponse()
            response.read()
            status = response.status
        except (OSError, http.client.HTTPException):
            conn.close()
            status = -1
        counts[0] += per
        if status == 200:
            counts[1] += per
        elif status in (429, 503):
            counts[2] += per
        else:
            counts[3] += 1
        next_at += every
        delay = next_at - time.perf_counter()
        if delay > 0:
            time.sleep(delay)
        elif delay < -0.1:
            next_at = time.perf_counter()  # fell behind: do not burst
    conn.close()


def cpu_seconds(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def child_pids(pid: int) -> list[int]:
    """The processes ``pid`` started (the receivers' process, multiprocessing's helper)."""
    out = subprocess.run(["pgrep", "-P", str(pid)], capture_output=True, text=True, check=False)
    return [int(p) for p in out.stdout.split()]


def children_cpu(pids: list[int]) -> float:
    total = 0.0
    for child in pids:
        with contextlib.suppress(OSError):  # (ended)
            total += cpu_seconds(child)
    return total


def app_pid(shell_pid: int) -> int:
    """The python process under the pane's shell (the pane runs ``env ... python``)."""
    for _ in range(100):
        out = subprocess.run(
            ["pgrep", "-P", str(shell_pid)], capture_output=True, text=True, check=False
        ).stdout.split()
        if not out:
            return shell_pid
        if len(out) == 1:
            return int(out[0])
        time.sleep(0.05)
    return shell_pid


def latency(args: argparse.Namespace) -> dict[str, Any]:
    if shutil.which("tmux") is None:
        sys.exit("tmux is needed")
    work = Path(tempfile.mkdtemp(prefix="sparseety-otlp-bench-"))
    spool = work / "spool.jsonl"
    port = free_port()
    command = [
        sys.executable, "-m", "sparseety_tui", "tail",
        "--otlp", str(port), "--otlp-spool", str(spool),
    ]  # fmt: skip
    if args.profile:
        profiler = str(Path(__file__).with_name("tui_profile.py"))
        command = [sys.executable, profiler, os.path.abspath(args.profile), "--", *command[3:]]
    env = ["-e", "TERM=xterm-256color", "-e", f"HOME={work}"]
    tmux("new-session", "-d", "-s", "b", "-x", str(WIDTH), "-y", str(HEIGHT), *env, *command)
    pid = int(tmux("display-message", "-p", "-t", "b", "#{pane_pid}").strip())
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline and "requests 0" not in tmux("capture-pane", "-p", "-t", "b"):
        time.sleep(0.05)
    marker = mp.Value("i", 0)
    t0s = mp.Array("d", args.markers + 1)
    counts = mp.Array("q", 4)
    stop = mp.Event()
    proc = mp.Process(
        target=sender,
        args=(port, args.rate, args.every_ms / 1000, marker, t0s, stop, counts),
    )
    proc.start()
    time.sleep(args.warmup_s)  # steady state
    children = child_pids(pid)
    child0 = children_cpu(children)
    cpu0, wall0, sent0 = cpu_seconds(pid), time.monotonic(), counts[0]
    delays, missed = marker_delays(
        args.markers, marker, t0s, proc, lambda: tmux("capture-pane", "-p", "-t", "b")
    )
    cpu1, wall1, sent1 = cpu_seconds(pid), time.monotonic(), counts[0]
    child1 = children_cpu(children)
    stop.set()
    proc.join()
    screen = tmux("capture-pane", "-p", "-t", "b")
    tmux("kill-server")
    spool_bytes = spool.stat().st_size if spool.exists() else 0
    shutil.rmtree(work, ignore_errors=True)
    delays.sort()

    def q(p: float) -> float:
        return delays[min(len(delays) - 1, max(0, round(p * len(delays)) - 1))]

    return {
        "what": "span -> screen, tail --otlp in tmux",
        "rate_spans_s": args.rate,
        "achieved_spans_s": round((sent1 - sent0) / (wall1 - wall0)),
        "every_ms": args.every_ms,
        "markers": args.markers,
        "missed": missed,
        "p50_ms": round(statistics.median(delays), 1) if delays else None,
        "p90_ms": round(q(0.90), 1) if delays else None,
        "p99_ms": round(q(0.99), 1) if delays else None,
        "max_ms": round(delays[-1], 1) if delays else None,
        "cpu_streaming_pct": round(100 * (cpu1 - cpu0) / (wall1 - wall0), 1),
        "cpu_children_pct": round(100 * (child1 - child0) / (wall1 - wall0), 1),
        "sent": counts[0],
        "accepted": counts[1],
        "refused": counts[2],
        "other_answers": counts[3],
        "spool_bytes_per_span": round(spool_bytes / counts[1]) if counts[1] else None,
        "status_line": screen.splitlines()[0].strip() if screen else "",
        "machine": machine(),
        "date": time.strftime("%Y-%m-%d"),
    }


_SERVING = re.compile(r"serving http://([0-9.]+):(\d+)")


def get_json(port: int, path: str) -> Any:
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
    try:
        conn.request("GET", path)
        return json.loads(conn.getresponse().read())
    finally:
        conn.close()


def burst(args: argparse.Namespace) -> dict[str, Any]:
    work = Path(tempfile.mkdtemp(prefix="sparseety-otlp-burst-"))
    spool = work / "spool.jsonl"
    otlp = free_port()
    command = [sys.executable, "-m", "sparseety_tui", "serve", "--port", "0"]
    command += ["--otlp", str(otlp), "--otlp-spool", str(spool)]
    command += ["--otlp-queue-bytes", str(args.queue_bytes)]
    proc = subprocess.Popen(
        command,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, "PYTHONUNBUFFERED": "1"},
    )
    assert proc.stderr is not None
    match = _SERVING.search(proc.stderr.readline())
    assert match, "serve did not start"
    api = int(match.group(2))
    proc.stderr.readline()  # the receiver's line
    template = Template(args.batch)
    totals = {"sent": 0, "accepted": 0, "refused": 0, "other": 0, "exports": 0}
    by_status: dict[int, int] = {}
    lock = threading.Lock()
    deadline = time.monotonic() + args.seconds

    def client(c: int) -> None:
        conn = http.client.HTTPConnection("127.0.0.1", otlp, timeout=60)
        n = 0
        while time.monotonic() < deadline:
            body = template.body(ids_for(f"b{c:02d}-", n, args.batch))
            n += args.batch
            try:
                conn.request("POST", "/v1/traces", body, {"Content-Type": "application/x-protobuf"})
                response = conn.getresponse()
                response.read()
                status = response.status
                if response.getheader("Connection", "").lower() == "close":
                    conn.close()
            except (OSError, http.client.HTTPException):
                conn.close()
                status = -1
            with lock:
                totals["exports"] += 1
                totals["sent"] += args.batch
                by_status[status] = by_status.get(status, 0) + 1
                if status == 200:
                    totals["accepted"] += args.batch
                elif status in (429, 503):
                    totals["refused"] += args.batch
                else:
                    totals["other"] += 1
        conn.close()

    start = time.monotonic()
    threads = [threading.Thread(target=client, args=(c,)) for c in range(args.clients)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    elapsed = time.monotonic() - start
    # The store: a row for each accepted span (each its own id), once serve has read it.
    rows = 0
    wait_until = time.monotonic() + 600
    while time.monotonic() < wait_until:
        rows = get_json(api, "/summary")["requests"]["count"]
        if rows >= totals["accepted"]:
            break
        time.sleep(0.5)
    health = get_json(api, "/health")["otlp"]
    proc.send_signal(2)
    proc.wait(30)
    with spool.open("rb") as f:
        spool_lines = sum(1 for _ in f)
    shutil.rmtree(work, ignore_errors=True)
    return {
        "what": "burst: serve --otlp with a small queue, senders as fast as they can",
        "queue_bytes": args.queue_bytes,
        "clients": args.clients,
        "batch": args.batch,
        "seconds": round(elapsed, 2),
        "offered_spans_s": round(totals["sent"] / elapsed),
        "answers": {str(k): v for k, v in sorted(by_status.items())},
        **totals,
        "sent_equals_accepted_plus_refused": totals["sent"]
        == totals["accepted"] + totals["refused"],
        "receiver_accepted_spans": health["accepted_spans"],
        "receiver_refused": health["refused"],
        "spool_lines": spool_lines,
        "store_rows": rows,
        "nothing_lost": spool_lines == totals["accepted"] == rows,
        "machine": machine(),
        "date": time.strftime("%Y-%m-%d"),
    }


def machine() -> str:
    return f"{platform.machine()} {os.cpu_count()} cpu, Python {platform.python_version()}"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="what", required=True)
    lat = sub.add_parser("latency")
    lat.add_argument("--rate", type=float, default=1000)
    lat.add_argument("--every-ms", type=float, default=10)
    lat.add_argument("--markers", type=int, default=40)
    lat.add_argument("--warmup-s", type=float, default=3)
    lat.add_argument("--profile", metavar="OUT", help="run tail under bench/tui_profile.py")
    bur = sub.add_parser("burst")
    bur.add_argument("--queue-bytes", type=int, default=1 << 20)
    bur.add_argument("--clients", type=int, default=8)
    bur.add_argument("--batch", type=int, default=512)
    bur.add_argument("--seconds", type=float, default=5)
    args = parser.parse_args()
    result = latency(args) if args.what == "latency" else burst(args)
    print(json.dumps(result))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
