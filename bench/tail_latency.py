"""Write-to-screen latency and CPU of a live tail, measured in a real terminal (tmux).

    python bench/tail_latency.py [--tool sparseety|lnav] [--rate 20000] [--markers 20]

A writer process appends ~250-byte JSON trace lines at ``--rate`` lines/s to a fresh file
that the tool follows in a 160x48 tmux pane. At a marker, the writer switches the request
ids it writes to ``mkKK-...`` and records when it wrote the first such line (T0); the
harness polls ``capture-pane`` every 10 ms and records when ``mkKK-`` first shows. Ids are
12 characters, the id column's width at 160 columns: a longer id is shown shortened in its
middle ("mark…000012345"), and its marker is never seen.
delay = first seen - T0 (so ~5 ms of polling slack on top). At 20,000 lines/s a single
line scrolls off a tail view within a few ms, so the marker is a change of what is written
from T0 on, not one line: the number is "how long until the screen reflects what was
written at T0". CPU is the tool process's user+sys time (/proc) over the streaming phase,
and over an idle phase (nothing written) afterwards.
"""

from __future__ import annotations

import argparse
import json
import multiprocessing as mp
import os
import platform
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from child import marker_delays  # bench/ is no package: its scripts import each other

SOCKET = f"sparseety-bench-{os.getpid()}"
WIDTH, HEIGHT = 160, 48


def tmux(*args: str) -> str:
    return subprocess.run(
        ["tmux", "-L", SOCKET, *args], capture_output=True, text=True, check=False
    ).stdout


def writer(path: str, rate: float, marker: mp.Value, t0s: mp.Array, stop: mp.Event) -> None:
    """Append lines at ``rate``/s in 1 ms batches; note when each marker's first line went."""
    seen = 0
    n = 0
    batch_every = 0.001
    per_batch = max(1, round(rate * batch_every))
    next_at = time.perf_counter()
    with open(path, "ab", buffering=0) as f:
        while not stop.is_set():
            k = marker.value
            prefix = f"mk{k:02d}-" if k > 0 else "bg-"
            lines = []
            for _ in range(per_batch):
                n += 1
                lines.append(
                    json.dumps(
                        {
                            "request_id": f"{prefix}{n:0{12 - len(prefix)}d}",
                            "model": "bench-moe",
                            "prompt_tokens": 100 + n % 900,
                            "completion_tokens": 20 + n % 300,
                            "cached_tokens": n % 64,
                            "latency_s": round(0.5 + (n % 50) / 10, 3),
                            "ttft_s": 0.05,
                            "ts": round(time.time(), 3),
                            "sparse": {
                                "topk_experts": 2,
                                "total_experts": 8,
                                "skipped_attention_heads": n % 4,
                            },
                        }
                    ).encode()
                    + b"\n"
                )
            f.write(b"".join(lines))
            if k > seen:
                t0s[k] = time.monotonic()
                seen = k
            next_at += batch_every
            delay = next_at - time.perf_counter()
            if delay > 0:
                time.sleep(delay)
            elif delay < -0.1:
                next_at = time.perf_counter()  # fell behind: do not burst


def cpu_seconds(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    ticks = os.sysconf("SC_CLK_TCK")
    return (int(fields[11]) + int(fields[12])) / ticks


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--tool", choices=("sparseety", "lnav"), default="sparseety")
    parser.add_argument("--rate", type=float, default=20000)
    parser.add_argument("--markers", type=int, default=20)
    parser.add_argument("--idle-s", type=float, default=20)
    parser.add_argument(
        "--settle-s",
        type=float,
        default=10,
        help="wait after the writer stops before measuring idle CPU",
    )
    parser.add_argument("--prefill-lines", type=int, default=40000)
    parser.add_argument(
        "--profile", metavar="OUT", help="run sparseety-tui under bench/tui_profile.py"
    )
    args = parser.parse_args()
    if shutil.which("tmux") is None:
        sys.exit("tmux is needed")

    work = Path(tempfile.mkdtemp(prefix="sparseety-bench-"))
    log = work / "live.jsonl"
    # History times end now, a few ms apart: all on one UTC day, as the lines written next,
    # so the "received" column stays 8 cells wide. (Times a year away widen it to a date and
    # time, the id column shrinks, and the ids show as "mark…000012345": no marker was ever
    # seen.)
    first_ts = time.time() - args.prefill_lines * 0.001
    with log.open("w") as f:  # ~10 MB of history first, like the anchors' measurement
        for i in range(args.prefill_lines):
            f.write(
                json.dumps(
                    {
                        "request_id": f"old-{i:08d}",
                        "prompt_tokens": 10,
                        "completion_tokens": 5,
                        "latency_s": 0.3,
                        "ts": round(first_ts + i * 0.001, 3),
                        "x_pad": "p" * 150,
                    }
                )
                + "\n"
            )
    if args.tool == "sparseety":
        command = [sys.executable, "-m", "sparseety_tui", "tail", str(log)]
        if args.profile:
            profiler = str(Path(__file__).with_name("tui_profile.py"))
            command = [
                sys.executable,
                profiler,
                os.path.abspath(args.profile),
                "--",
                "tail",
                str(log),
            ]
    else:
        command = ["lnav", str(log)]
    env = ["-e", "TERM=xterm-256color", "-e", f"HOME={work}"]
    tmux("new-session", "-d", "-s", "b", "-x", str(WIDTH), "-y", str(HEIGHT), *env, *command)
    pid = int(tmux("display-message", "-p", "-t", "b", "#{pane_pid}").strip())
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline and "old-" not in tmux("capture-pane", "-p", "-t", "b"):
        time.sleep(0.05)
    time.sleep(2)

    marker = mp.Value("i", 0)
    t0s = mp.Array("d", args.markers + 1)
    stop = mp.Event()
    proc = mp.Process(target=writer, args=(str(log), args.rate, marker, t0s, stop))
    proc.start()
    time.sleep(2)  # steady state
    cpu0, wall0 = cpu_seconds(pid), time.monotonic()
    size0 = log.stat().st_size
    delays, missed = marker_delays(
        args.markers, marker, t0s, proc, lambda: tmux("capture-pane", "-p", "-t", "b")
    )
    cpu1, wall1 = cpu_seconds(pid), time.monotonic()
    written = (log.stat().st_size - size0) / 250
    stop.set()
    proc.join()
    time.sleep(args.settle_s)  # let the tool catch up, then idle
    cpu2, wall2 = cpu_seconds(pid), time.monotonic()
    time.sleep(args.idle_s)
    cpu3, wall3 = cpu_seconds(pid), time.monotonic()
    tmux("kill-server")
    shutil.rmtree(work, ignore_errors=True)

    delays.sort()

    def q(p: float) -> float:
        return delays[min(len(delays) - 1, max(0, round(p * len(delays)) - 1))]

    result = {
        "tool": args.tool,
        "rate_lines_s": args.rate,
        "achieved_lines_s": round(written / (wall1 - wall0)),
        "markers": args.markers,
        "missed": missed,
        "p50_ms": round(statistics.median(delays), 1) if delays else None,
        "p90_ms": round(q(0.90), 1) if delays else None,
        "p99_ms": round(q(0.99), 1) if delays else None,
        "max_ms": round(delays[-1], 1) if delays else None,
        "cpu_streaming_pct": round(100 * (cpu1 - cpu0) / (wall1 - wall0), 1),
        "cpu_idle_pct": round(100 * (cpu3 - cpu2) / (wall3 - wall2), 2),
        "machine": f"{platform.machine()} {os.cpu_count()} cpu, Python {platform.python_version()}",
        "date": time.strftime("%Y-%m-%d"),
    }
    print(json.dumps(result))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
