"""Tiny random-init MoE models of every class the capture supports, built offline from
config objects (no download): hidden 32, 2-3 layers, 4-8 experts, a vocabulary of 96.

``build(name)`` returns ``(model, top_k)``; ``available()`` the names whose classes the
installed transformers has. Used by the capture tests and bench/capture_overhead.py.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import Any

os.environ.setdefault("HF_HUB_OFFLINE", "1")

VOCAB = 96
COMMON: dict[str, Any] = {
    "vocab_size": VOCAB,
    "hidden_size": 32,
    "intermediate_size": 64,
    "num_attention_heads": 4,
    "num_key_value_heads": 2,
    "max_position_embeddings": 128,
    "pad_token_id": 0,
    "bos_token_id": 1,
    "eos_token_id": 2,
    "tie_word_embeddings": False,
}


def _mixtral(t: Any) -> Any:
    return t.MixtralConfig(
        **COMMON, num_hidden_layers=2, num_local_experts=4, num_experts_per_tok=2
    )


def _qwen2_moe(t: Any) -> Any:
    return t.Qwen2MoeConfig(
        **COMMON,
        num_hidden_layers=2,
        num_experts=4,
        num_experts_per_tok=2,
        moe_intermediate_size=16,
        shared_expert_intermediate_size=32,
        norm_topk_prob=False,
    )


def _qwen3_moe(t: Any) -> Any:
    # Layer 0 dense: the MoE layers are [1, 2], as the sample model's are [1, 2, 3].
    return t.Qwen3MoeConfig(
        **COMMON,
        num_hidden_layers=3,
        head_dim=8,
        num_experts=4,
        num_experts_per_tok=2,
        moe_intermediate_size=16,
        norm_topk_prob=True,
        mlp_only_layers=[0],
    )


def _olmoe(t: Any) -> Any:
    return t.OlmoeConfig(**COMMON, num_hidden_layers=2, num_experts=4, num_experts_per_tok=2)


def _deepseek_v3(t: Any) -> Any:
    common = {**COMMON, "num_key_value_heads": 4}
    return t.DeepseekV3Config(
        **common,
        num_hidden_layers=3,
        first_k_dense_replace=1,
        moe_intermediate_size=16,
        n_routed_experts=8,
        num_experts_per_tok=2,
        n_group=2,
        topk_group=1,
        n_shared_experts=1,
        q_lora_rank=None,
        kv_lora_rank=16,
        qk_rope_head_dim=8,
        qk_nope_head_dim=8,
        v_head_dim=8,
        routed_scaling_factor=2.5,
    )


def _gpt_oss(t: Any) -> Any:
    return t.GptOssConfig(
        **{**COMMON, "intermediate_size": 32},
        num_hidden_layers=2,
        head_dim=8,
        num_local_experts=4,
        num_experts_per_tok=2,
        sliding_window=16,
        layer_types=["sliding_attention", "full_attention"],
    )


def _granitemoe(t: Any) -> Any:
    return t.GraniteMoeConfig(
        **COMMON, num_hidden_layers=2, num_local_experts=4, num_experts_per_tok=2
    )


def _jamba(t: Any) -> Any:
    return t.JambaConfig(
        **COMMON,
        num_hidden_layers=2,
        num_experts=4,
        num_experts_per_tok=2,
        expert_layer_period=2,
        expert_layer_offset=1,
        attn_layer_period=2,
        attn_layer_offset=0,
        mamba_d_state=4,
        mamba_d_conv=2,
        mamba_expand=2,
        mamba_dt_rank=4,
        use_mamba_kernels=False,
    )


def _phimoe(t: Any) -> Any:
    return t.PhimoeConfig(**COMMON, num_hidden_layers=2, num_local_experts=4, num_experts_per_tok=2)


def _llama4(t: Any) -> Any:
    return t.Llama4TextConfig(
        **{**COMMON, "intermediate_size": 32},
        intermediate_size_mlp=64,
        num_hidden_layers=2,
        head_dim=8,
        num_local_experts=4,
        num_experts_per_tok=1,
        interleave_moe_layer_step=1,
    )


def _dbrx(t: Any) -> Any:
    config = t.DbrxConfig(
        d_model=32,
        n_heads=4,
        n_layers=2,
        max_seq_len=128,
        vocab_size=VOCAB,
        pad_token_id=0,
        bos_token_id=1,
        eos_token_id=2,
        attn_config={"kv_n_heads": 2, "clip_qkv": 8.0, "rope_theta": 10000.0},
        ffn_config={"ffn_hidden_size": 64, "moe_num_experts": 4, "moe_top_k": 2},
    )
    # transformers 5.2x reads rope_theta from attn_config and clamps with clip_qkv
    # (shared/reference/fleet-capture-redaction.md §C1): both set explicitly.
    config.attn_config.rope_theta = 10000.0
    return config


BUILDERS: dict[str, tuple[str, Callable[[Any], Any]]] = {
    "mixtral": ("MixtralConfig", _mixtral),
    "qwen2_moe": ("Qwen2MoeConfig", _qwen2_moe),
    "qwen3_moe": ("Qwen3MoeConfig", _qwen3_moe),
    "olmoe": ("OlmoeConfig", _olmoe),
    "deepseek_v3": ("DeepseekV3Config", _deepseek_v3),
    "gpt_oss": ("GptOssConfig", _gpt_oss),
    "granitemoe": ("GraniteMoeConfig", _granitemoe),
    "jamba": ("JambaConfig", _jamba),
    "phimoe": ("PhimoeConfig", _phimoe),
    "llama4": ("Llama4TextConfig", _llama4),
    "dbrx": ("DbrxConfig", _dbrx),
}

#: Classes whose choice is plain "top-k of softmax(logits)" (or top-k of the logits, the
#: same set): checkable against output_router_logits. The others (DeepSeek-V3 bias and
#: groups, PhiMoE sparsemixer, Llama 4 sigmoid on top-k logits, DBRX) are checked against
#: a hand-run of their router module.
PLAIN_SOFTMAX_TOPK = {
    "mixtral",
    "qwen2_moe",
    "qwen3_moe",
    "olmoe",
    "gpt_oss",
    "granitemoe",
    "jamba",
}


def available() -> list[str]:
    import transformers

    return [name for name, (cls, _b) in BUILDERS.items() if hasattr(transformers, cls)]


def build(name: str, seed: int = 0) -> Any:
    """The model in eval mode, float32, random weights from ``seed``."""
    import torch
    import transformers

    torch.manual_seed(seed)
    config = BUILDERS[name][1](transformers)
    model = transformers.AutoModelForCausalLM.from_config(config).eval()
    if name == "deepseek_v3":
        # A nonzero correction bias: selection differs from top-k of the logits, so a
        # capture that recomputed from logits would be caught.
        with torch.no_grad():
            for module in model.modules():
                bias = getattr(module, "e_score_correction_bias", None)
                if bias is not None:
                    bias.copy_(torch.randn_like(bias) * 0.5)
    return model


WORDS = [
    "the",
    "a",
    "of",
    "to",
    "and",
    "in",
    "is",
    "it",
    "that",
    "was",
    "for",
    "on",
    "are",
    "as",
    "with",
    "his",
    "they",
    "at",
    "be",
    "this",
    "from",
    "have",
    "or",
    "by",
    "one",
    "had",
    "not",
    "but",
    "what",
    "all",
    "were",
    "when",
    "we",
    "there",
    "can",
    "an",
    "your",
    "which",
    "their",
    "said",
    "if",
    "do",
    "will",
    "each",
    "about",
    "how",
    "up",
    "out",
    "them",
    "then",
    "she",
    "many",
    "some",
    "so",
    "these",
    "would",
    "other",
    "into",
    "has",
    "more",
    "her",
    "two",
    "like",
    "him",
    "see",
    "time",
    "could",
    "no",
    "make",
    "than",
    "first",
    "been",
    "its",
    "who",
    "now",
    "people",
    "my",
    "made",
    "over",
    "did",
    "down",
    "only",
    "way",
    "find",
    "use",
    "may",
    "water",
    "long",
    "little",
]


def save_folder(name: str, folder: Any, seed: int = 0) -> Any:
    """A model folder like a downloaded one: weights, config and a word-level tokenizer
    (93 words + [UNK], [BOS], [EOS] = ids below VOCAB)."""
    from tokenizers import Tokenizer, models, pre_tokenizers
    from transformers import PreTrainedTokenizerFast

    model = build(name, seed)
    model.save_pretrained(str(folder))
    vocab = {"[PAD]": 0, "[BOS]": 1, "[EOS]": 2, "[UNK]": 3}
    for word in WORDS:
        vocab.setdefault(word, len(vocab))
    assert len(vocab) <= VOCAB
    tok = Tokenizer(models.WordLevel(vocab, unk_token="[UNK]"))
    tok.pre_tokenizer = pre_tokenizers.WhitespaceSplit()
    fast = PreTrainedTokenizerFast(
        tokenizer_object=tok,
        unk_token="[UNK]",
        pad_token="[PAD]",
        bos_token="[BOS]",
        eos_token="[EOS]",
    )
    fast.save_pretrained(str(folder))
    return model
