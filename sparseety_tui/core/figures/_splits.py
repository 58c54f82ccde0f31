"""Totals split by model and by file: the same request figures, one group at a time.

An on-call question is "which model, which server": figures over every request of two
servers or two models answer neither. ``compute_totals`` feeds each chunk of rows to a
``Groups`` per split key (the store's ``model`` code, its ``file`` index); ``result``
gives one record per group, named by model name or file path (every incarnation of a
rotated path, and both parts of a backfilled file, are one group). Sums are over the
requests that report the value, None when none does, as everywhere.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

from sparseety_tui.core.figures._document import SplitGroup

#: What the TUI's split key cycles through (``engine`` groups come from core.figures).
SPLITS = ("none", "model", "file", "engine")


class Groups:
    """Per-group sums over chunks of rows, keyed by an integer column (codes)."""

    def __init__(self, column: str) -> None:
        self.column = column
        self.requests: dict[int, int] = {}
        self.sums: dict[str, dict[int, float]] = {"prompt_tokens": {}, "completion_tokens": {}}
        self.known: dict[str, dict[int, int]] = {"prompt_tokens": {}, "completion_tokens": {}}
        self.failed: dict[int, int] = {}
        #: Each code's known latencies, a piece per chunk. A chunk of one code (the usual
        #: case: one model, one file) keeps the very array ``compute_totals`` keeps for its
        #: quantiles, so the split costs no memory a row; only mixed chunks are copied.
        self.latencies: dict[int, list[Any]] = {}

    def without_samples(self) -> Groups:
        """A copy of the sums, without the latencies kept (``Sums.without_samples``)."""
        copy = Groups(self.column)
        copy.requests, copy.failed = dict(self.requests), dict(self.failed)
        copy.sums = {name: dict(sums) for name, sums in self.sums.items()}
        copy.known = {name: dict(known) for name, known in self.known.items()}
        return copy

    def add_counts(self, cols: dict[str, Any], failed_code: int) -> None:
        """A chunk's requests, failures and token sums by code."""
        import numpy as np

        codes = cols[self.column]
        if not len(codes):
            return
        # bincount over the codes themselves (model codes < 65,536, file indices): no
        # sort, one pass per figure.
        keys = codes.astype(np.intp)
        counts = np.bincount(keys)
        present = np.flatnonzero(counts)
        fails = np.bincount(keys, weights=cols["state"] == failed_code, minlength=len(counts))
        for code in present.tolist():
            self.requests[code] = self.requests.get(code, 0) + int(counts[code])
            self.failed[code] = self.failed.get(code, 0) + int(fails[code])
        for name, sums in self.sums.items():
            values = cols[name]
            known = ~np.isnan(values)
            n = np.bincount(keys, weights=known, minlength=len(counts))
            total = np.bincount(keys[known], weights=values[known], minlength=len(counts))
            for code in present.tolist():
                if n[code]:
                    sums[code] = sums.get(code, 0.0) + float(total[code])
                    self.known[name][code] = self.known[name].get(code, 0) + int(n[code])

    def add_samples(self, cols: dict[str, Any], latencies: Any) -> None:
        """A chunk's known latencies by code; ``latencies``: the chunk's known latencies,
        in row order (not written to: they may be shared)."""
        import numpy as np

        codes = cols[self.column]
        latency_codes = codes[~np.isnan(cols["latency_s"])]
        if not latency_codes.size:
            return
        first = int(latency_codes[0])
        if (latency_codes == first).all():
            self.latencies.setdefault(first, []).append(latencies)
            return
        for code in np.unique(latency_codes).tolist():
            self.latencies.setdefault(code, []).append(latencies[latency_codes == code])

    def result(self, name_of: Callable[[int], str]) -> tuple[SplitGroup, ...]:
        """One record per group, by name (codes of one name, such as every file of one
        path, added up), in name order. Lets go of the latencies it kept."""
        import numpy as np

        by_name: dict[str, list[int]] = {}
        for code in self.requests:
            by_name.setdefault(name_of(code), []).append(code)
        out = []
        for name in sorted(by_name):
            members = by_name[name]
            totals: dict[str, int | float | None] = {}
            for field, sums in self.sums.items():
                known = [c for c in members if self.known[field].get(c)]
                totals[field] = _whole(sum(sums[c] for c in known)) if known else None
            pieces = [piece for c in members for piece in self.latencies.get(c, ())]
            # A copy (the pieces may be shared), so it is partitioned in place.
            mine = np.concatenate(pieces) if pieces else np.zeros(0)
            rank = max(math.ceil(0.5 * mine.size), 1) - 1  # nearest rank, as core.figures
            if mine.size:
                mine.partition(rank)
            out.append(
                SplitGroup(
                    name=name,
                    requests=sum(self.requests[c] for c in members),
                    failed=sum(self.failed[c] for c in members),
                    prompt_tokens=totals["prompt_tokens"],
                    completion_tokens=totals["completion_tokens"],
                    latency_p50_s=round(float(mine[rank]), 5) if mine.size else None,
                )
            )
            del mine
        self.latencies.clear()
        return tuple(out)


def _whole(value: float) -> int | float:
    return int(value) if value.is_integer() else value
