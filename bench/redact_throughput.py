"""`extract` with and without `--redact`, on generated logs: what redaction costs when on,
and that it costs nothing when off.

Usage (see bench/RESULTS.md for recorded runs):

    python bench/redact_throughput.py [--size 64M] [--runs 3] [--dir /tmp/redact-bench]

Two inputs from shared/tools/gen_logs.py (seed 1): a request-level JSONL (no text: the
strings are ids, models, file names) and a vLLM server log (prompts in its "Received
request" lines, so `extract --text` has text to redact). For each, A = `extract FILE -o
/dev/null`, B = the same with `--redact`, run alternately (A B A B ...) so machine drift
cancels; the figure that counts is the median of the per-pair B/A ratios. A third command
C = A again measures the noise: the off path is A itself (one `None` check per record), so
C/A is what "nothing measurable" is held to.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile

from child import GEN_LOGS, timed  # run as a script


def generate(kind: str, size: str, path: str, gen_logs: str) -> None:
    if not os.path.exists(path):
        cmd = [sys.executable, gen_logs, "--kind", kind, "--size", size, "--seed", "1"]
        subprocess.run([*cmd, "--out", path], check=True)


def pairs(commands: list[list[str]], runs: int, env: dict[str, str]) -> list[list[float]]:
    """Wall seconds of each command, ``runs`` rounds of all of them in turn."""
    out: list[list[float]] = [[] for _ in commands]
    for _ in range(runs):
        for i, cmd in enumerate(commands):
            out[i].append(timed(cmd, env)[0])
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--size", default="64M")
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--dir", default=os.path.join(tempfile.gettempdir(), "redact-bench"))
    parser.add_argument(
        "--gen-logs", default=str(GEN_LOGS), help="shared/tools/gen_logs.py (from a worktree)"
    )
    args = parser.parse_args()
    os.makedirs(args.dir, exist_ok=True)
    env = {**os.environ, "XDG_CONFIG_HOME": os.path.join(args.dir, "config")}
    tool = [sys.executable, "-m", "sparseety_tui", "extract", "-o", os.devnull]
    print(
        "| input | extract | off (median) | off again | on (median) | on / off | off again / off |"
    )
    print("|---|---|---|---|---|---|---|")
    for kind, text in (("jsonl", False), ("vllm", True)):
        path = os.path.join(args.dir, f"{kind}-{args.size}.log")
        generate(kind, args.size, path, args.gen_logs)
        extra = ["--text"] if text else []
        off = [*tool, *extra, path]
        on = [*tool, *extra, "--redact", path]
        a, b, c = pairs([off, on, off], args.runs, env)
        ratio = statistics.median(y / x for x, y in zip(a, b))
        noise = statistics.median(z / x for x, z in zip(a, c))
        print(
            f"| {kind} {args.size} | {' '.join(['extract', *extra])} | "
            f"{statistics.median(a):.2f} s | {statistics.median(c):.2f} s | "
            f"{statistics.median(b):.2f} s | {ratio:.2f} | {noise:.2f} |",
            flush=True,
        )


if __name__ == "__main__":
    main()
