"""A side's requests, one value per request: what paired deltas and matching read.

The per-request figures are ``core.figures.column_figures``/``column_skips``, the same
functions ``extract`` and the totals use, so a pair's values are the ``extract`` records'.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from sparseety_tui.core.detail import request_prompt
from sparseety_tui.core.figures import (
    SKIP_FIELDS,
    ModelShape,
    column_figures,
    column_inputs,
    column_skips,
)
from sparseety_tui.core.store import ExtractorView

#: Rows whose figures are computed together (as ``core.figures.CHUNK_ROWS``).
CHUNK_ROWS = 1 << 16

#: Per-request values kept for the paired deltas (float64; NaN where unknown).
VALUES = (
    "latency_s",
    "ttft_s",
    "logical_tokens",
    "effective_compute_tokens",
    "sparse_skipped_tokens",
    *SKIP_FIELDS,
)


@dataclass(frozen=True)
class SideRequests:
    """The requests of one side, in log order: store ``rows``, their ``ids`` and values."""

    rows: Any  # np.ndarray of int64 store rows
    ids: list[str]
    values: dict[str, Any]  # name -> float64 array, one value per request

    def __len__(self) -> int:
        return len(self.ids)


def side_requests(
    extractor: ExtractorView, shape: ModelShape, rows: Any | None = None
) -> SideRequests:
    """Every request of ``extractor``, or its store ``rows`` (ascending: a selection's)."""
    import numpy as np

    store = extractor.store
    n = len(store)
    picked = np.arange(n, dtype=np.int64) if rows is None else np.asarray(rows, dtype=np.int64)
    parts: dict[str, list[Any]] = {name: [] for name in VALUES}
    ids: list[str] = []
    for first in range(0, n, CHUNK_ROWS):
        last = min(first + CHUNK_ROWS, n)
        lo, hi = np.searchsorted(picked, (first, last))
        if hi <= lo:
            continue
        local = picked[lo:hi] - first
        cols = store.numeric_view(first, last)
        inputs = column_inputs(store, shape, cols, first)
        figures = column_figures(store, shape, cols, first, inputs)
        skips = column_skips(store, shape, cols, first, inputs)
        for name in VALUES:
            source = cols if name in ("latency_s", "ttft_s") else figures
            column = skips[name] if name in SKIP_FIELDS else source[name]
            parts[name].append(np.asarray(column, dtype=np.float64)[local])
        chunk_ids = store.ids[first:last]
        ids.extend(chunk_ids[i] for i in local.tolist())
    values = {
        name: np.concatenate(p) if p else np.zeros(0, dtype=np.float64) for name, p in parts.items()
    }
    return SideRequests(picked, ids, values)


def prompt_keys(extractor: ExtractorView, rows: Sequence[int]) -> list[bytes | None]:
    """A digest of each request's prompt (its text, else its token ids: re-read from its
    lines), None when the log holds neither. Only digests leave here: a prompt is never
    shown by ``compare``."""
    keys: list[bytes | None] = []
    for row in rows:
        prompt = request_prompt(extractor, int(row))
        text, token_ids = prompt.get("prompt"), prompt.get("prompt_token_ids")
        if isinstance(text, str):
            keys.append(b"t" + hashlib.sha256(text.encode("utf-8", "surrogatepass")).digest())
        elif isinstance(token_ids, list) and token_ids:
            data = ",".join(str(t) for t in token_ids).encode()
            keys.append(b"i" + hashlib.sha256(data).digest())
        else:
            keys.append(None)
    return keys
