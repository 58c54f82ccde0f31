"""`import-routing`: the routed-experts encodings of vLLM and SGLang responses, and SGLang
expert-distribution dumps, decoded into the trace and read back by the tool.

The routing in these responses is real: a tiny Qwen3-MoE model's own routing (captured
with the hooks), put into each server's wire format as documented, since no stored public
source holds a byte-exact server response with routing. The formats:
- vLLM nested lists, ``prompt_routed_experts`` + ``choices[].routed_experts``, int16 ids,
  ``/v1/completions``: https://docs.vllm.ai/en/v0.21.0/training/routed_experts_replay/
- vLLM base64 ``.npy`` on ``choices[].routed_experts``, shape (num_tokens - 1, layers, k),
  ``/inference/v1/generate`` (vLLM >= 0.22): vllm-project/vime PR #49 (``np.load`` of
  ``b64decode``), PrimeIntellect-ai/verifiers PR #1363, vllm-project/router PR #184
- SGLang base64 int32, flat ``[tokens, layers, top_k]``, rows ``[start_len, seqlen - 1)``,
  ``meta_info.routed_experts`` (native /generate) and ``choices[].sgl_ext.routed_experts``
  (OpenAI endpoints): SGLang docs quoted in ai-dynamo/dynamo PR #15114, sgl-project/sglang
  PRs #12162 and #17434, decode recipe in ai-dynamo/dynamo PR #9657
- SGLang dumps: ``python/sglang/srt/eplb/expert_distribution.py`` (``_DetailAccumulator``,
  ``_StatAccumulator``), sgl-project/sglang @02295fe5
"""

from __future__ import annotations

import base64
import io
import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import tiny_models as tm
import torch

from sparseety_tui.capture.generate import generate_one
from sparseety_tui.capture.hooks import RoutingCapture
from sparseety_tui.cli.main import main
from sparseety_tui.cli.main import run as cli_run

PROMPTS = [[5, 17, 23, 42, 8], [5, 17, 30, 9]]
NEW = 4


@pytest.fixture(scope="module")
def real() -> list[dict[str, Any]]:
    """Per request: prompt ids, completion ids, routing [P+C-1, 2 layers, 2] of the model."""
    model = tm.build("qwen3_moe")
    out = []
    with RoutingCapture(model) as cap:
        for ids in PROMPTS:
            gen = generate_one(model, cap, ids, NEW, do_sample=False, min_new_tokens=NEW,
                               pad_token_id=0)  # fmt: skip
            out.append(
                {
                    "prompt": gen.prompt_ids,
                    "completion": gen.completion_ids,
                    "routing": np.array(gen.routing.indices, dtype=np.int64),
                }
            )
    return out


def npy_b64(arr: np.ndarray) -> str:
    buf = io.BytesIO()
    np.save(buf, arr)
    return base64.b64encode(buf.getvalue()).decode("ascii")


def int32_b64(arr: np.ndarray) -> str:
    return base64.b64encode(arr.astype("<i4").tobytes()).decode("ascii")


def _import(
    capsys: pytest.CaptureFixture[str], tmp: Path, values: list[Any], *extra: str
) -> list[dict[str, Any]]:
    src = tmp / "responses.jsonl"
    src.write_text("".join(json.dumps(v) + "\n" for v in values))
    out = tmp / "trace.jsonl"
    capsys.readouterr()
    assert cli_run(["import-routing", str(src), "-o", str(out), *extra]) == 0
    return [json.loads(line) for line in out.read_text().splitlines()]


def _summary(capsys: pytest.CaptureFixture[str], path: Path) -> dict[str, Any]:
    capsys.readouterr()
    assert cli_run(["summary", "--json", str(path)]) == 0
    doc: dict[str, Any] = json.loads(capsys.readouterr().out)
    return doc


def test_vllm_nested_lists_prompt_and_choice(
    real: list[dict[str, Any]], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    r = real[0]
    p, c = len(r["prompt"]), len(r["completion"])
    # vLLM documents [C] generated rows: the last is a position the model never ran.
    gen_rows = np.concatenate([r["routing"][p:], r["routing"][-1:]]).astype(np.int16)
    response = {
        "id": "cmpl-3f1c", "object": "text_completion", "model": "Qwen/Qwen3-30B-A3B",
        "choices": [{"index": 0, "text": " hi", "finish_reason": "length",
                     "routed_experts": gen_rows.tolist()}],
        "prompt_routed_experts": r["routing"][:p].astype(np.int16).tolist(),
        "usage": {"prompt_tokens": p, "completion_tokens": c, "total_tokens": p + c},
    }  # fmt: skip
    (rec,) = _import(capsys, tmp_path, [response], "--moe-layers", "1,2", "--total-experts", "4")
    assert rec["request_id"] == "cmpl-3f1c" and rec["model"] == "Qwen/Qwen3-30B-A3B"
    assert rec["sparse"]["routing"] == r["routing"].tolist()
    assert rec["sparse"]["routing_start"] == 0 and rec["sparse"]["moe_layers"] == [1, 2]
    assert rec["x_routing_source"] == "vllm nested lists" and rec["x_routing_rows_dropped"] == 1
    doc = _summary(capsys, tmp_path / "trace.jsonl")
    assert doc["experts"]["total"] == (p + c - 1) * 2 * 2
    assert doc["experts"]["layers"] == [1, 2]


def test_vllm_base64_npy_whole_sequence(
    real: list[dict[str, Any]], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    r = real[1]
    value = npy_b64(r["routing"].astype(np.int16))
    assert value.startswith("k05VTVBZ")  # the .npy magic, as vLLM sends it
    pair = {
        "request": {"prompt_token_ids": r["prompt"], "max_tokens": NEW},
        "response": {
            "id": "gen-77",
            "choices": [{"index": 0, "token_ids": r["completion"], "finish_reason": "length",
                         "routed_experts": value}],
        },
    }  # fmt: skip
    (rec,) = _import(capsys, tmp_path, [pair])
    assert rec["sparse"]["routing"] == r["routing"].tolist()
    assert rec["sparse"]["routing_start"] == 0
    assert rec["prompt_token_ids"] == r["prompt"] and rec["completion_token_ids"] == r["completion"]
    assert rec["prompt_tokens"] == len(r["prompt"]) and rec["x_routing_source"] == "vllm .npy"
    assert "x_routing_rows_dropped" not in rec


def test_sglang_native_generate_base64_int32_with_start_len(
    real: list[dict[str, Any]], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    r = real[0]
    p, c = len(r["prompt"]), len(r["completion"])
    full = {
        "text": " hello", "output_ids": r["completion"],
        "meta_info": {"id": "a1b2c3", "finish_reason": {"type": "length", "length": c},
                      "prompt_tokens": p, "completion_tokens": c, "cached_tokens": 0,
                      "e2e_latency": 0.25, "routed_experts": int32_b64(r["routing"])},
    }  # fmt: skip
    tail = json.loads(json.dumps(full))
    tail["meta_info"]["id"] = "d4e5f6"
    tail["meta_info"]["routed_experts"] = int32_b64(r["routing"][2:])
    values = [
        {"request": {"input_ids": r["prompt"], "return_routed_experts": True}, "response": full},
        {"request": {"input_ids": r["prompt"], "return_routed_experts": True,
                     "routed_experts_start_len": 2}, "response": tail},
    ]  # fmt: skip
    a, b = _import(capsys, tmp_path, values, "--top-k", "2")
    assert a["sparse"]["routing"] == r["routing"].tolist() and a["sparse"]["routing_start"] == 0
    assert a["finish_reason"] == "length" and a["latency_s"] == 0.25 and a["cached_tokens"] == 0
    assert b["sparse"]["routing"] == r["routing"][2:].tolist() and b["sparse"]["routing_start"] == 2
    assert a["x_routing_source"] == "sglang base64 int32"


def test_a_nan_latency_is_unknown_not_bad_json(
    real: list[dict[str, Any]], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """json.loads takes NaN; the trace must stay JSON (json.dumps would write NaN)."""
    r = real[0]
    response = {
        "text": " hello", "output_ids": r["completion"],
        "meta_info": {"id": "n1", "prompt_tokens": len(r["prompt"]),
                      "completion_tokens": len(r["completion"]), "e2e_latency": float("nan"),
                      "routed_experts": int32_b64(r["routing"])},
    }  # fmt: skip
    values = [{"request": {"input_ids": r["prompt"]}, "response": response}]
    (rec,) = _import(capsys, tmp_path, values, "--top-k", "2")
    assert rec.get("latency_s") is None
    assert "NaN" not in (tmp_path / "trace.jsonl").read_text()


def test_sglang_openai_sgl_ext_and_batch(
    real: list[dict[str, Any]], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    chat = {
        "id": "chatcmpl-9", "model": "qwen3",
        "choices": [{"index": 0, "message": {"role": "assistant", "content": "ok"},
                     "finish_reason": "stop",
                     "sgl_ext": {"routed_experts": int32_b64(real[1]["routing"])}}],
        "usage": {"prompt_tokens": len(real[1]["prompt"]),
                  "completion_tokens": len(real[1]["completion"])},
    }  # fmt: skip
    batch = {
        "request": {"input_ids": [real[0]["prompt"], real[1]["prompt"]]},
        "response": [
            {"text": "x", "meta_info": {"id": f"b{i}", "prompt_tokens": len(r["prompt"]),
                                        "completion_tokens": len(r["completion"]),
                                        "routed_experts": int32_b64(r["routing"])}}
            for i, r in enumerate(real)
        ],
    }  # fmt: skip
    recs = _import(capsys, tmp_path, [chat, batch], "--layers", "2")
    assert [r["request_id"] for r in recs] == ["chatcmpl-9", "b0", "b1"]
    assert recs[0]["completion"] == "ok"
    assert recs[0]["sparse"]["routing"] == real[1]["routing"].tolist()
    assert recs[2]["prompt_token_ids"] == real[1]["prompt"]
    assert recs[1]["sparse"]["routing"] == real[0]["routing"].tolist()


def test_a_buffer_of_all_layers_keeps_the_moe_columns(
    real: list[dict[str, Any]], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    r = real[0]
    dense = np.full((len(r["routing"]), 1, 2), -1)  # layer 0 dense: -1 as sglang-jax writes
    buffer = np.concatenate([dense, r["routing"]], axis=1)  # [rows, 3 layers, 2]
    response = {"id": "x", "choices": [{"routed_experts": buffer.tolist()}],
                "usage": {"prompt_tokens": len(r["prompt"]),
                          "completion_tokens": len(r["completion"])}}  # fmt: skip
    (rec,) = _import(capsys, tmp_path, [response], "--moe-layers", "1,2")
    assert rec["sparse"]["routing"] == r["routing"].tolist()


def test_bad_responses_are_named_and_the_rest_converted(
    real: list[dict[str, Any]], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    r = real[0]
    p, c = len(r["prompt"]), len(r["completion"])
    good = {"meta_info": {"id": "ok", "prompt_tokens": p, "completion_tokens": c,
                          "routed_experts": int32_b64(r["routing"])}}  # fmt: skip
    bad_b64 = {"meta_info": {"id": "b64", "prompt_tokens": p, "completion_tokens": c,
                             "routed_experts": "not base64!"}}  # fmt: skip
    short = {"meta_info": {"id": "short", "prompt_tokens": p, "completion_tokens": c,
                           "routed_experts": int32_b64(r["routing"][:-1])}}  # fmt: skip
    none = {"id": "cmpl-n", "choices": [{"text": "x"}]}
    src = tmp_path / "r.jsonl"
    src.write_text("".join(json.dumps(v) + "\n" for v in [good, bad_b64, short, none]) + "{oops\n")
    out = tmp_path / "t.jsonl"
    capsys.readouterr()
    with pytest.raises(SystemExit) as exit_:
        main(["import-routing", str(src), "-o", str(out), "--top-k", "2"])
    assert exit_.value.code == 2
    err = capsys.readouterr().err
    assert "r.jsonl:2: b64: not base64" in err
    assert "r.jsonl:3: short:" in err and "token rows" in err
    assert "r.jsonl:4: cmpl-n: no routed_experts" in err
    assert "r.jsonl:5: invalid JSON" in err
    assert "4 of 5 responses not converted" in err
    assert [json.loads(line)["request_id"] for line in out.read_text().splitlines()] == ["ok"]


# -- SGLang expert-distribution dumps --------------------------------------------------


def _per_token_dump(real: list[dict[str, Any]], rank: int) -> dict[str, Any]:
    """Passes as SGLang's per_token recorder writes them: one extend pass with both
    prompts, then decode passes of one token per request; ids in 8 slots (-1 padded),
    physical: expert e of layer l sits in physical slot (e + 1) % 4 (an EPLB placement)."""
    layers, k = real[0]["routing"].shape[1:]
    phys_of = lambda e: (e + 1) % 4  # noqa: E731
    p2l = torch.tensor([[(s - 1) % 4 for s in range(4)] for _ in range(layers)])

    def pass_of(tokens: list[tuple[int, int, np.ndarray]], lens: list[int] | None, fid: int) -> Any:
        topk = torch.full((layers, len(tokens), 8), -1, dtype=torch.int32)
        for t, (_tid, _pos, row) in enumerate(tokens):
            for layer in range(layers):
                topk[layer, t, :k] = torch.tensor([phys_of(int(e)) for e in row[layer]])
        return {"forward_pass_id": fid, "rank": rank, "gatherer_key": "primary",
                "input_ids": [t[0] for t in tokens], "positions": [t[1] for t in tokens],
                "extend_seq_lens": lens, "forward_mode": 1 if lens else 2,
                "topk_ids_of_layer": topk, "misc_objects": [],
                "global_physical_count": torch.zeros(layers, 4, dtype=torch.int64)}  # fmt: skip

    prefill = []
    for r in real:
        prefill += [(tid, pos, r["routing"][pos]) for pos, tid in enumerate(r["prompt"])]
    records = [pass_of(prefill, [len(r["prompt"]) for r in real], 0)]
    for step in range(NEW - 1):
        tokens = []
        for r in real:
            pos = len(r["prompt"]) + step
            tokens.append((r["completion"][step], pos, r["routing"][pos]))
        records.append(pass_of(tokens, None, step + 1))
    return {"records": records, "last_physical_to_logical_map": p2l}


def _requests_trace(tmp: Path, real: list[dict[str, Any]]) -> Path:
    path = tmp / "requests.jsonl"
    path.write_text("".join(
        json.dumps({"request_id": f"r{i}", "prompt_token_ids": r["prompt"],
                    "completion_token_ids": r["completion"]}) + "\n"
        for i, r in enumerate(real)
    ))  # fmt: skip
    return path


def test_sglang_per_token_dump_joins_tokens_to_their_requests(
    real: list[dict[str, Any]], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    dumps = []
    for rank in (0, 1):  # two TP ranks dump the same passes
        dumps.append(tmp_path / f"expert_distribution_recorder_1796000000.5_{rank}.pt")
        torch.save(_per_token_dump(real, rank), dumps[-1])
    requests = _requests_trace(tmp_path, real)
    out = tmp_path / "events.jsonl"
    capsys.readouterr()
    assert cli_run(["import-routing", *map(str, dumps), "--requests", str(requests),
                    "--moe-layers", "1,2", "-o", str(out)]) == 0  # fmt: skip
    err = capsys.readouterr().err
    head, *events = [json.loads(line) for line in out.read_text().splitlines()]
    n = sum(len(r["routing"]) for r in real)
    assert head["x_sglang_per_token"] == {"tokens": 2 * n, "joined": n, "ambiguous": 0,
                                          "unmatched": 0, "repeated": n}  # fmt: skip
    assert f"{n} of {2 * n} dumped tokens joined to 2 requests" in err
    for i, r in enumerate(real):
        mine = sorted((e for e in events if e["request_id"] == f"r{i}"), key=lambda e: e["pos"])
        assert [e["pos"] for e in mine] == list(range(len(r["routing"])))
        assert [e["experts"] for e in mine] == r["routing"].tolist()  # logical ids again
    both = tmp_path / "both.jsonl"
    both.write_text(requests.read_text() + out.read_text())
    doc = _summary(capsys, both)
    assert doc["experts"]["total"] == n * 2 * 2
    assert "unparsed" not in doc["files"][0]["lines"]["by_kind"]


def test_sglang_per_token_dump_counts_what_it_cannot_join(
    real: list[dict[str, Any]], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    dump = tmp_path / "expert_distribution_recorder_1.0_0.pt"
    torch.save(_per_token_dump(real, 0), dump)
    twin = [real[0], real[0]]  # two requests with the same ids: which one is unknowable
    requests = _requests_trace(tmp_path, twin)
    out = tmp_path / "events.jsonl"
    assert cli_run(["import-routing", str(dump), "--requests", str(requests), "-o", str(out)]) == 0
    head = json.loads(out.read_text().splitlines()[0])["x_sglang_per_token"]
    assert head["joined"] == 0
    assert head["ambiguous"] == len(real[0]["routing"])
    assert head["unmatched"] == len(real[1]["routing"])


def test_sglang_stat_dump_becomes_the_counts_csv_the_tool_reads(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    counts = torch.zeros(3, 2, 4, dtype=torch.int32)  # [buffered steps, layers, experts]
    counts[0, 0, 1], counts[1, 0, 1], counts[2, 1, 3] = 5, 2, 9
    dump = tmp_path / "expert_distribution_recorder_1796000000.25.pt"
    torch.save(
        {"rank": 0, "logical_count": counts, "average_utilization_rate_over_window": None}, dump
    )
    out = tmp_path / "counts.csv"
    assert cli_run(["import-routing", str(dump), "-o", str(out)]) == 0
    lines = out.read_text().splitlines()
    assert lines[0] == "layer_id,expert_id,count" and len(lines) == 1 + 2 * 4
    doc = _summary(capsys, out)
    assert doc["expert_distribution"]["counts"] == [[0, 7, 0, 0], [0, 0, 0, 9]]


def test_a_dump_that_needs_code_to_load_is_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from fractions import Fraction  # any class: unpickling it would mean running its code

    dump = tmp_path / "expert_distribution_recorder_2.pt"
    torch.save({"records": [Fraction(1, 3)]}, dump)
    capsys.readouterr()
    with pytest.raises(SystemExit) as exit_:
        main(["import-routing", str(dump), "--requests", str(dump), "-o", str(tmp_path / "o")])
    assert exit_.value.code == 2
    assert "tensors-only" in capsys.readouterr().err
