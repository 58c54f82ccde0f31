"""The sums behind the totals: a store's rows added up chunk by chunk.

``accumulate`` adds rows ``first .. last`` of a store to a ``Sums`` (token sums and
counts, per-minute throughput, the latencies and TTFTs kept for the quantiles, the splits
by model and file, the cost model's figures and the skips); ``compute_totals`` (and
``RunningTotals``, which keeps the sums of the chunks it added before) turns the sums
into the totals document. Every float sum is a chunk's, added chunk by chunk, so the
chunk size is part of the result.
"""

from __future__ import annotations

import bisect
from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import TYPE_CHECKING, Any

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
    ColumnView,
    IdsView,
    LineLocation,
    RowExtras,
    StoreView,
)
from sparseety_tui.formats import TIME_END

if TYPE_CHECKING:
    import numpy as np


#: Rows per chunk when totals are computed: bounds the transient numpy memory whatever the
#: store's size. At 1M rows, 65,536 rows a chunk peaked at 28 MiB against 325 MiB for 1M,
#: and ran faster (0.63 s vs 0.86 s). Every float sum is a chunk's (numpy's pairwise sum
#: over the chunk's values, then added chunk by chunk): the chunk size is part of the
#: result, so it stays.
CHUNK_ROWS = 1 << 16
#: Rows whose per-row figures are computed at once, within a chunk: the cost formula's
#: temporaries (some 40 arrays) are of this many rows, not of a chunk's, which set the
#: peak memory of a big request log's ``summary``. Each figure is one row's own, so the
#: slices' values put end to end are the chunk's, value for value, and the chunk's sums
#: over them add the same values in the same order. 8,192 rows (64 KiB a float64 array)
#: ran fastest of the sizes tried (bench/history/).
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
        (``gather_samples`` adds those again): what ``core.figures`` keeps of the
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


class PickedRows(_WithExtras):
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
