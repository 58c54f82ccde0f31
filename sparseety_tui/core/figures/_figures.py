"""Per-request derived figures from store columns: one code path for one row and for all.

``row_figures`` (the UI table, the detail view) and ``column_figures`` (totals, extract)
both build ``FlopInputs`` with the same rules and call the same formula.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from typing import Any

from sparseety_tui.core.figures._costmodel import FlopInputs, ModelShape, derived_tokens
from sparseety_tui.core.store import CACHE_HIT_REPORTED, RowExtras, StoreView

#: Whole numbers are exact in float64 below 2**53. A count computed in float64 that
#: reaches it (only absurd input can: int32-max tokens times int32-max experts) is
#: unknown, never a rounded integer that looks exact or one too big to write.
MAX_EXACT = float(1 << 53)


#: The columns the per-row figures are computed from (``row_inputs``, ``column_inputs``).
INPUT_COLUMNS = (
    "prompt_tokens",
    "completion_tokens",
    "cached_tokens",
    "cache_hit",
    "total_experts",
    "topk_experts",
    "total_heads",
    "skipped_heads",
    "kv_kept",
    "kv_total",
)


def whole_number(value: float) -> int | None:
    """A float64 count as an exact int: None when unknown (NaN) or beyond ``MAX_EXACT``."""
    if math.isnan(value) or abs(value) >= MAX_EXACT:
        return None
    return int(round(value))


def _nan_if_unknown(value: int) -> float:
    return math.nan if value < 0 else float(value)


def _extras_overrides(extras: RowExtras, heads: float) -> dict[str, float]:
    """Per-token measurements win over request-level summaries when present."""
    out: dict[str, float] = {}
    if extras.routing_rows:
        # Routed assignments that capacity overflow dropped were not computed.
        computed = max(extras.routed_slots - extras.dropped_slots, 0)
        out["routed"] = computed / extras.routing_rows
        out["dropped"] = (extras.routed_slots - computed) / extras.routing_rows
    if extras.kv_visible:
        out["kv_fraction"] = extras.kv_kept / extras.kv_visible
    if extras.head_slots:
        out["active_heads"] = heads * (1.0 - extras.skipped_head_slots / extras.head_slots)
    return out


def row_inputs(store: StoreView, shape: ModelShape, row: int) -> FlopInputs:
    col = store.columns
    prompt = _nan_if_unknown(col["prompt_tokens"][row])
    completion = _nan_if_unknown(col["completion_tokens"][row])
    cached_raw = col["cached_tokens"][row]
    # Not reported: assume no prefix hit (labelled in docs/cost-model.md) -- unless the log
    # said there was a hit without saying how many tokens: then the figures are unknown.
    if cached_raw >= 0:
        cached = float(cached_raw)
    else:
        cached = math.nan if col["cache_hit"][row] == CACHE_HIT_REPORTED else 0.0
    experts_raw = col["total_experts"][row]
    experts = float(experts_raw) if experts_raw > 0 else float(shape.experts)
    topk_raw = col["topk_experts"][row]
    topk = float(topk_raw) if topk_raw > 0 else float(shape.topk)
    heads_raw = col["total_heads"][row]
    heads = float(heads_raw) if heads_raw > 0 else float(shape.heads)
    skipped_heads = max(col["skipped_heads"][row], 0)
    kv_kept, kv_total = col["kv_kept"][row], col["kv_total"][row]
    kv_fraction = kv_kept / kv_total if kv_kept >= 0 and kv_total > 0 else 1.0
    routed, active_heads = topk, max(heads - skipped_heads, 0.0)
    dropped = 0.0
    extras = store.extras.get(row)
    if extras is not None:
        over = _extras_overrides(extras, heads)
        routed = over.get("routed", routed)
        dropped = over.get("dropped", dropped)
        kv_fraction = over.get("kv_fraction", kv_fraction)
        active_heads = over.get("active_heads", active_heads)
    if experts <= 0:
        experts = routed = topk = dropped = 0.0
    return FlopInputs(
        prompt=prompt,
        completion=completion,
        cached=min(cached, prompt) if prompt == prompt else cached,
        experts=experts,
        routed_per_token_layer=routed,
        nominal_topk=topk,
        heads=heads,
        active_heads=active_heads,
        kv_fraction=kv_fraction,
        dropped_per_token_layer=dropped,
    )


def row_figures(store: StoreView, shape: ModelShape, row: int) -> dict[str, float | None]:
    """Derived figures of one request, NaN turned into None."""
    figures = derived_tokens(shape, row_inputs(store, shape, row))
    return {k: (None if v != v else float(v)) for k, v in figures.items()}


def row_cache_unknown(store: StoreView, row: int) -> bool:
    """The log said nothing of this request's prefix cache (no count, no hit/miss flag):
    the cost model costs it as no hit, so its skip figures are lower bounds."""
    col = store.columns
    return bool(col["cached_tokens"][row] < 0 and col["cache_hit"][row] == 0)


def row_skip(store: StoreView, shape: ModelShape, row: int) -> tuple[float | None, bool]:
    """(skip ratio, is a lower bound) of one request, as the table and detail show it.

    Where cache use is unknown the ratio only counts what the log did say: a positive
    ratio is a lower bound, and 0 is no figure at all (it would claim nothing was
    skipped when the prefix cache may have skipped most of the prompt)."""
    ratio = row_figures(store, shape, row).get("skip_ratio")
    return _shown_skip(ratio, ratio is not None and row_cache_unknown(store, row))


def column_skip(
    store: StoreView,
    shape: ModelShape,
    cols: Mapping[str, Any],
    extras: Iterable[tuple[int, RowExtras]],
) -> list[tuple[float | None, bool]]:
    """``row_skip`` of every row of ``cols`` (``numeric_view``-shaped arrays of any rows:
    the ones a table shows), ``extras``: (index in ``cols``, extras) of those that have any.
    """
    import numpy as np

    ratio = column_figures(store, shape, cols, extras=extras)["skip_ratio"]
    # A share of no work is NaN one row at a time (costmodel._safe_div), +-inf or NaN in
    # numpy (x / 0): unknown either way.
    ratio = np.where(np.isfinite(ratio), ratio, np.nan)
    unknown = cache_unknown_mask(cols)
    return [
        _shown_skip(None if r != r else r, bool(u))
        for r, u in zip(ratio.tolist(), unknown.tolist())
    ]


def _shown_skip(ratio: float | None, cache_unknown: bool) -> tuple[float | None, bool]:
    if ratio is None or not cache_unknown:
        return ratio, False
    return (None, False) if ratio == 0 else (ratio, True)


def cache_unknown_mask(cols: Mapping[str, Any]) -> Any:
    """``row_cache_unknown`` over ``store.numeric_view()`` output."""
    import numpy as np

    return np.isnan(cols["cached_tokens"]) & (cols["cache_hit"] == 0)


def column_inputs(
    store: StoreView,
    shape: ModelShape,
    cols: Mapping[str, Any],
    first_row: int = 0,
    extras: Iterable[tuple[int, RowExtras]] | None = None,
) -> FlopInputs:
    """The same rules as ``row_inputs``, vectorised over ``store.numeric_view()`` output
    (rows ``first_row`` on), or over any rows' when their ``extras`` are given as
    (index in ``cols``, extras)."""
    import numpy as np

    prompt = cols["prompt_tokens"]
    unknown_hit = np.isnan(cols["cached_tokens"]) & (cols["cache_hit"] == CACHE_HIT_REPORTED)
    cached = np.where(unknown_hit, np.nan, np.nan_to_num(cols["cached_tokens"], nan=0.0))
    cached = np.where(np.isnan(prompt), cached, np.minimum(cached, prompt))
    experts = np.where(cols["total_experts"] > 0, cols["total_experts"], float(shape.experts))
    topk = np.where(cols["topk_experts"] > 0, cols["topk_experts"], float(shape.topk))
    heads = np.where(cols["total_heads"] > 0, cols["total_heads"], float(shape.heads))
    skipped = np.nan_to_num(cols["skipped_heads"], nan=0.0)
    active = np.maximum(heads - skipped, 0.0)
    kv_kept, kv_total = cols["kv_kept"], cols["kv_total"]
    with np.errstate(invalid="ignore", divide="ignore"):
        kv_fraction = np.where((kv_kept >= 0) & (kv_total > 0), kv_kept / kv_total, 1.0)
    routed = topk.copy()
    dropped = np.zeros(len(prompt))
    if extras is None:
        extras = ((row - first_row, e) for row, e in list(store.extras.items()))
    for local, row_extras in extras:
        if not 0 <= local < len(prompt):
            continue
        over = _extras_overrides(row_extras, float(heads[local]))
        if "routed" in over:
            routed[local] = over["routed"]
            dropped[local] = over["dropped"]
        if "kv_fraction" in over:
            kv_fraction[local] = over["kv_fraction"]
        if "active_heads" in over:
            active[local] = over["active_heads"]
    dense = ~(experts > 0)
    experts = np.where(dense, 0.0, experts)
    routed = np.where(dense, 0.0, routed)
    dropped = np.where(dense, 0.0, dropped)
    topk = np.where(dense, 0.0, topk)
    return FlopInputs(
        prompt=prompt,
        completion=cols["completion_tokens"],
        cached=cached,
        experts=experts,
        routed_per_token_layer=routed,
        nominal_topk=topk,
        heads=heads,
        active_heads=active,
        kv_fraction=kv_fraction,
        dropped_per_token_layer=dropped,
    )


def column_figures(
    store: StoreView,
    shape: ModelShape,
    cols: Mapping[str, Any],
    first_row: int = 0,
    inputs: FlopInputs | None = None,
    extras: Iterable[tuple[int, RowExtras]] | None = None,
) -> dict[str, Any]:
    """``row_figures`` for every row of ``cols``; ``inputs`` if the caller has them
    (``extras`` as for ``column_inputs``)."""
    import numpy as np

    if inputs is None:
        inputs = column_inputs(store, shape, cols, first_row, extras)
    with np.errstate(invalid="ignore", divide="ignore"):
        return derived_tokens(shape, inputs)


# -- skips in natural units ------------------------------------------------------------
#
# cached_tokens         prompt tokens served from the prefix cache (tokens)
# evicted_kv_positions  KV positions dropped for good (position-slots: per-token data sums
#                       visible - kept over tokens; a request-level summary counts its last
#                       step once)
# masked_kv_positions   the same for positions resident but not attended
# dropped_expert_slots  (token, layer, expert) assignments skipped by capacity overflow
# inactive_expert_slots (token, MoE layer, expert) slots not computed because the router
#                       did not pick them: computed tokens x MoE layers x (E - k_observed)
# skipped_head_slots    (token, layer, query head) slots skipped: computed tokens x layers
#                       x (H - active heads)

SKIP_FIELDS = (
    "cached_tokens",
    "evicted_kv_positions",
    "masked_kv_positions",
    "dropped_expert_slots",
    "inactive_expert_slots",
    "skipped_head_slots",
)


def _moe_layers(shape: ModelShape, experts: Any) -> Any:
    if shape.from_config:
        return float(shape.moe_layer_count)
    return (experts > 0) * float(shape.layers)


def column_skips(
    store: StoreView,
    shape: ModelShape,
    cols: Mapping[str, Any],
    first_row: int = 0,
    inputs: FlopInputs | None = None,
) -> dict[str, Any]:
    """Each row's skips in natural units (the fields of SKIP_FIELDS), vectorised over
    ``store.numeric_view()`` output: float arrays, NaN where the row does not know."""
    import numpy as np

    n = len(cols["prompt_tokens"])
    x = inputs if inputs is not None else column_inputs(store, shape, cols, first_row)
    out: dict[str, Any] = {"cached_tokens": cols["cached_tokens"]}
    # KV: a request-level summary says how many positions its last step left out.
    summary = (cols["kv_total"] > 0) & ~np.isnan(cols["kv_kept"]) & (cols["kv_skip"] > 0)
    gap = np.where(summary, cols["kv_total"] - cols["kv_kept"], np.nan)
    is_masked = cols["kv_skip"] == 2
    none = 0.0 * gap  # 0 where the summary is known, NaN where not
    evicted = np.where(is_masked, none, gap)
    masked = np.where(is_masked, gap, none)
    dropped = np.full(n, np.nan)
    for row, extras in list(store.extras.items()):
        local = row - first_row
        if not 0 <= local < n:
            continue
        if extras.kv_tokens:  # per-token KV data wins over the summary
            evicted[local] = extras.evicted_positions
            masked[local] = extras.masked_positions
        if extras.dropped_slots or extras.routing_rows:
            dropped[local] = extras.dropped_slots
    out["evicted_kv_positions"] = evicted
    out["masked_kv_positions"] = masked
    out["dropped_expert_slots"] = dropped
    computed = x.prompt - x.cached + x.completion  # NaN when unknown
    out["inactive_expert_slots"] = np.where(
        _experts_known(shape, cols),
        np.round(
            computed
            * _moe_layers(shape, x.experts)
            * (x.experts - x.routed_per_token_layer - x.dropped_per_token_layer)
        ),
        np.nan,
    )
    out["skipped_head_slots"] = np.where(
        _heads_known(store, cols, first_row),
        np.round(computed * shape.layers * (x.heads - x.active_heads)),
        np.nan,
    )
    return out


def _experts_known(shape: ModelShape, cols: Mapping[str, Any]) -> Any:
    """Rows whose expert count is known: the record gave it, or a config.json did. The
    default shape's "dense" is a costing choice, not a fact about the request."""
    import numpy as np

    return (cols["total_experts"] > 0) | np.full(len(cols["total_experts"]), shape.from_config)


def _heads_known(store: StoreView, cols: Mapping[str, Any], first_row: int) -> Any:
    """Rows that logged head skipping (a count, or per-token head masks). Without it the
    cost model computes every head, but "0 heads skipped" would be a guess."""
    import numpy as np

    known = ~np.isnan(cols["skipped_heads"])
    n = len(known)
    for row, extras in list(store.extras.items()):
        local = row - first_row
        if 0 <= local < n and extras.head_slots:
            known[local] = True
    return known


#: Per-row arrays ``column_skip_rows`` gives beside the parts (``SKIP_FIELDS``): the
#: whole each row's part is a share of, where that whole is not a column itself.
SKIP_WHOLE_ROWS = ("visible_kv_positions", "expert_slots", "head_slots")


def column_skip_rows(
    store: StoreView,
    shape: ModelShape,
    cols: Mapping[str, Any],
    first_row: int = 0,
    inputs: FlopInputs | None = None,
) -> tuple[dict[str, Any], int]:
    """What ``column_skip_sums`` adds up, row by row: each part of ``SKIP_FIELDS``
    (``column_skips``) and the arrays of ``SKIP_WHOLE_ROWS``; and the routed slots of the
    rows' per-token extras (a count over the rows, not per row).

    Every value is one row's own (elementwise, and the extras by row): the arrays of
    consecutive slices of rows, put end to end, are those of the rows together, value
    for value, so ``skip_sums`` over them is the same sum (``core.figures`` computes a
    chunk in slices to keep its temporaries small)."""
    import numpy as np

    x = inputs if inputs is not None else column_inputs(store, shape, cols, first_row)
    rows = column_skips(store, shape, cols, first_row, x)
    # Visible positions of the rows that know their KV skips; routed slots likewise.
    visible = np.where(~np.isnan(rows["evicted_kv_positions"]), cols["kv_total"], 0.0)
    routed = 0
    n = len(visible)
    for row, extras in list(store.extras.items()):
        local = row - first_row
        if not 0 <= local < n:
            continue
        if extras.kv_tokens:
            visible[local] = extras.kv_visible
        if extras.dropped_slots or extras.routing_rows:
            routed += extras.routed_slots
    computed = x.prompt - x.cached + x.completion
    rows["visible_kv_positions"] = visible
    rows["expert_slots"] = computed * _moe_layers(shape, x.experts) * x.experts
    rows["head_slots"] = computed * shape.layers * x.heads
    return rows, routed


def skip_sums(
    rows: Mapping[str, Any], routed: int, prompt: Any
) -> tuple[dict[str, float | None], dict[str, float | None]]:
    """Sums of ``column_skip_rows`` arrays ``rows`` (None where no row knew), and for each
    the natural whole it is a part of (prompt tokens, visible positions, slots); ``prompt``:
    the rows' prompt tokens. Float64 sums of whole numbers: exact while below
    ``MAX_EXACT`` (see ``whole_number``)."""
    import numpy as np

    out: dict[str, float | None] = {}
    known: dict[str, Any] = {}
    for name in SKIP_FIELDS:
        known[name] = ~np.isnan(rows[name])
        out[name] = float(rows[name][known[name]].sum()) if known[name].any() else None
    whole: dict[str, float | None] = dict.fromkeys(SKIP_FIELDS)
    if out["cached_tokens"] is not None:
        both = known["cached_tokens"] & ~np.isnan(prompt)
        whole["cached_tokens"] = float(prompt[both].sum()) if both.any() else None
    if out["evicted_kv_positions"] is not None:
        visible = float(rows["visible_kv_positions"].sum())
        whole["evicted_kv_positions"] = whole["masked_kv_positions"] = visible
    dropped = out["dropped_expert_slots"]
    if dropped is not None:
        whole["dropped_expert_slots"] = dropped + routed
    # Each whole over the rows its part covers (a part and its whole, one subset).
    experts_in = known["inactive_expert_slots"]
    if experts_in.any():
        whole["inactive_expert_slots"] = float(rows["expert_slots"][experts_in].sum())
    heads_in = known["skipped_head_slots"]
    if heads_in.any():
        whole["skipped_head_slots"] = float(rows["head_slots"][heads_in].sum())
    return out, whole


def column_skip_sums(
    store: StoreView,
    shape: ModelShape,
    cols: Mapping[str, Any],
    first_row: int = 0,
    inputs: FlopInputs | None = None,
) -> tuple[dict[str, float | None], dict[str, float | None]]:
    """``skip_sums`` of every row of ``cols`` (``column_skip_rows`` of them at once)."""
    x = inputs if inputs is not None else column_inputs(store, shape, cols, first_row)
    rows, routed = column_skip_rows(store, shape, cols, first_row, x)
    return skip_sums(rows, routed, x.prompt)
