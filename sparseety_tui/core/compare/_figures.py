"""A side's figures: named numbers read from its ``summary --json`` document.

Every figure is looked up in the document ``core.report.summary_document`` built for the
side, never recomputed, so ``compare`` and ``summary`` cannot disagree. Unknown stays None.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from sparseety_tui.core.figures import SKIP_FIELDS

Number = float | int | None


@dataclass(frozen=True)
class Figure:
    """One compared figure: its name (the key in ``delta``), unit, and which way is
    better (``lower``: latency, compute; None: neither, e.g. requests)."""

    name: str
    unit: str
    better: str | None
    get: Callable[[Mapping[str, Any]], Number]


def _at(*path: str) -> Callable[[Mapping[str, Any]], Number]:
    def get(doc: Mapping[str, Any]) -> Number:
        value: Any = doc
        for key in path:
            if not isinstance(value, Mapping):
                return None
            value = value.get(key)
        return value if isinstance(value, (int, float)) and not isinstance(value, bool) else None

    return get


def _errors(doc: Mapping[str, Any]) -> Number:
    """Errors of the side: a window's own (``window.errors_in``), else every error."""
    window = doc.get("window")
    if isinstance(window, Mapping) and isinstance(window.get("errors_in"), int):
        return int(window["errors_in"])
    return _at("errors", "count")(doc)


def tokens_per_s(doc: Mapping[str, Any], field: str) -> Number:
    """Tokens a second over the minutes the side's requests span: the sum of
    ``throughput_per_minute[].<field>`` over (last minute - first minute + 1) x 60 s.
    None when no minute reported the count."""
    rows = doc.get("throughput_per_minute") or []
    known = [r[field] for r in rows if isinstance(r.get(field), (int, float))]
    if not known:
        return None
    seconds = float(rows[-1]["minute"] - rows[0]["minute"] + 60)  # "minute": its start, s
    return round(float(sum(known)) / seconds, 4)


def skip_figure(field: str) -> str:
    """The figure name of a skip field: ``skipped_cached_tokens``, ``skipped_head_slots``."""
    return field if field.startswith("skipped_") else f"skipped_{field}"


_SKIP_UNITS = {
    "cached_tokens": "tokens",
    "evicted_kv_positions": "KV positions",
    "masked_kv_positions": "KV positions",
    "dropped_expert_slots": "expert-slots",
    "inactive_expert_slots": "expert-slots",
    "skipped_head_slots": "head-slots",
}

#: The figures ``compare`` reports, in report order. Per-layer expert imbalance is added
#: per document (``side_figures``), one figure per MoE layer.
FIGURES: tuple[Figure, ...] = (
    Figure("requests", "requests", None, _at("requests", "count")),
    Figure("logical_tokens", "tokens", None, _at("requests", "logical_tokens")),
    Figure(
        "effective_compute_tokens", "tokens", "lower", _at("requests", "effective_compute_tokens")
    ),
    Figure("sparse_skipped_tokens", "tokens", None, _at("requests", "sparse_skipped_tokens")),
    *(
        Figure(skip_figure(name), _SKIP_UNITS[name], None, _at("skipped", name, "value"))
        for name in SKIP_FIELDS
    ),
    Figure("skip_ratio", "ratio", None, _at("requests", "skip_ratio")),
    Figure("compute_vs_nominal", "ratio", "lower", _at("skipped", "compute_vs_nominal")),
    *(
        Figure(f"{what}_{q}_s", "s", "lower", _at(f"{what}_s", q))
        for what in ("latency", "ttft")
        for q in ("p50", "p95", "p99")
    ),
    Figure("prompt_tokens_per_s", "tok/s", None, lambda d: tokens_per_s(d, "prompt_tokens")),
    Figure(
        "completion_tokens_per_s",
        "tok/s",
        "higher",
        lambda d: tokens_per_s(d, "completion_tokens"),
    ),
    Figure("cache_hit_rate", "ratio", "higher", _at("requests", "cache_hit_rate")),
    Figure("errors", "errors", "lower", _errors),
)

IMBALANCE_PREFIX = "expert_imbalance_layer_"


def imbalance_by_layer(doc: Mapping[str, Any]) -> dict[int, Number]:
    """``experts.imbalance_max_over_mean`` by layer (max / mean expert load of the layer;
    null over several models, as ``summary`` says)."""
    experts = doc.get("experts")
    if not isinstance(experts, Mapping):
        return {}
    layers = experts.get("layers") or []
    values = experts.get("imbalance_max_over_mean") or [None] * len(layers)
    return {int(layer): value for layer, value in zip(layers, values)}


def side_figures(doc: Mapping[str, Any]) -> dict[str, Number]:
    """Every figure of one side's summary document, by name (None: unknown)."""
    out = {figure.name: figure.get(doc) for figure in FIGURES}
    for layer, value in imbalance_by_layer(doc).items():
        out[f"{IMBALANCE_PREFIX}{layer}"] = value
    return out


def figure_unit(name: str) -> str:
    found = next((f for f in FIGURES if f.name == name), None)
    return found.unit if found is not None else "max/mean"


def figure_better(name: str) -> str | None:
    found = next((f for f in FIGURES if f.name == name), None)
    return found.better if found is not None else "lower"
