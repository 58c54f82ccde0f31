"""Parsing big vLLM / SGLang server logs: `summary` side by side with lnav's headless count.

Usage:

    apt-get install -y lnav
    python bench/server_logs.py sglang.log vllm.log [--runs 3]
    python bench/server_logs.py --generate 1G sglang.log vllm.log  # needs shared/tools/gen_logs.py

For each file the two commands run alternately (A B A B ...), so drift in machine speed
cancels; the ratio reported is the median of per-pair ratios. lnav runs with HOME in a
temporary folder so it writes no config or session files of the user's.

    A: lnav -n -c ';SELECT count(*) FROM all_logs' FILE
    B: sparseety-tui summary --json FILE
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

from child import GEN_LOGS, compile_package, timed  # run as a script, or imported by run_all.py


def generate(paths: list[str], size: str) -> None:
    """Write each path with gen_logs.py (SGLang if "sglang" is in its name, else vLLM with
    --max-log-len 64, as the recorded runs), seed 1."""
    for path in paths:
        kind = "sglang" if "sglang" in Path(path).name else "vllm"
        extra = ["--max-log-len", "64"] if kind == "vllm" else []
        subprocess.run(
            [
                sys.executable,
                str(GEN_LOGS),
                "--kind",
                kind,
                "--size",
                size,
                "--out",
                path,
                "--seed",
                "1",
                *extra,
            ],
            check=True,
        )


def compare(paths: list[str], runs: int, lnav: str) -> list[dict[str, object]]:
    """lnav's count (A) and ``summary --json`` (B) on each path, alternately, after one
    warm-up of A; medians and the median of per-pair B/A."""
    py = sys.executable
    home = tempfile.mkdtemp(prefix="lnav-home-")
    env = {**os.environ, "HOME": home}
    results: list[dict[str, object]] = []
    for path in paths:
        a_cmd = [lnav, "-n", "-c", ";SELECT count(*) FROM all_logs", path]
        b_cmd = [py, "-m", "sparseety_tui", "summary", "--json", path]
        timed(a_cmd, env)  # warm the page cache
        pairs = []
        for run in range(runs):
            a = timed(a_cmd, env)
            b = timed(b_cmd)
            pairs.append((a, b))
            print(
                f"{path} run {run + 1}: lnav {a[0]:.2f} s (cpu {a[1]:.2f}), "
                f"summary {b[0]:.2f} s (cpu {b[1]:.2f}), ratio {b[0] / a[0]:.2f}",
                flush=True,
            )
        results.append(
            {
                "file": path,
                "bytes": os.path.getsize(path),
                "lnav_s_median": round(statistics.median(p[0][0] for p in pairs), 3),
                "lnav_cpu_s_median": round(statistics.median(p[0][1] for p in pairs), 3),
                "lnav_peak_rss_mib": round(statistics.median(p[0][2] for p in pairs), 1),
                "summary_s_median": round(statistics.median(p[1][0] for p in pairs), 3),
                "summary_cpu_s_median": round(statistics.median(p[1][1] for p in pairs), 3),
                "summary_peak_rss_mib": round(statistics.median(p[1][2] for p in pairs), 1),
                "ratio_summary_over_lnav_median_of_pairs": round(
                    statistics.median(p[1][0] / p[0][0] for p in pairs), 3
                ),
            }
        )
    shutil.rmtree(home, ignore_errors=True)
    return results


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("files", nargs="+")
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--generate", metavar="SIZE")
    args = parser.parse_args()
    lnav = shutil.which("lnav")
    if lnav is None:
        raise SystemExit("lnav not found: apt-get install -y lnav")
    if args.generate:
        generate(args.files, args.generate)
    compile_package()
    print(json.dumps(compare(args.files, args.runs, lnav), indent=2))


if __name__ == "__main__":
    main()
