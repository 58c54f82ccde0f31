"""FLOP cost model (shared/reference/sparse-telemetry.md §1.7) and the derived token figures.

Definitions (documented in docs/cost-model.md and held by tests):

- ``logical_tokens`` = prompt_tokens + completion_tokens (what the API bills).
- ``effective_compute_tokens`` = dense-equivalent tokens of compute actually done
  = logical_tokens x actual_FLOPs / dense_FLOPs, where *dense* means every logical token
  computed (no prefix cache), every expert of every MoE layer, every attention head, every
  visible KV position; *actual* takes out cached prompt tokens (no prefill compute, still
  attended later), experts not routed to or dropped, skipped heads, and KV positions that
  were evicted or masked.
- ``sparse_skipped_tokens`` = logical_tokens - effective_compute_tokens.
- ``skip_ratio`` = sparse_skipped_tokens / logical_tokens.

Accounting per token at position p (1-based, causal): projections ``2*d*dh*(2h + 2*Hkv)``
per layer, attention core ``4*h*dh*p_attended``, FFN ``6*d*I`` (dense layer) or
``2*d*E + k*6*d*Im + 6*d*W_shared`` (MoE layer), LM head ``2*d*V`` for every decode token
and for the last computed prefill position. Each logical token is costed as one forward
position (the last sampled token is in fact never fed back; dense and actual are costed
the same way, so the ratio is unaffected to first order). KV groups stay active when only
some query heads of the group are skipped (sparse-telemetry.md §1.5), and KV selection
applies to decode steps only.

The formula is written with arithmetic only, so ``request_flops`` works on Python floats
(one request: extract, the detail view) and on numpy arrays (all requests at once:
totals), and the two can never disagree. Unknown inputs are NaN and give NaN (``null``).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

Num = TypeVar("Num")


@dataclass(frozen=True)
class ModelShape:
    """The dimensions the cost model needs, and where they came from."""

    name: str  # shown in every output as `cost_model`
    hidden: int
    layers: int
    heads: int
    kv_heads: int
    head_dim: int
    vocab: int
    intermediate: int  # dense MLP width
    moe_intermediate: int  # width of one routed expert
    experts: int  # routed experts per MoE layer; 0 for a dense model
    topk: int
    shared_width: int  # summed width of always-on shared experts
    moe_layer_count: int  # how many of `layers` are MoE layers
    from_config: bool


# Mixtral-8x7B-like dimensions (transformers' MixtralConfig defaults). Dense FFN unless a
# request says how many experts it has; then every layer is MoE with experts as wide as I.
DEFAULT_SHAPE = ModelShape(
    name="default-estimate (Mixtral-8x7B-like dims; experts from each record)",
    hidden=4096,
    layers=32,
    heads=32,
    kv_heads=8,
    head_dim=128,
    vocab=32000,
    intermediate=14336,
    moe_intermediate=14336,
    experts=0,
    topk=0,
    shared_width=0,
    moe_layer_count=0,
    from_config=False,
)


class ModelConfigError(ValueError):
    """A --model-config file that cannot be read as a Hugging Face config.json."""


def _first(config: dict[str, Any], *keys: str, default: Any = None) -> Any:
    for key in keys:
        value = config.get(key)
        if value is not None:
            return value
    return default


def shape_from_config(path: str | Path) -> ModelShape:
    """Read a Hugging Face ``config.json`` (or a model folder containing one)."""
    config_path = Path(path)
    if config_path.is_dir():
        config_path = config_path / "config.json"
    try:
        config = json.loads(config_path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise ModelConfigError(f"cannot read model config {config_path}: {exc}") from exc
    if not isinstance(config, dict):
        raise ModelConfigError(f"{config_path}: not a JSON object")
    config = config.get("text_config", config) if "hidden_size" not in config else config
    try:
        hidden = int(config["hidden_size"])
        layers = int(config["num_hidden_layers"])
        heads = int(config["num_attention_heads"])
    except (KeyError, TypeError, ValueError) as exc:
        raise ModelConfigError(f"{config_path}: missing or bad field {exc}") from exc
    kv_heads = int(_first(config, "num_key_value_heads", default=heads))
    head_dim = int(_first(config, "head_dim", default=hidden // heads))
    vocab = int(_first(config, "vocab_size", default=32000))
    intermediate = int(_first(config, "intermediate_size", default=4 * hidden))
    experts = int(_first(config, "num_experts", "num_local_experts", "n_routed_experts", default=0))
    topk = int(_first(config, "num_experts_per_tok", "moe_topk", default=0)) if experts else 0
    moe_intermediate = int(_first(config, "moe_intermediate_size", default=intermediate))
    shared_width = 0
    if experts:
        n_shared = int(_first(config, "n_shared_experts", default=0) or 0)
        shared_width = n_shared * moe_intermediate + int(
            _first(config, "shared_expert_intermediate_size", default=0) or 0
        )
    moe_layers = _moe_layer_count(config, layers) if experts else 0
    return ModelShape(
        name=f"config.json: {config_path}",
        hidden=hidden,
        layers=layers,
        heads=heads,
        kv_heads=kv_heads,
        head_dim=head_dim,
        vocab=vocab,
        intermediate=intermediate,
        moe_intermediate=moe_intermediate,
        experts=experts,
        topk=topk,
        shared_width=shared_width,
        moe_layer_count=moe_layers,
        from_config=True,
    )


def _moe_layer_count(config: dict[str, Any], layers: int) -> int:
    """Which layers route to experts (sparse-telemetry.md §1.1)."""
    first_dense = int(config.get("first_k_dense_replace") or 0)
    step = int(config.get("decoder_sparse_step") or 1)
    mlp_only = set(config.get("mlp_only_layers") or [])
    return sum(
        1 for i in range(layers) if i >= first_dense and (i + 1) % step == 0 and i not in mlp_only
    )


@dataclass(frozen=True)
class FlopInputs:
    """Per-request inputs to the formula; NaN means unknown (scalars or numpy arrays)."""

    prompt: Any
    completion: Any
    cached: Any
    experts: Any  # E per MoE layer (0 or NaN: dense)
    routed_per_token_layer: Any  # experts actually computed per (token, MoE layer)
    nominal_topk: Any
    heads: Any
    active_heads: Any  # query heads computed per layer per token (average)
    kv_fraction: Any  # attended / visible KV positions in decode (1.0 = full attention)
    # Routed assignments dropped by capacity overflow, per (token, MoE layer): not costed
    # (they are already out of routed_per_token_layer), only counted apart from "not routed".
    dropped_per_token_layer: Any = 0.0


def request_flops(shape: ModelShape, x: FlopInputs) -> tuple[Any, Any, Any]:
    """(actual, dense, nominal) FLOPs of one request, or of arrays of requests."""
    d = float(shape.hidden)
    dh = float(shape.head_dim)
    n_layers = float(shape.layers)
    head = 2.0 * d * shape.vocab
    mlp_per_width = 6.0 * d

    # MoE layers: from the config, or (default shape) every layer once a record gives E.
    moe_layers = float(shape.moe_layer_count) if shape.from_config else (x.experts > 0) * n_layers
    dense_layers = n_layers - moe_layers
    router = 2.0 * d * x.experts
    expert = mlp_per_width * shape.moe_intermediate
    shared = mlp_per_width * shape.shared_width
    dense_ffn = dense_layers * mlp_per_width * shape.intermediate

    def token_cost(active_heads: Any, experts_computed: Any) -> Any:
        proj = n_layers * 2.0 * d * dh * (2.0 * active_heads + 2.0 * shape.kv_heads)
        moe = moe_layers * (router + experts_computed * expert + shared)
        return proj + moe + dense_ffn

    def position_cost(active_heads: Any) -> Any:
        return n_layers * 4.0 * active_heads * dh

    prompt, completion, cached = x.prompt, x.completion, x.cached
    computed_prefill = prompt - cached
    pos_sum_prompt = prompt * (prompt + 1.0) / 2.0
    pos_sum_cached = cached * (cached + 1.0) / 2.0
    total = prompt + completion
    pos_sum_decode = total * (total + 1.0) / 2.0 - pos_sum_prompt
    prefill_head = (computed_prefill > 0) * head

    # Each cost once: over big arrays every term is a pass over memory.
    actual_token = token_cost(x.active_heads, x.routed_per_token_layer)
    actual_position = position_cost(x.active_heads)
    actual = (
        computed_prefill * actual_token
        + (pos_sum_prompt - pos_sum_cached) * actual_position
        + prefill_head
        + completion * (actual_token + head)
        + pos_sum_decode * x.kv_fraction * actual_position
    )
    full_position = position_cost(x.heads)

    def full(experts_per_layer: Any) -> Any:
        full_token = token_cost(x.heads, experts_per_layer)
        return (
            prompt * full_token
            + pos_sum_prompt * full_position
            + (prompt > 0) * head
            + completion * (full_token + head)
            + pos_sum_decode * full_position
        )

    return actual, full(x.experts), full(x.nominal_topk)


def derived_tokens(shape: ModelShape, x: FlopInputs) -> dict[str, Any]:
    """effective_compute_tokens, sparse_skipped_tokens, skip_ratio and both FLOP ratios."""
    actual, dense, nominal = request_flops(shape, x)
    logical = x.prompt + x.completion
    ratio = actual / dense if _is_array(dense) else _safe_div(actual, dense)
    effective = logical * ratio
    skipped = logical - effective
    return {
        "logical_tokens": logical,
        "effective_compute_tokens": effective,
        "sparse_skipped_tokens": skipped,
        "skip_ratio": skipped / logical if _is_array(logical) else _safe_div(skipped, logical),
        "flops_actual": actual,
        "flops_dense": dense,
        "flops_nominal": nominal,
        "compute_vs_nominal": actual / nominal
        if _is_array(nominal)
        else _safe_div(actual, nominal),
    }


def _is_array(value: Any) -> bool:
    return hasattr(value, "shape")


def _safe_div(a: float, b: float) -> float:
    if b != b or a != a or b == 0:  # NaN or zero
        return float("nan")
    return a / b
