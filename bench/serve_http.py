"""`sparseety-tui serve`: /metrics scrape time and POST /extract requests/s (issue #13).

    python bench/serve_http.py                      # 100,000 requests followed; 1, 8, 64 clients
    python bench/serve_http.py --requests 20000 --seconds 3

Starts `serve` as its own process over a generated trace of --requests count-only records
(the 500 of sample_logs/count_only_500.jsonl repeated with new ids), on a free loopback
port, and waits until it has read them all. Then:

- /metrics: the first scrape (the figures computed from the followed state), the scrapes
  after it while nothing changes (the figures are cached per state), and a scrape after
  one line more (computed again);
- POST /extract with the tutorial's record, from 1, 8 and 64 client threads (one
  keep-alive connection each) for --seconds each: requests/s and latency quantiles.

Only 127.0.0.1 is contacted; every loop is bounded by time and by count. Prints a
markdown table for bench/RESULTS.md.
"""

from __future__ import annotations

import argparse
import http.client
import os
import re
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import orjson

ROOT = Path(__file__).resolve().parents[1]
TUTORIAL = (
    b'{"request_id": "req-001", "prompt_tokens": 100, "completion_tokens": 50, "model": '
    b'"fake-moe-model", "sparse": {"topk_experts": 2, "total_experts": 8, '
    b'"skipped_attention_heads": 4}}'
)
#: At most this many requests per concurrency level, whatever --seconds says.
MAX_POSTS = 20_000


def make_log(path: Path, requests: int) -> None:
    lines = (ROOT / "sample_logs" / "count_only_500.jsonl").read_bytes().splitlines()
    with path.open("wb") as out:
        for i in range(requests):
            record = orjson.loads(lines[i % len(lines)])
            record["request_id"] = f"bench-{i:08d}"
            out.write(orjson.dumps(record) + b"\n")


def connect(port: int) -> http.client.HTTPConnection:
    """A keep-alive connection without Nagle's algorithm: http.client sends a POST's
    headers and body in two writes, and the body would otherwise wait for the server's
    delayed ACK of the headers (40 ms on Linux), which measures TCP, not the server."""
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=120)
    conn.connect()
    assert conn.sock is not None
    conn.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    return conn


def call(conn: http.client.HTTPConnection, method: str, path: str, body: bytes | None = None
         ) -> tuple[int, bytes]:  # fmt: skip
    headers = {"Content-Type": "application/json"} if body is not None else {}
    conn.request(method, path, body=body, headers=headers)
    response = conn.getresponse()
    return response.status, response.read()


def quantile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def scrape_times(port: int, log: Path) -> dict[str, float]:
    conn = connect(port)
    start = time.perf_counter()
    status, body = call(conn, "GET", "/metrics")
    first = time.perf_counter() - start
    assert status == 200 and b"sparseety_requests_total" in body
    warm = []
    for _ in range(50):
        start = time.perf_counter()
        call(conn, "GET", "/metrics")
        warm.append(time.perf_counter() - start)
    with log.open("ab") as f:  # one line more: the figures are computed again
        f.write(b'{"request_id": "bench-extra", "prompt_tokens": 1}\n')
    time.sleep(1.5)
    start = time.perf_counter()
    call(conn, "GET", "/metrics")
    after = time.perf_counter() - start
    conn.close()
    return {
        "first": first,
        "warm_p50": statistics.median(warm),
        "warm_p95": quantile(warm, 0.95),
        "after_change": after,
        "bytes": len(body),
    }


def post_rate(port: int, clients: int, seconds: float) -> dict[str, float]:
    latencies: list[float] = []
    errors = 0
    lock = threading.Lock()
    stop_at = time.monotonic() + seconds
    budget = [MAX_POSTS]

    def client() -> None:
        nonlocal errors
        conn = connect(port)
        mine: list[float] = []
        bad = 0
        while time.monotonic() < stop_at:
            with lock:
                if budget[0] <= 0:
                    break
                budget[0] -= 1
            start = time.perf_counter()
            status, _ = call(conn, "POST", "/extract", TUTORIAL)
            mine.append(time.perf_counter() - start)
            bad += status != 200
        conn.close()
        with lock:
            latencies.extend(mine)
            errors += bad

    threads = [threading.Thread(target=client) for _ in range(clients)]
    began = time.perf_counter()
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    elapsed = time.perf_counter() - began
    return {
        "requests": len(latencies),
        "per_s": len(latencies) / elapsed,
        "p50_ms": 1000 * statistics.median(latencies),
        "p99_ms": 1000 * quantile(latencies, 0.99),
        "errors": errors,
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--requests", type=int, default=100_000)
    parser.add_argument("--seconds", type=float, default=5.0)
    parser.add_argument("--workers", type=int, default=None, help="serve --workers")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as folder:
        log = Path(folder) / "requests.jsonl"
        make_log(log, args.requests)
        command = [sys.executable, "-m", "sparseety_tui", "serve", str(log), "--port", "0"]
        if args.workers:
            command += ["--workers", str(args.workers)]
        proc = subprocess.Popen(command, stderr=subprocess.PIPE, stdout=subprocess.DEVNULL)
        try:
            assert proc.stderr is not None
            match = re.search(rb":(\d+) \(", proc.stderr.readline())
            assert match, "serve did not start"
            port = int(match.group(1))
            conn = connect(port)
            deadline = time.monotonic() + 300
            while time.monotonic() < deadline:
                _, body = call(conn, "GET", "/summary")
                if orjson.loads(body)["requests"]["count"] == args.requests:
                    break
                time.sleep(0.5)
            conn.close()
            scrape = scrape_times(port, log)
            posts = {c: post_rate(port, c, args.seconds) for c in (1, 8, 64)}
        finally:
            proc.send_signal(signal.SIGINT)
            try:
                proc.wait(10)
            except subprocess.TimeoutExpired:
                proc.kill()
    print(f"requests followed: {args.requests:,}; load average {os.getloadavg()}")
    print("| /metrics scrape | time |\n|---|---|")
    print(f"| first (figures computed) | {1000 * scrape['first']:.1f} ms |")
    print(f"| unchanged state, p50 / p95 of 50 | {1000 * scrape['warm_p50']:.1f} / "
          f"{1000 * scrape['warm_p95']:.1f} ms |")  # fmt: skip
    print(f"| after one more line (computed again) | {1000 * scrape['after_change']:.1f} ms |")
    print(f"| exposition size | {scrape['bytes']:,} bytes |")
    print("\n| POST /extract clients | requests | requests/s | p50 ms | p99 ms | errors |")
    print("|---|---|---|---|---|---|")
    for clients, r in posts.items():
        print(f"| {clients} | {r['requests']:,} | {r['per_s']:.0f} | {r['p50_ms']:.1f} | "
              f"{r['p99_ms']:.1f} | {r['errors']} |")  # fmt: skip
    return 0


if __name__ == "__main__":
    sys.exit(main())
