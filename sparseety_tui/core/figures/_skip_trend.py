"""Per-minute compute and skips, beside ``core.figures`` (what ``plot`` draws with them).

Minutes are ``core.figures``' minutes (a request counts in the minute it ended:
``trends.request_end``), and the per-request numbers are ``core.figures``' (the ones
``extract`` writes and the totals add up), so a minute's sums add up to ``summary``'s
totals over the requests that have an end.

- **compute**: effective compute and sparse-skipped tokens per second (cost-model token
  equivalents; logical tokens = effective + skipped), the two parts stacked;
- **skips**: each skip kind per second in its natural unit (cached tokens, KV positions,
  expert-slots, head-slots: never added together), a kind no request knew left out.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from sparseety_tui.core.figures._costmodel import ModelShape
from sparseety_tui.core.figures._figures import (
    SKIP_FIELDS,
    column_figures,
    column_inputs,
    column_skips,
)
from sparseety_tui.core.figures._trend_lines import Line, Trend
from sparseety_tui.core.figures._trends import is_date, request_end, rows_mask
from sparseety_tui.core.store import ExtractorView

CHUNK_ROWS = 1 << 16

SKIP_LABELS = {
    "cached_tokens": "cached (tokens)",
    "evicted_kv_positions": "evicted (KV positions)",
    "masked_kv_positions": "masked (KV positions)",
    "dropped_expert_slots": "dropped (expert-slots)",
    "inactive_expert_slots": "inactive (expert-slots)",
    "skipped_head_slots": "heads (head-slots)",
}


def skip_trends(
    state: ExtractorView, shape: ModelShape, minutes: Sequence[int], rows: Any = None
) -> tuple[Trend, Trend]:
    """The ``compute`` and ``skips`` trends over ``minutes`` (``Trends.minutes``: starts
    of consecutive minutes, unix s); ``rows``: only these store rows (None: all)."""
    import numpy as np

    count = len(minutes)
    first = minutes[0] // 60 if minutes else 0
    names = ("effective_compute_tokens", "sparse_skipped_tokens", *SKIP_FIELDS)
    sums = {name: np.zeros(count) for name in names}
    known = {name: np.zeros(count, dtype=np.int64) for name in names}
    store = state.store
    n = len(store)
    keep = rows_mask(n, rows)
    for start in range(0, n if count else 0, CHUNK_ROWS):
        stop = min(start + CHUNK_ROWS, n)
        cols = store.numeric_view(start, stop)
        inputs = column_inputs(store, shape, cols, start)
        values = {
            **column_figures(store, shape, cols, start, inputs),
            **column_skips(store, shape, cols, start, inputs),
        }
        end = request_end(cols)
        index = np.where(is_date(end), end // 60 - first, -1)
        inside = (index >= 0) & (index < count)
        if keep is not None:
            inside &= keep[start:stop]
        at = index[inside].astype(np.int64)
        for name in names:
            column = np.asarray(values[name], dtype=np.float64)[inside]
            ok = ~np.isnan(column)
            sums[name] += np.bincount(at[ok], weights=column[ok], minlength=count)
            known[name] += np.bincount(at[ok], minlength=count)

    def line(label: str, name: str) -> Line:
        return Line(
            label,
            tuple(
                float(v) / 60 if k else None
                for v, k in zip(sums[name].tolist(), known[name].tolist())
            ),
        )

    compute = Trend(
        "compute",
        "compute: effective vs skipped (stacked)",
        "tok/s",
        "cost-model token equivalents of requests that ended in the minute / 60",
        (line("effective", "effective_compute_tokens"), line("skipped", "sparse_skipped_tokens")),
    )
    kinds = tuple(found for found in (line(SKIP_LABELS[n], n) for n in SKIP_FIELDS) if found.known)
    skips = Trend(
        "skips",
        "skips by kind",
        "/s",
        "natural units of requests that ended in the minute / 60",
        kinds,
    )
    return compute, skips
