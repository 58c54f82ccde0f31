"""Paired bootstrap intervals: is a change real or noise?

Matched pairs are resampled with replacement (the same resample for both sides: the
pairing is kept), each statistic of the candidate minus that of the baseline is computed
on each resample, and the 2.5th and 97.5th percentiles of those differences are the 95%
interval (the percentile bootstrap). The generator is seeded (``numpy.random.default_rng``),
so the same inputs give the same interval every run.

A statistic reads the pairs whose values it needs are known on both sides (a pair with an
unknown latency counts for the token sums, not for the latency quantiles):

- ``sum``: a total over requests (effective compute tokens): the candidate's minus the
  baseline's, i.e. the sum of the pairs' differences;
- ``ratio``: the sum of one value over the sum of another (skipped / logical tokens);
- ``quantile``: nearest rank, ``core.figures.sorted_quantiles``' definition (latency p95).

Cost: a resample is a vector of counts (how often each pair was drawn), so every sum of
every statistic is one matrix product of the counts with the pairs' columns, and a
quantile is found in the cumulative counts of the pairs in value order (sorted once): a
few passes over the pairs per resample, whatever the number of statistics.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from sparseety_tui.core.compare._defaults import CONFIDENCE, DEFAULT_RESAMPLES, DEFAULT_SEED

#: Pairs a block of the two-level quantile search holds (``_quantiles``).
BLOCK = 256
#: Resampled counts held at once (bounds memory: chunks of resamples x pairs, int32).
CHUNK_VALUES = 1 << 22


@dataclass(frozen=True)
class Statistic:
    """``kind``: "sum", "ratio" (``value`` / ``over``) or "quantile" (of ``value``, at
    ``q``)."""

    kind: str
    value: str
    over: str | None = None
    q: float | None = None

    @property
    def names(self) -> tuple[str, ...]:
        return (self.value,) if self.over is None else (self.value, self.over)


class _Prepared:
    """What the statistics need of the pairs, computed once: the columns of every sum
    (unknown pairs as 0) and, per column a quantile reads, the pairs known on both sides
    in value order on each side (the quantiles of one column share one cumulative sum)."""

    def __init__(
        self, stats: Mapping[str, Statistic], base: Mapping[str, Any], cand: Mapping[str, Any]
    ) -> None:
        import numpy as np

        self.stats = stats
        columns: list[Any] = []
        self.sums: dict[str, list[int]] = {}  # stat -> columns of its sums
        #: column -> (baseline, candidate): each the known pairs in value order, and values
        self.orders: dict[str, tuple[tuple[Any, Any], tuple[Any, Any]]] = {}
        self.pairs: dict[str, int] = {}
        for name, stat in stats.items():
            known = np.ones(len(base[stat.value]), dtype=bool)
            for column in stat.names:
                known &= ~np.isnan(base[column]) & ~np.isnan(cand[column])
            self.pairs[name] = int(known.sum())
            if stat.kind == "quantile":
                if stat.value not in self.orders:
                    at = np.nonzero(known)[0].astype(np.int32)
                    sides = []
                    n = len(base[stat.value])
                    for side in (base, cand):
                        order = at[np.argsort(side[stat.value][at], kind="stable")]
                        pad = np.full(-len(order) % BLOCK, n, dtype=np.int32)  # counts' 0
                        sides.append((np.concatenate([order, pad]), side[stat.value][order]))
                    self.orders[stat.value] = (sides[0], sides[1])
                continue
            if stat.kind == "sum":
                parts = [cand[stat.value] - base[stat.value]]
            else:
                over = stat.names[-1]
                parts = [cand[stat.value], cand[over], base[stat.value], base[over]]
            self.sums[name] = []
            for part in parts:
                self.sums[name].append(len(columns))
                columns.append(np.where(known, part, 0.0))
        n = len(next(iter(base.values()))) if base else 0
        self.matrix = np.stack(columns, axis=1) if columns else np.zeros((n, 0))

    def values(self, counts: Any) -> dict[str, Any]:
        """Each statistic's difference on each resample (a row of ``counts``: how often
        each pair was drawn, and a last column of 0)."""
        import numpy as np

        sums = counts[:, :-1] @ self.matrix  # every sum of every statistic, per resample
        out: dict[str, Any] = {}
        for name, at in self.sums.items():
            if self.stats[name].kind == "sum":
                out[name] = sums[:, at[0]]
            else:
                with np.errstate(invalid="ignore", divide="ignore"):
                    out[name] = sums[:, at[0]] / sums[:, at[1]] - sums[:, at[2]] / sums[:, at[3]]
        for column, (base, cand) in self.orders.items():
            mine = {
                n: s.q for n, s in self.stats.items() if s.kind == "quantile" and s.value == column
            }
            qs = [q for q in mine.values() if q is not None]
            found_base, found_cand = _quantiles(counts, base, qs), _quantiles(counts, cand, qs)
            for i, name in enumerate(mine):
                out[name] = found_cand[i] - found_base[i]
        return out


def _quantiles(counts: Any, side: tuple[Any, Any], qs: list[float]) -> list[Any]:
    """The nearest-rank quantiles ``qs`` of each resample: the value at which the
    cumulative count of the pairs in value order reaches ``ceil(q x drawn)``."""
    import numpy as np

    order, values = side
    rows = counts.shape[0]
    if not len(values):
        return [np.full(rows, np.nan) for _ in qs]
    # Two levels: the cumulative counts of blocks of BLOCK pairs find the block where a
    # rank falls, a cumulative sum inside that block the pair (a block sum is one
    # vectorised reduction; a cumulative sum over all pairs costs more). ``order``
    # is padded to whole blocks with the index of ``counts``' last column, always 0.
    padded = np.take(counts, order, axis=1)  # faster than fancy indexing, counts[:, order]
    block_cum = np.cumsum(padded.reshape(rows, -1, BLOCK).sum(axis=2, dtype=np.int32), axis=1)
    drawn = block_cum[:, -1].astype(np.int64)
    out = []
    for q in qs:
        rank = np.maximum(np.ceil(q * drawn), 1).astype(block_cum.dtype)
        pos = np.empty(rows, dtype=np.int64)
        for r in range(rows):
            block = int(block_cum[r].searchsorted(rank[r], side="left"))
            before = int(block_cum[r, block - 1]) if block else 0
            inside = np.cumsum(padded[r, block * BLOCK : (block + 1) * BLOCK])
            pos[r] = block * BLOCK + int(inside.searchsorted(rank[r] - before, side="left"))
        result = values[np.minimum(pos, len(values) - 1)].astype(np.float64)
        result[drawn == 0] = np.nan
        out.append(result)
    return out


def paired_statistics(
    stats: Mapping[str, Statistic], base: Mapping[str, Any], cand: Mapping[str, Any]
) -> tuple[dict[str, float], dict[str, int]]:
    """Each statistic of the candidate minus the baseline's on the pairs themselves, and
    how many pairs it read (``base[col][i]`` pairs with ``cand[col][i]``)."""
    import numpy as np

    prepared = _Prepared(stats, base, cand)
    n = len(next(iter(base.values()))) if base else 0
    once = np.ones((1, n + 1), dtype=np.int32)
    once[0, n] = 0
    values = prepared.values(once)
    return {k: float(v[0]) for k, v in values.items()}, prepared.pairs


def paired_intervals(
    stats: Mapping[str, Statistic],
    base: Mapping[str, Any],
    cand: Mapping[str, Any],
    resamples: int = DEFAULT_RESAMPLES,
    seed: int = DEFAULT_SEED,
) -> dict[str, tuple[float, float] | None]:
    """The 95% percentile-bootstrap interval of each (candidate - baseline) statistic
    over the pairs; None for one with fewer than two pairs, or with no resamples."""
    import numpy as np

    prepared = _Prepared(stats, base, cand)
    n = len(next(iter(base.values()))) if base else 0
    out: dict[str, tuple[float, float] | None] = dict.fromkeys(stats)
    if n < 2 or resamples < 1:
        return out
    rng = np.random.default_rng(seed)
    chunk = max(1, CHUNK_VALUES // n)
    found: dict[str, list[Any]] = {name: [] for name in stats}
    done = 0
    while done < resamples:
        size = min(chunk, resamples - done)
        idx = rng.integers(0, n, size=(size, n), dtype=np.int32)
        counts = np.zeros((size, n + 1), dtype=np.int32)
        for row in range(size):  # one bincount a row: faster than one over all rows
            counts[row, :n] = np.bincount(idx[row], minlength=n)
        for name, values in prepared.values(counts).items():
            found[name].append(values)
        done += size
    tail = (1 - CONFIDENCE) / 2
    for name in stats:
        if prepared.pairs[name] < 2:
            continue
        diffs = np.concatenate(found[name])
        diffs = diffs[~np.isnan(diffs)]
        if diffs.size:
            lo, hi = np.quantile(diffs, (tail, 1 - tail))
            out[name] = (float(lo), float(hi))
    return out
