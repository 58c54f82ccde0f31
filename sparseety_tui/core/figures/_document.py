"""The totals document as types: what ``compute_totals`` gives and everyone reads.

Each part is a frozen dataclass whose fields are the document's keys, in its key order;
``to_json`` gives the JSON-ready dict ``summary --json`` prints (the same keys, the same
ints and floats, nulls where a figure is unknown), so the UI, the CLI and the server read
attributes that strict mypy checks, and only the edges (the ``summary`` output, the
``/summary`` body, ``compare``'s documents) see the JSON shape.

Lists of the JSON are tuples here (a part never changes once made); ``to_json`` gives
lists again. Maps keyed by what the logs name (states, error classes, models, engines,
engine figures) stay maps.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass, fields
from typing import Any

from sparseety_tui.core.figures._reading import from_json

#: A sum as the document shows it: an int when whole, else a float; None: unknown.
Number = int | float | None
#: An engine's figures by name (``core.figures``: means, last values, per-minute means).
EngineFigures = Mapping[str, Any]


class FieldsJson:
    """A part whose JSON is its fields in declaration order: nested parts by their own
    ``to_json``, tuples as lists, maps as dicts."""

    __slots__ = ()

    def to_json(self) -> dict[str, Any]:
        return {f.name: _json_value(getattr(self, f.name)) for f in fields(self)}  # type: ignore[arg-type]


def _json_value(value: Any) -> Any:
    """A field's JSON: a part by its ``to_json``; a tuple as a list; a map as a dict of
    parts (``by_engine``: its values are all parts) or of plain values (engine figures,
    counts by name: copied shallow, as they hold no part and can be large)."""
    if hasattr(value, "to_json"):
        return value.to_json()
    if isinstance(value, tuple):
        if value and isinstance(value[0], Mapping):  # per-minute rows: many, all plain
            return [dict(row) for row in value]
        return [_json_value(item) for item in value]
    if isinstance(value, Mapping):
        if hasattr(next(iter(value.values()), None), "to_json"):
            return {key: item.to_json() for key, item in value.items()}
        return dict(value)
    return value


@dataclass(frozen=True, slots=True)
class Quantiles(FieldsJson):
    """``latency_s`` / ``ttft_s``: exact nearest-rank quantiles over the requests that
    reported the value (``count`` of them); all None when none did."""

    count: int
    p50: float | None
    p95: float | None
    p99: float | None
    max: float | None
    mean: float | None


@dataclass(frozen=True, slots=True)
class TimingQuantiles:
    """One timing figure (``timing.queue_s`` ...): nearest-rank quantiles over the requests
    that have it, as ``Quantiles``, and how many of those got it from each source
    (``from``: span, log, trace, derived ...). All None with count 0 when none has it."""

    count: int
    p50: float | None
    p95: float | None
    p99: float | None
    max: float | None
    sources: Mapping[str, int]

    def to_json(self) -> dict[str, Any]:
        return {
            "count": self.count,
            "p50": self.p50,
            "p95": self.p95,
            "p99": self.p99,
            "max": self.max,
            "from": dict(self.sources),
        }

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> TimingQuantiles:
        return cls(data["count"], data["p50"], data["p95"], data["p99"], data["max"], data["from"])


@dataclass(frozen=True, slots=True)
class TimingTotals:
    """``timing``: each timing figure's ``TimingQuantiles`` by name (``queue_s`` ...)."""

    figures: Mapping[str, TimingQuantiles]

    def to_json(self) -> dict[str, Any]:
        return {name: q.to_json() for name, q in self.figures.items()}

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> TimingTotals:
        return cls({name: TimingQuantiles.from_json(q) for name, q in data.items()})


@dataclass(frozen=True, slots=True)
class SlowTotals(FieldsJson):
    """``slow``: the requests over the p95 latency (``threshold_s``, None when no request
    has a latency), counted by the component that dominated each (core.figures)."""

    threshold_s: float | None
    requests: int
    by_component: Mapping[str, int]


@dataclass(frozen=True, slots=True)
class LowerBoundCounts(FieldsJson):
    """Requests whose prompt or completion count is only a lower bound (cut at vLLM's
    ``--max-log-len``)."""

    prompt: int
    completion: int


@dataclass(frozen=True, slots=True)
class CacheHitRequests(FieldsJson):
    """Requests that flagged a cache hit (``hit``) of those that flagged either way."""

    hit: int
    reported: int


@dataclass(frozen=True, slots=True)
class RequestTotals:
    """``requests``: counts, token sums and the cost model's figures over the requests."""

    count: int
    by_state: Mapping[str, int]
    prompt_tokens: Number
    completion_tokens: Number
    cached_tokens: Number
    with_prompt_tokens: int
    #: Requests whose count is only a lower bound: the sums above are then lower bounds.
    with_lower_bound_tokens: LowerBoundCounts
    with_cached_tokens: int
    logical_tokens: Number
    effective_compute_tokens: float | None
    sparse_skipped_tokens: float | None
    skip_ratio: float | None
    with_effective_compute: int
    #: The logical tokens of the requests that were costed (a ratio over one subset).
    logical_tokens_for_effective: int | None
    #: Of the costed requests, those whose cache use the log did not say (costed as no
    #: hit): while not 0, the skips are lower bounds and effective an upper bound.
    with_cache_unknown: int
    cache_hit_rate: float | None
    #: What the rate is a share of: "tokens", "requests" (hit flags only), None.
    cache_hit_rate_by: str | None
    completion_per_prompt_tokens: float | None
    requests_per_minute: float | None
    cache_hit_requests: CacheHitRequests | None

    def to_json(self) -> dict[str, Any]:
        hits = self.cache_hit_requests
        return {
            "count": self.count,
            "by_state": dict(self.by_state),
            "prompt_tokens": self.prompt_tokens,
            "completion_tokens": self.completion_tokens,
            "cached_tokens": self.cached_tokens,
            "with_prompt_tokens": self.with_prompt_tokens,
            "with_lower_bound_tokens": self.with_lower_bound_tokens.to_json(),
            "with_cached_tokens": self.with_cached_tokens,
            "logical_tokens": self.logical_tokens,
            "effective_compute_tokens": self.effective_compute_tokens,
            "sparse_skipped_tokens": self.sparse_skipped_tokens,
            "skip_ratio": self.skip_ratio,
            "with_effective_compute": self.with_effective_compute,
            "logical_tokens_for_effective": self.logical_tokens_for_effective,
            "with_cache_unknown": self.with_cache_unknown,
            "cache_hit_rate": self.cache_hit_rate,
            "cache_hit_rate_by": self.cache_hit_rate_by,
            "completion_per_prompt_tokens": self.completion_per_prompt_tokens,
            "requests_per_minute": self.requests_per_minute,
            "cache_hit_requests": None if hits is None else hits.to_json(),
        }


@dataclass(frozen=True, slots=True)
class SkipKind(FieldsJson):
    """One kind of skip in its natural unit: ``value`` skipped ``of`` the whole."""

    value: int | None
    of: int | None
    ratio: float | None


@dataclass(frozen=True, slots=True)
class SkippedTotals:
    """``skipped``: each kind of ``figures.SKIP_FIELDS``, and the compute actually done
    over the nominal model's (``compute_vs_nominal``)."""

    cached_tokens: SkipKind
    evicted_kv_positions: SkipKind
    masked_kv_positions: SkipKind
    dropped_expert_slots: SkipKind
    inactive_expert_slots: SkipKind
    skipped_head_slots: SkipKind
    compute_vs_nominal: float | None

    def kinds(self) -> Iterator[tuple[str, SkipKind]]:
        """(field name, figures) of each kind, in ``SKIP_FIELDS`` order."""
        yield "cached_tokens", self.cached_tokens
        yield "evicted_kv_positions", self.evicted_kv_positions
        yield "masked_kv_positions", self.masked_kv_positions
        yield "dropped_expert_slots", self.dropped_expert_slots
        yield "inactive_expert_slots", self.inactive_expert_slots
        yield "skipped_head_slots", self.skipped_head_slots

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {name: kind.to_json() for name, kind in self.kinds()}
        out["compute_vs_nominal"] = self.compute_vs_nominal
        return out


@dataclass(frozen=True, slots=True)
class MinuteThroughput(FieldsJson):
    """One row of ``throughput_per_minute``: the minute's start (epoch s), its requests,
    and their tokens (None when none of them reported a count)."""

    minute: int
    requests: int
    prompt_tokens: int | None
    completion_tokens: int | None


@dataclass(frozen=True, slots=True)
class HeatMap:
    """Per-layer counts (``experts``, ``dropped_experts``, ``expert_distribution``,
    ``head_skips``): ``counts[i][j]`` of layer ``layers[i]``, index ``j < width``, with each
    layer's max / mean over the indices seen. ``out_of_range``: counts a broken line gave
    that were not kept (0: none). ``models`` and ``by_model``: each model's own map (the
    expert maps only; None for a head map); the top-level imbalance is then None over
    several models."""

    layers: tuple[int, ...]
    width: int
    counts: tuple[tuple[int, ...], ...]
    total: int
    imbalance_max_over_mean: tuple[float | None, ...] | None
    out_of_range: int = 0
    models: int | None = None
    by_model: Mapping[str, HeatMap] | None = None

    def to_json(self) -> dict[str, Any]:
        imbalance = self.imbalance_max_over_mean
        out: dict[str, Any] = {
            "layers": list(self.layers),
            "width": self.width,
            "counts": [list(row) for row in self.counts],
            "total": self.total,
            "imbalance_max_over_mean": None if imbalance is None else list(imbalance),
        }
        if self.out_of_range:
            out["out_of_range"] = self.out_of_range
        if self.models is not None:
            out["models"] = self.models
        if self.by_model is not None:
            out["by_model"] = {name: heat.to_json() for name, heat in self.by_model.items()}
        return out


@dataclass(frozen=True, slots=True)
class PrefillTokens(FieldsJson):
    """The engines' prefill tokens computed (``new``) and served from the prefix cache."""

    new: Number
    cached: Number
    cached_ratio: float | None


@dataclass(frozen=True, slots=True)
class EngineCounts(FieldsJson):
    """Counters summed over the engines (None: no engine reported it)."""

    preemptions: Number
    corrupted: Number


@dataclass(frozen=True, slots=True)
class EngineOwn(FieldsJson):
    """One engine's own figures (``engine.by_engine``)."""

    stats_lines: int
    replicated_reports_folded: int
    per_minute_mean: tuple[EngineFigures, ...]
    mean: EngineFigures
    last: EngineFigures


@dataclass(frozen=True, slots=True)
class EngineTotals(FieldsJson):
    """``engine``: the fleet's figures from the stats lines, and each engine's own
    (``core.figures`` says what an engine is and how engines add up)."""

    stats_lines: int
    engines: int
    replicated_reports_folded: int
    aggregated_reports_skipped: int
    per_minute_mean: tuple[EngineFigures, ...]
    mean: EngineFigures
    prefill_tokens: PrefillTokens
    totals: EngineCounts
    last: EngineFigures
    by_engine: Mapping[str, EngineOwn]


@dataclass(frozen=True, slots=True)
class ListedError(FieldsJson):
    """One error as the document lists it: where (file path, first and last line), when,
    what (class, message, exception), and the request and HTTP status it names (None:
    not named)."""

    path: str | None
    line: int
    last_line: int
    lines: int
    ts: float | None
    kind: str
    message: str
    exception: str | None
    request_id: str | None
    status: int | None


@dataclass(frozen=True, slots=True)
class ErrorTotals:
    """``errors``: the exact count, by class, and the newest few (``recent``). The
    ``summary`` document adds every record kept (``records``: the first and last
    ``core.report.LISTED_ERRORS``), how many it lists and how many the log keeps; None
    in the totals alone."""

    count: int
    by_kind: Mapping[str, int]
    recent: tuple[ListedError, ...]
    records: tuple[ListedError, ...] | None = None
    listed: int | None = None
    kept: int | None = None

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "count": self.count,
            "by_kind": dict(self.by_kind),
            "recent": [record.to_json() for record in self.recent],
        }
        if self.records is not None:
            out["records"] = [record.to_json() for record in self.records]
            out["listed"] = self.listed
            out["kept"] = self.kept
        return out


@dataclass(frozen=True, slots=True)
class SplitGroup(FieldsJson):
    """One group of a split (a model, a file path): its own request figures."""

    name: str
    requests: int
    failed: int
    prompt_tokens: Number
    completion_tokens: Number
    latency_p50_s: float | None


@dataclass(frozen=True, slots=True)
class Splits(FieldsJson):
    """``splits``: the request figures by model name and by file path, in name order."""

    model: tuple[SplitGroup, ...]
    file: tuple[SplitGroup, ...]

    def of(self, split: str) -> tuple[SplitGroup, ...]:
        """The groups of a split key (``model``, ``file``); none for any other."""
        return self.model if split == "model" else self.file if split == "file" else ()


@dataclass(frozen=True, slots=True)
class Totals:
    """The totals document: everything ``compute_totals`` adds up, in the order
    ``summary --json`` prints it."""

    requests: RequestTotals
    skipped: SkippedTotals
    latency_s: Quantiles
    ttft_s: Quantiles
    throughput_per_minute: tuple[MinuteThroughput, ...]
    #: The time each row counts requests at: "finished", "received", None (no time).
    throughput_per_minute_by: str | None
    experts: HeatMap | None
    dropped_experts: HeatMap | None
    #: Expert-distribution dump counts (a window's tokens per expert, not per-token
    #: routing), never added to ``experts``.
    expert_distribution: HeatMap | None
    head_skips: HeatMap | None
    engine: EngineTotals | None
    errors: ErrorTotals
    models: tuple[str, ...]
    splits: Splits

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> Totals:
        """The totals whose ``to_json`` is ``data`` (its keys; other keys are not read)."""
        return from_json(cls, data)

    def to_json(self) -> dict[str, Any]:
        return {
            "requests": self.requests.to_json(),
            "skipped": self.skipped.to_json(),
            "latency_s": self.latency_s.to_json(),
            "ttft_s": self.ttft_s.to_json(),
            "throughput_per_minute": [row.to_json() for row in self.throughput_per_minute],
            "throughput_per_minute_by": self.throughput_per_minute_by,
            "experts": _heat(self.experts),
            "dropped_experts": _heat(self.dropped_experts),
            "expert_distribution": _heat(self.expert_distribution),
            "head_skips": _heat(self.head_skips),
            "engine": None if self.engine is None else self.engine.to_json(),
            "errors": self.errors.to_json(),
            "models": list(self.models),
            "splits": self.splits.to_json(),
        }


def _heat(heat: HeatMap | None) -> dict[str, Any] | None:
    return None if heat is None else heat.to_json()
