"""One OTLP/JSON span as a request update (``RequestPayload``).

vLLM sends one ``llm_request`` span per request (``vllm/tracing.py`` ``SpanAttributes``;
recent SGLang sets the same ``gen_ai.*`` names on its request's root span, which also
carries ``rid``). The attribute names read, old and new GenAI spellings alike, are the
tables below; docs/formats.md has them as a table too.
"""

from __future__ import annotations

import re
from typing import Any, Literal

from sparseety_tui.events import RequestPayload, RequestState, SamplingInfo, TimingSource
from sparseety_tui.formats._base import note_ignored
from sparseety_tui.formats._timestamps import OUT_OF_RANGE, known_time
from sparseety_tui.formats.otlp._values import Attributes, integer_text

#: The request's id: the API id (vLLM, recent SGLang), else SGLang's ``rid``.
REQUEST_ID_KEYS = ("gen_ai.request.id", "rid")

TimingKey = Literal["queue_s", "ttft_s", "latency_s", "prefill_s", "decode_s", "inference_s"]
#: Seconds the server measured, by attribute.
TIMING: tuple[tuple[str, TimingKey], ...] = (
    ("gen_ai.latency.time_in_queue", "queue_s"),
    ("gen_ai.latency.time_to_first_token", "ttft_s"),
    ("gen_ai.latency.e2e", "latency_s"),
    ("gen_ai.latency.time_in_model_prefill", "prefill_s"),
    ("gen_ai.latency.time_in_model_decode", "decode_s"),
    ("gen_ai.latency.time_in_model_inference", "inference_s"),
)

CountKey = Literal["prompt_tokens", "completion_tokens", "cached_tokens"]
#: Token counts: the first attribute of each row that is present is read (the older
#: GenAI name first, as vLLM and SGLang send it; then the newer one).
COUNTS: tuple[tuple[CountKey, tuple[str, ...]], ...] = (
    ("prompt_tokens", ("gen_ai.usage.prompt_tokens", "gen_ai.usage.input_tokens")),
    ("completion_tokens", ("gen_ai.usage.completion_tokens", "gen_ai.usage.output_tokens")),
    ("cached_tokens", ("gen_ai.usage.cache_read.input_tokens", "gen_ai.usage.cached_tokens")),
)
MODEL_KEYS = ("gen_ai.response.model", "gen_ai.request.model")
FINISH_REASONS = "gen_ai.response.finish_reasons"

#: Journey events (vLLM's span events): how many times the request was preempted so far,
#: and its terminal status (``stopped``, ``length``, ``aborted``, ``ignored``, ``error``).
PREEMPTIONS = "num_preemptions"
FINISH_STATUS = "finish.status"
_STATUS_STATE = {"aborted": RequestState.ABORTED.value, "error": RequestState.FAILED.value}
#: The span status codes of OTLP (``Status.StatusCode``): 2 is ERROR.
_STATUS_ERROR = (2, "2", "STATUS_CODE_ERROR")

#: W3C ids: a trace id is 32 hex digits, a span id 16 (OTLP/JSON: any case).
_HEX_IDS = {32: re.compile(r"[0-9a-fA-F]{32}"), 16: re.compile(r"[0-9a-fA-F]{16}")}
#: How many nanoseconds a span time may have (a uint64).
_NANOS_DIGITS = 20


def request_id(attrs: Attributes) -> str | None:
    """The id of the request a span names, None when it names none."""
    for key in REQUEST_ID_KEYS:
        if key in attrs:
            rid = attrs.ident(key)
            if rid is not None:
                return rid
    return None


def hex_id(value: object, digits: int) -> str | None:
    """A W3C id of ``digits`` hex digits as lowercase hex; None for anything else (an id
    of all zeros is invalid too)."""
    if type(value) is str and _HEX_IDS[digits].fullmatch(value) and value.strip("0"):
        return value.lower()
    return None


def _span_ids(payload: RequestPayload, span: dict[str, Any], ignored: dict[str, int]) -> None:
    """The span's W3C ids; an id of the wrong form is counted and left unknown."""
    for key, field, digits in (("traceId", "trace_id", 32), ("spanId", "span_id", 16)):
        value = span.get(key)
        if value is None or value == "":
            continue
        hexed = hex_id(value, digits)
        if hexed is None:
            note_ignored(ignored, key, f"not {digits} hex digits")
        else:
            payload[field] = hexed  # type: ignore[literal-required]


def _seconds_of(nanos: object, field: str, ignored: dict[str, int]) -> float | None:
    """Unix seconds of a ``...UnixNano`` field; 0 or absent (unset) is unknown."""
    if nanos is None:
        return None
    number = integer_text(nanos) if type(nanos) is not str or len(nanos) <= _NANOS_DIGITS else None
    if number is None:
        note_ignored(ignored, field, "not an integer")
        return None
    if number == 0:
        return None
    seconds = number / 1e9
    if not known_time(seconds):
        note_ignored(ignored, field, OUT_OF_RANGE)
        return None
    return seconds


def _sampling(attrs: Attributes) -> SamplingInfo:
    sampling: SamplingInfo = {}
    max_tokens = attrs.count("gen_ai.request.max_tokens")
    if max_tokens is not None:
        sampling["max_tokens"] = max_tokens
    temperature = attrs.amount("gen_ai.request.temperature")
    if temperature is not None:
        sampling["temperature"] = temperature
    top_p = attrs.amount("gen_ai.request.top_p")
    if top_p is not None:
        sampling["top_p"] = top_p
    n = attrs.count("gen_ai.request.n")
    if n is not None:
        sampling["n"] = n
    return sampling


def _read_attributes(payload: RequestPayload, attrs: Attributes) -> None:
    for key, timing in TIMING:
        seconds = attrs.amount(key)
        if seconds is not None:
            payload[timing] = seconds
    for counted, names in COUNTS:
        for name in names:
            count = attrs.count(name)
            if count is not None:
                payload[counted] = count
                break
    sampling = _sampling(attrs)
    if sampling:
        payload["sampling"] = sampling
    for key in MODEL_KEYS:
        model = attrs.text(key)
        if model:
            payload["model"] = model
            break
    reasons = attrs.texts(FINISH_REASONS)
    if reasons:
        payload["finish_reason"] = reasons[0]


def _journey(payload: RequestPayload, events: object, ignored: dict[str, int]) -> None:
    """Preemptions and a terminal status from the span's events."""
    if type(events) is not list:
        if events is not None:
            note_ignored(ignored, "events", "not a list")
        return
    preemptions = -1
    for event in events:
        if type(event) is not dict:
            note_ignored(ignored, "events", "not an object")
            continue
        raw = event.get("attributes")
        if raw is None:
            continue
        attrs = Attributes(raw, ignored)
        if PREEMPTIONS in attrs:
            count = attrs.count(PREEMPTIONS)
            if count is not None:
                preemptions = max(preemptions, count)
        if FINISH_STATUS in attrs:
            status = attrs.text(FINISH_STATUS)
            state = _STATUS_STATE.get(status.lower()) if status else None
            if state is not None:
                payload["state"] = state
    if preemptions >= 0:
        payload["preemptions"] = preemptions


def _status(payload: RequestPayload, status: object) -> None:
    """A span whose status is ERROR: the request failed, with the status message."""
    if type(status) is not dict or status.get("code") not in _STATUS_ERROR:
        return
    payload["state"] = RequestState.FAILED.value
    message = status.get("message")
    if type(message) is str and message:
        payload["error"] = message


def span_payload(
    span: dict[str, Any], rid: str, attrs: Attributes, ignored: dict[str, int]
) -> RequestPayload:
    """The request update that ``span`` (which names request ``rid``) gives."""
    payload: RequestPayload = {
        "request_id": rid,
        "state": RequestState.FINISHED.value,
        "timing_from": TimingSource.SPAN.value,
    }
    _read_attributes(payload, attrs)
    received = _seconds_of(span.get("startTimeUnixNano"), "startTimeUnixNano", ignored)
    if received is not None:
        payload["received_ts"] = received
    finished = _seconds_of(span.get("endTimeUnixNano"), "endTimeUnixNano", ignored)
    if finished is not None:
        payload["finished_ts"] = payload["ts"] = finished
    _span_ids(payload, span, ignored)
    _journey(payload, span.get("events"), ignored)
    _status(payload, span.get("status"))
    return payload
