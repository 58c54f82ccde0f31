"""``sparseety-tui record``: load a local model folder, generate for each prompt with the
routing hooks on, write trace format v1 line by line (a request's lines as soon as it is
done, so an interrupted run keeps the finished requests).

Nothing is downloaded: ``HF_HUB_OFFLINE`` / ``TRANSFORMERS_OFFLINE`` are set to 1 unless
the user set them, and the model is read with ``local_files_only=True`` from the folder.
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TextIO

from sparseety_tui.capture.errors import CaptureError
from sparseety_tui.capture.prompts import PromptSpec
from sparseety_tui.capture.trace_out import ModelInfo, meta, record, stream, top_k_of

DTYPES = ("auto", "float32", "bfloat16", "float16")


@dataclass(frozen=True)
class RecordOptions:
    model_dir: Path
    tokenizer: Path | None
    max_new_tokens: int
    device: str
    dtype: str
    temperature: float
    top_p: float
    seed: int
    stream: bool


def set_offline() -> None:
    """Offline unless the user's own environment says otherwise."""
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")


def _first_int(config: Any, *names: str) -> int | None:
    for name in names:
        value = getattr(config, name, None)
        if isinstance(value, int) and not isinstance(value, bool):
            return value
    return None


def model_info(model: Any, moe_layers: list[int], name: str, extra: dict[str, Any]) -> ModelInfo:
    config = model.config
    text = config.get_text_config() if hasattr(config, "get_text_config") else config
    ffn = getattr(text, "ffn_config", None)  # DBRX keeps the MoE shape there
    experts = _first_int(text, "num_local_experts", "num_experts", "n_routed_experts")
    if experts is None and ffn is not None:
        experts = _first_int(ffn, "moe_num_experts")
    return ModelInfo(
        name=name,
        moe_layers=moe_layers,
        num_layers=_first_int(text, "num_hidden_layers", "n_layers"),
        total_experts=experts,
        total_attention_heads=_first_int(text, "num_attention_heads", "n_heads"),
        extra=extra,
    )


def load(options: RecordOptions) -> tuple[Any, Any]:
    """(model, tokenizer) from the local folder; errors say what is missing."""
    set_offline()
    import importlib

    import torch

    # Any: transformers' own annotations are partial (untyped calls under mypy --strict).
    transformers: Any = importlib.import_module("transformers")
    transformers.utils.logging.disable_progress_bar()  # ours is the one bar on stderr
    folder = options.model_dir
    if not (folder / "config.json").is_file():
        raise CaptureError(f"{folder}: not a model folder (no config.json)")
    kwargs: dict[str, Any] = {"local_files_only": True}
    if options.dtype != "auto":
        key = "dtype" if _version_at_least(transformers.__version__, 4, 56) else "torch_dtype"
        kwargs[key] = getattr(torch, options.dtype)
    model = transformers.AutoModelForCausalLM.from_pretrained(str(folder), **kwargs).eval()
    model.to(options.device)
    source = options.tokenizer or folder
    if source.is_file():
        tokenizer = transformers.PreTrainedTokenizerFast(tokenizer_file=str(source))
    else:
        tokenizer = transformers.AutoTokenizer.from_pretrained(str(source), local_files_only=True)
    if len(tokenizer) <= 1:
        # transformers 5 builds a tokenizer with an empty vocabulary from config.json alone
        # (no tokenizer files): every prompt would encode to no ids.
        raise CaptureError(
            f"{source}: no tokenizer files (tokenizer.json, vocab...) there; "
            "pass --tokenizer FILE_OR_FOLDER (its text is needed for prompts and completions)"
        )
    return model, tokenizer


def _version_at_least(version: str, major: int, minor: int) -> bool:
    parts = version.split(".")
    return (int(parts[0]), int(parts[1])) >= (major, minor)


def versions() -> dict[str, str]:
    import torch
    import transformers

    return {"torch": str(torch.__version__), "transformers": str(transformers.__version__)}


def _sampling(options: RecordOptions, max_new: int) -> tuple[dict[str, Any], dict[str, Any]]:
    """(trace ``sampling`` object, generate() keyword arguments)."""
    shown: dict[str, Any] = {"max_tokens": max_new, "temperature": options.temperature}
    if options.temperature > 0:
        shown["top_p"] = options.top_p
        kwargs: dict[str, Any] = {
            "do_sample": True,
            "temperature": options.temperature,
            "top_p": options.top_p,
        }
    else:
        kwargs = {"do_sample": False}
    return shown, kwargs


def record_requests(
    model: Any,
    tokenizer: Any,
    specs: list[PromptSpec],
    options: RecordOptions,
    info_extra: dict[str, Any],
    on_done: Callable[[int, int], None] = lambda _n, _tokens: None,
) -> Iterator[dict[str, Any]]:
    """Yield the trace lines: the meta header, then each request's line(s) when it is done."""
    import torch

    from sparseety_tui.capture.generate import generate_one
    from sparseety_tui.capture.hooks import RoutingCapture

    torch.manual_seed(options.seed)
    pad = tokenizer.pad_token_id
    if pad is None:  # generate() wants one; a batch of one is never padded
        eos = model.generation_config.eos_token_id
        pad = eos[0] if isinstance(eos, list) else eos

    def decode(ids: list[int]) -> str:
        return str(tokenizer.decode(ids, skip_special_tokens=False))

    with RoutingCapture(model) as capture:
        info = model_info(
            model,
            capture.moe_layers,
            options.model_dir.name,
            {
                **info_extra,
                "model_path": str(options.model_dir.resolve()),
                "x_capture": {
                    "how": sorted({s.adapter.how for s in capture.sites}),
                    "router_classes": sorted({s.cls for s in capture.sites}),
                    "weights_sum": sorted({s.adapter.weights for s in capture.sites}),
                    **versions(),
                    "device": options.device,
                    "dtype": options.dtype,
                },
            },
        )
        first = True
        for n, spec in enumerate(specs, 1):
            ids = spec.prompt_token_ids
            if ids is None:
                ids = list(tokenizer(spec.prompt)["input_ids"])
            if not ids:
                raise CaptureError(f"request {spec.request_id}: the prompt has no tokens")
            max_new = spec.max_new_tokens or options.max_new_tokens
            shown, kwargs = _sampling(options, max_new)
            gen = generate_one(model, capture, ids, max_new, pad_token_id=pad, **kwargs)
            if first:
                yield meta(info, top_k_of(gen))
                first = False
            if options.stream:
                yield from stream(spec.request_id, spec.prompt, gen, info, decode, shown)
            else:
                yield record(spec.request_id, spec.prompt, gen, info, decode, shown)
            on_done(n, len(gen.prompt_ids) + len(gen.completion_ids))


def write_lines(lines: Iterator[dict[str, Any]], out: TextIO) -> int:
    count = 0
    for line in lines:
        out.write(json.dumps(line, ensure_ascii=False, allow_nan=False) + "\n")
        out.flush()
        count += 1
    return count


def run(options: RecordOptions, specs: list[PromptSpec], out: TextIO, progress: bool) -> int:
    """Record every prompt into ``out``; returns the number of lines written."""
    from rich.console import Console
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    model, tokenizer = load(options)
    extra = {"tokenizer_path": str((options.tokenizer or options.model_dir).resolve())}
    started = time.perf_counter()
    tokens = 0
    columns = (
        TextColumn("[bold]record[/]"),
        BarColumn(),
        MofNCompleteColumn(),
        TextColumn("{task.fields[rate]}"),
        TimeElapsedColumn(),
    )
    with Progress(*columns, console=Console(stderr=True), disable=not progress) as bar:
        task = bar.add_task("record", total=len(specs), rate="")

        def done(n: int, seq_tokens: int) -> None:
            nonlocal tokens
            tokens += seq_tokens
            rate = tokens / max(time.perf_counter() - started, 1e-9)
            bar.update(task, completed=n, rate=f"{rate:,.0f} tok/s")

        return write_lines(record_requests(model, tokenizer, specs, options, extra, done), out)
