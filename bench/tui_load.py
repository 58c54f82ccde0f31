"""How long the live UI's ingest worker takes to load a whole big log (tail + backfill).

Usage (see bench/RESULTS.md):

    python bench/tui_load.py FILE [--runs 1]

Runs the worker headless (no Textual) in a child process, once with the native scanner
and once with SPARSEETY_TUI_PURE_PYTHON=1, alternately, and prints the seconds from start
until every line of FILE is in the store (the tail window first, then the older part).
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys

LOAD = """
import sys, time
from sparseety_tui.core.figures._costmodel import DEFAULT_SHAPE
from sparseety_tui.core.extraction._extractor import Extractor
from sparseety_tui.ingest.worker import IngestWorker
from sparseety_tui.ingest.snapshot import LiveOptions
start = time.perf_counter()
worker = IngestWorker(Extractor(), DEFAULT_SHAPE, LiveOptions(paths=(sys.argv[1],), track_rate=False))
worker.start()
assert worker.drain(1800), "not loaded in 30 minutes"
print(time.perf_counter() - start, worker.snapshot.rows)
worker.stop()
"""


def load_seconds(path: str, pure_python: bool) -> tuple[float, int]:
    env = dict(os.environ)
    if pure_python:
        env["SPARSEETY_TUI_PURE_PYTHON"] = "1"
    out = subprocess.run(
        [sys.executable, "-c", LOAD, path], env=env, capture_output=True, text=True, check=True
    ).stdout.split()
    return float(out[0]), int(out[1])


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("file")
    parser.add_argument("--runs", type=int, default=1)
    args = parser.parse_args()
    for run in range(args.runs):
        native, rows = load_seconds(args.file, pure_python=False)
        pure, _ = load_seconds(args.file, pure_python=True)
        print(
            f"run {run + 1}: {rows:,} rows; native scanner {native:.1f} s, "
            f"pure Python {pure:.1f} s (x{pure / native:.1f})",
            flush=True,
        )


if __name__ == "__main__":
    main()
