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

import bisect
import math
from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from sparseety_tui.core.figures import _fleet as fleet
from sparseety_tui.core.figures._costmodel import FlopInputs, ModelShape
from sparseety_tui.core.figures._figures import (
    INPUT_COLUMNS,
    SKIP_FIELDS,
    SKIP_WHOLE_ROWS,
    cache_unknown_mask,
    column_figures,
    column_inputs,
    column_skip_rows,
    skip_sums,
    whole_number,
)
from sparseety_tui.core.figures._splits import Groups
from sparseety_tui.core.store import (
    LOWER_BOUND_SOURCES,
    STATE_CODE,
    STATES,
    UNKNOWN_MODEL,
    ColumnView,
    EngineSeries,
    ErrorRecord,
    ExtractorView,
    HeatCounts,
    IdsView,
    LineLocation,
    RowExtras,
    StoreView,
    errors_by_kind,
)
from sparseety_tui.core.text import json_text
from sparseety_tui.formats.timestamps import TIME_END

if TYPE_CHECKING:
    import numpy as np

QUANTILES = (("p50", 0.50), ("p95", 0.95), ("p99", 0.99))


def quantiles(values: Any) -> dict[str, float | int | None]:
    import numpy as np

    return sorted_quantiles(values[~np.isnan(values)])


def sorted_quantiles(known: Any) -> dict[str, float | int | None]:
    """``quantiles`` of values that are all known, sorted in place (the caller's array:
    no copy of a whole column). Kept in their own dtype: a float32 latency converts to
    float64 exactly, so sorting the float32s picks the same values."""
    import numpy as np

    out: dict[str, float | int | None] = {"count": int(known.size)}
    if known.size == 0:
        out.update({name: None for name, _ in QUANTILES})
        out["max"] = out["mean"] = None
        return out
    known.sort()
    for name, q in QUANTILES:
        rank = max(math.ceil(q * known.size), 1)  # nearest-rank definition
        out[name] = round(float(known[rank - 1]), 5)
    out["max"] = round(float(known[-1]), 5)
    # Summed in float64: float32 sums of a million latencies lose digits.
    out["mean"] = round(float(known.mean(dtype=np.float64)), 5)
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
    summary: dict[str, Any] = {
        "layers": layers,
        "width": width,
        "counts": rows,
        "total": sum(sum(r) for r in rows),
        "imbalance_max_over_mean": imbalance,
    }
    if heat.out_of_range:
        summary["out_of_range"] = heat.out_of_range  # counts a broken line gave, not held
    return summary


def model_heat_summary(
    heat: HeatCounts, by_model: Mapping[str, HeatCounts]
) -> dict[str, Any] | None:
    """Expert counts of every model (``heat_summary``), with ``by_model`` (each model's
    own summary) and ``models`` (how many). With more than one model the top-level
    imbalance is null: experts of an 8- and a 256-expert model share ids, not a mean (one
    model's 1.78x and another's 1.2x made 11.85x added together). None without counts."""
    if not heat.counts:
        return None
    summary = heat_summary(heat)
    models = {name: h for name, h in by_model.items() if h.counts or h.out_of_range}
    summary["models"] = len(models)
    summary["by_model"] = {name: heat_summary(models[name]) for name in sorted(models)}
    if len(models) > 1:
        summary["imbalance_max_over_mean"] = None
    return summary


def worst_imbalance(summary: Mapping[str, Any]) -> tuple[float | None, int]:
    """The highest per-layer max/mean of a ``model_heat_summary``, each model's own (never
    over models added together), and how many models it is the worst of."""
    parts = list((summary.get("by_model") or {}).values()) or [summary]
    values = [v for part in parts for v in part.get("imbalance_max_over_mean") or [] if v]
    return (max(values) if values else None), len(parts)


#: Rows per chunk when totals are computed: bounds the transient numpy memory whatever the
#: store's size. At 1M rows, 65,536 rows a chunk peaked at 28 MiB against 325 MiB for 1M,
#: and ran faster (0.63 s vs 0.86 s). Every float sum is a chunk's (numpy's pairwise sum
#: over the chunk's values, then added chunk by chunk): the chunk size is part of the
#: result, so it stays.
CHUNK_ROWS = 1 << 16
#: Rows whose per-row figures are computed at once, within a chunk: the cost formula's
#: temporaries (some 40 arrays) are of this many rows, not of a chunk's, which set the
#: peak of a 200 MB request log's ``summary`` (bench/RESULTS.md). Each figure is one
#: row's own, so the slices' values put end to end are the chunk's, value for value, and
#: the chunk's sums over them add the same values in the same order. 8,192 (64 KiB a
#: float64 array) ran fastest: the 1 GB request log's totals took 1.2-1.3 s of CPU
#: against 1.4 s at 4,096 and 1.3-1.5 s at 16,384 (1.16 s in one piece, 17 MiB higher).
SLICE_ROWS = 1 << 13
#: The token counts: every step and the formula read them.
TOKEN_COLUMNS = ("prompt_tokens", "completion_tokens", "cached_tokens")
#: The other columns of the chunk-wide sums, a step at a time (``accumulate``): token
#: sums and counts; per-minute throughput; latencies and the splits by model and by file.
COUNTED_COLUMNS = (
    "prompt_source",
    "completion_source",
    "cache_hit",
    "state",
    "model",
)
TIMED_COLUMNS = ("finished_ts", "received_ts")
GROUPED_COLUMNS = ("model", "file", "state", "latency_s", "ttft_s")
#: What the kept latencies and TTFTs are read from (``gather_samples``).
SAMPLED_COLUMNS = ("model", "file", "latency_s", "ttft_s")
#: The other columns the per-row figures read (``column_inputs``, ``column_skip_rows``),
#: a slice at a time.
FORMULA_COLUMNS = (*(c for c in INPUT_COLUMNS if c not in TOKEN_COLUMNS), "kv_skip")
#: The per-row figures of ``column_figures`` the totals add up.
SUMMED_FIGURES = ("logical_tokens", "effective_compute_tokens", "flops_actual", "flops_nominal")
#: The per-row arrays of ``column_skip_rows`` they add up (its ``cached_tokens`` part is
#: the column itself, read from the chunk's columns).
SUMMED_SKIP_ROWS = (*(f for f in SKIP_FIELDS if f != "cached_tokens"), *SKIP_WHOLE_ROWS)


class Sums:
    """Additive accumulators over chunks of rows."""

    def __init__(self, capacity: int) -> None:
        """``capacity``: the rows to be added (bounds the known latencies kept)."""
        self.values: dict[str, float] = {}
        self.counts: dict[str, int] = {}
        self.states: list[int] = [0] * len(STATES)
        self.per_minute: dict[int, list[int]] = {}  # by finish time
        self.per_minute_received: dict[int, list[int]] = {}  # by arrival time
        self.with_finish = 0  # requests with a finish time (a date)
        self.with_arrival = 0  # requests with an arrival time (a date)
        self.latency = _Packed(capacity)
        self.ttft = _Packed(capacity)
        self.models: set[int] = set()
        self.skips: dict[str, float | None] = dict.fromkeys(SKIP_FIELDS)
        self.wholes: dict[str, float | None] = dict.fromkeys(SKIP_FIELDS)
        self.groups = {"model": Groups("model"), "file": Groups("file")}

    def without_samples(self, capacity: int) -> Sums:
        """A copy of the sums, without the latencies and TTFTs kept for the quantiles
        (``gather_samples`` adds those again): what ``core.running_totals`` keeps of the
        rows it added up, so that it holds no column-long array."""
        copy = Sums(capacity)
        copy.values, copy.counts = dict(self.values), dict(self.counts)
        copy.states = list(self.states)
        copy.per_minute = {k: list(v) for k, v in self.per_minute.items()}
        copy.per_minute_received = {k: list(v) for k, v in self.per_minute_received.items()}
        copy.with_finish, copy.with_arrival = self.with_finish, self.with_arrival
        copy.models = set(self.models)
        copy.skips, copy.wholes = dict(self.skips), dict(self.wholes)
        copy.groups = {name: groups.without_samples() for name, groups in self.groups.items()}
        return copy

    def add_known(self, name: str, values: Any) -> None:
        import numpy as np

        known = ~np.isnan(values)
        n = int(known.sum())
        if n:
            self.values[name] = self.values.get(name, 0.0) + float(values[known].sum())
            self.counts[name] = self.counts.get(name, 0) + n

    def add_masked(self, name: str, values: Any, mask: Any) -> None:
        self.values[name] = self.values.get(name, 0.0) + float(values[mask].sum())

    def known(self, name: str) -> int | float | None:
        if not self.counts.get(name):
            return None
        total = self.values[name]
        return whole_number(total) if total.is_integer() else total


class _WithExtras:
    """A store view with the extras of some of its rows only (a slice's). The chunk
    functions pass over every extra of the view they are given (they find a row's by its
    place), so a slice that saw the whole store's would cost a pass over all of them."""

    def __init__(self, store: StoreView, extras: Mapping[int, RowExtras]) -> None:
        self._store = store
        self._extras = extras

    @property
    def columns(self) -> Mapping[str, ColumnView]:
        return self._store.columns

    @property
    def extras(self) -> Mapping[int, RowExtras]:
        return self._extras

    @property
    def models(self) -> Sequence[str]:
        return self._store.models

    @property
    def ids(self) -> IdsView:
        return self._store.ids

    @property
    def offset(self) -> ColumnView:
        return self._store.offset

    def __len__(self) -> int:
        return len(self._store)

    def numeric_view(
        self, start: int = 0, stop: int | None = None, names: Sequence[str] | None = None
    ) -> dict[str, np.ndarray[Any, Any]]:
        return self._store.numeric_view(start, stop, names)

    def lines_of(self, row: int) -> list[LineLocation]:
        return self._store.lines_of(row)


class _PickedRows(_WithExtras):
    """Some rows of one chunk of a store, seen as a store of their own (rows 0..k-1), so
    that the chunk functions (``column_inputs`` and co., which find a row's extras by its
    place in the chunk) total a filtered subset exactly as they total a whole chunk.
    (``columns``, ``ids`` and ``offset`` are the store's: the totals do not read them.)"""

    def __init__(self, store: StoreView, rows: np.ndarray[Any, Any], first: int) -> None:
        """``rows``: ascending store rows, all in ``[first, first + CHUNK_ROWS)``."""
        import numpy as np

        extras: dict[int, RowExtras] = {}
        for row, value in list(store.extras.items()):
            at = int(np.searchsorted(rows, row))
            if at < len(rows) and int(rows[at]) == row:
                extras[at] = value
        super().__init__(store, extras)
        self._rows = rows
        self._first = first

    def __len__(self) -> int:
        return len(self._rows)

    def numeric_view(
        self, start: int = 0, stop: int | None = None, names: Sequence[str] | None = None
    ) -> dict[str, np.ndarray[Any, Any]]:
        stop = len(self._rows) if stop is None else min(stop, len(self._rows))
        if stop <= start:
            empty = self._store.numeric_view(self._first, self._first, names)
            return {k: v[:0] for k, v in empty.items()}
        # From the first row asked for, not the chunk's: a slice reads its own rows only.
        begin, last = int(self._rows[start]), int(self._rows[stop - 1]) + 1
        cols = self._store.numeric_view(begin, last, names)
        local = self._rows[start:stop] - begin
        return {k: v[local] for k, v in cols.items()}

    def lines_of(self, row: int) -> list[LineLocation]:
        return self._store.lines_of(int(self._rows[row]))


class _Packed:
    """The known values of one column over every chunk, packed into one array as chunks
    come, for quantiles over all of them: no list of pieces to join at the end (a second
    copy of the column at the peak). The array is made for ``capacity`` values at once:
    the pages no value is written to are never resident."""

    def __init__(self, capacity: int) -> None:
        self._capacity = capacity
        self._array: Any = None
        self._n = 0

    def add(self, values: Any) -> Any:
        """Append ``values``; returns where they now are (a view: read it, do not write)."""
        import numpy as np

        end = self._n + len(values)
        array = self._array
        if array is None or end > len(array) or values.dtype != array.dtype:
            # The first chunk; or, defensively, more values than rows, or a wider dtype.
            dtype = values.dtype if array is None else np.result_type(array.dtype, values.dtype)
            grown = np.empty(max(end, self._capacity), dtype=dtype)
            if array is not None:
                grown[: self._n] = array[: self._n]
            self._array = array = grown
        view = array[self._n : end]
        view[:] = values
        self._n = end
        return view

    def values(self) -> Any:
        """Every value added, in order (the caller may sort it in place)."""
        import numpy as np

        return np.zeros(0) if self._array is None else self._array[: self._n]


def _whole(value: float | None) -> int | None:
    return None if value is None else whole_number(value)


def _add_optional(a: float | None, b: float | None) -> float | None:
    return b if a is None else a if b is None else a + b


def accumulate(sums: Sums, store: StoreView, shape: ModelShape, first: int, last: int) -> None:
    def read(names: Sequence[str]) -> dict[str, Any]:
        return store.numeric_view(first, last, names)

    # Each step reads the columns it needs and lets them go: held together, a chunk's
    # columns (counts as float64) were ~5 MiB under every step's temporaries.
    _add_counts(sums, read((*TOKEN_COLUMNS, *COUNTED_COLUMNS)))
    _add_minutes(sums, read((*TOKEN_COLUMNS, *TIMED_COLUMNS)))
    _add_groups(sums, read((*TOKEN_COLUMNS, *GROUPED_COLUMNS)))
    # Figures, then skips: each pass's chunk-long arrays are alive alone.
    figures, _ = _chunk_rows(store, shape, first, last, SUMMED_FIGURES, _figure_rows)
    _add_figures(sums, figures, read(("cached_tokens", "cache_hit")))
    del figures
    skips, routed = _chunk_rows(store, shape, first, last, SUMMED_SKIP_ROWS, column_skip_rows)
    cols = read(("prompt_tokens", "cached_tokens"))
    skips["cached_tokens"] = cols["cached_tokens"]
    part, whole = skip_sums(skips, routed, cols["prompt_tokens"])
    for name in SKIP_FIELDS:
        sums.skips[name] = _add_optional(sums.skips[name], part[name])
        sums.wholes[name] = _add_optional(sums.wholes[name], whole[name])


def _add_counts(sums: Sums, cols: dict[str, Any]) -> None:
    """Token sums and counts of a chunk (``COUNTED_COLUMNS``)."""
    import numpy as np

    for name in ("prompt_tokens", "completion_tokens", "cached_tokens"):
        sums.add_known(name, cols[name])
    for phase in ("prompt", "completion"):  # counts the server's --max-log-len cut short
        lower = np.isin(cols[f"{phase}_source"], LOWER_BOUND_SOURCES)
        sums.counts[f"{phase}_lower"] = sums.counts.get(f"{phase}_lower", 0) + int(lower.sum())
    counted = ~np.isnan(cols["completion_tokens"]) & ~np.isnan(cols["prompt_tokens"])
    sums.add_masked("prompt_with_completion", cols["prompt_tokens"], counted)
    sums.add_masked("completion_with_prompt", cols["completion_tokens"], counted)
    both = ~np.isnan(cols["cached_tokens"]) & ~np.isnan(cols["prompt_tokens"])
    sums.add_masked("prompt_with_cache", cols["prompt_tokens"], both)
    sums.add_masked("cached_with_prompt", cols["cached_tokens"], both)
    hits = cols["cache_hit"]
    sums.counts["hit_flagged"] = sums.counts.get("hit_flagged", 0) + int((hits > 0).sum())
    sums.counts["hit_true"] = sums.counts.get("hit_true", 0) + int((hits == 2).sum())
    for code, count in enumerate(np.bincount(cols["state"], minlength=len(STATES))):
        sums.states[code] += int(count)
    sums.models.update(int(c) for c in np.unique(cols["model"]) if int(c))


def _add_minutes(sums: Sums, cols: dict[str, Any]) -> None:
    """Requests and tokens per minute of a chunk, by finish and by arrival
    (``TIMED_COLUMNS``)."""
    sums.with_finish += _per_minute(sums.per_minute, cols)
    sums.with_arrival += _per_minute(sums.per_minute_received, cols, "received_ts")


def _add_groups(sums: Sums, cols: dict[str, Any]) -> None:
    """A chunk's known latencies and TTFTs (kept for the quantiles) and its sums by model
    and by file, which share those latencies (``GROUPED_COLUMNS``)."""
    for groups in sums.groups.values():
        groups.add_counts(cols, STATE_CODE["failed"])
    _add_samples(sums, cols)


def _add_samples(sums: Sums, cols: dict[str, Any]) -> None:
    import numpy as np

    latencies = sums.latency.add(cols["latency_s"][~np.isnan(cols["latency_s"])])
    sums.ttft.add(cols["ttft_s"][~np.isnan(cols["ttft_s"])])
    for groups in sums.groups.values():
        groups.add_samples(cols, latencies)


def gather_samples(sums: Sums, store: StoreView, first: int, last: int) -> None:
    """Add the latencies and TTFTs of rows ``first .. last`` (a chunk ``accumulate`` added
    up before) to ``sums``, as ``accumulate`` adds them: the same values in the same
    order, for the same quantiles."""
    _add_samples(sums, store.numeric_view(first, last, SAMPLED_COLUMNS))


def _add_figures(sums: Sums, rows: dict[str, Any], cols: dict[str, Any]) -> None:
    """The sums of a chunk's per-row figures (``rows``: ``_chunk_rows``)."""
    import numpy as np

    sums.add_known("logical_tokens", rows["logical_tokens"])
    effective = rows["effective_compute_tokens"]
    known_eff = ~np.isnan(effective)
    sums.add_known("effective_compute_tokens", effective)
    sums.add_masked("logical_for_effective", rows["logical_tokens"], known_eff)
    # Requests costed as "no prefix hit" because the log said nothing of their cache:
    # their skips are lower bounds.
    guessed = known_eff & cache_unknown_mask(cols)
    sums.counts["cache_unknown"] = sums.counts.get("cache_unknown", 0) + int(guessed.sum())
    flops = ~np.isnan(rows["flops_actual"]) & ~np.isnan(rows["flops_nominal"])
    sums.add_masked("flops_actual", rows["flops_actual"], flops)
    sums.add_masked("flops_nominal", rows["flops_nominal"], flops)
    sums.counts["flops"] = sums.counts.get("flops", 0) + int(flops.sum())


#: What ``_chunk_rows`` computes for a slice: (the slice's store view, the model shape,
#: its ``FORMULA_COLUMNS``, its first row, its ``column_inputs``) -> (per-row arrays by
#: name, a count over the slice's extras).
RowsOf = Callable[
    [StoreView, ModelShape, dict[str, Any], int, FlopInputs], tuple[dict[str, Any], int]
]


def _figure_rows(
    view: StoreView, shape: ModelShape, cols: dict[str, Any], start: int, inputs: FlopInputs
) -> tuple[dict[str, Any], int]:
    return column_figures(view, shape, cols, start, inputs), 0


def _chunk_rows(
    store: StoreView,
    shape: ModelShape,
    first: int,
    last: int,
    names: Sequence[str],
    rows_of: RowsOf,
) -> tuple[dict[str, Any], int]:
    """The arrays ``names`` of ``rows_of`` over rows ``first .. last``, each of the chunk's
    length, and its counts added up; computed ``SLICE_ROWS`` rows at a time, so that the
    formula's temporaries are a slice's (every value is one row's own: the same values as
    over the whole chunk at once)."""
    import numpy as np

    n = last - first
    rows = {name: np.empty(n) for name in names}
    count = 0
    for start, stop, view in _slices(store, first, last):
        cols = store.numeric_view(start, stop, (*TOKEN_COLUMNS, *FORMULA_COLUMNS))
        inputs = column_inputs(view, shape, cols, start)
        values, slice_count = rows_of(view, shape, cols, start, inputs)
        count += slice_count
        for name in names:
            rows[name][start - first : stop - first] = values[name]
    return rows, count


def _slices(store: StoreView, first: int, last: int) -> Iterator[tuple[int, int, StoreView]]:
    """(start, stop, a view of ``store`` with those rows' extras only) of each slice of
    ``SLICE_ROWS`` rows of ``first .. last``."""
    extras = {row: e for row, e in list(store.extras.items()) if first <= row < last}
    extra_rows = sorted(extras)
    for start in range(first, last, SLICE_ROWS):
        stop = min(start + SLICE_ROWS, last)
        lo, hi = bisect.bisect_left(extra_rows, start), bisect.bisect_left(extra_rows, stop)
        yield start, stop, _WithExtras(store, {row: extras[row] for row in extra_rows[lo:hi]})


def compute_totals(
    extractor: ExtractorView,
    shape: ModelShape,
    rows: np.ndarray[Any, Any] | None = None,
    engine: EngineSeries | None = None,
) -> dict[str, Any]:
    """Totals over every request, or over ``rows`` only (store rows, any order: the table's
    filter and time window); ``engine``: the stats series to report instead of the whole
    one (a time window's, ``core.timewindow``). Heat maps and errors cover everything."""
    import numpy as np

    store = extractor.store
    picked = None if rows is None else np.unique(np.asarray(rows, dtype=np.int64))
    sums = Sums(len(store) if picked is None else len(picked))
    if picked is None:
        n = len(store)
        for first in range(0, max(n, 1), CHUNK_ROWS):
            accumulate(sums, store, shape, first, min(first + CHUNK_ROWS, n))
    else:
        n = len(picked)  # sorted: chunks read in order
        for first in range(0, max(len(store), 1), CHUNK_ROWS):
            lo, hi = np.searchsorted(picked, (first, first + CHUNK_ROWS))
            if hi > lo or first == 0:  # chunk 0 always: an empty subset still has totals
                chunk = _PickedRows(store, picked[lo:hi], first)
                accumulate(sums, chunk, shape, 0, len(chunk))
    return totals_of(extractor, sums, n, engine)


def totals_of(
    extractor: ExtractorView, sums: Sums, n: int, engine: EngineSeries | None = None
) -> dict[str, Any]:
    """The totals document of ``n`` requests added up in ``sums`` (``compute_totals``).
    Sorts the latencies ``sums`` keeps."""
    store = extractor.store
    effective_sum = sums.known("effective_compute_tokens")
    logical_for_effective = sums.values.get("logical_for_effective", 0.0)
    skipped_sum = logical_for_effective - effective_sum if effective_sum is not None else None
    skip_ratio = (
        skipped_sum / logical_for_effective
        if skipped_sum is not None and logical_for_effective > 0
        else None
    )
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
    skipped: dict[str, Any] = {}
    for name in SKIP_FIELDS:
        part, whole = _whole(sums.skips[name]), _whole(sums.wholes[name])
        skipped[name] = {
            "value": part,
            "of": whole,
            "ratio": round(part / whole, 6) if part is not None and whole else None,
        }
    nominal = sums.values.get("flops_nominal", 0.0)
    skipped["compute_vs_nominal"] = (
        _round(sums.values["flops_actual"] / nominal, 6)
        if sums.counts.get("flops") and nominal
        else None
    )
    basis = throughput_basis(sums.with_finish, sums.with_arrival)
    per_minute = sums.per_minute_received if basis == "received" else sums.per_minute
    # The splits share the latencies kept for the quantiles: done first, as the
    # quantiles sort those in place.
    splits = {
        "model": sums.groups["model"].result(lambda c: store.models[c] or UNKNOWN_MODEL),
        "file": sums.groups["file"].result(lambda f: extractor.files[f].path),
    }
    requests_per_minute = None
    if per_minute:
        minutes = max(per_minute) - min(per_minute) + 1
        requests_per_minute = sum(v[0] for v in per_minute.values()) / minutes
    latency_quantiles = sorted_quantiles(sums.latency.values())
    ttft_quantiles = sorted_quantiles(sums.ttft.values())
    return {
        "requests": {
            "count": n,
            "by_state": {STATES[i]: c for i, c in enumerate(sums.states) if c},
            "prompt_tokens": sums.known("prompt_tokens"),
            "completion_tokens": sums.known("completion_tokens"),
            "cached_tokens": sums.known("cached_tokens"),
            "with_prompt_tokens": sums.counts.get("prompt_tokens", 0),
            # Requests whose count is only a lower bound (ids or text cut at vLLM's
            # --max-log-len): the sums above are then lower bounds too.
            "with_lower_bound_tokens": {
                "prompt": sums.counts.get("prompt_lower", 0),
                "completion": sums.counts.get("completion_lower", 0),
            },
            "with_cached_tokens": sums.counts.get("cached_tokens", 0),
            "logical_tokens": sums.known("logical_tokens"),
            "effective_compute_tokens": _round(effective_sum),
            "sparse_skipped_tokens": _round(skipped_sum),
            "skip_ratio": _round(skip_ratio, 6),
            "with_effective_compute": with_effective,
            # The logical tokens of those same requests: effective / this is a ratio over
            # one subset (logical_tokens above counts every request that has a count).
            "logical_tokens_for_effective": (
                whole_number(logical_for_effective) if with_effective else None
            ),
            # Of those, requests whose cache use the log did not say (costed as no hit):
            # while it is not 0, the skips are lower bounds and effective an upper bound.
            "with_cache_unknown": cache_unknown,
            "cache_hit_rate": _round(cache_hit_rate, 6),
            # What the rate is a share of: "tokens" (cached / prompt tokens) or, when the
            # log only flags hits, "requests" (hits / flagged); null: no cache figure.
            "cache_hit_rate_by": cache_basis,
            "completion_per_prompt_tokens": _round(completion_per_prompt, 6),
            "requests_per_minute": _round(requests_per_minute, 3),
            "cache_hit_requests": (
                {"hit": sums.counts["hit_true"], "reported": flagged} if flagged else None
            ),
        },
        "skipped": skipped,
        "latency_s": latency_quantiles,
        "ttft_s": ttft_quantiles,
        "throughput_per_minute": [
            {
                "minute": minute * 60,
                "requests": v[0],
                # null when none of the minute's requests reported a count
                "prompt_tokens": v[1] if v[3] else None,
                "completion_tokens": v[2] if v[4] else None,
            }
            for minute, v in sorted(per_minute.items())
        ],
        "throughput_per_minute_by": basis,
        "experts": model_heat_summary(extractor.expert_load, extractor.expert_by_model),
        "dropped_experts": model_heat_summary(extractor.dropped, extractor.dropped_by_model),
        # Counts from expert-distribution dumps (SGLang's recorder): a recording window's
        # tokens per expert, not per-token routing, so never added to ``experts``.
        "expert_distribution": model_heat_summary(extractor.expert_dumps, extractor.dump_by_model),
        "head_skips": heat_summary(extractor.head_skips) if extractor.head_skips.counts else None,
        "engine": _engine_summary(extractor.engine if engine is None else engine),
        "errors": error_totals(extractor),
        "models": sorted(store.models[c] for c in sums.models),
        "splits": splits,
    }


#: Errors listed in ``errors.recent`` (the newest).
RECENT_ERRORS = 5


def error_record(extractor: ExtractorView, record: ErrorRecord) -> dict[str, Any]:
    """One error as ``summary --json`` lists it: where (file path, first and last line),
    when, what (class, message, exception), and the request and HTTP status it names
    (null: not named)."""
    files = extractor.files
    path = files[record.file].path if 0 <= record.file < len(files) else None
    return {
        "path": None if path is None else json_text(path),
        "line": record.line,
        "last_line": record.last,
        "lines": record.lines,
        "ts": record.ts,
        "kind": record.kind,
        "message": record.message,
        "exception": record.exception or None,
        "request_id": record.request_id,
        "status": record.status,
    }


def error_totals(extractor: ExtractorView) -> dict[str, Any]:
    """``errors``: the exact count, by class, and the newest few (the TUI's totals strip
    reads the counts; ``summary`` adds every record, core.report)."""
    log = extractor.error_log
    records = log.records
    n = len(records)
    return {
        "count": extractor.error_count,
        "by_kind": errors_by_kind(log.by_kind),
        "recent": [
            error_record(extractor, records[i]) for i in range(max(0, n - RECENT_ERRORS), n)
        ],
    }


def _round(value: float | None, digits: int = 2) -> float | None:
    return None if value is None else round(value, digits)


def throughput_basis(with_finish: int, with_arrival: int) -> str | None:
    """Which time ``throughput_per_minute`` counts requests at: ``"finished"`` (the minute
    each request finished) or ``"received"`` (the minute it arrived); None when no
    request has either time.

    One basis for the whole document, so that every row means the same thing. Finish
    times are the basis unless fewer than half as many requests have one as have an
    arrival time: then most requests' ends were not logged (vLLM V1 logs no completion
    line, so only its aborted requests have a finish time), and counting by finish would
    count only those. A mixed input (a V0 log with finish lines and a V1 log without)
    follows the same count over all its requests: whichever time covers the requests
    better, by that rule, is used for all of them, and requests without it are left
    out of the rows (``requests.count`` still counts them).
    """
    if not with_finish and not with_arrival:
        return None
    return "finished" if 2 * with_finish >= with_arrival else "received"


def _per_minute(
    acc: dict[int, list[int]], cols: dict[str, Any], time_column: str = "finished_ts"
) -> int:
    """Add requests and their tokens per wall-clock minute (UTC) of ``time_column`` to
    ``acc``; return how many requests had that time."""
    import numpy as np

    finished = cols[time_column]
    known = (finished >= 0) & (finished < TIME_END)  # dates only (NaN is not)
    if not known.any():
        return 0
    minutes = (finished[known] // 60).astype(np.int64)
    first = int(minutes.min())
    occurring = None
    index = minutes - first
    if int(index.max()) > 4 * len(index) + 1440:
        # Minutes far apart (a request from 1970 and one from 9999): count the minutes
        # that occur, not every minute between them.
        occurring, index = np.unique(minutes, return_inverse=True)
    requests = np.bincount(index)
    completion_tokens = cols["completion_tokens"][known]
    prompt_tokens = cols["prompt_tokens"][known]
    completion = np.bincount(index, weights=np.nan_to_num(completion_tokens))
    prompt = np.bincount(index, weights=np.nan_to_num(prompt_tokens))
    # How many of each minute's requests had a count: none means the sum is unknown.
    with_completion = np.bincount(index, weights=~np.isnan(completion_tokens))
    with_prompt = np.bincount(index, weights=~np.isnan(prompt_tokens))
    for i in np.nonzero(requests)[0]:
        minute = first + int(i) if occurring is None else int(occurring[i])
        bucket = acc.setdefault(minute, [0, 0, 0, 0, 0])
        bucket[0] += int(requests[i])
        bucket[1] += int(prompt[i])
        bucket[2] += int(completion[i])
        bucket[3] += int(with_prompt[i])
        bucket[4] += int(with_completion[i])
    return int(requests.sum())


def _engine_summary(engine: EngineSeries) -> dict[str, Any] | None:
    """The ``engine`` object: fleet figures, and each engine's own (``core.fleet`` says
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
    # The engine panel shows the same figure (one function, core.fleet).
    new, cached, prefill_hit = fleet.prefill_cached(engines)
    return {
        "stats_lines": engine.count,
        "engines": found.count,
        "replicated_reports_folded": found.replicated_reports_folded,
        "aggregated_reports_skipped": found.aggregated_reports_skipped,
        "per_minute_mean": _minutes(fleet.per_minute(engines)),
        "mean": _rounded(fleet.combine(fleet.means(e.series) for e in engines)),
        "prefill_tokens": {
            "new": _number(new),
            "cached": _number(cached),
            "cached_ratio": _round(prefill_hit, 6),
        },
        "totals": {
            "preemptions": _number(whole.get("preemptions")),
            "corrupted": _number(whole.get("corrupted")),
        },
        "last": _rounded(fleet.last(engines)),
        "by_engine": {
            e.name: {
                "stats_lines": e.series.count,
                "replicated_reports_folded": e.folded,
                "per_minute_mean": _minutes(fleet.per_minute([e])),
                "mean": _rounded(fleet.means(e.series)),
                "last": {k: v for k, v in e.series.last.items() if k != "source"},
            }
            for e in engines
        },
    }


def _number(value: float | None) -> int | float | None:
    """A sum as JSON shows it: a whole number as an int."""
    if value is None:
        return None
    return whole_number(value) if float(value).is_integer() else value


def _rounded(figures: dict[str, Any]) -> dict[str, Any]:
    """Figures as ``summary`` prints them: floats to 4 decimals, ts and counts as they are."""
    return {
        key: round(value, 4) if isinstance(value, float) and key != "ts" else value
        for key, value in figures.items()
    }


def _minutes(minutes: dict[int, tuple[int, dict[str, float]]]) -> list[dict[str, Any]]:
    out = []
    for minute, (engines, figures) in minutes.items():
        row: dict[str, Any] = {"minute": minute, "engines": engines}
        for key, value in figures.items():
            row[key] = _number(value) if key.endswith("_sum") else round(value, 4)
        out.append(row)
    return out
