"""The ``compare --json`` document: both sides' figures, the deltas, the regressions.

``compare_document`` is the one place the comparison is put together; the CLI prints it
(JSON or the Rich report), the TUI's compare screen shows it, ``plot`` reads its sides. A
boundary for redaction: the document holds request ids and file paths, never prompts.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from sparseety_tui.core.compare._bootstrap import Statistic, paired_intervals, paired_statistics
from sparseety_tui.core.compare._defaults import (
    CONFIDENCE,
    DEFAULT_REGRESSIONS,
    DEFAULT_RESAMPLES,
    DEFAULT_SEED,
)
from sparseety_tui.core.compare._figures import Number, figure_unit, side_figures, skip_figure
from sparseety_tui.core.compare._matching import Match
from sparseety_tui.core.compare._requests import SideRequests
from sparseety_tui.core.figures import SKIP_FIELDS

SCHEMA_VERSION = 1

#: Figures with a per-request basis: their paired statistic over matched requests.
PAIRED: dict[str, Statistic] = {
    "logical_tokens": Statistic("sum", "logical_tokens"),
    "effective_compute_tokens": Statistic("sum", "effective_compute_tokens"),
    "sparse_skipped_tokens": Statistic("sum", "sparse_skipped_tokens"),
    **{skip_figure(name): Statistic("sum", name) for name in SKIP_FIELDS},
    "skip_ratio": Statistic("ratio", "sparse_skipped_tokens", over="logical_tokens"),
    **{
        f"{what}_{name}_s": Statistic("quantile", f"{what}_s", q=q)
        for what in ("latency", "ttft")
        for name, q in (("p50", 0.50), ("p95", 0.95), ("p99", 0.99))
    },
}

_DIGITS = {"s": 6, "ratio": 6, "tok/s": 4, "max/mean": 4}


@dataclass(frozen=True)
class Side:
    """One side of a comparison: what was read (``paths``, the ``window`` text), its
    ``summary`` document, and its requests."""

    paths: tuple[str, ...]
    window: str | None
    summary: Mapping[str, Any]
    requests: SideRequests


def _digits(name: str) -> int:
    return _DIGITS.get(figure_unit(name), 2)


def _round(value: float | None, digits: int) -> float | None:
    if value is None or math.isnan(value) or math.isinf(value):
        return None
    return round(value, digits)


def delta(base: Number, cand: Number, digits: int) -> dict[str, Any]:
    """``abs`` (candidate - baseline) and ``rel`` (abs / |baseline|); None when a side
    is unknown, ``rel`` None when the baseline is 0."""
    if base is None or cand is None:
        return {"abs": None, "rel": None}
    diff = float(cand) - float(base)
    rel = diff / abs(float(base)) if base else None
    if isinstance(base, int) and isinstance(cand, int):  # counts stay whole numbers
        return {"abs": cand - base, "rel": _round(rel, 6)}
    return {"abs": _round(diff, digits), "rel": _round(rel, 6)}


def _pair_columns(
    base: SideRequests, cand: SideRequests, match: Match
) -> tuple[dict[str, Any], dict[str, Any]]:
    """The matched pairs' per-request values, pair by pair (NaN: unknown)."""
    b = {name: values[match.baseline] for name, values in base.values.items()}
    c = {name: values[match.candidate] for name, values in cand.values.items()}
    return b, c


def _side_document(side: Side, figures: Mapping[str, Number]) -> dict[str, Any]:
    return {
        "paths": list(side.paths),
        "window": side.window,
        "requests": len(side.requests),
        "figures": dict(figures),
        "tokenizer": side.summary.get("tokenizer"),
        "cost_model": side.summary.get("cost_model"),
    }


@dataclass(frozen=True)
class PairDiff:
    """One matched pair's change: where it is on each side (positions into the sides'
    requests) and its entry as ``regressions`` lists it."""

    baseline: int
    candidate: int
    entry: dict[str, Any]


def pair_diffs(
    base: SideRequests, cand: SideRequests, match: Match, limit: int, only_up: bool = True
) -> tuple[list[PairDiff], int]:
    """Matched pairs by their largest relative increase, latency or effective compute
    (the worst first), at most ``limit``; ``only_up``: only those where either went up
    (the regressions). And how many pairs qualified in all."""
    import numpy as np

    if not match.matched:
        return [], 0
    parts = {}
    for name in ("latency_s", "effective_compute_tokens"):
        b = base.values[name][match.baseline]
        c = cand.values[name][match.candidate]
        with np.errstate(invalid="ignore", divide="ignore"):
            rel = np.where(b > 0, (c - b) / np.abs(b), np.where(c > b, np.inf, 0.0))
        parts[name] = (b, c, np.nan_to_num(rel, nan=-np.inf))
    worst = np.maximum(parts["latency_s"][2], parts["effective_compute_tokens"][2])
    chosen = np.nonzero(worst > 0)[0] if only_up else np.arange(match.matched)
    order = chosen[np.argsort(-worst[chosen], kind="stable")][:limit]
    out = []
    for i in order.tolist():
        at_base, at_cand = int(match.baseline[i]), int(match.candidate[i])
        entry: dict[str, Any] = {
            "baseline_id": base.ids[at_base],
            "candidate_id": cand.ids[at_cand],
        }
        for name, digits in (("latency_s", 5), ("effective_compute_tokens", 2)):
            b, c, _rel = parts[name]
            pair = _round(float(b[i]), digits), _round(float(c[i]), digits)
            entry[name] = {"baseline": pair[0], "candidate": pair[1], **delta(*pair, digits)}
        lat, comp = parts["latency_s"][2][i], parts["effective_compute_tokens"][2][i]
        entry["worst"] = "latency" if lat >= comp else "compute"
        out.append(PairDiff(at_base, at_cand, entry))
    return out, len(chosen)


def compare_document(
    baseline: Side,
    candidate: Side,
    match: Match,
    resamples: int = DEFAULT_RESAMPLES,
    seed: int = DEFAULT_SEED,
    regressions_limit: int = DEFAULT_REGRESSIONS,
) -> dict[str, Any]:
    """The comparison as a JSON-ready dict (module docstring)."""
    base_fig = side_figures(baseline.summary)
    cand_fig = side_figures(candidate.summary)
    names = list(base_fig) + [n for n in cand_fig if n not in base_fig]
    paired: dict[str, Statistic] = {}
    complete = match.only_baseline == 0 and match.only_candidate == 0
    if match.matched:
        paired = {name: stat for name, stat in PAIRED.items() if name in names}
        b, c = _pair_columns(baseline.requests, candidate.requests, match)
        estimates, pairs = paired_statistics(paired, b, c)
        intervals = paired_intervals(paired, b, c, resamples, seed)
    deltas: dict[str, Any] = {}
    for name in names:
        digits = _digits(name)
        entry = delta(base_fig.get(name), cand_fig.get(name), digits)
        if name in paired and pairs[name]:
            ci = intervals[name]
            ci95 = None if ci is None else [_round(v, digits) for v in ci]
            entry["paired"] = {
                "pairs": pairs[name],
                "abs": _round(estimates[name], digits),
                "ci95": ci95,
            }
            if complete:
                # Beside ``abs`` only when the pairs are both sides whole: with requests in
                # one side only, ``abs`` is the sides' difference and the interval is the
                # pairs' (``paired.abs``), of another number.
                entry["ci95"] = ci95
        deltas[name] = entry
    listed, total = pair_diffs(
        baseline.requests, candidate.requests, match, max(regressions_limit, 0)
    )
    return {
        "schema_version": SCHEMA_VERSION,
        "baseline": _side_document(baseline, base_fig),
        "candidate": _side_document(candidate, cand_fig),
        "match_by": match.by,
        "matched": match.matched,
        "only_baseline": match.only_baseline,
        "only_candidate": match.only_candidate,
        "delta": deltas,
        "regressions": [pair.entry for pair in listed],
        "regressions_total": total,
        "bootstrap": {"resamples": resamples, "seed": seed, "confidence": CONFIDENCE},
    }
