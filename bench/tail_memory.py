"""Memory of a live tail under sustained load, per request, as the kernel counts it.

    python bench/tail_memory.py [--requests 1200000] [--batch 20000]

An ``IngestWorker`` (the live path of ``tail``, without the screen) follows a fresh JSONL
file while this script appends ``--batch`` ~250-byte request lines at a time, waiting for
the worker to publish each batch (as at 20,000 lines/s for 60 s, without the waiting).
A totals/view job runs on every publish, as in the TUI. At the end it prints the process's
RSS above the RSS before the first line, per request, and the same for the store alone
(its arrays and id index), so the live path's overhead over the store shows.
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import platform
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from sparseety_tui.core.extraction._extractor import Extractor
from sparseety_tui.core.figures._costmodel import DEFAULT_SHAPE
from sparseety_tui.core.store._store import RequestStore
from sparseety_tui.ingest.snapshot import LiveOptions
from sparseety_tui.ingest.worker import TRIM_INTERVAL_S, IngestWorker


def status_mib(field: str) -> float:
    """A field of /proc/self/status in MiB: VmRSS (now) or VmHWM (the peak)."""
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith(field):
                return int(line.split()[1]) / 1024
    raise RuntimeError(f"no {field}")


def store_nbytes(store: RequestStore) -> int:
    """Bytes the store's arrays and id index use (the arrays' spare capacity left out; full
    segments as compacted)."""
    arrays = [*store.columns.values(), store.offset, store.length]
    return sum(a.nbytes() for a in arrays) + store.ids.nbytes()


def batch_lines(start: int, n: int) -> bytes:
    out = []
    for i in range(start, start + n):
        out.append(
            json.dumps(
                {
                    "request_id": f"bg-{i:09d}",
                    "model": "bench-moe",
                    "prompt_tokens": 100 + i % 900,
                    "completion_tokens": 20 + i % 200,
                    "cached_tokens": i % 100,
                    "latency_s": 0.5 + (i % 1000) / 1000,
                    "ttft_s": 0.05 + (i % 100) / 1000,
                    "state": "finished",
                    "ts": 1_764_504_000 + i / 20_000,
                }
            )
        )
    return ("\n".join(out) + "\n").encode()


def wait_for(worker: IngestWorker, rows: int, timeout_s: float = 120.0) -> None:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        snap = worker.snapshot
        if snap is not None and snap.state is not None and len(snap.state.store) >= rows:
            return
        if snap is not None and snap.error:
            raise RuntimeError(snap.error)
        time.sleep(0.005)
    raise TimeoutError(f"worker did not reach {rows} rows")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--requests", type=int, default=1_200_000)
    parser.add_argument("--batch", type=int, default=20_000)
    args = parser.parse_args()

    with tempfile.TemporaryDirectory() as tmp:
        log = Path(tmp) / "live.jsonl"
        log.write_bytes(b"")
        gc.collect()
        before = status_mib("VmRSS")
        worker = IngestWorker(
            Extractor(), DEFAULT_SHAPE, LiveOptions(paths=(str(log),), track_rate=True)
        )
        worker.start()
        t0 = time.perf_counter()
        try:
            with open(log, "ab", buffering=0) as f:
                for start in range(0, args.requests, args.batch):
                    n = min(args.batch, args.requests - start)
                    f.write(batch_lines(start, n))
                    wait_for(worker, start + n)
            wall = time.perf_counter() - t0
            # Let the last totals job finish and the worker hand freed pages back (it does so
            # when caught up, at most every TRIM_INTERVAL_S).
            time.sleep(TRIM_INTERVAL_S + 1.0)
            gc.collect()
            after = status_mib("VmRSS")
            snap = worker.snapshot
            assert snap is not None and snap.state is not None
            rows = len(snap.state.store)
            store_bytes = store_nbytes(worker._extractor.store)  # the writer's, measured only
        finally:
            worker.stop()
    per_request = (after - before) * 1024 * 1024 / rows
    print(
        json.dumps(
            {
                "requests": rows,
                "wall_s": round(wall, 1),
                "rss_before_mib": round(before, 1),
                "rss_after_mib": round(after, 1),
                "peak_rss_mib": round(status_mib("VmHWM"), 1),
                "rss_per_request_bytes": round(per_request, 1),
                "store_per_request_bytes": round(store_bytes / rows, 1),
                "machine": f"{platform.machine()}, {os.cpu_count()} CPUs, "
                f"Python {platform.python_version()}",
            },
            indent=2,
        )
    )


if __name__ == "__main__":
    main()
