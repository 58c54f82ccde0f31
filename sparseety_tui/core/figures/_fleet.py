"""Engines and the fleet: which stats labels are one engine, and how engines add up.

A server logs one stats line per engine and interval: vLLM data parallel prints
``Engine 000:``, ``Engine 001:`` …; SGLang prints one batch line per scheduler, its ranks in
the prefix (``[ts DP3 TP3 EP3]``). What is one engine:

- **SGLang.** Only data parallelism (``DPn``, DP attention included) splits the requests
  between schedulers. Tensor, expert, pipeline, MoE-data and attention-context parallel
  ranks (``TP``, ``EP``, ``PP``, ``MOE_DP``, ``ATTN_CP``, ``CP``…) run the same batch of the
  same requests; when several of them log (``ATTN_CP0`` … ``ATTN_CP7``, each its own
  attention-TP group, or ``--enable-metrics-for-all-schedulers``) they log the same batch.
  So a label is *folded* to its ``DP`` part (any rank name not known to be a replica is
  kept, so that it is never merged on a guess), and the labels that fold together are
  replicas of one engine: one of them (the one with the most lines; on a tie the lowest
  ranks) is that engine's series, and the others' lines are counted as
  ``replicated_reports_folded``, not added. Taking one rank whole, rather than dropping
  lines equal to another rank's, is what holds on real logs: each rank times its own
  throughput (``gen throughput`` differs in the second decimal between ranks of one
  batch) and its lines may fall on either side of a second, so equal-payload matching
  would count most replicas twice.
- **vLLM.** Each ``Engine NNN`` is an engine. ``N Engines Aggregated:`` lines (label
  ``all``) already are fleet figures: when per-engine lines are present they are left out
  (``aggregated_reports_skipped``), else they are the fleet, of the N engines they name.
- **Logs.** Each log's engines are its own: two servers' logs given together both say
  ``Engine 000`` (or ``TP0``), and they are two engines of the fleet. A stats line is keyed
  by its label within its log (``core.store.label_key``: the Merger tags it with the
  path, the same for every incarnation of a rotated path); names carry the path only
  when the stats come from several logs (``0 (a.log)``).
- A line without a label is the unlabelled engine (a single-engine server, or vLLM's
  speculative-decoding lines, which carry no engine number; those add only acceptance
  figures, so they are not counted as an engine of their own when labelled engines exist).

How engines make the fleet: additive quantities (requests running, waiting or queued,
throughputs, tokens and requests of a batch, preemptions, PD queues) are summed over
engines; ratios (KV usage, hit rates, speculative acceptance) are averaged over the
engines that report them. Precisely, for each field:

- fleet ``mean``: each engine's mean over its lines, then summed (additive) or averaged
  (ratio) over the engines that have the field;
- fleet ``per_minute_mean``: each engine's mean over its lines in that minute, then summed
  or averaged over the engines that reported the field in that minute (``engines`` says how
  many engines reported in the minute, so a partial minute can be told); ``*_sum`` fields
  are the sum over engines of their sums;
- fleet ``last``: each engine's last line, then summed or averaged over the engines whose
  last line has the field (``ts`` is the latest of those lines).
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from sparseety_tui.core.store import (
    LABEL_FIELDS,
    SOURCE_SEP,
    EngineSeries,
    LabelSeries,
    label_key,
    minute_cells,
)
from sparseety_tui.events import StatsPayload

#: Fields averaged over engines (fractions and per-token ratios); every other measured
#: field is summed. A field not listed here is summed only if it is in ADDITIVE_FIELDS,
#: else averaged: a new ratio summed over engines would be wrong by a factor.
RATIO_FIELDS = frozenset(
    {
        "kv_usage",
        "prefix_cache_hit_rate",
        "external_prefix_cache_hit_rate",
        "mm_cache_hit_rate",
        "spec_accept_rate",
        "spec_accept_length",
        "preallocated_usage",
    }
)
ADDITIVE_FIELDS = frozenset(
    {
        "prompt_throughput",
        "generation_throughput",
        "running",
        "waiting",
        "queued",
        "swapped",
        "deferred",
        "preemptions",
        "corrupted",
        "new_tokens",
        "cached_tokens",
        "batch_requests",
        "bootstrap_queue",
        "transferring",
        "prealloc_queue",
        "transfer_queue",
        "retracted",
    }
)
#: Per-minute fields reported as sums over the minute rather than means.
SUMMED_PER_MINUTE = ("new_tokens", "cached_tokens")
#: Rank names of SGLang prefixes that shard one scheduler's batch (module docstring).
REPLICA_RANKS = frozenset({"TP", "EP", "PP", "CP", "ATTN_CP", "ATTN_TP", "MOE_DP", "MOE_EP"})
#: The vLLM label of ``N Engines Aggregated:`` lines.
AGGREGATED = "all"
#: The name of the engine whose lines carry no label.
UNLABELLED = "unlabelled"
#: The group of labels made only of replica ranks (``TP0``, ``ATTN_CP3 TP3``): one engine.
_ONLY_REPLICAS = "\x00"


def fold(key: str) -> str:
    """The engine a series key (``core.store.label_key``: a label within its log) belongs
    to: the label without its replica ranks (``DP3 TP3 EP3`` -> ``DP3``), in the same log.
    A label of replica ranks only folds to one shared group of its log; a label with no
    ranks (vLLM's ``0``, ``all``, or none) is its own."""
    source, sep, label = key.rpartition(SOURCE_SEP)
    if not label or (" " not in label and not label[:1].isalpha()):
        return key
    parts = label.split(" ")
    kept = [part for part in parts if part.rstrip("0123456789") not in REPLICA_RANKS]
    if len(kept) == len(parts):
        return key
    return source + sep + (" ".join(kept) if kept else _ONLY_REPLICAS)


def label_of(key: str) -> str:
    """The engine label of a series key, without its log."""
    return key.rpartition(SOURCE_SEP)[2]


def engine_name(group: str, key: str, several_logs: bool = False, short: bool = False) -> str:
    """How an engine is named: its folded label; for an engine of replica ranks only, the
    label standing for it (``TP0``); for lines without a label, UNLABELLED. When the stats
    come from several logs the log's path follows, as ``0 (logs/a.log)``: each log's
    engines are its own (``short``: the file name only, for a narrow panel)."""
    folded = label_of(group)
    name = label_of(key) if folded == _ONLY_REPLICAS else folded or UNLABELLED
    source = group.rpartition(SOURCE_SEP)[0]
    if short:
        source = os.path.basename(source) or source
    return f"{name} ({source})" if several_logs and source else name


def several_logs(keys: Iterable[str]) -> bool:
    """Whether series keys come from more than one log."""
    return len({key.rpartition(SOURCE_SEP)[0] for key in keys}) > 1


def _rank_order(label: str) -> tuple[Any, ...]:
    """Lowest ranks first: numbers compared as numbers (``TP2`` before ``TP10``)."""
    return tuple(
        (part.rstrip("0123456789"), int(part[len(part.rstrip("0123456789")) :] or -1))
        for part in label.split(" ")
    )


@dataclass(frozen=True)
class Engine:
    """One engine: its name, the label whose series stands for it, and how many lines its
    other (replica) labels gave."""

    name: str
    #: its label within its log (``0``, ``DP3``, ``all``, or none)
    label: str
    series: LabelSeries
    folded: int
    #: its group (``fold`` of its series keys: its log and folded label)
    group: str = ""

    @property
    def source(self) -> str:
        """The log its stats lines came from ("" when not tagged)."""
        return self.group.rpartition(SOURCE_SEP)[0]


@dataclass(frozen=True)
class Fleet:
    """The engines whose figures make the fleet's, and what was left out."""

    engines: tuple[Engine, ...]
    #: how many engines the fleet is (``aggregated`` lines name it; spec-only lines are none)
    count: int
    replicated_reports_folded: int
    aggregated_reports_skipped: int


def fleet(series: EngineSeries) -> Fleet:
    """Group the series' labels into engines and pick the fleet's (module docstring)."""
    groups: dict[str, list[str]] = {}
    for key in series.labels:
        groups.setdefault(fold(key), []).append(key)
    several = several_logs(series.labels)
    engines: list[Engine] = []
    folded = 0
    for group, keys in groups.items():
        keys.sort(key=lambda k: (-series.labels[k].count, _rank_order(label_of(k))))
        chosen = keys[0]
        replicas = sum(series.labels[k].count for k in keys[1:])
        folded += replicas
        name = engine_name(group, chosen, several)
        engines.append(Engine(name, label_of(group), series.labels[chosen], replicas, group))
    engines.sort(key=lambda e: _rank_order(e.name))
    per_engine = [e for e in engines if e.label != AGGREGATED and e.series.main]
    skipped = 0
    if per_engine:
        aggregated = [e for e in engines if e.label == AGGREGATED]
        skipped = sum(e.series.count for e in aggregated)
        engines = [e for e in engines if e.label != AGGREGATED]
        count = len(per_engine)
    else:
        named = [e.series.last.get("aggregated_engines") for e in engines]
        count = max((n for n in named if n is not None), default=0) or 1
    return Fleet(tuple(engines), count, folded, skipped)


def prefill_cached(engines: Iterable[Engine]) -> tuple[float | None, float | None, float | None]:
    """(new, cached, cached / (cached + new)) prefill tokens over every stats line of the
    engines: the prefix cache's share of prefill, as ``summary`` gives it
    (``engine.prefill_tokens``). None for what no line reported."""
    chosen = list(engines)
    whole: dict[str, float] = {}
    for key in ("new_tokens", "cached_tokens"):
        cells = [e.series.sums[key] for e in chosen if key in e.series.sums]
        if cells:
            whole[key] = sum(cell[0] for cell in cells)
    cached, new = whole.get("cached_tokens"), whole.get("new_tokens")
    ratio = cached / (cached + new) if cached is not None and new and cached + new else None
    return new, cached, ratio


def combine(values: Iterable[Mapping[str, float]]) -> dict[str, float]:
    """Engines' figures into the fleet's: additive fields summed, ratios averaged over the
    engines that have them."""
    sums: dict[str, float] = {}
    counts: dict[str, int] = {}
    for figures in values:
        for key, value in figures.items():
            sums[key] = sums.get(key, 0) + value
            counts[key] = counts.get(key, 0) + 1
    return {
        key: total if key in ADDITIVE_FIELDS else total / counts[key] for key, total in sums.items()
    }


def measured(stats: StatsPayload) -> dict[str, float]:
    """A stats line's measured fields (not its labels)."""
    return {
        key: value
        for key, value in stats.items()
        if key not in LABEL_FIELDS and isinstance(value, (int, float))
    }


def means(series: LabelSeries) -> dict[str, float]:
    return {key: acc[0] / acc[1] for key, acc in series.sums.items() if acc[1]}


def last(engines: Iterable[Engine]) -> dict[str, Any]:
    """The fleet's last figures: each engine's last line, combined; ``ts`` the latest."""
    lines = [e.series.last for e in engines if e.series.count]
    out: dict[str, Any] = {}
    stamps = [stats["ts"] for stats in lines if "ts" in stats]
    if stamps:
        out["ts"] = max(stamps)
    out.update(combine(measured(stats) for stats in lines))
    return out


def per_minute(engines: Iterable[Engine]) -> dict[int, tuple[int, dict[str, float]]]:
    """minute -> (engines that reported in it, fleet figures): means per engine in the
    minute, combined; SUMMED_PER_MINUTE fields as ``<field>_sum``, summed."""
    minutes: dict[int, list[dict[str, float]]] = {}
    for engine in engines:
        for minute, bucket in engine.series.per_minute.items():
            cells = minute_cells(bucket)
            if not cells:
                continue
            figures = {
                key: acc[0] / acc[1] for key, acc in cells.items() if key not in SUMMED_PER_MINUTE
            }
            for key in SUMMED_PER_MINUTE:
                if key in cells:
                    figures[f"{key}_sum"] = cells[key][0]
            minutes.setdefault(minute, []).append(figures)
    return {
        minute: (len(figures), _combine_minute(figures))
        for minute, figures in sorted(minutes.items())
    }


def _combine_minute(figures: list[dict[str, float]]) -> dict[str, float]:
    combined = combine(figures)
    for key in SUMMED_PER_MINUTE:  # sums over the minute are additive like the field
        total = f"{key}_sum"
        if total in combined:
            combined[total] = sum(f[total] for f in figures if total in f)
    return combined


@dataclass(frozen=True)
class FleetPoints:
    """Recent stats lines as the engine panel shows them."""

    #: the fleet's figures after each line, for sparklines
    fleet: list[dict[str, float]]
    #: each engine's latest figures, by name (``engine_name``, file names short)
    engines: dict[str, dict[str, float]]


def fleet_points(points: Iterable[StatsPayload]) -> FleetPoints:
    """The fleet's figures after each stats line, and each engine's latest: one rank
    followed per engine (the first seen; a replica's line changes nothing), aggregated lines
    only until per-engine lines come, a speculative-decoding line adding its acceptance
    figures to its engine's."""
    latest: dict[str, dict[str, float]] = {}
    chosen: dict[str, str] = {}
    main: set[str] = set()  # keys with a line that is not a speculative-decoding one
    out: list[dict[str, float]] = []
    per_engine = False
    for stats in points:
        key = label_key(stats)
        label = stats.get("engine", "")
        if chosen.setdefault(fold(key), key) != key:
            continue  # another rank of an engine already followed
        if label == AGGREGATED and per_engine:
            continue
        spec = stats.get("phase") == "spec"
        if not per_engine and label and label != AGGREGATED and not spec:
            per_engine = True  # from now on aggregated lines are not the fleet
            for other in [k for k in latest if label_of(k) == AGGREGATED]:
                del latest[other]
                main.discard(other)
        if not spec:
            main.add(key)
        # An engine's latest: its last line's figures over what earlier lines said (its
        # acceptance line and its stats line are two lines of one engine).
        latest[key] = {**latest.get(key, {}), **measured(stats)}
        out.append(combine(latest.values()))
    several = several_logs(latest)
    shown = [key for key in latest if key in main] or list(latest)
    engines = {
        engine_name(fold(key), key, several, short=True): latest[key]
        for key in sorted(shown, key=lambda k: _rank_order(label_of(k)))
    }
    return FleetPoints(out, engines)
