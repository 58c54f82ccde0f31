"""API response bodies printed into logs: OpenAI ``usage`` and SGLang ``meta_info`` read
into request payloads, with their per-token routing decoded by ``formats/_routing.py``."""

from __future__ import annotations

from typing import Any

import orjson

from sparseety_tui.events import RequestPayload
from sparseety_tui.formats._pylit import LiteralError, as_float, as_int, parse_literal
from sparseety_tui.formats._routing import (
    RoutingDecodeError,
    RoutingOptions,
    decode_routed_experts,
)
from sparseety_tui.formats._timing import epoch_or_none, meta_info_timing, metrics_timing

#: Body lines larger than this are not parsed (kind still ``api.response``).
MAX_BODY_CHARS = 32 * 1024 * 1024


def _int_field(obj: dict[str, Any], key: str) -> int | None:
    return as_int(obj.get(key))


def finish_reason_of(value: Any) -> str | None:
    """``{'type': 'length', 'length': 128}`` / ``'stop'`` -> ``"length"`` / ``"stop"``."""
    if isinstance(value, dict):
        kind = value.get("type")
        return kind if isinstance(kind, str) else None
    if isinstance(value, str) and value:
        return value
    return None


def _attach_routing(
    payload: RequestPayload, blob: Any, opts: RoutingOptions, dtype: Any = None
) -> None:
    if not isinstance(blob, str) or not blob:
        return
    prompt = payload.get("prompt_tokens")
    completion = payload.get("completion_tokens")
    num_tokens = prompt + completion - 1 if prompt is not None and completion is not None else None
    rid = payload.get("request_id", "?")
    try:
        result = decode_routed_experts(
            blob,
            num_layers=opts.num_layers,
            top_k=opts.top_k,
            num_tokens=num_tokens,
            dtype=dtype if isinstance(dtype, str) else None,
        )
    except RoutingDecodeError as exc:
        opts.note(f"request {rid}: routed_experts not decoded: {exc}")
        return
    if result.note:
        opts.note(f"request {rid}: {result.note}")
    sparse = result.sparse()
    if sparse:
        payload["sparse"] = sparse


def request_from_meta_info(
    meta: dict[str, Any],
    opts: RoutingOptions,
    payload: RequestPayload | None = None,
    ignored: dict[str, int] | None = None,
) -> RequestPayload:
    """Map an SGLang ``meta_info`` dict onto a request payload (only fields present);
    values left unknown are counted in ``ignored`` (a parser's, formats._base)."""
    out: RequestPayload = payload if payload is not None else {}
    rid = meta.get("id")
    if isinstance(rid, str) and rid:
        out.setdefault("request_id", rid)
    for key in ("prompt_tokens", "completion_tokens", "cached_tokens"):
        value = _int_field(meta, key)
        if value is not None:
            out[key] = value
    for key in ("ttft", "time_to_first_token", "first_token_latency"):
        ttft = as_float(meta.get(key))
        if ttft is not None:
            out["ttft_s"] = ttft
            break
    # ``request_finished_ts`` (SGLang 2026) is the end; ``response_sent_to_client_ts``, the
    # older field, is when a response was sent, which for a stream is its FIRST chunk (real:
    # sglang #25887, 2.8 s after arrival for a request that ran 1,202 s), so it is the end
    # only when nothing better is logged.
    for key in ("request_finished_ts", "response_sent_to_client_ts"):
        finished = epoch_or_none(meta.get(key))
        if finished is not None:
            out["finished_ts"] = finished
            break
    received = epoch_or_none(meta.get("request_received_ts"))
    if received is not None:
        out["received_ts"] = received
    if "finish_reason" in meta:
        reason = finish_reason_of(meta["finish_reason"])
        if reason is not None:
            out["finish_reason"] = reason
            out["state"] = "aborted" if reason == "abort" else "finished"
    meta_info_timing(meta, out, {} if ignored is None else ignored)
    _attach_routing(out, meta.get("routed_experts"), opts, meta.get("routed_experts_dtype"))
    return out


def request_from_openai(
    body: dict[str, Any], opts: RoutingOptions, ignored: dict[str, int] | None = None
) -> RequestPayload | None:
    """An OpenAI completion/chat body with an ``id`` -> request payload; else None. vLLM's
    per-request ``metrics`` object gives its timing when the body has one choice (the
    server sends none for more)."""
    rid = body.get("id")
    if not isinstance(rid, str) or not rid:
        return None
    out: RequestPayload = {"request_id": rid}
    model = body.get("model")
    if isinstance(model, str):
        out["model"] = model
    usage = body.get("usage")
    if isinstance(usage, dict):
        _usage_into(usage, out)
    choices = body.get("choices")
    if isinstance(choices, list) and choices and isinstance(choices[0], dict):
        choice = choices[0]
        reason = finish_reason_of(choice.get("finish_reason"))
        if reason is not None:
            out["finish_reason"] = reason
            out["state"] = "aborted" if reason == "abort" else "finished"
        message = choice.get("message")
        if isinstance(message, dict) and isinstance(message.get("content"), str):
            out["completion"] = message["content"]
        elif isinstance(choice.get("text"), str):
            out["completion"] = choice["text"]
        ids = choice.get("token_ids")
        if isinstance(ids, list) and all(isinstance(i, int) for i in ids):
            out["completion_token_ids"] = ids
        blob = choice.get("routed_experts")
        ext = choice.get("sgl_ext")
        if blob is None and isinstance(ext, dict):
            blob = ext.get("routed_experts")
        _attach_routing(out, blob, opts)
    metrics = body.get("metrics")
    if isinstance(metrics, dict) and isinstance(choices, list) and len(choices) == 1:
        metrics_timing(metrics, out, {} if ignored is None else ignored)
    meta = body.get("meta_info")
    if isinstance(meta, dict):
        request_from_meta_info(meta, opts, out, ignored)
    return out


def _usage_into(usage: dict[str, Any], out: RequestPayload) -> None:
    for key in ("prompt_tokens", "completion_tokens"):
        value = _int_field(usage, key)
        if value is not None:
            out[key] = value
    details = usage.get("prompt_tokens_details")
    if isinstance(details, dict):
        cached = _int_field(details, "cached_tokens")
        if cached is not None:
            out["cached_tokens"] = cached


def _load_body(text: str) -> Any:
    """JSON (orjson) first, then the tolerant literal parser; trailing junk after the last
    closing bracket (a shell prompt's ``%``) is ignored."""
    stripped = text.strip()
    last = max(stripped.rfind("}"), stripped.rfind(")"), stripped.rfind("]"))
    if last < 0:
        raise LiteralError("no body")
    candidate = stripped[: last + 1]
    if candidate[:1] in "{[":
        try:
            return orjson.loads(candidate)
        except orjson.JSONDecodeError:
            pass
    return parse_literal(candidate)


def read_response_body(
    text: str, opts: RoutingOptions, ignored: dict[str, int] | None = None
) -> tuple[bool, list[RequestPayload]]:
    """Recognise a response body printed into a log line and turn it into requests.

    Returns (recognised, payloads). Recognised bodies without a request id (a bare
    ``usage`` object, ``CompletionUsage(...)``) give no payload: counts without an id
    cannot be joined to a request.
    """
    if len(text) > MAX_BODY_CHARS:
        return False, []
    head = text.lstrip()[:1]
    if head not in ("{", "[") and not text.lstrip().startswith(("CompletionUsage(", "Usage(")):
        return False, []
    if not any(k in text for k in ("meta_info", "usage", "prompt_tokens", "routed_experts")):
        return False, []
    try:
        body = _load_body(text)
    except (LiteralError, RecursionError, ValueError):
        return False, []
    bodies = body if isinstance(body, list) else [body]
    recognised = False
    payloads: list[RequestPayload] = []
    for item in bodies:
        if not isinstance(item, dict):
            continue
        meta = item.get("meta_info")
        if isinstance(meta, dict):
            recognised = True
            payload = request_from_meta_info(meta, opts, None, ignored)
            text_out = item.get("text")
            if isinstance(text_out, str):
                payload["completion"] = text_out
            if "request_id" in payload:
                payloads.append(payload)
            continue
        if "usage" in item or "choices" in item:
            recognised = True
            payload2 = request_from_openai(item, opts, ignored)
            if payload2 is not None:
                payloads.append(payload2)
            continue
        if "prompt_tokens" in item or item.get("__class__") in ("CompletionUsage", "Usage"):
            recognised = True  # a bare usage object: no id to attach it to
    return recognised, payloads
