"""Trace format v1 lines (docs/trace-format.md) from captured requests (torch-free).

Two forms, as the format allows: one request record per request (``records``), or a
stream (``stream``): a received record, one ``"type": "token"`` event per position, and a
final record. Both start with one meta header (``meta``). Router weights are written as
the shortest decimal that reads back as the same float32 (``0.5227``, not
``0.5226999521255493``): exact, and half the bytes.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

Decode = Callable[[list[int]], str]


@dataclass(frozen=True)
class ModelInfo:
    """What the meta line and every record say about the model."""

    name: str
    moe_layers: list[int]
    num_layers: int | None
    total_experts: int | None
    total_attention_heads: int | None
    extra: dict[str, Any]  # x_ fields of the meta line (capture method, versions)


def float32_exact(rows: Sequence[Sequence[Sequence[float]]]) -> list[list[list[float]]]:
    """Each weight as the shortest decimal of its float32 value."""
    arr = np.asarray(rows, dtype=np.float32)
    return [[[float(str(v)) for v in k] for k in row] for row in arr]


def token_texts(decode: Decode, ids: list[int]) -> list[str]:
    """One display string per token, as the format wants (§6): each token carries the
    characters it completes; a token that ends inside a UTF-8 character carries "" and
    the next one the character. Found by decoding growing prefixes, which works for any
    tokenizer whose decoding of a prefix is a prefix of the decoding of the whole."""
    texts: list[str] = []
    done = ""
    for n in range(1, len(ids) + 1):
        text = decode(ids[:n])
        if text.endswith("\ufffd") and n < len(ids):
            texts.append("")  # an incomplete character: wait for the next token
            continue
        if text.startswith(done):
            texts.append(text[len(done) :])
            done = text
        else:  # the tokenizer rewrote the prefix (cleanup of spaces): per-token text
            texts.append(decode([ids[n - 1]]))
            done = text
    return texts


def meta(info: ModelInfo, top_k: int | None) -> dict[str, Any]:
    line: dict[str, Any] = {"type": "meta", "model": info.name, "moe_layers": info.moe_layers}
    for key, value in (
        ("num_layers", info.num_layers),
        ("total_experts", info.total_experts),
        ("topk_experts", top_k),
        ("total_attention_heads", info.total_attention_heads),
    ):
        if value is not None:
            line[key] = value
    line.update(info.extra)
    return line


def _shape(info: ModelInfo, top_k: int | None) -> dict[str, Any]:
    sparse: dict[str, Any] = {}
    if top_k is not None:
        sparse["topk_experts"] = top_k
    if info.total_experts is not None:
        sparse["total_experts"] = info.total_experts
    if info.total_attention_heads is not None:
        sparse["total_attention_heads"] = info.total_attention_heads
    return sparse


def _ts(value: float | None) -> float | None:
    return None if value is None else round(value, 6)


def _timing(gen: Any) -> dict[str, Any]:
    out: dict[str, Any] = {
        "received_ts": _ts(gen.received_ts),
        "finished_ts": _ts(gen.finished_ts),
        "ts": _ts(gen.finished_ts),
        "latency_s": round(gen.finished_ts - gen.received_ts, 6),
    }
    if gen.first_token_ts is not None:
        out["first_token_ts"] = _ts(gen.first_token_ts)
        out["ttft_s"] = round(gen.first_token_ts - gen.received_ts, 6)
    return out


def _finished(gen: Any, decode: Decode) -> dict[str, Any]:
    """What a request's last line says in both forms: state, times, counts, completion."""
    return {
        "state": "finished",
        "finish_reason": gen.finish_reason,
        **_timing(gen),
        "prompt_tokens": len(gen.prompt_ids),
        "completion_tokens": len(gen.completion_ids),
        "completion": decode(gen.completion_ids),
    }


def top_k_of(gen: Any) -> int | None:
    rows = gen.routing.indices
    return len(rows[0][0]) if rows and rows[0] else None


def record(
    request_id: str,
    prompt: str | None,
    gen: Any,
    info: ModelInfo,
    decode: Decode,
    sampling: dict[str, Any],
) -> dict[str, Any]:
    """One request record with everything: text, ids, counts, times, routing."""
    rec: dict[str, Any] = {
        "request_id": request_id,
        "model": info.name,
        **_finished(gen, decode),
        "prompt": prompt if prompt is not None else decode(gen.prompt_ids),
        "prompt_token_ids": gen.prompt_ids,
        "completion_token_ids": gen.completion_ids,
        "sampling": sampling,
    }
    sparse = _shape(info, top_k_of(gen))
    sparse.update(
        num_layers=info.num_layers,
        moe_layers=gen.routing.moe_layers,
        routing_start=0,
        routing=gen.routing.indices,
        routing_weights=float32_exact(gen.routing.weights),
    )
    if info.num_layers is None:
        del sparse["num_layers"]
    rec["sparse"] = sparse
    return rec


def stream(
    request_id: str,
    prompt: str | None,
    gen: Any,
    info: ModelInfo,
    decode: Decode,
    sampling: dict[str, Any],
) -> list[dict[str, Any]]:
    """The same request as a stream: received record, token events, final record."""
    text = prompt if prompt is not None else decode(gen.prompt_ids)
    lines: list[dict[str, Any]] = [
        {
            "request_id": request_id,
            "state": "received",
            "ts": _ts(gen.received_ts),
            "model": info.name,
            "prompt": text,
            "sampling": sampling,
        }
    ]
    weights = float32_exact(gen.routing.weights)
    ids = gen.prompt_ids + gen.completion_ids
    texts = token_texts(decode, gen.prompt_ids) + token_texts(decode, gen.completion_ids)
    p = len(gen.prompt_ids)
    for pos, token_id in enumerate(ids):
        event: dict[str, Any] = {
            "type": "token",
            "request_id": request_id,
            "pos": pos,
            "phase": "prompt" if pos < p else "completion",
            "token_id": token_id,
            "text": texts[pos],
            # A prompt position is known when prefill ends, with the first token.
            "ts": _ts(gen.token_ts[max(pos - p, 0)] if gen.token_ts else gen.finished_ts),
        }
        if pos < len(gen.routing.indices):  # the last token was never fed back
            event["experts"] = gen.routing.indices[pos]
            event["weights"] = weights[pos]
        lines.append(event)
    lines.append(
        {"request_id": request_id, **_finished(gen, decode), "sparse": _shape(info, top_k_of(gen))}
    )
    return lines
