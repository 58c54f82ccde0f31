"""`summary` over a big request-level JSONL vs a bare orjson.loads loop, and memory held.

Usage (see bench/RESULTS.md for recorded runs):

    python bench/summary_throughput.py FILE [--runs 3] [--jobs 0] [--pure-python]
    python bench/summary_throughput.py --generate 1G FILE   # needs shared/tools/gen_logs.py

The two commands run alternately (A B A B ...) so machine drift cancels; the figure that
counts is the median of the per-pair ratios. Peak RSS comes from the kernel (wait4).
"Held per request" is measured separately: RSS after ingesting the file (gc collected,
before totals) minus RSS before, divided by the number of requests.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys

from child import GEN_LOGS, timed  # run as a script, or imported by run_all.py

ORJSON_LOOP = (
    "import sys, orjson\n"
    "loads = orjson.loads\n"
    "with open(sys.argv[1], 'rb') as f:\n"
    "    for line in f:\n"
    "        loads(line)\n"
)

HELD = """
import gc, json, sys
def rss():
    with open('/proc/self/status') as f:
        for line in f:
            if line.startswith('VmRSS'):
                return int(line.split()[1]) * 1024
    return 0
import numpy  # imported by summary anyway: not per-request memory
from sparseety_tui.ingest.batch import Options, make_extractor
from sparseety_tui.ingest.parallel import ingest_all
gc.collect()
before = rss()
extractor = make_extractor(Options())
ingest_all(extractor, Options(), [sys.argv[1]], jobs=int(sys.argv[2]))
gc.collect()
after = rss()
n = len(extractor.store)
print(json.dumps({"requests": n, "held_bytes": after - before,
                  "bytes_per_request": (after - before) / max(n, 1),
                  "id_index_bytes_per_request": extractor.store.ids.nbytes() / max(n, 1)}))
"""


def generate(path: str, size: str) -> None:
    """Write a request-level JSONL of about ``size`` with gen_logs.py, seed 1."""
    subprocess.run(
        [
            sys.executable,
            str(GEN_LOGS),
            "--kind",
            "jsonl",
            "--size",
            size,
            "--out",
            path,
            "--seed",
            "1",
        ],
        check=True,
    )


def held(path: str, jobs: int, env: dict[str, str] | None = None) -> dict[str, float]:
    """Memory the store holds after ingesting ``path`` (see the module's docstring)."""
    out = subprocess.run(
        [sys.executable, "-c", HELD, path, str(jobs)],
        env=env,
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    result: dict[str, float] = json.loads(out)
    return result


def compare(path: str, runs: int, jobs: int = 0, pure_python: bool = False) -> dict[str, object]:
    """The orjson loop (A) and ``summary --json`` (B) alternately, then the memory held."""
    env = dict(os.environ)
    if pure_python:
        env["SPARSEETY_TUI_PURE_PYTHON"] = "1"
    py = sys.executable
    size = os.path.getsize(path)
    a_cmd = [py, "-c", ORJSON_LOOP, path]
    b_cmd = [py, "-m", "sparseety_tui", "summary", "--json", "--jobs", str(jobs), path]
    timed(a_cmd)  # warm the page cache
    rows = []
    for run in range(runs):
        a_wall, _, _ = timed(a_cmd)
        b_wall, _, b_rss = timed(b_cmd, env)
        rows.append((a_wall, b_wall, b_rss))
        print(
            f"run {run + 1}: orjson loop {a_wall:.2f} s, summary {b_wall:.2f} s "
            f"(ratio {b_wall / a_wall:.2f}), summary peak RSS {b_rss:.0f} MiB",
            flush=True,
        )
    memory = held(path, jobs, env)
    return {
        "file": path,
        "bytes": size,
        "cores": os.cpu_count(),
        "jobs": jobs,
        "native_scanner": not pure_python,
        "orjson_loop_s_median": round(statistics.median(r[0] for r in rows), 3),
        "summary_s_median": round(statistics.median(r[1] for r in rows), 3),
        "ratio_median_of_pairs": round(statistics.median(r[1] / r[0] for r in rows), 3),
        "summary_peak_rss_mib_median": round(statistics.median(r[2] for r in rows), 1),
        **{k: (round(v, 1) if isinstance(v, float) else v) for k, v in memory.items()},
    }


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("file")
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--jobs", type=int, default=0, help="summary --jobs (0 = all cores)")
    parser.add_argument("--generate", metavar="SIZE", help="first write FILE with gen_logs.py")
    parser.add_argument(
        "--pure-python",
        action="store_true",
        help="run summary without the native scanner (SPARSEETY_TUI_PURE_PYTHON=1)",
    )
    args = parser.parse_args()
    if args.generate:
        generate(args.file, args.generate)
    result = compare(args.file, args.runs, args.jobs, args.pure_python)
    print(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
