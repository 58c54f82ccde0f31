"""Where a request's time went, as the server itself reported it in what it returned or
logged: SGLang's ``meta_info`` (a ``Finish:`` line, a JSON request log's
``request.finished``, a saved ``/generate`` response) and vLLM's per-request ``metrics``
object (``--enable-per-request-metrics``), mapped onto the payload's timing fields
(``events.RequestPayload``: seconds, and ``timing_from`` naming the source).

Only what means the same as the field is mapped (docs/formats.md, "Timing each format
gives"). A value that is not a finite number, or is negative, is left unknown and counted
in the parser's ``ignored``; ``None`` (the server's own "not measured") is simply absent.

SGLang (``python/sglang/srt/observability/req_time_stats.py`` and the tokenizer manager):
``e2e_latency`` is arrival to finish at the tokenizer; ``queue_time`` is the scheduler's
``forward_entry_time - wait_queue_entry_time`` (waiting queue to first forward batch);
``forward_entry_time`` and ``prefill_finished_time`` are those two moments in unix
seconds (their difference is the prefill); ``inference_time`` is finish minus forward
entry; ``decode_throughput`` is ``completion_tokens`` over finish minus first token, so
the decode time is the one divided by the other, and the time to the first token is the
latency minus it; ``total_retractions`` counts SGLang's preemptions (a retracted request
goes back to the waiting queue and is recomputed). SGLang builds that rely on the
scheduler's times crossing two processes send ``queue_time: 0.0`` and an
``inference_time`` since the scheduler's clock origin when they did not arrive: a wait
between two clock readings is never exactly zero, and no part of a request is longer than
the request, so both are left unknown (and counted).

vLLM (``build_per_request_timing_metrics``): ``queue_time_ms`` is scheduled minus queued;
``time_to_first_token_ms`` is first token minus *scheduled* (the prefill, not the time to
first token from arrival, whatever its name says); ``generation_time_ms`` is last token
minus first token (the decode); their sum is vLLM's inference time.
"""

from __future__ import annotations

from typing import Any

from sparseety_tui.events import RequestPayload, TimingSource
from sparseety_tui.formats._base import note_ignored
from sparseety_tui.formats._pylit import as_float, as_int
from sparseety_tui.formats._timestamps import epoch_seconds

NOT_A_NUMBER = "not a finite number"
NEGATIVE = "negative"
ZERO_QUEUE = "exactly 0.0: the scheduler's times did not reach the server's front end"
LONGER_THAN_REQUEST = "longer than the request's e2e_latency"

#: The payload fields ``timing_from`` speaks for.
TIMING_FIELDS = (
    "queue_s",
    "prefill_s",
    "decode_s",
    "inference_s",
    "latency_s",
    "ttft_s",
    "preemptions",
)


def _seconds(
    obj: dict[str, Any], key: str, ignored: dict[str, int], where: str, scale: float = 1.0
) -> float | None:
    """``obj[key]`` as a duration in seconds (``scale`` from its unit); None when absent
    or ``None``, and None (counted in ``ignored``) when it is no number or negative."""
    value = obj.get(key)
    if value is None:
        return None
    number = as_float(value)
    if number is None:
        note_ignored(ignored, f"{where}.{key}", NOT_A_NUMBER)
        return None
    if number < 0:
        note_ignored(ignored, f"{where}.{key}", NEGATIVE)
        return None
    return number * scale


def _count(
    obj: dict[str, Any], keys: tuple[str, ...], ignored: dict[str, int], where: str
) -> int | None:
    for key in keys:
        value = obj.get(key)
        if value is None:
            continue
        number = as_int(value)
        if number is None or number < 0:
            note_ignored(ignored, f"{where}.{key}", NOT_A_NUMBER if number is None else NEGATIVE)
            return None
        return number
    return None


def _mark(payload: RequestPayload, source: TimingSource) -> None:
    if any(key in payload for key in TIMING_FIELDS):
        payload["timing_from"] = source.value


def meta_info_timing(
    meta: dict[str, Any], payload: RequestPayload, ignored: dict[str, int]
) -> None:
    """SGLang ``meta_info`` -> latency, queue, prefill, decode, inference, TTFT and
    preemptions of ``payload`` (only those it gives), ``timing_from: "meta_info"``."""
    where = "meta_info"
    latency = _seconds(meta, "e2e_latency", ignored, where)
    if latency is not None:
        payload["latency_s"] = latency
    queue = _seconds(meta, "queue_time", ignored, where)
    if queue == 0.0:
        note_ignored(ignored, f"{where}.queue_time", ZERO_QUEUE)
    elif queue is not None:
        payload["queue_s"] = queue
    entry = epoch_or_none(meta.get("forward_entry_time"))
    prefilled = epoch_or_none(meta.get("prefill_finished_time"))
    if entry is not None and prefilled is not None and prefilled >= entry:
        payload["prefill_s"] = prefilled - entry
    inference = _seconds(meta, "inference_time", ignored, where)
    if inference is not None:
        if latency is not None and inference > latency:
            note_ignored(ignored, f"{where}.inference_time", LONGER_THAN_REQUEST)
        else:
            payload["inference_s"] = inference
    _decode_and_ttft(meta, payload, latency, ignored)
    retractions = _count(meta, ("total_retractions", "num_retractions"), ignored, where)
    if retractions is not None:
        payload["preemptions"] = retractions
    _mark(payload, TimingSource.META_INFO)


def _decode_and_ttft(
    meta: dict[str, Any], payload: RequestPayload, latency: float | None, ignored: dict[str, int]
) -> None:
    """Decode time from ``completion_tokens / decode_throughput`` (what SGLang divided),
    and the time to the first token as the latency less it."""
    throughput = _seconds(meta, "decode_throughput", ignored, "meta_info")
    tokens = as_int(meta.get("completion_tokens"))
    if not throughput or tokens is None or tokens <= 0:
        return
    decode = tokens / throughput
    if latency is not None and decode > latency:
        note_ignored(ignored, "meta_info.decode_throughput", LONGER_THAN_REQUEST)
        return
    payload["decode_s"] = decode
    if latency is not None and "ttft_s" not in payload:
        payload["ttft_s"] = latency - decode


def epoch_or_none(value: Any) -> float | None:
    """A unix time in seconds (any unit, formats._timestamps) or None."""
    number = as_float(value)
    return None if number is None else epoch_seconds(number)


def metrics_timing(
    metrics: dict[str, Any], payload: RequestPayload, ignored: dict[str, int]
) -> None:
    """vLLM's per-request ``metrics`` object (milliseconds) -> queue, prefill, decode and
    inference seconds of ``payload``, ``timing_from: "response"``."""
    where = "metrics"
    ms = 0.001
    queue = _seconds(metrics, "queue_time_ms", ignored, where, ms)
    prefill = _seconds(metrics, "time_to_first_token_ms", ignored, where, ms)
    decode = _seconds(metrics, "generation_time_ms", ignored, where, ms)
    if queue is not None:
        payload["queue_s"] = queue
    if prefill is not None:
        payload["prefill_s"] = prefill
    if decode is not None:
        payload["decode_s"] = decode
    if prefill is not None and decode is not None:
        payload["inference_s"] = prefill + decode
    _mark(payload, TimingSource.RESPONSE)
