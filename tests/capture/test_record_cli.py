"""`sparseety-tui record` end to end on a saved tiny model folder: the trace it writes is
valid v1, read back by the tool line for line, with the model's routing, counts and times;
bad input is a one-line error (exit 2)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import jsonschema
import numpy as np
import pytest
import tiny_models as tm
import torch
import transformers

from sparseety_tui.cli.main import main
from sparseety_tui.cli.main import run as cli_run

ROOT = Path(__file__).resolve().parents[2]
SCHEMA = json.loads((ROOT / "docs" / "trace-format.schema.json").read_text())


@pytest.fixture(scope="module")
def folder(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("tiny-qwen3-moe")
    tm.save_folder("qwen3_moe", path)
    return path


@pytest.fixture
def prompts(tmp_path: Path) -> Path:
    path = tmp_path / "prompts.jsonl"
    path.write_text(
        '{"request_id": "a", "prompt": "the time of water"}\n'
        "\n"
        '{"request_id": 7, "prompt_token_ids": [1, 9, 12, 30], "max_new_tokens": 3}\n'
        '"how many people"\n'
    )
    return path


def _lines(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text().splitlines()]


def _summary(capsys: pytest.CaptureFixture[str], path: Path) -> dict[str, Any]:
    capsys.readouterr()
    assert cli_run(["summary", "--json", str(path)]) == 0
    doc: dict[str, Any] = json.loads(capsys.readouterr().out)
    return doc


def _valid(lines: list[dict[str, Any]]) -> None:
    validator = jsonschema.Draft202012Validator(SCHEMA)
    for line in lines:
        errors = [e.message for e in validator.iter_errors(line)]
        assert not errors, (line.get("type"), errors)


def test_record_writes_the_models_routing_as_valid_records(
    folder: Path, prompts: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "trace.jsonl"
    assert cli_run(["record", "--model", str(folder), "--prompts", str(prompts), "-o", str(out),
                    "--max-new-tokens", "5", "--no-progress"]) == 0  # fmt: skip
    lines = _lines(out)
    _valid(lines)
    head, *records = lines
    assert head["type"] == "meta" and head["moe_layers"] == [1, 2] and head["total_experts"] == 4
    five = int(transformers.__version__.split(".")[0]) >= 5  # 4.x: the gate of the block
    assert head["x_capture"]["router_classes"] == [
        "Qwen3MoeTopKRouter" if five else "Qwen3MoeSparseMoeBlock"
    ]
    assert [r["request_id"] for r in records] == ["a", "7", "rec-0003"]
    assert records[1]["prompt_token_ids"] == [1, 9, 12, 30]
    assert records[1]["sampling"]["max_tokens"] == 3
    for rec in records:
        sparse = rec["sparse"]
        rows = rec["prompt_tokens"] + rec["completion_tokens"] - 1
        assert len(sparse["routing"]) == len(sparse["routing_weights"]) == rows
        assert rec["received_ts"] <= rec["first_token_ts"] <= rec["finished_ts"]
        assert rec["latency_s"] == pytest.approx(rec["finished_ts"] - rec["received_ts"], abs=2e-6)
        # weights are written as the float32 the model used, shortest form
        for row in sparse["routing_weights"]:
            for ws in row:
                # (each is exactly the shortest decimal of a float32: approx would pass anything)
                assert all(float(str(np.float32(w))) == w for w in ws)
                assert sum(ws) == pytest.approx(1.0, abs=1e-6)  # norm_topk_prob
    doc = _summary(capsys, out)
    assert doc["files"][0]["lines"]["by_kind"] == {"trace.meta": 1, "trace.request": 3}
    rows = sum(r["prompt_tokens"] + r["completion_tokens"] - 1 for r in records)
    assert doc["experts"]["total"] == rows * 2 * 2


def test_record_is_the_same_routing_as_the_model_run_by_hand(
    folder: Path, prompts: Path, tmp_path: Path
) -> None:
    """The CLI loads the folder and generates greedily: same ids as generate() here."""
    from transformers import AutoModelForCausalLM

    out = tmp_path / "trace.jsonl"
    assert cli_run(["record", "--model", str(folder), "--prompts", str(prompts), "-o",
                    str(out), "--max-new-tokens", "4", "--no-progress"]) == 0  # fmt: skip
    rec = _lines(out)[2]
    model = AutoModelForCausalLM.from_pretrained(str(folder)).eval()
    ids = torch.tensor([rec["prompt_token_ids"]])
    with torch.no_grad():
        seq = model.generate(ids, attention_mask=torch.ones_like(ids), max_new_tokens=3,
                             do_sample=False, pad_token_id=0)  # fmt: skip
    assert seq[0, ids.shape[1] :].tolist() == rec["completion_token_ids"]


def test_record_stream_is_token_events_the_tool_merges(
    folder: Path, prompts: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "stream.jsonl"
    assert cli_run(["record", "--model", str(folder), "--prompts", str(prompts), "-o", str(out),
                    "--max-new-tokens", "4", "--stream", "--no-progress"]) == 0  # fmt: skip
    lines = _lines(out)
    _valid(lines)
    events = [e for e in lines if e.get("type") == "token" and e["request_id"] == "a"]
    final = next(e for e in lines if e.get("request_id") == "a" and e.get("state") == "finished")
    total = final["prompt_tokens"] + final["completion_tokens"]
    assert [e["pos"] for e in events] == list(range(total))
    assert [("experts" in e) for e in events] == [True] * (total - 1) + [False]
    # each token carries what it adds to the decoded text, so the pieces add up to it
    assert "".join(e["text"] for e in events if e["phase"] == "completion") == final["completion"]
    doc = _summary(capsys, out)
    by_kind = doc["files"][0]["lines"]["by_kind"]
    assert "unparsed" not in by_kind and by_kind["trace.token"] == sum(
        1 for e in lines if e.get("type") == "token"
    )
    rows = sum(1 for e in lines if "experts" in e)
    assert doc["experts"]["total"] == rows * 2 * 2


def _error(capsys: pytest.CaptureFixture[str], argv: list[str]) -> str:
    capsys.readouterr()
    with pytest.raises(SystemExit) as exit_:
        main(argv)
    assert exit_.value.code == 2
    err = capsys.readouterr().err.strip()
    assert "\n" not in err
    return err


def test_bad_input_is_one_line_exit_2(
    folder: Path, prompts: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = str(tmp_path / "o.jsonl")
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"prompt": "ok"}\n{"text": "no prompt"}\n')
    assert "bad.jsonl:2: no prompt" in _error(
        capsys, ["record", "--model", str(folder), "--prompts", str(bad), "-o", out]
    )
    assert "not a folder" in _error(
        capsys, ["record", "--model", str(tmp_path / "nope"), "--prompts", str(prompts), "-o", out]
    )
    assert "no config.json" in _error(
        capsys, ["record", "--model", str(tmp_path), "--prompts", str(prompts), "-o", out]
    )
    assert "overwrite" in _error(
        capsys, ["record", "--model", str(folder), "--prompts", str(prompts), "-o", str(prompts)]
    )
    assert "--dtype" in _error(
        capsys,
        [
            "record",
            "--model",
            str(folder),
            "--prompts",
            str(prompts),
            "-o",
            out,
            "--dtype",
            "int3",
        ],
    )


def test_an_unsupported_model_folder_is_refused_before_generating(
    tmp_path: Path, prompts: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    import transformers

    config = transformers.LlamaConfig(
        vocab_size=96, hidden_size=32, intermediate_size=64, num_hidden_layers=1,
        num_attention_heads=4, num_key_value_heads=2,
    )  # fmt: skip
    folder = tmp_path / "dense"
    transformers.AutoModelForCausalLM.from_config(config).save_pretrained(str(folder))
    tm_folder = tmp_path / "tok"
    tm.save_folder("mixtral", tm_folder)
    out = tmp_path / "o.jsonl"
    err = _error(capsys, ["record", "--model", str(folder), "--tokenizer", str(tm_folder),
                          "--prompts", str(prompts), "-o", str(out)])  # fmt: skip
    assert "LlamaForCausalLM" in err and transformers.__version__ in err
    assert not out.exists() or out.read_text() == ""


def test_a_folder_without_tokenizer_files_is_refused(
    folder: Path, tmp_path: Path, prompts: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """transformers 5 makes a tokenizer with an empty vocabulary from config.json alone;
    every prompt would then encode to no ids, and generate() fails deep inside torch."""
    bare = tmp_path / "bare"
    bare.mkdir()
    for name in ("config.json", "model.safetensors"):
        (bare / name).write_bytes((folder / name).read_bytes())
    out = tmp_path / "o.jsonl"
    err = _error(
        capsys, ["record", "--model", str(bare), "--prompts", str(prompts), "-o", str(out)]
    )
    assert "no tokenizer files" in err and "--tokenizer" in err
    assert not out.exists() or out.read_text() == ""
