"""Totals: the one function that turns an Extractor's state into the numbers everyone shows.

``summary`` (text and ``--json``), the TUI's totals strip and the tests all call
``compute_totals``, which gives a ``Totals`` (``core.figures._document``); ``extract``
writes per-request rows whose sums equal these totals (held by a test). Request-level
figures are computed vectorised over the store's columns (``core.figures._sums``), so a
snapshot of a million requests costs milliseconds and the figures never drift from the
per-row formula (both go through ``core.figures``).

Quantiles are exact (nearest-rank over every request that reported the value), not a
sketch: the store already holds one float32 latency per request, so exactness costs
nothing more; the only error is float32 rounding (relative 6e-8).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from sparseety_tui.core.figures import _document as doc
from sparseety_tui.core.figures import _fleet as fleet
from sparseety_tui.core.figures import _sums
from sparseety_tui.core.figures._costmodel import ModelShape
from sparseety_tui.core.figures._figures import SKIP_FIELDS, whole_number
from sparseety_tui.core.figures._sums import Sums, accumulate, throughput_basis
from sparseety_tui.core.store import (
    STATES,
    UNKNOWN_MODEL,
    EngineSeries,
    ErrorRecord,
    ExtractorView,
    HeatCounts,
    errors_by_kind,
)
from sparseety_tui.core.text import json_text

if TYPE_CHECKING:
    import numpy as np

QUANTILES = (("p50", 0.50), ("p95", 0.95), ("p99", 0.99))


def sorted_quantiles(known: Any) -> doc.Quantiles:
    """The quantiles of values that are all known, sorted in place (the caller's array:
    no copy of a whole column). Kept in their own dtype: a float32 latency converts to
    float64 exactly, so sorting the float32s picks the same values."""
    import numpy as np

    if known.size == 0:
        return doc.Quantiles(0, None, None, None, None, None)
    known.sort()
    p50, p95, p99 = (
        # nearest-rank definition
        round(float(known[max(math.ceil(q * known.size), 1) - 1]), 5)
        for _, q in QUANTILES
    )
    return doc.Quantiles(
        count=int(known.size),
        p50=p50,
        p95=p95,
        p99=p99,
        max=round(float(known[-1]), 5),
        # Summed in float64: float32 sums of a million latencies lose digits.
        mean=round(float(known.mean(dtype=np.float64)), 5),
    )


def heat_summary(heat: HeatCounts) -> doc.HeatMap:
    """Per-layer counts, and the load imbalance (max / mean over indices seen) per layer."""
    layers = sorted(heat.counts)
    width = 1 + max((max(row) for row in heat.counts.values() if row), default=-1)
    rows = [tuple(heat.counts[layer].get(i, 0) for i in range(width)) for layer in layers]
    imbalance = []
    for row in rows:
        total = sum(row)
        mean = total / len(row) if row else 0
        imbalance.append(round(max(row) / mean, 4) if mean else None)
    return doc.HeatMap(
        layers=tuple(layers),
        width=width,
        counts=tuple(rows),
        total=sum(sum(r) for r in rows),
        imbalance_max_over_mean=tuple(imbalance),
        out_of_range=heat.out_of_range,  # counts a broken line gave, not held
    )


def model_heat_summary(heat: HeatCounts, by_model: Mapping[str, HeatCounts]) -> doc.HeatMap | None:
    """Expert counts of every model (``heat_summary``), with ``by_model`` (each model's
    own map) and ``models`` (how many). With more than one model the top-level imbalance
    is None: experts of an 8- and a 256-expert model share ids, not a mean (one model's
    1.78x and another's 1.2x made 11.85x added together). None without counts."""
    if not heat.counts:
        return None
    whole = heat_summary(heat)
    models = {name: h for name, h in by_model.items() if h.counts or h.out_of_range}
    return doc.HeatMap(
        layers=whole.layers,
        width=whole.width,
        counts=whole.counts,
        total=whole.total,
        imbalance_max_over_mean=None if len(models) > 1 else whole.imbalance_max_over_mean,
        out_of_range=whole.out_of_range,
        models=len(models),
        by_model={name: heat_summary(models[name]) for name in sorted(models)},
    )


def worst_imbalance(heat: doc.HeatMap) -> tuple[float | None, int]:
    """The highest per-layer max/mean of a heat map, each model's own (never over models
    added together), and how many models it is the worst of."""
    parts = list((heat.by_model or {}).values()) or [heat]
    values = [v for part in parts for v in part.imbalance_max_over_mean or () if v]
    return (max(values) if values else None), len(parts)


def compute_totals(
    extractor: ExtractorView,
    shape: ModelShape,
    rows: np.ndarray[Any, Any] | None = None,
    engine: EngineSeries | None = None,
) -> doc.Totals:
    """Totals over every request, or over ``rows`` only (store rows, any order: the table's
    filter and time window); ``engine``: the stats series to report instead of the whole
    one (a time window's, ``core.query``). Heat maps and errors cover everything."""
    import numpy as np

    store = extractor.store
    chunk_rows = _sums.CHUNK_ROWS
    picked = None if rows is None else np.unique(np.asarray(rows, dtype=np.int64))
    sums = Sums(len(store) if picked is None else len(picked))
    if picked is None:
        n = len(store)
        for first in range(0, max(n, 1), chunk_rows):
            accumulate(sums, store, shape, first, min(first + chunk_rows, n))
    else:
        n = len(picked)  # sorted: chunks read in order
        for first in range(0, max(len(store), 1), chunk_rows):
            lo, hi = np.searchsorted(picked, (first, first + chunk_rows))
            if hi > lo or first == 0:  # chunk 0 always: an empty subset still has totals
                chunk = _sums.PickedRows(store, picked[lo:hi], first)
                accumulate(sums, chunk, shape, 0, len(chunk))
    return totals_of(extractor, sums, n, engine)


def totals_of(
    extractor: ExtractorView, sums: Sums, n: int, engine: EngineSeries | None = None
) -> doc.Totals:
    """The totals document of ``n`` requests added up in ``sums`` (``compute_totals``).
    Sorts the latencies ``sums`` keeps."""
    store = extractor.store
    basis = throughput_basis(sums.with_finish, sums.with_arrival)
    per_minute = sums.per_minute_received if basis == "received" else sums.per_minute
    # The splits share the latencies kept for the quantiles: done first, as the
    # quantiles sort those in place.
    splits = doc.Splits(
        model=sums.groups["model"].result(lambda c: store.models[c] or UNKNOWN_MODEL),
        file=sums.groups["file"].result(lambda f: extractor.files[f].path),
    )
    requests_per_minute = None
    if per_minute:
        minutes = max(per_minute) - min(per_minute) + 1
        requests_per_minute = sum(v[0] for v in per_minute.values()) / minutes
    latency_quantiles = sorted_quantiles(sums.latency.values())
    ttft_quantiles = sorted_quantiles(sums.ttft.values())
    return doc.Totals(
        requests=_request_totals(sums, n, requests_per_minute),
        skipped=_skipped_totals(sums),
        latency_s=latency_quantiles,
        ttft_s=ttft_quantiles,
        throughput_per_minute=tuple(
            doc.MinuteThroughput(
                minute=minute * 60,
                requests=v[0],
                # None when none of the minute's requests reported a count
                prompt_tokens=v[1] if v[3] else None,
                completion_tokens=v[2] if v[4] else None,
            )
            for minute, v in sorted(per_minute.items())
        ),
        throughput_per_minute_by=basis,
        experts=model_heat_summary(extractor.expert_load, extractor.expert_by_model),
        dropped_experts=model_heat_summary(extractor.dropped, extractor.dropped_by_model),
        # Counts from expert-distribution dumps (SGLang's recorder): a recording window's
        # tokens per expert, not per-token routing, so never added to ``experts``.
        expert_distribution=model_heat_summary(extractor.expert_dumps, extractor.dump_by_model),
        head_skips=heat_summary(extractor.head_skips) if extractor.head_skips.counts else None,
        engine=_engine_summary(extractor.engine if engine is None else engine),
        errors=error_totals(extractor),
        models=tuple(sorted(store.models[c] for c in sums.models)),
        splits=splits,
    )


def _ratio(part: float, whole: float) -> float | None:
    return part / whole if whole > 0 else None


def _request_totals(sums: Sums, n: int, requests_per_minute: float | None) -> doc.RequestTotals:
    """``requests``: counts and sums of ``n`` requests added up in ``sums``."""
    effective_sum = sums.known("effective_compute_tokens")
    logical_for_effective = sums.values.get("logical_for_effective", 0.0)
    skipped_sum = logical_for_effective - effective_sum if effective_sum is not None else None
    skip_ratio = None if skipped_sum is None else _ratio(skipped_sum, logical_for_effective)
    with_effective = sums.counts.get("effective_compute_tokens", 0)
    cache_unknown = sums.counts.get("cache_unknown", 0)
    if with_effective and cache_unknown == with_effective and not skipped_sum:
        # No request said anything of its cache, and nothing else was seen skipped:
        # "0 skipped" would be a guess (see figures.row_skip).
        skipped_sum = skip_ratio = None
    prompt_with_cache = sums.values.get("prompt_with_cache", 0.0)
    cache_hit_rate = (
        sums.values["cached_with_prompt"] / prompt_with_cache if prompt_with_cache > 0 else None
    )
    flagged = sums.counts.get("hit_flagged", 0)
    cache_basis = "tokens" if cache_hit_rate is not None else None
    if cache_hit_rate is None and flagged:
        # Only a hit flag was logged (kv lines' hit_cache=True): the share of requests.
        cache_hit_rate, cache_basis = sums.counts["hit_true"] / flagged, "requests"
    prompt_counted = sums.values.get("prompt_with_completion", 0.0)
    completion_per_prompt = (
        sums.values["completion_with_prompt"] / prompt_counted if prompt_counted > 0 else None
    )
    return doc.RequestTotals(
        count=n,
        by_state={STATES[i]: c for i, c in enumerate(sums.states) if c},
        prompt_tokens=sums.known("prompt_tokens"),
        completion_tokens=sums.known("completion_tokens"),
        cached_tokens=sums.known("cached_tokens"),
        with_prompt_tokens=sums.counts.get("prompt_tokens", 0),
        with_lower_bound_tokens=doc.LowerBoundCounts(
            prompt=sums.counts.get("prompt_lower", 0),
            completion=sums.counts.get("completion_lower", 0),
        ),
        with_cached_tokens=sums.counts.get("cached_tokens", 0),
        logical_tokens=sums.known("logical_tokens"),
        effective_compute_tokens=_round(effective_sum),
        sparse_skipped_tokens=_round(skipped_sum),
        skip_ratio=_round(skip_ratio, 6),
        with_effective_compute=with_effective,
        logical_tokens_for_effective=(
            whole_number(logical_for_effective) if with_effective else None
        ),
        with_cache_unknown=cache_unknown,
        cache_hit_rate=_round(cache_hit_rate, 6),
        cache_hit_rate_by=cache_basis,
        completion_per_prompt_tokens=_round(completion_per_prompt, 6),
        requests_per_minute=_round(requests_per_minute, 3),
        cache_hit_requests=(
            doc.CacheHitRequests(hit=sums.counts["hit_true"], reported=flagged) if flagged else None
        ),
    )


def _skipped_totals(sums: Sums) -> doc.SkippedTotals:
    """``skipped``: each kind's sum over its whole, and the compute done over nominal."""
    kinds: dict[str, doc.SkipKind] = {}
    for name in SKIP_FIELDS:
        part, whole = _whole(sums.skips[name]), _whole(sums.wholes[name])
        ratio = round(part / whole, 6) if part is not None and whole else None
        kinds[name] = doc.SkipKind(value=part, of=whole, ratio=ratio)
    nominal = sums.values.get("flops_nominal", 0.0)
    return doc.SkippedTotals(
        cached_tokens=kinds["cached_tokens"],
        evicted_kv_positions=kinds["evicted_kv_positions"],
        masked_kv_positions=kinds["masked_kv_positions"],
        dropped_expert_slots=kinds["dropped_expert_slots"],
        inactive_expert_slots=kinds["inactive_expert_slots"],
        skipped_head_slots=kinds["skipped_head_slots"],
        compute_vs_nominal=(
            _round(sums.values["flops_actual"] / nominal, 6)
            if sums.counts.get("flops") and nominal
            else None
        ),
    )


#: Errors listed in ``errors.recent`` (the newest).
RECENT_ERRORS = 5


def error_record(extractor: ExtractorView, record: ErrorRecord) -> doc.ListedError:
    """One error as ``summary --json`` lists it: where (file path, first and last line),
    when, what (class, message, exception), and the request and HTTP status it names
    (None: not named)."""
    files = extractor.files
    path = files[record.file].path if 0 <= record.file < len(files) else None
    return doc.ListedError(
        path=None if path is None else json_text(path),
        line=record.line,
        last_line=record.last,
        lines=record.lines,
        ts=record.ts,
        kind=record.kind,
        message=record.message,
        exception=record.exception or None,
        request_id=record.request_id,
        status=record.status,
    )


def error_totals(extractor: ExtractorView) -> doc.ErrorTotals:
    """``errors``: the exact count, by class, and the newest few (the TUI's totals strip
    reads the counts; ``summary`` adds every record, core.report)."""
    log = extractor.error_log
    records = log.records
    n = len(records)
    return doc.ErrorTotals(
        count=extractor.error_count,
        by_kind=errors_by_kind(log.by_kind),
        recent=tuple(
            error_record(extractor, records[i]) for i in range(max(0, n - RECENT_ERRORS), n)
        ),
    )


def _whole(value: float | None) -> int | None:
    return None if value is None else whole_number(value)


def _round(value: float | None, digits: int = 2) -> float | None:
    return None if value is None else round(value, digits)


def _engine_summary(engine: EngineSeries) -> doc.EngineTotals | None:
    """The ``engine`` part: fleet figures, and each engine's own (``core.figures`` says
    what an engine is and how engines add up)."""
    if not engine.count:
        return None
    found = fleet.fleet(engine)
    engines = found.engines
    whole: dict[str, float] = {}
    for key in ("preemptions", "corrupted"):
        cells = [e.series.sums[key] for e in engines if key in e.series.sums]
        if cells:
            whole[key] = sum(cell[0] for cell in cells)
    # The engine panel shows the same figure (one function, core.figures).
    new, cached, prefill_hit = fleet.prefill_cached(engines)
    return doc.EngineTotals(
        stats_lines=engine.count,
        engines=found.count,
        replicated_reports_folded=found.replicated_reports_folded,
        aggregated_reports_skipped=found.aggregated_reports_skipped,
        per_minute_mean=_minutes(fleet.per_minute(engines)),
        mean=_rounded(fleet.combine(fleet.means(e.series) for e in engines)),
        prefill_tokens=doc.PrefillTokens(
            new=_number(new), cached=_number(cached), cached_ratio=_round(prefill_hit, 6)
        ),
        totals=doc.EngineCounts(
            preemptions=_number(whole.get("preemptions")),
            corrupted=_number(whole.get("corrupted")),
        ),
        last=_rounded(fleet.last(engines)),
        by_engine={
            e.name: doc.EngineOwn(
                stats_lines=e.series.count,
                replicated_reports_folded=e.folded,
                per_minute_mean=_minutes(fleet.per_minute([e])),
                mean=_rounded(fleet.means(e.series)),
                last={k: v for k, v in e.series.last.items() if k != "source"},
            )
            for e in engines
        },
    )


def _number(value: float | None) -> int | float | None:
    """A sum as JSON shows it: a whole number as an int."""
    if value is None:
        return None
    return whole_number(value) if float(value).is_integer() else value


def _rounded(figures: Mapping[str, Any]) -> dict[str, Any]:
    """Figures as ``summary`` prints them: floats to 4 decimals, ts and counts as they are."""
    return {
        key: round(value, 4) if isinstance(value, float) and key != "ts" else value
        for key, value in figures.items()
    }


def _minutes(minutes: dict[int, tuple[int, dict[str, float]]]) -> tuple[doc.EngineFigures, ...]:
    out = []
    for minute, (engines, figures) in minutes.items():
        row: dict[str, Any] = {"minute": minute, "engines": engines}
        for key, value in figures.items():
            row[key] = _number(value) if key.endswith("_sum") else round(value, 4)
        out.append(row)
    return tuple(out)
