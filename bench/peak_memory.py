"""Peak memory as the kernel counts it: ``summary --json`` per request, and a live tail.

    python bench/peak_memory.py --summary FILE.jsonl [FILE.jsonl ...] [--tail FILE.jsonl]
        [--tree PATH] [--lnav]

``--summary``: the whole process's peak RSS (``/usr/bin/time -f %M``, what an inference
host with its memory given to the GPU server feels) of ``summary --json FILE``, minus the
peak of the same command on a tiny file (the file's first 5 lines: imports, numpy, the
first chunk), over the requests the summary counted: bytes per request above start-up.

``--tail``: the live path of ``tail`` without the screen (the ingest worker as the TUI
runs it: the last 8 MB first, then the older part in the background, a frozen snapshot
after every batch, the totals job on the totals thread), in a child process: its RSS once
every row is in and the worker is idle (after its last trim), and its peak.

``--tree``: the package tree to measure (default: this checkout), so that the code
before a change can be measured by pointing at a worktree of it. ``--lnav``: lnav's peak
RSS indexing the tail file (``lnav -n -c ';SELECT count(*) FROM all_logs'``), the anchor.
Prints one JSON document.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
TIME = "/usr/bin/time"

#: The live worker, headless: start-up RSS, load every row, let the totals and the trim
#: run, then the RSS with every row in and the peak.
TAIL = """
import json, sys, time
def status(field):
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith(field):
                return int(line.split()[1]) / 1024
from sparseety_tui.core.figures._costmodel import DEFAULT_SHAPE
from sparseety_tui.core.extraction._extractor import Extractor
from sparseety_tui.ingest.snapshot import LiveOptions
from sparseety_tui.ingest.worker import TRIM_INTERVAL_S, IngestWorker
import numpy  # loaded by the first batch anyway: part of start-up, not of the rows
before = status("VmRSS")
start = time.perf_counter()
worker = IngestWorker(Extractor(), DEFAULT_SHAPE, LiveOptions(paths=(sys.argv[1],)))
worker.start()
assert worker.drain(1800), "not loaded in 30 minutes"
loaded = time.perf_counter() - start
time.sleep(TRIM_INTERVAL_S + 3.0)  # the last totals job and the trim when caught up
assert worker.drain(60)
snap = worker.snapshot
print(json.dumps({"rows": snap.rows, "load_s": round(loaded, 1), "rss_before_mib": before,
                  "rss_mib": status("VmRSS"), "peak_mib": status("VmHWM")}))
worker.stop()
"""


def timed_peak_kib(cmd: list[str], env: dict[str, str], stdout: Any) -> tuple[int, float]:
    """(peak RSS in KiB, wall seconds) of ``cmd`` as ``/usr/bin/time -f %M`` reports it."""
    with tempfile.NamedTemporaryFile("r") as report:
        start = time.perf_counter()
        subprocess.run(
            [TIME, "-o", report.name, "-f", "%M", *cmd],
            env=env,
            stdout=stdout,
            check=True,
            cwd=tempfile.gettempdir(),  # not this checkout: ``-m`` puts the cwd first
        )
        wall = time.perf_counter() - start
        return int(report.read().split()[-1]), wall


def summary_peak(path: str, env: dict[str, str], tiny: str) -> dict[str, Any]:
    cmd = [sys.executable, "-m", "sparseety_tui", "summary", "--json"]
    startup, _ = timed_peak_kib([*cmd, tiny], env, subprocess.DEVNULL)
    with tempfile.TemporaryFile() as out:
        peak, wall = timed_peak_kib([*cmd, path], env, out)
        out.seek(0)
        requests = json.loads(out.read())["requests"]["count"]
    per_request = (peak - startup) * 1024 / requests
    return {
        "file": path,
        "requests": requests,
        "startup_peak_mib": round(startup / 1024, 1),
        "peak_mib": round(peak / 1024, 1),
        "peak_per_request_bytes": round(per_request, 1),
        "ratio_to_150_bytes_goal": round(per_request / 150, 3),
        "wall_s": round(wall, 2),
    }


def tail_rss(path: str, env: dict[str, str]) -> dict[str, Any]:
    out = subprocess.run(
        [sys.executable, "-c", TAIL, path],
        env=env,
        capture_output=True,
        text=True,
        check=True,
        cwd=tempfile.gettempdir(),
    ).stdout
    result: dict[str, Any] = json.loads(out.strip().splitlines()[-1])
    result["file"] = path
    result["ratio_to_500_mb_goal"] = round(result["rss_mib"] * 2**20 / 500e6, 3)
    return result


def lnav_peak(path: str) -> dict[str, Any]:
    peak, wall = timed_peak_kib(
        ["lnav", "-n", "-c", ";SELECT count(*) FROM all_logs", path],
        dict(os.environ),
        subprocess.DEVNULL,
    )
    return {"file": path, "peak_mib": round(peak / 1024, 1), "wall_s": round(wall, 1)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--summary", nargs="*", default=[], metavar="FILE")
    parser.add_argument("--tail", metavar="FILE")
    parser.add_argument("--tree", default=str(ROOT))
    parser.add_argument("--lnav", action="store_true")
    args = parser.parse_args()
    env = dict(os.environ, PYTHONPATH=os.path.abspath(args.tree))
    doc: dict[str, Any] = {
        "machine": f"{platform.machine()}, {os.cpu_count()} CPUs, "
        f"Python {platform.python_version()}",
        "tree": os.path.abspath(args.tree),
        "pure_python": os.environ.get("SPARSEETY_TUI_PURE_PYTHON") == "1",
        "summary": [],
    }
    with tempfile.TemporaryDirectory() as tmp:
        for path in args.summary:
            tiny = os.path.join(tmp, "tiny" + Path(path).suffix)
            with open(path, "rb") as f, open(tiny, "wb") as t:
                t.writelines(line for _, line in zip(range(5), f))
            doc["summary"].append(summary_peak(path, env, tiny))
            print(json.dumps(doc["summary"][-1]), file=sys.stderr, flush=True)
    if args.tail:
        doc["tail"] = tail_rss(args.tail, env)
        if args.lnav:
            doc["tail"]["lnav"] = lnav = lnav_peak(args.tail)
            doc["tail"]["ratio_to_lnav_peak"] = round(doc["tail"]["rss_mib"] / lnav["peak_mib"], 2)
    print(json.dumps(doc, indent=2))


if __name__ == "__main__":
    main()
