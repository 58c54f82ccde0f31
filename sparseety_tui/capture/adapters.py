"""Where each transformers MoE class makes its routing decision, and how to read it exactly.

An adapter turns one call of a hooked module (its output, and its parent block) into the
``(indices, weights)`` of the experts the model used for each row (token) of that call:
``indices`` an integer tensor ``[rows, top_k]``, ``weights`` the weights the experts'
outputs were multiplied by, ``[rows, top_k]``. Nothing is estimated: either the hooked
module returns the decision itself, or the adapter runs the same operations the model
runs on the same tensor (which gives the same bits), and says so in ``how``.

transformers 5 gives every MoE block a router submodule whose output carries the decision;
transformers 4 (from 4.40) mostly has a plain ``nn.Linear`` gate whose logits the block
turns into a decision in its own ``forward``. The tables are keyed by (major version,
class name) because the same class name returns different things in 4.x and 5.x
(``GptOssTopKRouter``, ``DeepseekV3TopkRouter``). A class not in the table is refused by
name and version (``UnsupportedModelError``); an output that does not have the shape the
table expects stops the capture (``CaptureError``) rather than record something else.
Sources: the ``modeling_*.py`` files of transformers 5.25 and 4.57
(shared/reference/fleet-capture-redaction.md §C).
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from sparseety_tui.capture.errors import CaptureError, UnsupportedModelError

Reader = Callable[[Any, Any, Any], tuple[Any, Any]]  # (module, parent, output) -> (idx, w)


@dataclass(frozen=True)
class Adapter:
    """How to read one router class: ``read`` and a sentence for the trace's meta line."""

    how: str
    read: Reader
    #: the sum of a row's weights: "1" (renormalised), "<=1" (a share of a softmax over
    #: all experts), "routed_scaling_factor" (DeepSeek-V3), "sigmoid" (independent scores)
    weights: str


def _check_pair(idx: Any, w: Any, what: str) -> tuple[Any, Any]:
    import torch

    if not (isinstance(idx, torch.Tensor) and isinstance(w, torch.Tensor)):
        raise CaptureError(f"{what}: expected tensors, got {type(idx).__name__}")
    if idx.dtype.is_floating_point or idx.dtype.is_complex or idx.dtype == torch.bool:
        raise CaptureError(f"{what}: expert indices of dtype {idx.dtype}, not integers")
    if idx.dim() != 2 or tuple(idx.shape) != tuple(w.shape):
        raise CaptureError(
            f"{what}: indices {tuple(idx.shape)} and weights {tuple(w.shape)} are not the "
            "same [rows, top_k] shape"
        )
    return idx, w


def _tuple3(module: Any, _parent: Any, output: Any) -> tuple[Any, Any]:
    """5.x ``*TopKRouter``: ``(router_logits, top_k_weights, top_k_index)``, the pair the
    block passes on to its experts."""
    if not (isinstance(output, tuple) and len(output) == 3):
        raise CaptureError(
            f"{type(module).__name__} returned {type(output).__name__}, not the "
            "(logits, weights, indices) tuple this transformers version should give"
        )
    return _check_pair(output[2], output[1], type(module).__name__)


def _llama4(module: Any, _parent: Any, output: Any) -> tuple[Any, Any]:
    """``Llama4Router`` returns dense scores (sigmoid of the top-k logits, 0 elsewhere)
    and the logits. Its indices are ``torch.topk(logits, top_k, dim=1)``: the same call
    on the same tensor here gives the same indices; the weights are the scores there."""
    import torch

    if not (isinstance(output, tuple) and len(output) == 2):
        raise CaptureError("Llama4Router returned something other than (scores, logits)")
    scores, logits = output
    idx = torch.topk(logits, module.top_k, dim=1)[1]
    return _check_pair(idx, scores.gather(1, idx), "Llama4Router")


def _dbrx(_module: Any, parent: Any, output: Any) -> tuple[Any, Any]:
    """``DbrxRouter`` returns logits only; ``DbrxFFN.route_tokens_to_experts`` picks the
    experts. The parent's own method is run on the router's own output (pure: softmax,
    top-k, p-norm), which is what ``DbrxFFN.forward`` does next."""
    if parent is None or not hasattr(parent, "route_tokens_to_experts"):
        raise CaptureError("DbrxRouter without its DbrxFFN parent")
    w, idx = parent.route_tokens_to_experts(output)
    return _check_pair(idx, w, "DbrxFFN.route_tokens_to_experts")


def _softmax_topk(renormalise: Callable[[Any], bool]) -> Reader:
    """4.x ``nn.Linear`` gate inside a ``*SparseMoeBlock`` whose forward does
    ``softmax(logits, dim=1, dtype=float) -> topk -> [/ sum] -> .to(hidden dtype)``: the
    same operations on the gate's output, so the same bits."""

    def read(_module: Any, block: Any, output: Any) -> tuple[Any, Any]:
        import torch

        w = torch.nn.functional.softmax(output, dim=1, dtype=torch.float)
        w, idx = torch.topk(w, block.top_k, dim=-1)
        if renormalise(block):
            w /= w.sum(dim=-1, keepdim=True)
        return _check_pair(idx, w.to(output.dtype), type(block).__name__)

    return read


def _idx_w(module: Any, _parent: Any, output: Any) -> tuple[Any, Any]:
    """4.x ``DeepseekV3TopkRouter``: ``(topk_indices, topk_weights)``."""
    if not (isinstance(output, tuple) and len(output) == 2):
        raise CaptureError("DeepseekV3TopkRouter returned something other than (indices, weights)")
    return _check_pair(output[0], output[1], type(module).__name__)


def _dense_scores_idx(module: Any, _parent: Any, output: Any) -> tuple[Any, Any]:
    """4.x ``GptOssTopKRouter``: ``(router_scores [rows, experts], router_indices)``; the
    scores hold the softmax over the top-k at the chosen experts (what the experts use)."""
    if not (isinstance(output, tuple) and len(output) == 2):
        raise CaptureError("GptOssTopKRouter returned something other than (scores, indices)")
    scores, idx = output
    return _check_pair(idx, scores.gather(1, idx), type(module).__name__)


_RETURNED = "the router module's own (weights, indices) output"
_SOFTMAX = "softmax over all experts, top-k"

#: transformers 5: hooked module class -> adapter (the class is the router submodule).
ADAPTERS_5: dict[str, Adapter] = {
    "MixtralTopKRouter": Adapter(_RETURNED, _tuple3, "1"),
    "Qwen2MoeTopKRouter": Adapter(_RETURNED, _tuple3, "1 if norm_topk_prob else <=1"),
    "Qwen3MoeTopKRouter": Adapter(_RETURNED, _tuple3, "1 if norm_topk_prob else <=1"),
    "OlmoeTopKRouter": Adapter(_RETURNED, _tuple3, "1 if norm_topk_prob else <=1"),
    "DeepseekV3TopkRouter": Adapter(_RETURNED, _tuple3, "routed_scaling_factor"),
    "GptOssTopKRouter": Adapter(_RETURNED, _tuple3, "1"),
    "GraniteMoeTopKRouter": Adapter(_RETURNED, _tuple3, "1"),
    "JambaTopKRouter": Adapter(_RETURNED, _tuple3, "<=1"),
    "PhimoeTopKRouter": Adapter(_RETURNED + " (sparsemixer)", _tuple3, "sparsemixer"),
    "Llama4Router": Adapter(
        "topk of the router's logits as Llama4Router runs it; weights from its scores",
        _llama4,
        "sigmoid",
    ),
    "DbrxRouter": Adapter(
        "DbrxFFN.route_tokens_to_experts run on the router's logits", _dbrx, "p-norm"
    ),
}

_4X_GATE = f"{_SOFTMAX} recomputed from the gate's logits with the block's own operations"

#: transformers 4 (>= 4.40): (parent block class or router class) -> adapter. A block
#: entry hooks the block's ``gate`` (an ``nn.Linear``).
BLOCKS_4: dict[str, Adapter] = {
    "MixtralSparseMoeBlock": Adapter(
        _4X_GATE + ", renormalised", _softmax_topk(lambda b: True), "1"
    ),
    "Qwen2MoeSparseMoeBlock": Adapter(
        _4X_GATE, _softmax_topk(lambda b: bool(b.norm_topk_prob)), "1 if norm_topk_prob else <=1"
    ),
    "Qwen3MoeSparseMoeBlock": Adapter(
        _4X_GATE, _softmax_topk(lambda b: bool(b.norm_topk_prob)), "1 if norm_topk_prob else <=1"
    ),
    "OlmoeSparseMoeBlock": Adapter(
        _4X_GATE, _softmax_topk(lambda b: bool(b.norm_topk_prob)), "1 if norm_topk_prob else <=1"
    ),
}
ROUTERS_4: dict[str, Adapter] = {
    "DeepseekV3TopkRouter": Adapter(_RETURNED, _idx_w, "routed_scaling_factor"),
    "GptOssTopKRouter": Adapter(_RETURNED, _dense_scores_idx, "1"),
}

#: Names that mark a module as some model's MoE routing: one of them in a model that no
#: table covers means a refusal, not an empty trace.
_ROUTING_NAME = re.compile(r"(TopK|Topk)Router$|Router$|SparseMoeBlock$|MoE$|Moe$")
_LAYER = re.compile(r"(?:^|\.)(?:layers|blocks)\.(\d+)\.")


@dataclass(frozen=True)
class Site:
    """One hooked module: the model layer it routes for, its path, and its adapter."""

    layer: int
    path: str
    module: Any
    parent: Any
    cls: str
    adapter: Adapter


def transformers_version() -> str:
    import transformers

    return str(transformers.__version__)


def find_sites(model: Any, version: str | None = None) -> list[Site]:
    """Every MoE routing decision point of ``model``, sorted by layer; refuses
    (``UnsupportedModelError``) a model none of whose routers this version's table knows,
    and a model with both known and unknown routing modules."""
    version = version or transformers_version()
    major = int(version.split(".")[0])
    if major < 4 or (major == 4 and int(version.split(".")[1]) < 40):
        raise UnsupportedModelError(f"transformers {version} is older than 4.40")
    sites: list[Site] = []
    unknown: set[str] = set()
    modules = dict(model.named_modules())
    for path, module in modules.items():
        cls = type(module).__name__
        adapter = None
        target, target_path = module, path
        if major >= 5:
            adapter = ADAPTERS_5.get(cls)
        elif cls in ROUTERS_4:
            adapter = ROUTERS_4[cls]
        elif cls in BLOCKS_4:
            adapter = BLOCKS_4[cls]
            target, target_path = module.gate, f"{path}.gate"
        if adapter is None:
            if _ROUTING_NAME.search(cls) and not _is_known_container(cls, major):
                unknown.add(cls)
            continue
        found = _LAYER.search(target_path + ".")
        if found is None:
            raise UnsupportedModelError(f"{cls} at {path!r} is not under a numbered layer")
        # The readers that need the parent block (4.x gates, DBRX) get it from the site.
        parent = module if target is not module else modules.get(path.rpartition(".")[0])
        sites.append(Site(int(found.group(1)), target_path, target, parent, cls, adapter))
    model_cls = type(model).__name__
    if unknown:
        raise UnsupportedModelError(
            f"{model_cls} under transformers {version}: routing module(s) "
            f"{', '.join(sorted(unknown))} not supported (supported: {supported_list(major)})"
        )
    if not sites:
        raise UnsupportedModelError(
            f"{model_cls} under transformers {version} has no MoE router this capture "
            f"knows (supported: {supported_list(major)})"
        )
    layers = [s.layer for s in sites]
    if len(set(layers)) != len(layers):
        raise UnsupportedModelError(f"{model_cls}: more than one router in a layer {layers}")
    return sorted(sites, key=lambda s: s.layer)


#: Blocks that contain a known router in the 5.x table (hooked through the router, so
#: not "unknown" themselves), and 4.x routers that live inside a known block.
_CONTAINERS_5 = {
    "MixtralSparseMoeBlock",
    "Qwen2MoeSparseMoeBlock",
    "Qwen3MoeSparseMoeBlock",
    "OlmoeSparseMoeBlock",
    "DeepseekV3MoE",
    "GptOssMLP",
    "GraniteMoeMoE",
    "JambaSparseMoeBlock",
    "PhimoeSparseMoeBlock",
    "Llama4TextMoe",
    "DbrxFFN",
}
_CONTAINERS_4 = {"DeepseekV3MoE", "GptOssMLP"}


def _is_known_container(cls: str, major: int) -> bool:
    return cls in (_CONTAINERS_5 if major >= 5 else _CONTAINERS_4)


def supported_list(major: int) -> str:
    names = ADAPTERS_5 if major >= 5 else {**BLOCKS_4, **ROUTERS_4}
    return ", ".join(sorted(names))
