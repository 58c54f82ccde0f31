"""Paired bootstrap intervals: is a change real or noise?

Matched pairs are resampled with replacement (the same resample for both sides: the
pairing is kept), the statistic of the candidate minus that of the baseline is computed
on each resample, and the 2.5th and 97.5th percentiles of those differences are the 95%
interval (the percentile bootstrap). The generator is seeded (``numpy.random.default_rng``),
so the same inputs give the same interval every run.

Statistics: ``sum`` (a total over requests, e.g. effective compute tokens), ``ratio``
(sum of one value over the sum of another, e.g. skipped / logical tokens) and a
nearest-rank quantile (``core.totals.sorted_quantiles``'s definition, e.g. latency p95).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from sparseety_tui.core.compare.defaults import CONFIDENCE, DEFAULT_RESAMPLES, DEFAULT_SEED

#: Resampled values held at once (bounds memory: chunks of resamples x pairs).
CHUNK_VALUES = 1 << 22


@dataclass(frozen=True)
class Statistic:
    """``kind``: "sum", "ratio" (``value`` / ``over``) or "quantile" (of ``value``, at
    ``q``)."""

    kind: str
    value: str
    over: str | None = None
    q: float | None = None


def _rank(q: float, n: int) -> int:
    return max(math.ceil(q * n), 1) - 1  # nearest rank, 0-based


def _stat(stat: Statistic, cols: dict[str, Any], idx: Any) -> Any:
    """``stat`` of each resample (a row of ``idx``): one value per row."""
    import numpy as np

    values = cols[stat.value][idx]
    if stat.kind == "sum":
        return values.sum(axis=1)
    if stat.kind == "ratio":
        assert stat.over is not None
        over = cols[stat.over][idx].sum(axis=1)
        with np.errstate(invalid="ignore", divide="ignore"):
            return values.sum(axis=1) / over
    assert stat.q is not None
    k = _rank(stat.q, values.shape[1])
    return np.partition(values, k, axis=1)[:, k]


def paired_statistic(stat: Statistic, base: dict[str, Any], cand: dict[str, Any]) -> float:
    """The statistic of the candidate minus the baseline's on the pairs themselves."""
    import numpy as np

    idx = np.arange(len(base[stat.value]))[None, :]
    return float(_stat(stat, cand, idx)[0] - _stat(stat, base, idx)[0])


def paired_interval(
    stat: Statistic,
    base: dict[str, Any],
    cand: dict[str, Any],
    resamples: int = DEFAULT_RESAMPLES,
    seed: int = DEFAULT_SEED,
) -> tuple[float, float] | None:
    """The 95% percentile-bootstrap interval of (candidate - baseline) ``stat`` over
    pairs (``base[name][i]`` pairs with ``cand[name][i]``; every value known). None with
    fewer than two pairs or no resamples."""
    import numpy as np

    n = len(base[stat.value])
    if n < 2 or resamples < 1:
        return None
    rng = np.random.default_rng(seed)
    chunk = max(1, CHUNK_VALUES // n)
    diffs = []
    done = 0
    while done < resamples:
        size = min(chunk, resamples - done)
        idx = rng.integers(0, n, size=(size, n))
        diffs.append(_stat(stat, cand, idx) - _stat(stat, base, idx))
        done += size
    found = np.concatenate(diffs)
    found = found[~np.isnan(found)]
    if not found.size:
        return None
    tail = (1 - CONFIDENCE) / 2
    lo, hi = np.quantile(found, (tail, 1 - tail))
    return float(lo), float(hi)
