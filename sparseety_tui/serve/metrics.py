"""The Prometheus exporter: ``summary --json``'s figures as metric families.

Every value comes from the functions ``summary --json`` prints
(``core.report.summary_document`` for the whole, ``core.figures.compute_totals`` over each
(file, model) group's rows for the labelled counters), so a counter summed over its
labels is the summary's figure over the same data; an unknown figure (null in the
summary) is an absent series, never 0. The histograms count each request's value from the
same columns and ``core.figures`` formula as ``extract``'s records, with vLLM's bucket
boundaries (``vllm/v1/metrics/buckets.py``) so dashboards line up with vLLM's own: its TTFT
buckets for TTFT and for the queue and prefill times (parts of the TTFT, from milliseconds
to minutes), its latency buckets for latency and decode time. A request whose figure is
unknown is not observed. In OpenMetrics, the buckets of the five timing histograms carry
an exemplar: the slowest recent request in the bucket (``serve.exemplars``); the plain
text format has none.

Labels: ``model``, ``server`` (the file's format: ``vllm``, ``sglang``, ``trace``, ``kv``),
``file`` (the followed path); never a request id. Per-(layer, expert) load only with
``--expert-series``, at most ``expert_series_budget`` series.

The figures are computed once per change of the followed state (a scrape of an unchanged
log costs a dict lookup), under a lock so that two scrapes never compute them twice.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from prometheus_client.core import (
    CounterMetricFamily,
    Exemplar,
    GaugeMetricFamily,
    HistogramMetricFamily,
    Metric,
)
from prometheus_client.registry import Collector

from sparseety_tui.core.figures import (
    CHUNK_ROWS,
    HeatMap,
    ModelShape,
    Totals,
    column_figures,
    compute_totals,
)
from sparseety_tui.core.report import SummaryDocument, summary_document
from sparseety_tui.core.store import UNKNOWN_MODEL, FrozenExtractor, StoreView
from sparseety_tui.serve.exemplars import BucketPicks, Pick, bucket_edges, exemplar_labels

if TYPE_CHECKING:
    import numpy as np

#: vLLM's ``REQUEST_LATENCY_BUCKETS`` (seconds).
REQUEST_LATENCY_BUCKETS = (
    0.3, 0.5, 0.8, 1.0, 1.5, 2.0, 2.5, 5.0, 10.0, 15.0, 20.0, 30.0, 40.0, 50.0, 60.0,
    120.0, 240.0, 480.0, 960.0, 1920.0, 7680.0,
)  # fmt: skip
#: vLLM's ``TIME_TO_FIRST_TOKEN_BUCKETS`` (seconds).
TTFT_BUCKETS = (
    0.001, 0.005, 0.01, 0.02, 0.04, 0.06, 0.08, 0.1, 0.25, 0.5, 0.75, 1.0, 2.5, 5.0,
    7.5, 10.0, 20.0, 40.0, 80.0, 160.0, 640.0, 2560.0,
)  # fmt: skip
#: A request's skip ratio (0-1): finer where sparse serving lives.
SKIP_RATIO_BUCKETS = (
    0.01, 0.05, 0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 0.95, 0.99, 1.0,
)  # fmt: skip

#: ``sparseety_skipped_tokens_total{kind}`` -> the ``summary`` ``skipped`` field it is.
SKIP_KINDS = {
    "cached": "cached_tokens",
    "evicted": "evicted_kv_positions",
    "masked": "masked_kv_positions",
    "dropped": "dropped_expert_slots",
}
#: ``sparseety_tokens_total{kind}`` -> the ``summary`` ``requests`` field it is.
TOKEN_KINDS = {
    "prompt": "prompt_tokens",
    "completion": "completion_tokens",
    "cached": "cached_tokens",
}
#: Engine gauges -> the ``summary`` ``engine.last`` figure (the newest stats line of each
#: engine, added up over engines as ``core.figures.last`` does).
ENGINE_GAUGES = {
    "sparseety_engine_running": ("running", "requests running in the engines (newest stats)"),
    "sparseety_engine_waiting": ("waiting", "requests waiting in the engines (newest stats)"),
    "sparseety_engine_kv_usage_ratio": ("kv_usage", "KV cache usage, 0-1 (newest stats)"),
    "sparseety_engine_prefix_cache_hit_ratio": (
        "prefix_cache_hit_rate",
        "prefix cache hit rate, 0-1 (newest stats)",
    ),
    "sparseety_engine_generation_tokens_per_second": (
        "generation_throughput",
        "generation throughput in tokens/s (newest stats)",
    ),
}

GROUP_LABELS = ("model", "server", "file")


#: The timing histograms: (family name, store column, bounds, help).
TIMING_HISTOGRAMS = (
    (
        "sparseety_request_latency_seconds",
        "latency_s",
        REQUEST_LATENCY_BUCKETS,
        "End-to-end latency of each request that logged one (vLLM's buckets).",
    ),
    (
        "sparseety_ttft_seconds",
        "ttft_s",
        TTFT_BUCKETS,
        "Time to first token of each request that logged one (vLLM's buckets).",
    ),
    (
        "sparseety_request_queue_seconds",
        "queue_s",
        TTFT_BUCKETS,
        "Time each request waited in the scheduler's queue, where its server said "
        "(extract: timing.queue_s; vLLM's TTFT buckets).",
    ),
    (
        "sparseety_request_prefill_seconds",
        "prefill_s",
        TTFT_BUCKETS,
        "Prefill time of each request, where its server said (extract: timing.prefill_s; "
        "vLLM's TTFT buckets).",
    ),
    (
        "sparseety_request_decode_seconds",
        "decode_s",
        REQUEST_LATENCY_BUCKETS,
        "Decode time of each request, where its server said (extract: timing.decode_s; "
        "vLLM's latency buckets).",
    ),
)


@dataclass
class _Histogram:
    bounds: tuple[float, ...]
    counts: list[int] = field(default_factory=list)  # cumulative, per bound
    count: int = 0
    total: float = 0.0
    picks: BucketPicks | None = None  # exemplar candidates (timing histograms only)
    exemplars: list[Exemplar | None] = field(default_factory=list)  # per bucket, +Inf last

    def add(
        self,
        values: np.ndarray[Any, Any],
        times: np.ndarray[Any, Any] | None = None,
        rows: np.ndarray[Any, Any] | None = None,
    ) -> None:
        import numpy as np

        known = np.sort(values[~np.isnan(values)].astype(np.float64))
        if not self.counts:
            self.counts = [0] * len(self.bounds)
        at = np.searchsorted(known, bucket_edges(self.bounds, values.dtype), side="right")
        self.counts = [c + int(n) for c, n in zip(self.counts, at)]
        self.count += int(known.size)
        self.total += float(known.sum())
        if times is not None and rows is not None:
            if self.picks is None:
                self.picks = BucketPicks(self.bounds)
            self.picks.add(values, times, rows)

    def buckets(self) -> list[tuple[str, float] | tuple[str, float, Exemplar]]:
        counts = [*(self.counts or [0] * len(self.bounds)), self.count]
        exemplars = self.exemplars or [None] * len(counts)
        return [
            (le, c) if e is None else (le, c, e)
            for le, c, e in zip([*map(repr, self.bounds), "+Inf"], counts, exemplars)
        ]


@dataclass
class _Group:
    labels: tuple[str, str, str]  # model, server, file
    rows: np.ndarray[Any, Any] | None  # store rows (None: every row)
    totals: Totals | None = None
    #: The timing histograms by store column (``TIMING_HISTOGRAMS``' order).
    timing: dict[str, _Histogram] = field(
        default_factory=lambda: {c: _Histogram(b) for _, c, b, _ in TIMING_HISTOGRAMS}
    )
    skip: _Histogram = field(default_factory=lambda: _Histogram(SKIP_RATIO_BUCKETS))


@dataclass(frozen=True)
class Figures:
    """Everything one scrape shows, from one frozen state."""

    document: SummaryDocument  # ``summary --json``
    groups: tuple[_Group, ...]
    file_lines: Mapping[tuple[str, str], Mapping[str, int]]  # (file, server) -> by kind


def compute_figures(state: FrozenExtractor, shape: ModelShape) -> Figures:
    import numpy as np

    document = summary_document(state, shape)
    store = state.store
    files = state.files
    # Each (path, format, model) is a group: incarnations of a rotated path add up.
    file_keys = [(f.path, f.format_name) for f in files]
    key_of_file = {key: i for i, key in enumerate(dict.fromkeys(file_keys))}
    file_key = np.asarray([key_of_file[k] for k in file_keys] or [0], dtype=np.int64)
    models = len(store.models) or 1
    found: dict[int, _Group] = {}
    keys: list[np.ndarray[Any, Any]] = []
    for first in range(0, len(store), CHUNK_ROWS):
        last = min(first + CHUNK_ROWS, len(store))
        cols = store.numeric_view(first, last)
        key = file_key[cols["file"].astype(np.int64)] * models + cols["model"].astype(np.int64)
        keys.append(key)
        skip = column_figures(store, shape, cols, first)["skip_ratio"]
        # A request's time: its end, else its arrival (exemplar choice and timestamp).
        finished = cols["finished_ts"]
        times = np.where(np.isnan(finished), cols["received_ts"], finished)
        rows = np.arange(first, last, dtype=np.int64)
        for value in np.unique(key).tolist():
            group = found.get(value)
            if group is None:
                path, server = next(k for k, i in key_of_file.items() if i == value // models)
                model = store.models[value % models] or UNKNOWN_MODEL
                group = found[value] = _Group((model, server, path), None)
            mask = key == value
            for column, histogram in group.timing.items():
                histogram.add(cols[column][mask], times[mask], rows[mask])
            group.skip.add(skip[mask])
    if len(found) == 1:
        group = next(iter(found.values()))
        group.totals = document.totals
    elif found:
        every = np.concatenate(keys)
        for value, group in found.items():
            group.rows = np.flatnonzero(every == value)
            group.totals = compute_totals(state, shape, rows=group.rows)
    file_lines: dict[tuple[str, str], dict[str, int]] = {}
    for f in files:
        counts = file_lines.setdefault((f.path, f.format_name), {})
        for kind, n in f.by_kind.items():
            counts[kind] = counts.get(kind, 0) + n
    groups = tuple(found[k] for k in sorted(found))
    for group in groups:
        for histogram in group.timing.values():
            if histogram.picks is not None:
                histogram.exemplars = [_exemplar(store, p) for p in histogram.picks.picks()]
                histogram.picks = None  # the candidates are not needed past this point
    return Figures(document=document, groups=groups, file_lines=file_lines)


def _exemplar(store: StoreView, pick: Pick | None) -> Exemplar | None:
    """The exemplar of the request ``pick`` names: its id (and trace id), its figure as
    its float32 column holds it (the shortest decimal of that float32, as ``extract``
    prints), its finish (else arrival) time."""
    import numpy as np

    if pick is None:
        return None
    trace = store.numeric_view(pick.row, pick.row + 1, ("trace_hi", "trace_lo"))
    hi, lo = int(trace["trace_hi"][0]), int(trace["trace_lo"][0])
    trace_id = f"{hi:016x}{lo:016x}" if hi or lo else None
    labels = exemplar_labels(store.ids[pick.row], trace_id)
    value = float(str(np.float32(pick.value)))
    stamp = None if np.isnan(pick.time) else round(pick.time, 3)
    return Exemplar(labels, value, stamp)


class SparseetyCollector(Collector):
    """Collects the figures of the followed logs' newest state."""

    def __init__(
        self,
        source: Any,
        shape: ModelShape,
        *,
        expert_series: bool = False,
        expert_series_budget: int = 0,
    ) -> None:
        """``source``: an object with ``current()`` (``FollowedLogs``)."""
        self._source = source
        self._shape = shape
        self._expert_series = expert_series
        self._budget = expert_series_budget
        self._lock = threading.Lock()
        self._cached: tuple[int, Figures] | None = None

    def describe(self) -> list[Metric]:
        return []  # computed on scrape; registering must not read the logs

    def figures(self) -> Figures:
        with self._lock:
            version, state = self._source.current()
            if self._cached is None or self._cached[0] != version:
                self._cached = (version, compute_figures(state, self._shape))
            return self._cached[1]

    def collect(self) -> Iterator[Metric]:
        figures = self.figures()
        yield from _request_families(figures)
        yield from _line_and_error_families(figures)
        yield from _engine_families(figures.document.totals)
        yield from _heat_families(figures.document.totals)
        if self._expert_series:
            yield from _expert_series(figures.document.totals, self._budget)


def _request_families(figures: Figures) -> Iterator[Metric]:
    requests = CounterMetricFamily(
        "sparseety_requests",
        "Requests read from the logs, by state (summary: requests.by_state).",
        labels=[*GROUP_LABELS, "state"],
    )
    tokens = CounterMetricFamily(
        "sparseety_tokens",
        "Tokens the requests reported or the tokenizer counted (summary: requests.*_tokens).",
        labels=[*GROUP_LABELS, "kind"],
    )
    skipped = CounterMetricFamily(
        "sparseety_skipped_tokens",
        "Tokens (KV positions, expert slots) skipped, by kind (summary: skipped.*.value).",
        labels=[*GROUP_LABELS, "kind"],
    )
    effective = CounterMetricFamily(
        "sparseety_effective_compute_tokens",
        "Tokens' worth of compute actually done, by the cost model (summary: "
        "requests.effective_compute_tokens).",
        labels=list(GROUP_LABELS),
    )
    skip_ratio = HistogramMetricFamily(
        "sparseety_request_skip_ratio",
        "Each request's skip ratio, 0-1 (extract: skip_ratio).",
        labels=list(GROUP_LABELS),
    )
    timing = {
        column: HistogramMetricFamily(name, help_text, labels=list(GROUP_LABELS))
        for name, column, _, help_text in TIMING_HISTOGRAMS
    }
    for group in figures.groups:
        labels = list(group.labels)
        if group.totals is None:  # not reached: compute_figures totals every group
            continue
        r = group.totals.requests
        for state, n in r.by_state.items():
            requests.add_metric([*labels, state], n)
        sums = {
            "prompt_tokens": r.prompt_tokens,
            "completion_tokens": r.completion_tokens,
            "cached_tokens": r.cached_tokens,
        }
        for kind, name in TOKEN_KINDS.items():
            value = sums[name]
            if value is not None:
                tokens.add_metric([*labels, kind], value)
        skips = dict(group.totals.skipped.kinds())
        for kind, name in SKIP_KINDS.items():
            value = skips[name].value
            if value is not None:
                skipped.add_metric([*labels, kind], value)
        if r.effective_compute_tokens is not None:
            effective.add_metric(labels, r.effective_compute_tokens)
        skip_ratio.add_metric(labels, group.skip.buckets(), group.skip.total)
        for column, family in timing.items():
            histogram = group.timing[column]
            family.add_metric(labels, histogram.buckets(), histogram.total)
    yield from (requests, tokens, skipped, effective, skip_ratio, *timing.values())


def _line_and_error_families(figures: Figures) -> Iterator[Metric]:
    lines = CounterMetricFamily(
        "sparseety_lines",
        "Lines read, by the one kind each line got (summary: files[].lines.by_kind).",
        labels=["server", "file", "kind"],
    )
    for (path, server), counts in sorted(figures.file_lines.items()):
        for kind, n in sorted(counts.items()):
            lines.add_metric([server, path, kind], n)
    errors = CounterMetricFamily(
        "sparseety_errors",
        "Errors in the logs, by class (summary: errors.by_kind).",
        labels=["class"],
    )
    for kind, n in figures.document.totals.errors.by_kind.items():
        errors.add_metric([kind], n)
    yield from (lines, errors)


def _engine_families(totals: Totals) -> Iterator[Metric]:
    last = totals.engine.last if totals.engine is not None else {}
    for name, (key, help_text) in ENGINE_GAUGES.items():
        gauge = GaugeMetricFamily(name, help_text + f" (summary: engine.last.{key}).")
        if last.get(key) is not None:
            gauge.add_metric([], last[key])
        yield gauge


def _by_model(heat: HeatMap | None) -> list[tuple[str, HeatMap]]:
    """Each model's own map of ``experts``, by model name."""
    return sorted(((heat.by_model or {}) if heat is not None else {}).items())


def _heat_families(totals: Totals) -> Iterator[Metric]:
    imbalance = GaugeMetricFamily(
        "sparseety_expert_load_imbalance",
        "Max over mean tokens per expert, per MoE layer and model (summary: "
        "experts.by_model.*.imbalance_max_over_mean).",
        labels=["model", "layer"],
    )
    for model, heat in _by_model(totals.experts):
        for layer, value in zip(heat.layers, heat.imbalance_max_over_mean or ()):
            if value is not None:
                imbalance.add_metric([model, str(layer)], value)
    head_skips = CounterMetricFamily(
        "sparseety_head_skips",
        "(token, head) attention-head skips logged, per layer (summary: head_skips.counts, "
        "summed over heads).",
        labels=["layer"],
    )
    heads = totals.head_skips
    if heads is not None:
        for layer, row in zip(heads.layers, heads.counts):
            head_skips.add_metric([str(layer)], sum(row))
    head_ratio = GaugeMetricFamily(
        "sparseety_head_skip_ratio",
        "Share of (token, layer, head) slots skipped, by the cost model, 0-1 (summary: "
        "skipped.skipped_head_slots.ratio).",
    )
    ratio = totals.skipped.skipped_head_slots.ratio
    if ratio is not None:
        head_ratio.add_metric([], ratio)
    yield from (imbalance, head_skips, head_ratio)


def _expert_series(totals: Totals, budget: int) -> Iterator[Metric]:
    load = CounterMetricFamily(
        "sparseety_expert_load",
        "Tokens routed to each expert, per MoE layer and model (summary: "
        "experts.by_model.*.counts); only with --expert-series, at most its budget.",
        labels=["model", "layer", "expert"],
    )
    omitted = 0
    shown = 0
    for model, heat in _by_model(totals.experts):
        for layer, row in zip(heat.layers, heat.counts):
            for expert, n in enumerate(row):
                if shown < budget:
                    load.add_metric([model, str(layer), str(expert)], n)
                    shown += 1
                else:
                    omitted += 1
    left_out = GaugeMetricFamily(
        "sparseety_expert_series_omitted",
        "Per-(layer, expert) series left out by --expert-series-budget.",
    )
    left_out.add_metric([], omitted)
    yield from (load, left_out)
