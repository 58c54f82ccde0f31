"""Cost model: closed forms against a per-token brute force, config parsing, definitions."""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pytest

from sparseety_tui.core.figures._costmodel import (
    DEFAULT_SHAPE,
    FlopInputs,
    ModelConfigError,
    ModelShape,
    derived_tokens,
    request_flops,
    shape_from_config,
)

TINY = ModelShape(
    name="tiny",
    hidden=16,
    layers=4,
    heads=4,
    kv_heads=2,
    head_dim=4,
    vocab=100,
    intermediate=32,
    moe_intermediate=8,
    experts=8,
    topk=2,
    shared_width=8,
    moe_layer_count=3,
    from_config=True,
)


def brute_force(
    shape: ModelShape,
    prompt: int,
    completion: int,
    cached: int,
    routed: float,
    active_heads: float,
    kv_fraction: float,
    experts: int,
) -> float:
    """Sum the §1.7 per-token formula token by token (no closed forms)."""
    d, dh, n_layers = shape.hidden, shape.head_dim, shape.layers
    moe, dense = shape.moe_layer_count, shape.layers - shape.moe_layer_count
    total = 0.0
    for pos in range(1, prompt + completion + 1):
        is_prompt = pos <= prompt
        if is_prompt and pos <= cached:
            continue  # a prefix-cache hit: no prefill compute
        attended = pos if is_prompt else pos * kv_fraction
        per_layer_proj = 2 * d * dh * (2 * active_heads + 2 * shape.kv_heads)
        core = 4 * active_heads * dh * attended
        ffn = (
            moe
            * (
                2 * d * experts
                + routed * 6 * d * shape.moe_intermediate
                + 6 * d * shape.shared_width
            )
            + dense * 6 * d * shape.intermediate
        )
        total += n_layers * (per_layer_proj + core) + ffn
        if not is_prompt or pos == prompt:
            total += 2 * d * shape.vocab  # logits: every decode token, last prompt position
    return total


@pytest.mark.parametrize(
    ("prompt", "completion", "cached", "routed", "heads", "kv"),
    [
        (7, 5, 0, 2, 4, 1.0),
        (7, 5, 3, 2, 4, 1.0),
        (10, 3, 4, 1.5, 3, 0.5),
        (1, 1, 0, 2, 4, 1.0),
    ],
)
def test_closed_form_equals_brute_force(
    prompt: int, completion: int, cached: int, routed: float, heads: float, kv: float
) -> None:
    x = FlopInputs(
        prompt=float(prompt),
        completion=float(completion),
        cached=float(cached),
        experts=8.0,
        routed_per_token_layer=routed,
        nominal_topk=2.0,
        heads=4.0,
        active_heads=heads,
        kv_fraction=kv,
    )
    actual, dense, nominal = request_flops(TINY, x)
    assert actual == pytest.approx(
        brute_force(TINY, prompt, completion, cached, routed, heads, kv, 8)
    )
    assert dense == pytest.approx(brute_force(TINY, prompt, completion, 0, 8, 4, 1.0, 8))
    assert nominal == pytest.approx(brute_force(TINY, prompt, completion, 0, 2, 4, 1.0, 8))


def test_nothing_skipped_means_effective_equals_logical() -> None:
    dense_shape = ModelShape(
        **{**TINY.__dict__, "experts": 0, "topk": 0, "moe_layer_count": 0, "shared_width": 0}
    )
    x = FlopInputs(
        prompt=50.0,
        completion=20.0,
        cached=0.0,
        experts=0.0,
        routed_per_token_layer=0.0,
        nominal_topk=0.0,
        heads=4.0,
        active_heads=4.0,
        kv_fraction=1.0,
    )
    figures = derived_tokens(dense_shape, x)
    assert figures["logical_tokens"] == 70
    assert figures["effective_compute_tokens"] == pytest.approx(70)
    assert figures["sparse_skipped_tokens"] == pytest.approx(0)
    assert figures["skip_ratio"] == pytest.approx(0)


def test_definitions_hold_and_cache_reduces_compute() -> None:
    base = dict(
        prompt=100.0,
        completion=10.0,
        experts=8.0,
        routed_per_token_layer=2.0,
        nominal_topk=2.0,
        heads=4.0,
        active_heads=4.0,
        kv_fraction=1.0,
    )
    cold = derived_tokens(TINY, FlopInputs(cached=0.0, **base))
    warm = derived_tokens(TINY, FlopInputs(cached=80.0, **base))
    for f in (cold, warm):
        assert f["sparse_skipped_tokens"] == pytest.approx(
            f["logical_tokens"] - f["effective_compute_tokens"]
        )
        assert f["skip_ratio"] == pytest.approx(f["sparse_skipped_tokens"] / f["logical_tokens"])
    assert warm["effective_compute_tokens"] < cold["effective_compute_tokens"]
    assert cold["compute_vs_nominal"] == pytest.approx(1.0)  # k as configured, no skips


def test_unknown_stays_unknown() -> None:
    x = FlopInputs(
        prompt=math.nan,
        completion=5.0,
        cached=0.0,
        experts=8.0,
        routed_per_token_layer=2.0,
        nominal_topk=2.0,
        heads=4.0,
        active_heads=4.0,
        kv_fraction=1.0,
    )
    figures = derived_tokens(TINY, x)
    assert math.isnan(figures["effective_compute_tokens"])
    assert math.isnan(figures["skip_ratio"])


def test_scalar_and_vector_forms_agree() -> None:
    rng = np.random.default_rng(0)
    n = 50
    prompt = rng.integers(1, 500, n).astype(float)
    x = FlopInputs(
        prompt=prompt,
        completion=rng.integers(1, 200, n).astype(float),
        cached=np.floor(prompt * rng.random(n)),
        experts=np.full(n, 8.0),
        routed_per_token_layer=rng.integers(1, 3, n).astype(float),
        nominal_topk=np.full(n, 2.0),
        heads=np.full(n, 4.0),
        active_heads=rng.integers(1, 5, n).astype(float),
        kv_fraction=rng.random(n),
    )
    vector = derived_tokens(TINY, x)
    for i in range(n):
        xi = FlopInputs(
            **{
                k: float(getattr(x, k)[i]) if hasattr(getattr(x, k), "shape") else getattr(x, k)
                for k in x.__dataclass_fields__
            }
        )
        scalar = derived_tokens(TINY, xi)
        for key, value in scalar.items():
            assert vector[key][i] == pytest.approx(value), key


def write_config(tmp_path: Path, config: dict[str, object]) -> Path:
    path = tmp_path / "config.json"
    path.write_text(json.dumps(config))
    return path


def test_config_deepseek_style_dense_first_layers(tmp_path: Path) -> None:
    path = write_config(
        tmp_path,
        {
            "hidden_size": 64,
            "num_hidden_layers": 4,
            "num_attention_heads": 4,
            "num_key_value_heads": 2,
            "vocab_size": 1000,
            "intermediate_size": 128,
            "moe_intermediate_size": 32,
            "n_routed_experts": 8,
            "num_experts_per_tok": 2,
            "n_shared_experts": 1,
            "first_k_dense_replace": 1,
        },
    )
    shape = shape_from_config(tmp_path)  # a folder works too
    assert shape.moe_layer_count == 3 and shape.experts == 8 and shape.topk == 2
    assert shape.shared_width == 32 and shape.head_dim == 16
    assert str(path) in shape.name


def test_config_qwen_style_sparse_step_and_mlp_only(tmp_path: Path) -> None:
    write_config(
        tmp_path,
        {
            "hidden_size": 64,
            "num_hidden_layers": 8,
            "num_attention_heads": 4,
            "num_experts": 16,
            "num_experts_per_tok": 4,
            "decoder_sparse_step": 2,
            "mlp_only_layers": [3],
        },
    )
    shape = shape_from_config(tmp_path / "config.json")
    assert shape.moe_layer_count == 3  # layers 1, 5, 7 (3 is mlp-only)


def test_bad_config_is_a_clear_error(tmp_path: Path) -> None:
    with pytest.raises(ModelConfigError, match="cannot read"):
        shape_from_config(tmp_path / "missing.json")
    bad = write_config(tmp_path, {"hidden_size": 8})
    with pytest.raises(ModelConfigError, match="missing or bad field"):
        shape_from_config(bad)


def test_default_shape_is_labelled_as_an_estimate() -> None:
    assert "default-estimate" in DEFAULT_SHAPE.name
    assert not DEFAULT_SHAPE.from_config
