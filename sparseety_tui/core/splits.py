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

#: What the TUI's split key cycles through (``engine`` groups come from core.fleet).
SPLITS = ("none", "model", "file", "engine")


class Groups:
    """Per-group sums over chunks of rows, keyed by an integer column (codes)."""

    def __init__(self, column: str) -> None:
        self.column = column
        self.requests: dict[int, int] = {}
        self.sums: dict[str, dict[int, float]] = {"prompt_tokens": {}, "completion_tokens": {}}
        self.known: dict[str, dict[int, int]] = {"prompt_tokens": {}, "completion_tokens": {}}
        self.failed: dict[int, int] = {}
        #: Per chunk, the codes of the rows with a known latency, in the order of the
        #: latencies ``compute_totals`` keeps for its quantiles (only codes are kept here:
        #: 2 or 4 bytes a row, the latencies are not copied again).
        self.latency_codes: list[Any] = []

    def add(self, cols: dict[str, Any], failed_code: int) -> None:
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
        self.latency_codes.append(codes[~np.isnan(cols["latency_s"])])

    def result(self, name_of: Callable[[int], str], latency: Any) -> list[dict[str, Any]]:
        """One record per group, by name (codes of one name, such as every file of one
        path, added up), in name order; ``latency``: the known latencies of every chunk,
        concatenated in chunk order (``compute_totals``'s)."""
        import numpy as np

        by_name: dict[str, list[int]] = {}
        for code in self.requests:
            by_name.setdefault(name_of(code), []).append(code)
        codes = np.concatenate(self.latency_codes) if self.latency_codes else np.zeros(0)
        # One stable sort by code (a radix sort for these small integers): each code's
        # latencies are one slice, its median a partition of it (hundreds of followed
        # files cost one sort, not one scan each; a lexsort by value too took 0.1 s at
        # 400k rows).
        order = np.argsort(codes, kind="stable")
        codes, values = codes[order], latency[order]
        out = []
        for name in sorted(by_name):
            members = by_name[name]
            record: dict[str, Any] = {
                "name": name,
                "requests": sum(self.requests[c] for c in members),
                "failed": sum(self.failed[c] for c in members),
            }
            for field, sums in self.sums.items():
                known = [c for c in members if self.known[field].get(c)]
                record[field] = _whole(sum(sums[c] for c in known)) if known else None
            slices = [
                values[np.searchsorted(codes, c, "left") : np.searchsorted(codes, c, "right")]
                for c in members
            ]
            mine = slices[0] if len(slices) == 1 else np.concatenate(slices)
            rank = max(math.ceil(0.5 * mine.size), 1) - 1  # nearest rank, as core.totals
            record["latency_p50_s"] = (
                round(float(np.partition(mine, rank)[rank]), 5) if mine.size else None
            )
            out.append(record)
        return out


def _whole(value: float) -> int | float:
    return int(value) if value.is_integer() else value
