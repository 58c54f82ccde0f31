"""Conformance matrix: every supported MoE class of the installed transformers, built tiny
and random from a config (no download), with the capture hooks on:

- generated ids and every step's logits are bit-identical to a run without hooks
  (greedy and sampled);
- one routing row per position fed through the model (prompt + completion - 1);
- the recorded experts are the model's own: against ``output_router_logits`` where the
  rule is plain top-k of a softmax, and against a hand-run of the router otherwise;
- ``summary --json`` of the written trace counts tokens x MoE layers x top-k routed slots.

A class the installed transformers has but the capture cannot read exactly must be
refused by name and version.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import tiny_models as tm
import torch
import transformers

from sparseety_tui.capture.adapters import find_sites
from sparseety_tui.capture.errors import UnsupportedModelError
from sparseety_tui.capture.generate import generate_one
from sparseety_tui.capture.hooks import RoutingCapture
from sparseety_tui.capture.run import model_info
from sparseety_tui.capture.trace_out import meta, record, top_k_of
from sparseety_tui.cli.main import run as cli_run

MAJOR = int(transformers.__version__.split(".")[0])
SUPPORTED_4 = {"mixtral", "qwen2_moe", "qwen3_moe", "olmoe", "deepseek_v3", "gpt_oss"}
PROMPT = [5, 17, 23, 42, 8, 61, 33]
NEW = 6


def _supported(name: str) -> bool:
    return MAJOR >= 5 or name in SUPPORTED_4


def test_matrix_covers_the_required_classes() -> None:
    names = set(tm.available())
    assert {"mixtral", "qwen2_moe", "qwen3_moe", "olmoe", "deepseek_v3", "gpt_oss"} <= names
    assert {n for n in names if _supported(n)} >= SUPPORTED_4


def _generate(model: Any, sample: bool) -> Any:
    if sample:
        torch.manual_seed(1234)
    with torch.no_grad():
        return model.generate(
            torch.tensor([PROMPT]),
            attention_mask=torch.ones(1, len(PROMPT), dtype=torch.long),
            max_new_tokens=NEW,
            min_new_tokens=NEW,
            do_sample=sample,
            top_k=0 if sample else None,
            output_logits=True,
            return_dict_in_generate=True,
            pad_token_id=0,
        )


def _same(a: Any, b: Any) -> bool:
    return torch.equal(a.sequences, b.sequences) and all(
        torch.equal(x, y) for x, y in zip(a.logits, b.logits, strict=True)
    )


def _hand_run(name: str, module: Any, parent: Any, x: Any) -> tuple[Any, Any]:
    """The router's decision for inputs ``x``, computed here from its weights (or, for the
    5.x routers that return it, from a fresh call of the module)."""
    f = torch.nn.functional
    x = x.reshape(-1, x.shape[-1])
    if name == "deepseek_v3":  # sigmoid + correction bias, best groups, scaled weights
        n_group = getattr(module, "num_group", None) or module.n_group  # 5.x / 4.x name
        scores = f.linear(x.float(), module.weight.float()).sigmoid()
        choice = scores + module.e_score_correction_bias
        groups = choice.view(len(x), n_group, -1).topk(2, dim=-1)[0].sum(-1)
        keep = torch.zeros_like(groups).scatter_(1, groups.topk(module.topk_group, dim=-1)[1], 1)
        mask = keep.unsqueeze(-1).expand(-1, n_group, choice.shape[1] // n_group)
        idx = choice.masked_fill(~mask.reshape(len(x), -1).bool(), float("-inf")).topk(
            module.top_k, dim=-1
        )[1]
        w = scores.gather(1, idx)
        return idx, w / (w.sum(-1, keepdim=True) + 1e-20) * module.routed_scaling_factor
    if name == "llama4":  # top-k of the logits, sigmoid of those
        logits = f.linear(x, module.weight)
        top, idx = logits.topk(module.top_k, dim=1)
        return idx, top.sigmoid()
    if name == "dbrx":  # softmax, top-k, p-norm
        probs = f.softmax(module.layer(x), dim=1)
        top, idx = probs.topk(parent.top_k, dim=-1)
        p = parent.moe_normalize_expert_weights
        return idx, top / torch.norm(top, p=p, dim=-1, keepdim=True)
    if MAJOR < 5 and type(module).__name__ == "Linear":  # a 4.x gate in a sparse block
        top, idx = f.softmax(module(x), dim=1, dtype=torch.float).topk(parent.top_k, dim=-1)
        if name == "mixtral" or getattr(parent, "norm_topk_prob", False):
            top = top / top.sum(-1, keepdim=True)
        return idx, top
    out = module(x)
    if MAJOR < 5 and name == "gpt_oss":
        return out[1], out[0].gather(1, out[1])
    return out[2], out[1]


def _write_trace(tmp: Path, model: Any, cap: RoutingCapture, gen: Any) -> Path:
    info = model_info(model, cap.moe_layers, "tiny", {})
    path = tmp / "trace.jsonl"
    lines = [meta(info, top_k_of(gen)), record("r1", None, gen, info, lambda ids: "", {})]
    path.write_text("".join(json.dumps(line) + "\n" for line in lines))
    return path


@pytest.mark.parametrize("name", tm.available())
def test_hooks_change_nothing_and_record_the_models_routing(
    name: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    model = tm.build(name)
    if not _supported(name):
        with pytest.raises(UnsupportedModelError, match=transformers.__version__) as err:
            RoutingCapture(model)
        assert type(model).__name__ in str(err.value)
        return
    greedy, sampled = _generate(model, False), _generate(model, True)

    inputs: dict[int, list[Any]] = {}
    with RoutingCapture(model) as cap:
        handles = [  # the test's own record of each router's input, for the hand-run
            s.module.register_forward_pre_hook(
                lambda _m, args, layer=s.layer: inputs.setdefault(layer, []).append(args[0])
            )
            for s in cap.sites
        ]
        assert _same(_generate(model, True), sampled)
        cap.clear()
        inputs.clear()
        hooked = _generate(model, False)
        rows = cap.rows()
        for h in handles:
            h.remove()
    assert _same(hooked, greedy), "hooks changed the generated ids or logits"
    completion = hooked.sequences.shape[1] - len(PROMPT)
    assert len(rows.indices) == len(PROMPT) + completion - 1
    k = len(rows.indices[0][0])

    for j, site in enumerate(cap.sites):
        with torch.no_grad():
            pairs = [_hand_run(name, site.module, site.parent, x) for x in inputs[site.layer]]
        idx = torch.cat([i for i, _w in pairs])
        w = torch.cat([w for _i, w in pairs]).float()
        got_idx = torch.tensor([row[j] for row in rows.indices])
        got_w = torch.tensor([row[j] for row in rows.weights])
        assert torch.equal(got_idx.sort(-1)[0], idx.sort(-1)[0]), f"layer {site.layer} experts"
        order_got, order_ref = got_idx.argsort(-1), idx.argsort(-1)
        torch.testing.assert_close(
            got_w.gather(1, order_got), w.gather(1, order_ref), rtol=1e-6, atol=1e-6
        )

    if name in tm.PLAIN_SOFTMAX_TOPK:
        with torch.no_grad():
            logits = model(torch.tensor([PROMPT]), output_router_logits=True).router_logits
        assert len(logits) == len(cap.sites)
        for j, layer_logits in enumerate(logits):
            ref = layer_logits.softmax(-1).topk(k, dim=-1)[1].sort(-1)[0]
            got = torch.tensor([row[j] for row in rows.indices[: len(PROMPT)]]).sort(-1)[0]
            assert torch.equal(got, ref), f"{name} layer {cap.sites[j].layer} vs router_logits"

    with cap:  # the hooks come off even when generate_one raises
        gen = generate_one(
            model, cap, PROMPT, NEW, do_sample=False, min_new_tokens=NEW, pad_token_id=0
        )
    assert gen.routing.indices == rows.indices
    trace = _write_trace(tmp_path, model, cap, gen)
    capsys.readouterr()
    assert cli_run(["summary", "--json", str(trace)]) == 0
    summary = json.loads(capsys.readouterr().out)
    slots = len(rows.indices) * len(cap.sites) * k
    assert summary["experts"]["total"] == slots
    assert summary["skipped"]["dropped_expert_slots"]["of"] == slots
    assert summary["experts"]["layers"] == cap.moe_layers


def test_a_dense_model_is_refused_by_name_and_version() -> None:
    torch.manual_seed(0)
    config = transformers.LlamaConfig(
        vocab_size=64, hidden_size=32, intermediate_size=64, num_hidden_layers=2,
        num_attention_heads=4, num_key_value_heads=2,
    )  # fmt: skip
    model = transformers.AutoModelForCausalLM.from_config(config)
    with pytest.raises(UnsupportedModelError) as err:
        find_sites(model)
    assert "LlamaForCausalLM" in str(err.value)
    assert transformers.__version__ in str(err.value)


@pytest.mark.skipif(
    MAJOR < 5, reason="on 4.x the matrix covers refusals (Granite, Jamba, PhiMoE, Llama 4, DBRX)"
)
def test_an_moe_class_without_an_adapter_is_refused_not_recorded() -> None:
    torch.manual_seed(0)
    config = transformers.Glm4MoeConfig(
        vocab_size=64, hidden_size=32, intermediate_size=64, moe_intermediate_size=16,
        num_hidden_layers=2, num_attention_heads=4, num_key_value_heads=2, n_routed_experts=4,
        num_experts_per_tok=2, n_group=1, topk_group=1, first_k_dense_replace=0, head_dim=8,
    )  # fmt: skip
    model = transformers.AutoModelForCausalLM.from_config(config)
    with pytest.raises(UnsupportedModelError, match="Glm4MoeTopkRouter") as err:
        RoutingCapture(model)
    assert transformers.__version__ in str(err.value)
