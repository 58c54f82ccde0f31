"""First paint and update cost of the request table at 1M requests, headless.

    python bench/tui_first_paint.py [--rows 1000000]

Builds a store of N synthetic requests directly (no parsing), then measures, with
Textual's headless ``run_test`` at 160x48 and ``TEXTUAL_ANIMATIONS=none``:

- app start until the table shows rows (includes Textual start-up),
- the table alone: ``set_snapshot`` with all N rows + one repaint (the "first paint"),
- one live update (a new snapshot version: visible rows re-rendered) + repaint,
- sort and filter of all N rows by the worker (``compute_view``, off the UI thread),
- totals (``compute_totals``, off the UI thread).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import platform
import time
from dataclasses import replace

import numpy as np

os.environ.setdefault("TEXTUAL_ANIMATIONS", "none")

from sparseety_tui.core.extraction._extractor import Extractor
from sparseety_tui.core.figures._costmodel import DEFAULT_SHAPE
from sparseety_tui.core.figures._totals import compute_totals
from sparseety_tui.core.query._query import ViewQuery, compute_view, parse_filter
from sparseety_tui.ingest.snapshot import LiveOptions
from sparseety_tui.ui.app import AppConfig, SparseetyApp
from sparseety_tui.ui.widgets.request_table import RequestTable


def build(n: int) -> Extractor:
    extractor = Extractor()
    file = extractor.add_file("/dev/null")
    rng = np.random.default_rng(1)
    prompt = rng.integers(10, 4000, n)
    columns = {
        "prompt_tokens": prompt,
        "completion_tokens": rng.integers(1, 800, n),
        "cached_tokens": (prompt * rng.random(n) * 0.5).astype(np.int64),
        "topk_experts": np.full(n, 2),
        "total_experts": np.full(n, 8),
        "latency_s": rng.random(n) * 10,
        "ttft_s": rng.random(n) * 0.4,
        "finished_ts": 1.8e9 + np.arange(n, dtype=np.float64) * 0.05,
        "received_ts": 1.8e9 + np.arange(n, dtype=np.float64) * 0.05 - 1,
        "state": np.full(n, 3),
    }
    for name, column in extractor.store.columns.items():  # every column, unknown by default
        if name not in columns and name not in ("line_no", "file"):
            columns[name] = (
                np.full(n, np.nan)
                if column.typecode in "fd"
                else np.full(n, -1 if column.typecode == "i" else 0)
            )
    extractor.store.extend_rows(
        [f"req-{i:08d}" for i in range(n)],
        columns,
        file,
        list(range(n)),
        [100] * n,
        np.arange(1, n + 1),
    )
    return extractor


async def measure_app(extractor: Extractor, n: int) -> dict[str, float]:
    config = AppConfig(live=LiveOptions(paths=(), track_rate=False), theme="dark")
    t0 = time.perf_counter()
    app = SparseetyApp(config, extractor=extractor)
    out: dict[str, float] = {}
    async with app.run_test(size=(160, 48)) as pilot:
        while app.main_screen.query_one(RequestTable).row_count < n:
            await asyncio.sleep(0.005)
        await pilot.pause()
        out["app_start_to_rows_s"] = time.perf_counter() - t0
        table = app.main_screen.query_one(RequestTable)
        snap = table.snapshot
        empty = replace(snap, state=None, view=None, version=snap.version + 1000)
        table.set_snapshot(empty)
        await pilot.pause()
        t = time.perf_counter()
        table.set_snapshot(replace(snap, version=snap.version + 1001))
        await pilot.pause()
        out["table_first_paint_s"] = time.perf_counter() - t
        times = []
        for k in range(20):
            t = time.perf_counter()
            table.set_snapshot(replace(snap, version=snap.version + 1002 + k))
            await pilot.pause()
            times.append(time.perf_counter() - t)
        out["table_update_median_s"] = sorted(times)[len(times) // 2]
        t = time.perf_counter()
        await pilot.press("home")
        await pilot.press(*["pagedown"] * 10, "end")
        out["10_pagedown_end_s"] = time.perf_counter() - t
    return out


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rows", type=int, default=1_000_000)
    args = parser.parse_args()
    n = args.rows
    t = time.perf_counter()
    extractor = build(n)
    result: dict[str, object] = {"rows": n, "build_s": round(time.perf_counter() - t, 2)}
    t = time.perf_counter()
    extractor.freeze()  # the first snapshot of a big store: every row copied
    result["freeze_all_s"] = round(time.perf_counter() - t, 3)
    app_numbers = asyncio.run(measure_app(extractor, n))
    result.update({k: round(v, 4) for k, v in app_numbers.items()})
    extractor.store.touch(n - 1)  # one row changed in place, as when a request finishes
    t = time.perf_counter()
    frozen_store = extractor.freeze().store  # the incremental case (the app froze it all)
    result["freeze_one_change_s"] = round(time.perf_counter() - t, 4)
    for label, query in (
        ("sort_latency_s", ViewQuery(sort="latency", reverse=True)),
        ("filter_skip_latency_s", ViewQuery(clauses=parse_filter("skip>0.5 latency>2"))),
        ("filter_text_s", ViewQuery(clauses=parse_filter("req-0001"))),
    ):
        t = time.perf_counter()
        compute_view(frozen_store, DEFAULT_SHAPE, query, n)
        result[label] = round(time.perf_counter() - t, 3)
    t = time.perf_counter()
    compute_totals(extractor, DEFAULT_SHAPE)
    result["totals_s"] = round(time.perf_counter() - t, 3)
    result["machine"] = (
        f"{platform.machine()} {os.cpu_count()} cpu, Python {platform.python_version()}"
    )
    result["date"] = time.strftime("%Y-%m-%d")
    print(json.dumps(result))


if __name__ == "__main__":
    main()
