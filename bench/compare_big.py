#!/usr/bin/env python3
"""`compare` on big inputs: two generated request traces of ~200k requests each.

    .venv/bin/python bench/compare_big.py [--requests 200000] [--resamples 1000]

Writes two traces with /work/shared/tools/gen_logs.py (seeds 1 and 2: the same request ids,
different counts and latencies), then times, in this process, each phase of what
`sparseety-tui compare --json A B` does (`cli.compare.compare_output`): reading each side
(`cli.summary.summarise`, what `summary` costs, plus the per-request columns), matching by
id, and the document (figures, deltas, the paired bootstrap intervals, regressions). Then
the whole command once more in a child process, for its wall time, CPU and peak RSS.
"""

from __future__ import annotations

import argparse
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
GEN = Path("/work/shared/tools/gen_logs.py")
BYTES_PER_REQUEST = 316  # gen_logs.py --kind jsonl, measured


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--requests", type=int, default=200_000)
    parser.add_argument("--resamples", type=int, default=1000)
    parser.add_argument("--keep", metavar="DIR", help="write the traces here and keep them")
    args = parser.parse_args()
    work = Path(args.keep or tempfile.mkdtemp(prefix="compare-bench-"))
    work.mkdir(parents=True, exist_ok=True)
    size = args.requests * BYTES_PER_REQUEST
    paths = []
    for seed in (1, 2):
        out = work / f"trace-{seed}.jsonl"
        if not out.exists():
            subprocess.run(
                [sys.executable, str(GEN), "--kind", "jsonl", "--size", str(size),
                 "--out", str(out), "--seed", str(seed)],
                check=True, capture_output=True,
            )  # fmt: skip
        paths.append(str(out))

    sys.path.insert(0, str(ROOT))
    from sparseety_tui.cli.compare import read_side, side_specs
    from sparseety_tui.cli.main import build_parser
    from sparseety_tui.core.compare._document import compare_document
    from sparseety_tui.core.compare._matching import match_requests
    from sparseety_tui.ingest.batch import Options

    argv = ["compare", *paths, "--json", "--jobs", "1", "--resamples", str(args.resamples)]
    parsed = build_parser().parse_args(argv)
    base_spec, cand_spec = side_specs(parsed)
    started = time.perf_counter()
    base = read_side(base_spec, Options(), 1)
    read_base = time.perf_counter()
    cand = read_side(cand_spec, Options(), 1)
    read_cand = time.perf_counter()
    match = match_requests(base.side.requests.ids, cand.side.requests.ids, lambda: ([], []))
    matched = time.perf_counter()
    document = compare_document(base.side, cand.side, match, resamples=args.resamples)
    done = time.perf_counter()
    print(f"requests: {len(base.side.requests):,} vs {len(cand.side.requests):,}, "
          f"matched {document['matched']:,} by {document['match_by']}")  # fmt: skip
    print(f"read baseline (summary + per-request columns): {read_base - started:6.2f} s")
    print(f"read candidate:                                 {read_cand - read_base:6.2f} s")
    print(f"match by id:                                    {matched - read_cand:6.2f} s")
    print(f"document ({args.resamples} bootstrap resamples):        {done - matched:6.2f} s")

    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    subprocess.run(
        [sys.executable, "-m", "sparseety_tui", *argv],
        check=True, stdout=subprocess.DEVNULL, env={**os.environ, "PYTHONPATH": str(ROOT)},
    )  # fmt: skip
    wall = time.perf_counter() - t0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime
    print(f"compare --json (child process): wall {wall:.2f} s, CPU {cpu:.2f} s, "
          f"peak RSS {after.ru_maxrss / 1024:.0f} MiB")  # fmt: skip
    return 0


if __name__ == "__main__":
    sys.exit(main())
