"""Saved vLLM / SGLang responses that carry routed experts or timing -> trace format v1
records.

Input: JSON or JSON Lines files, each value a response, a list of responses (SGLang's
batch ``/generate``), or ``{"request": {...}, "response": {...}}`` as a proxy saves a pair
(the request gives what the response leaves out: the prompt text or ids, SGLang's
``routed_experts_start_len``). One record per response choice, with the response's id as
``request_id``: given together with the server's own log, the tool merges the two by id.

Rows and positions (docs/trace-format.md §5.2): a request of P prompt and C generated
tokens has routing for positions ``0 … P+C-2`` (the last sampled token is never fed
back). SGLang returns ``[start_len, P+C-1)``; vLLM documents ``[P]`` prompt rows plus
``[C]`` generated rows, whose last row is for a position the model never ran: it is left
out and counted (``x_routing_rows_dropped``), never shown as routing.

Timing (formats._timing): SGLang's ``meta_info`` and vLLM's per-request ``metrics`` object
give the record its queue, prefill, decode, inference, latency and TTFT seconds, with
``timing_from``; a response with timing and no routing is a record without ``sparse``.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from sparseety_tui.capture.routed import (
    RoutedError,
    decode_array,
    decode_flat,
    is_npy,
    reshape_flat,
)
from sparseety_tui.formats import meta_info_timing, metrics_timing

#: Timing fields a response can give a record (formats._timing), besides its routing.
_TIMING_KEYS = ("queue_s", "prefill_s", "decode_s", "inference_s", "latency_s", "ttft_s")


class ResponseError(ValueError):
    """One response that cannot be turned into routing rows (says why)."""


@dataclass(frozen=True)
class ConvertOptions:
    moe_layers: list[int] | None = None  # the model layer of each column (or the columns to keep)
    top_k: int | None = None  # to shape SGLang's flat arrays
    layers: int | None = None  # likewise
    total_experts: int | None = None


def _int(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) and value >= 0 else None


def _ids(value: Any) -> list[int] | None:
    if isinstance(value, list) and all(_int(v) is not None for v in value):
        return list(value)
    return None


def _label(arr: np.ndarray, options: ConvertOptions) -> tuple[np.ndarray, list[int] | None]:
    """Name the columns with ``--moe-layers``: as many as the array has, or (a buffer sized
    by all the model's layers) the columns to keep."""
    wanted = options.moe_layers
    if wanted is None or arr.shape[1] == 0:
        return arr, wanted
    if arr.shape[1] == len(wanted):
        return arr, wanted
    if max(wanted) < arr.shape[1]:
        return arr[:, wanted, :], wanted
    raise ResponseError(
        f"{arr.shape[1]} layer columns, and --moe-layers lists {len(wanted)} layers up to "
        f"{max(wanted)}"
    )


def _place(rows: int, prompt: int | None, completion: int | None) -> int:
    """Where a vLLM choice's rows start when no ``prompt_routed_experts`` came with it."""
    if prompt is not None and completion is not None:
        if rows in (prompt + completion - 1, prompt + completion):
            return 0
        if rows in (completion - 1, completion):
            return prompt
        raise ResponseError(
            f"{rows} routing rows fit neither the whole sequence ({prompt} + {completion}) "
            f"nor the generated tokens ({completion})"
        )
    raise ResponseError("routing rows without prompt and completion token counts to place them")


def _record(
    rid: str,
    arr: np.ndarray,
    start: int,
    source: str,
    fields: dict[str, Any],
    options: ConvertOptions,
) -> dict[str, Any]:
    prompt, completion = fields.get("prompt_tokens"), fields.get("completion_tokens")
    dropped = 0
    if prompt is not None and completion is not None:
        end = max(prompt + completion - 1, 0)  # positions the model ran
        keep = max(end - start, 0)
        dropped = max(len(arr) - keep, 0)
        arr = arr[:keep]
    arr, moe_layers = _label(arr, options)
    rec: dict[str, Any] = {"request_id": rid, "state": "finished"}
    rec.update({k: v for k, v in fields.items() if v is not None})
    sparse: dict[str, Any] = {}
    if arr.shape[2]:
        sparse["topk_experts"] = int(arr.shape[2])
    if options.total_experts is not None:
        sparse["total_experts"] = options.total_experts
    if moe_layers is not None:
        sparse["moe_layers"] = moe_layers
    sparse["routing_start"] = start
    sparse["routing"] = arr.tolist()
    rec["sparse"] = sparse
    rec["x_routing_source"] = source
    if dropped:
        rec["x_routing_rows_dropped"] = dropped
    return rec


def _timed(timing: dict[str, Any]) -> bool:
    """Whether a response's timing gives any figure (a record without routing is kept
    for it)."""
    return any(key in timing for key in _TIMING_KEYS)


def _plain(rid: str, fields: dict[str, Any]) -> dict[str, Any]:
    """A record of a response that carries timing but no routing."""
    rec: dict[str, Any] = {"request_id": rid, "state": "finished"}
    rec.update({k: v for k, v in fields.items() if v is not None})
    return rec


def _sglang_native(
    resp: dict[str, Any], req: dict[str, Any], options: ConvertOptions, ignored: dict[str, int]
) -> dict[str, Any]:
    info = resp["meta_info"]
    rid = info.get("id")
    if not isinstance(rid, str) or not rid:
        raise ResponseError("SGLang meta_info without an id")
    value = info.get("routed_experts")
    finish = info.get("finish_reason")
    fields = {
        "prompt": req.get("text") if isinstance(req.get("text"), str) else None,
        "completion": resp.get("text") if isinstance(resp.get("text"), str) else None,
        "prompt_token_ids": _ids(req.get("input_ids")),
        "completion_token_ids": _ids(resp.get("output_ids")),
        "prompt_tokens": _int(info.get("prompt_tokens")),
        "completion_tokens": _int(info.get("completion_tokens")),
        "cached_tokens": _int(info.get("cached_tokens")),
        "finish_reason": finish.get("type") if isinstance(finish, dict) else None,
    }
    timing: dict[str, Any] = {}
    meta_info_timing(info, timing, ignored)  # type: ignore[arg-type]  # a RequestPayload
    fields.update(timing)  # NaN/inf/negative: unknown (counted), never bad JSON
    if value is None:
        if _timed(timing):
            return _plain(rid, fields)
        raise ResponseError(
            f"{rid}: no meta_info.routed_experts (server flag --enable-return-routed-experts, request return_routed_experts)"
        )
    return _sglang_flat(rid, value, info.get("routed_experts_dtype", "int32"), req, fields, options)


def _sglang_flat(
    rid: str,
    value: Any,
    dtype: Any,
    req: dict[str, Any],
    fields: dict[str, Any],
    options: ConvertOptions,
) -> dict[str, Any]:
    start = _int(req.get("routed_experts_start_len")) or 0
    prompt, completion = fields.get("prompt_tokens"), fields.get("completion_tokens")
    rows = None if prompt is None or completion is None else prompt + completion - 1 - start
    try:
        arr = reshape_flat(decode_flat(value, str(dtype)), rows, options.top_k, options.layers)
    except RoutedError as exc:
        raise ResponseError(f"{rid}: {exc}") from None
    return _record(rid, arr, start, f"sglang base64 {dtype}", fields, options)


@dataclass(frozen=True)
class _OpenAIPrompt:
    """What an OpenAI-style response (or its request) says of the prompt, shared by its
    choices: its token ids and count, its cached tokens, and vLLM's prompt routing rows."""

    ids: list[int] | None
    count: int | None
    cached: int | None
    routing: np.ndarray | None


def _openai_prompt(
    rid: str, resp: dict[str, Any], req: dict[str, Any], usage: dict[str, Any]
) -> _OpenAIPrompt:
    ids = _ids(resp.get("prompt_token_ids")) or _ids(req.get("prompt_token_ids"))
    count = _int(usage.get("prompt_tokens"))
    if count is None and ids is not None:
        count = len(ids)
    details = usage.get("prompt_tokens_details")
    cached = _int(details.get("cached_tokens")) if isinstance(details, dict) else None
    routing = None
    if resp.get("prompt_routed_experts") is not None:
        try:
            routing = decode_array(resp["prompt_routed_experts"])
        except RoutedError as exc:
            raise ResponseError(f"{rid}: prompt_routed_experts: {exc}") from None
        if count is None:
            count = len(routing)
    return _OpenAIPrompt(ids, count, cached, routing)


def _openai(
    resp: dict[str, Any], req: dict[str, Any], options: ConvertOptions, ignored: dict[str, int]
) -> Iterator[dict[str, Any]]:
    rid = resp.get("id")
    if not isinstance(rid, str) or not rid:
        raise ResponseError("a response without an id")
    choices = resp.get("choices")
    if not isinstance(choices, list) or not choices:
        raise ResponseError(f"{rid}: no choices")
    usage: dict[str, Any] = resp["usage"] if isinstance(resp.get("usage"), dict) else {}
    prompt = _openai_prompt(rid, resp, req, usage)
    timing: dict[str, Any] = {}
    metrics = resp.get("metrics")
    if isinstance(metrics, dict) and len(choices) == 1:  # vLLM sends none for more
        metrics_timing(metrics, timing, ignored)  # type: ignore[arg-type]  # a RequestPayload
    for index, choice in enumerate(choices):
        if not isinstance(choice, dict):
            raise ResponseError(f"{rid}: choice {index} is not an object")
        name = rid if len(choices) == 1 else f"{rid}-{choice.get('index', index)}"
        fields = _choice_fields(resp, req, choice, prompt, usage if len(choices) == 1 else None)
        fields.update(timing)
        if _timed(timing) and not _has_routing(choice, prompt):
            yield _plain(name, fields)
            continue
        yield _choice_record(name, choice, req, fields, prompt, options)


def _choice_fields(
    resp: dict[str, Any],
    req: dict[str, Any],
    choice: dict[str, Any],
    prompt: _OpenAIPrompt,
    usage: dict[str, Any] | None,
) -> dict[str, Any]:
    """A choice's request fields. ``usage``: the response's, when it has only this choice
    (a count over several choices is no one choice's)."""
    token_ids = _ids(choice.get("token_ids"))
    completion_n = len(token_ids) if token_ids is not None else None
    if completion_n is None and usage is not None:
        completion_n = _int(usage.get("completion_tokens"))
    message = choice.get("message")
    text = choice.get("text") if isinstance(choice.get("text"), str) else None
    if text is None and isinstance(message, dict) and isinstance(message.get("content"), str):
        text = message["content"]
    prompt_text = req.get("prompt") if isinstance(req.get("prompt"), str) else None
    return {
        "model": resp.get("model") if isinstance(resp.get("model"), str) else None,
        "finish_reason": choice.get("finish_reason")
        if isinstance(choice.get("finish_reason"), str)
        else None,
        "prompt": prompt_text,
        "completion": text,
        "prompt_token_ids": prompt.ids,
        "completion_token_ids": token_ids,
        "prompt_tokens": prompt.count,
        "completion_tokens": completion_n,
        "cached_tokens": prompt.cached,
    }


def _has_routing(choice: dict[str, Any], prompt: _OpenAIPrompt) -> bool:
    ext = choice.get("sgl_ext")
    in_ext = isinstance(ext, dict) and ext.get("routed_experts") is not None
    return in_ext or choice.get("routed_experts") is not None or prompt.routing is not None


def _choice_record(
    name: str,
    choice: dict[str, Any],
    req: dict[str, Any],
    fields: dict[str, Any],
    prompt: _OpenAIPrompt,
    options: ConvertOptions,
) -> dict[str, Any]:
    """A choice's record: its routing (SGLang's raw int32, or vLLM's .npy or nested
    lists after the prompt's rows) placed at the positions it covers."""
    ext: dict[str, Any] = choice["sgl_ext"] if isinstance(choice.get("sgl_ext"), dict) else {}
    value = ext.get("routed_experts", choice.get("routed_experts"))
    if value is None and prompt.routing is None:
        raise ResponseError(
            f"{name}: no routed_experts (server flag --enable-return-routed-experts)"
        )
    if isinstance(value, str) and not is_npy(value):  # SGLang's raw int32
        dtype = ext.get("routed_experts_dtype", "int32")
        return _sglang_flat(name, value, dtype, req, fields, options)
    try:
        arr = decode_array(value) if value is not None else np.zeros((0, 0, 0), np.int64)
    except RoutedError as exc:
        raise ResponseError(f"{name}: routed_experts: {exc}") from None
    source = "vllm .npy" if isinstance(value, str) else "vllm nested lists"
    if prompt.routing is not None:
        if len(arr) and prompt.routing.shape[1:] != arr.shape[1:]:
            raise ResponseError(f"{name}: prompt and completion routing shapes differ")
        arr = np.concatenate([prompt.routing, arr]) if len(arr) else prompt.routing
        start = 0
    else:
        start = _place(len(arr), fields["prompt_tokens"], fields["completion_tokens"])
    return _record(name, arr, start, source, fields, options)


def convert_value(
    obj: Any, options: ConvertOptions, ignored: dict[str, int] | None = None
) -> Iterator[dict[str, Any]]:
    """The records of one JSON value (a response, a list, or a request/response pair).
    Timing values left unknown (no number, negative) are counted in ``ignored``."""
    counts: dict[str, int] = {} if ignored is None else ignored
    req: Any = {}
    if isinstance(obj, dict) and isinstance(obj.get("response"), (dict, list)):
        req = obj.get("request") if isinstance(obj.get("request"), dict) else {}
        obj = obj["response"]
    responses = obj if isinstance(obj, list) else [obj]
    for i, resp in enumerate(responses):
        if not isinstance(resp, dict):
            raise ResponseError(f"a JSON {type(resp).__name__}, not a response object")
        one = _nth_request(req, i, len(responses))
        if isinstance(resp.get("meta_info"), dict):
            yield _sglang_native(resp, one, options, counts)
        elif "choices" in resp:
            yield from _openai(resp, one, options, counts)
        else:
            raise ResponseError(
                "neither an OpenAI-style response (choices) nor SGLang's (meta_info)"
            )


def _nth_request(req: dict[str, Any], i: int, n: int) -> dict[str, Any]:
    """The request of the i-th response of a batch: list-valued fields give one each."""
    if n == 1:
        return req
    out: dict[str, Any] = {}
    for key, value in req.items():
        batched = isinstance(value, list) and bool(value)
        if batched and (
            key in ("text", "prompt") or (key.endswith("ids") and isinstance(value[0], list))
        ):
            out[key] = value[i] if i < len(value) else None
        else:
            out[key] = value
    return out


def read_values(path: Path) -> Iterator[tuple[str, Any]]:
    """(where, JSON value) of a file: one value for a whole-file JSON, else one a line."""
    text = path.read_text(encoding="utf-8")
    stripped = text.strip()
    if stripped.startswith(("{", "[")) and "\n" in stripped:
        try:
            yield str(path), json.loads(stripped)
            return
        except ValueError:
            pass  # JSON Lines
    for number, line in enumerate(text.splitlines(), 1):
        if line.strip():
            try:
                yield f"{path}:{number}", json.loads(line)
            except ValueError as exc:
                yield f"{path}:{number}", ResponseError(f"invalid JSON: {exc}")
