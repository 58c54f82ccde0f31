"""Totals: the one function that turns an Extractor's state into the numbers everyone shows.

``summary`` (text and ``--json``), the TUI's totals strip and the tests all call
``compute_totals``; ``extract`` writes per-request rows whose sums equal these totals
(held by a test). Request-level figures are computed vectorised over the store's columns,
so a snapshot of a million requests costs milliseconds and the figures never drift from
the per-row formula (both go through ``core.figures``).

Quantiles are exact (nearest-rank over every request that reported the value), not a
sketch: the store already holds one float32 latency per request, so exactness costs
nothing more; the only error is float32 rounding (relative 6e-8).
"""

from __future__ import annotations

import math
from typing import Any

from sparseety_tui.core.costmodel import ModelShape
from sparseety_tui.core.extractor import Extractor, HeatCounts
from sparseety_tui.core.figures import SKIP_FIELDS, column_figures, column_skip_sums
from sparseety_tui.core.store import STATES

QUANTILES = (("p50", 0.50), ("p95", 0.95), ("p99", 0.99))


def _none_if_nan(value: float) -> float | None:
    return None if value != value else float(value)


def _sum_known(values: Any) -> tuple[int | float | None, int]:
    """Sum of the non-NaN values and how many there were; None when there were none."""
    import numpy as np

    known = ~np.isnan(values)
    n = int(known.sum())
    if n == 0:
        return None, 0
    total = float(values[known].sum())
    return (int(round(total)) if total.is_integer() else total), n


def quantiles(values: Any) -> dict[str, float | int | None]:
    import numpy as np

    known = values[~np.isnan(values)].astype(np.float64)
    out: dict[str, float | int | None] = {"count": int(known.size)}
    if known.size == 0:
        out.update({name: None for name, _ in QUANTILES})
        out["max"] = None
        return out
    known.sort()
    for name, q in QUANTILES:
        rank = max(math.ceil(q * known.size), 1)  # nearest-rank definition
        out[name] = round(float(known[rank - 1]), 6)
    out["max"] = round(float(known[-1]), 6)
    return out


def heat_summary(heat: HeatCounts) -> dict[str, Any]:
    """Per-layer counts, and the load imbalance (max / mean over indices seen) per layer."""
    layers = sorted(heat.counts)
    width = 1 + max((max(row) for row in heat.counts.values() if row), default=-1)
    rows = [[heat.counts[layer].get(i, 0) for i in range(width)] for layer in layers]
    imbalance = []
    for row in rows:
        total = sum(row)
        mean = total / len(row) if row else 0
        imbalance.append(round(max(row) / mean, 4) if mean else None)
    return {
        "layers": layers,
        "width": width,
        "counts": rows,
        "total": sum(sum(r) for r in rows),
        "imbalance_max_over_mean": imbalance,
    }


def compute_totals(extractor: Extractor, shape: ModelShape) -> dict[str, Any]:
    import numpy as np

    store = extractor.store
    cols = store.numeric_view()
    n = len(store)
    figures = column_figures(store, shape, cols)

    prompt_sum, prompt_n = _sum_known(cols["prompt_tokens"])
    completion_sum, _ = _sum_known(cols["completion_tokens"])
    cached_sum, cached_n = _sum_known(cols["cached_tokens"])
    logical_sum, _ = _sum_known(figures["logical_tokens"])
    effective = figures["effective_compute_tokens"]
    known_eff = ~np.isnan(effective)
    effective_sum = float(effective[known_eff].sum()) if known_eff.any() else None
    logical_for_effective = float(figures["logical_tokens"][known_eff].sum())
    skipped_sum = (
        logical_for_effective - effective_sum if effective_sum is not None else None
    )
    skip_ratio = (
        skipped_sum / logical_for_effective
        if skipped_sum is not None and logical_for_effective > 0
        else None
    )

    # Cache hit rate: cached / prompt tokens over requests that reported both.
    both = ~np.isnan(cols["cached_tokens"]) & ~np.isnan(cols["prompt_tokens"])
    prompt_with_cache = float(cols["prompt_tokens"][both].sum())
    cache_hit_rate = (
        float(cols["cached_tokens"][both].sum()) / prompt_with_cache
        if prompt_with_cache > 0
        else None
    )
    hit_flags = cols["cache_hit"]
    flagged = int((hit_flags > 0).sum())

    states = np.bincount(cols["state"], minlength=len(STATES)) if n else np.zeros(len(STATES))
    by_state = {STATES[i]: int(states[i]) for i in range(len(STATES)) if states[i]}

    skipped_kinds = _skips_by_kind(extractor, shape, cols, figures)

    return {
        "requests": {
            "count": n,
            "by_state": by_state,
            "prompt_tokens": prompt_sum,
            "completion_tokens": completion_sum,
            "cached_tokens": cached_sum,
            "with_prompt_tokens": prompt_n,
            "with_cached_tokens": cached_n,
            "logical_tokens": logical_sum,
            "effective_compute_tokens": _round(effective_sum),
            "sparse_skipped_tokens": _round(skipped_sum),
            "skip_ratio": _round(skip_ratio, 6),
            "with_effective_compute": int(known_eff.sum()),
            "cache_hit_rate": _round(cache_hit_rate, 6),
            "cache_hit_requests": (
                {"hit": int((hit_flags == 2).sum()), "reported": flagged} if flagged else None
            ),
        },
        "skipped": skipped_kinds,
        "latency_s": quantiles(cols["latency_s"]),
        "ttft_s": quantiles(cols["ttft_s"]),
        "throughput_per_minute": _per_minute(cols),
        "experts": heat_summary(extractor.expert_load) if extractor.expert_load.counts else None,
        "dropped_experts": heat_summary(extractor.dropped) if extractor.dropped.counts else None,
        "head_skips": heat_summary(extractor.head_skips) if extractor.head_skips.counts else None,
        "engine": _engine_summary(extractor),
        "errors": {
            "count": extractor.error_count,
            "recent": [dict(e) for e in list(extractor.errors)[-5:]],
        },
        "models": sorted(
            {store.models[int(c)] for c in np.unique(cols["model"]) if int(c)}
        ),
    }


def _round(value: float | None, digits: int = 2) -> float | None:
    return None if value is None else round(value, digits)


def _skips_by_kind(
    extractor: Extractor, shape: ModelShape, cols: dict[str, Any], figures: dict[str, Any]
) -> dict[str, Any]:
    """Natural units per skip kind, each with the whole it is a part of, and the ratio."""
    sums, wholes = column_skip_sums(extractor.store, shape, cols)
    out: dict[str, Any] = {}
    for name in SKIP_FIELDS:
        part, whole = sums[name], wholes[name]
        out[name] = {
            "value": part,
            "of": whole,
            "ratio": round(part / whole, 6) if part is not None and whole else None,
        }
    out["compute_vs_nominal"] = _round(
        _nan_ratio(figures["flops_actual"], figures["flops_nominal"]), 6
    )
    return out


def _nan_ratio(numerator: Any, denominator: Any) -> float | None:
    import numpy as np

    known = ~np.isnan(numerator) & ~np.isnan(denominator)
    if not known.any():
        return None
    den = float(denominator[known].sum())
    return float(numerator[known].sum()) / den if den else None


def _per_minute(cols: dict[str, Any]) -> list[dict[str, Any]]:
    """Finished requests and tokens per wall-clock minute (UTC), oldest first."""
    import numpy as np

    finished = cols["finished_ts"]
    known = ~np.isnan(finished)
    if not known.any():
        return []
    minutes = (finished[known] // 60).astype(np.int64)
    first = int(minutes.min())
    index = minutes - first
    requests = np.bincount(index)
    completion = np.bincount(index, weights=np.nan_to_num(cols["completion_tokens"][known]))
    prompt = np.bincount(index, weights=np.nan_to_num(cols["prompt_tokens"][known]))
    out = []
    for i in np.nonzero(requests)[0]:
        out.append({
            "minute": int((first + int(i)) * 60),
            "requests": int(requests[i]),
            "prompt_tokens": int(prompt[i]),
            "completion_tokens": int(completion[i]),
        })
    return out


def _engine_summary(extractor: Extractor) -> dict[str, Any] | None:
    engine = extractor.engine
    if not engine.count:
        return None
    means = {key: round(acc[0] / acc[1], 4) for key, acc in engine.sums.items() if acc[1]}
    sums = {key: acc[0] for key, acc in engine.sums.items() if key in ("new_tokens", "cached_tokens")}
    cached, new = sums.get("cached_tokens"), sums.get("new_tokens")
    prefill_hit = cached / (cached + new) if cached is not None and new and cached + new else None
    return {
        "stats_lines": engine.count,
        "mean": means,
        "prefill_tokens": {"new": new, "cached": cached, "cached_ratio": _round(prefill_hit, 6)},
        "last": dict(engine.last),
    }
