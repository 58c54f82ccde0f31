"""The event vocabulary every format parser produces and the Extractor consumes.

Events are plain dicts (``TypedDict``s) keyed by the trace-format v1 field names
(docs/trace-format.md): the JSONL trace parser can hand a decoded record over almost as
is, and every other format family (vLLM, SGLang, key=value lines) maps its fields onto
the same names. Plain dicts keep the hot path free of object construction; the
TypedDicts keep mypy honest about the names.

A parsed line is ``(kind, event_or_None)``. ``kind`` is the line's one and only
accounting kind (see ``LineKind``); the event, when present, is ``(EventType, payload)``,
a tuple tagged by its type: ``event[0] == "request"`` tells mypy that ``event[1]`` is a
``RequestPayload``, so a consumer dispatches on the tag without casts or new objects.
"""

from __future__ import annotations

from enum import Enum
from typing import Any, Literal, TypedDict


class LineKind:
    """Names of line kinds as they appear in ``summary --json`` ``lines.by_kind``.

    Format families may add their own kinds (``vllm.stats``, ``sglang.prefill`` ...); these
    are the shared ones. Every physical line gets exactly one kind.
    """

    TRACE_REQUEST = "trace.request"  # a JSONL request record
    TRACE_TOKEN = "trace.token"  # a JSONL per-token event line
    TRACE_META = "trace.meta"  # a JSONL header / model-description line
    KV_REQUEST = "kv.request"  # a `key=value | key=value` request line
    ACCESS = "http.access"  # an HTTP access line (uvicorn and alike)
    TRACEBACK = "traceback"  # any line that is part of a Python traceback
    ERROR = "error"  # a logged error line (ERROR/CRITICAL level, a PD transfer failure)
    NOISE = "other"  # a recognised line that carries nothing we extract
    BLANK = "blank"  # an empty (or whitespace-only) line
    UNPARSED = "unparsed"  # a line nobody understood; always with a reason


class SkipKind(str, Enum):
    """Why a token (or a slot of work for it) was not computed. Never merged."""

    CACHED = "cached"  # prefix-cache hit: prefill compute skipped, still attended later
    EVICTED = "evicted"  # KV dropped for good (StreamingLLM, H2O, SnapKV)
    MASKED = "masked"  # KV resident but not attended at this step (Quest, DSA top-k)
    DROPPED = "dropped"  # MoE capacity overflow: the token skipped an expert it was routed to


class RequestState(str, Enum):
    RECEIVED = "received"
    RUNNING = "running"
    FINISHED = "finished"
    ABORTED = "aborted"
    FAILED = "failed"
    #: The engine reported nothing running and nothing waiting after the request was last
    #: seen open, but no line logged its end (vLLM V1 logs no completion line): it ended,
    #: at the latest at that stats line (``ended_by_ts``), at an unknown time.
    END_UNLOGGED = "end_unlogged"


class TimingSource(str, Enum):
    """Where a request's timing figures come from (``RequestPayload.timing_from``)."""

    SPAN = "span"  # an OpenTelemetry span the server sent (vLLM ``llm_request``)
    META_INFO = "meta_info"  # SGLang's ``meta_info`` (a ``Finish:`` line, a saved response)
    RESPONSE = "response"  # vLLM's per-request ``metrics`` object in a saved response
    LOG = "log"  # times of server log lines
    TRACE = "trace"  # a sparseety trace record
    DERIVED = "derived"  # computed from other figures of the request (TTFT = first - start)


class SparseInfo(TypedDict, total=False):
    """The ``sparse`` object of a request record (all optional)."""

    topk_experts: int
    total_experts: int
    skipped_attention_heads: int  # query heads skipped per attention layer, per token
    total_attention_heads: int
    kv_kept: int  # KV positions attended (kept) at the last step
    kv_total: int  # KV positions visible at the last step
    kv_skip: Literal["evicted", "masked"]  # what happened to kv_total - kv_kept
    kv_policy: str
    moe_layers: list[int]  # layer indices that route to experts, in routing order
    num_layers: int
    routing: list[list[list[int]]]  # [tokens][moe_layers][top_k] expert ids
    routing_weights: list[list[list[float]]]
    routing_start: int  # absolute position of routing row 0 (default 0)
    dropped: list[list[int]]  # [[position, layer, expert], ...]
    kv: list[dict[str, Any]]  # per-token KV selection summaries
    evicted_ranges: list[list[int]]  # [[start, end), ...] positions whose KV was evicted
    masked_ranges: list[list[int]]  # positions resident but not attended at the last step
    head_masks: dict[str, Any]  # {"layers": [...], "num_heads": H, "skipped": [[...], ...]}


class SamplingInfo(TypedDict, total=False):
    """The sampling parameters a request was sent with (vLLM ``SamplingParams(...)``)."""

    max_tokens: int
    temperature: float
    top_p: float
    n: int


class RequestPayload(TypedDict, total=False):
    """A (possibly partial) request update; fields absent mean "not said by this line".

    The Extractor merges updates by ``request_id``: the last value given for a field wins,
    except for per-token data (routing, KV summaries, head masks, dropped assignments),
    whose counts accumulate.
    """

    request_id: str
    model: str
    state: str  # a RequestState value
    finish_reason: str
    prompt: str
    completion: str
    prompt_tokens: int
    completion_tokens: int
    cached_tokens: int
    cache_hit: bool  # a prefix-cache hit was reported without a token count
    prompt_token_ids: list[int]
    prompt_ids_logged: int  # how many prompt ids the line listed (vLLM --max-log-len cuts them)
    completion_token_ids: list[int]
    latency_s: float
    ttft_s: float
    ts: float  # unix seconds of the line (when known)
    received_ts: float
    first_token_ts: float
    finished_ts: float
    sparse: SparseInfo
    sampling: SamplingInfo
    error: str
    # Where the request's time went (seconds), as its server measured it: ``queue_s`` waiting
    # to be scheduled, ``prefill_s`` and ``decode_s`` in the model for each phase,
    # ``inference_s`` in the model in all (vLLM's ``gen_ai.latency.*`` span attributes).
    queue_s: float
    prefill_s: float
    decode_s: float
    inference_s: float
    preemptions: int  # times the scheduler preempted the request
    #: Where this payload's timing fields (the four above, ``latency_s``, ``ttft_s`` and
    #: ``preemptions``) come from: a ``TimingSource`` value; absent: ``"log"``.
    timing_from: str
    trace_id: str  # W3C trace id of the request's span (32 lowercase hex digits)
    span_id: str  # its span id (16 lowercase hex digits)


class TokenPayload(TypedDict, total=False):
    """One streamed per-token event; merges into its request by ``request_id``."""

    request_id: str
    pos: int  # absolute position in prompt+completion
    phase: Literal["prompt", "completion"]
    token_id: int
    text: str
    ts: float
    experts: list[list[int]]  # [moe_layers][top_k]
    weights: list[list[float]]
    moe_layers: list[int]
    kv: dict[str, Any]  # {"policy", "visible", "kept", "skip"}
    heads_skipped: dict[str, list[int]]  # layer (as str) -> skipped query heads
    num_heads: int
    dropped: list[list[int]]  # [[layer, expert], ...]
    cached: bool


class StatsPayload(TypedDict, total=False):
    """A periodic engine statistics line (vLLM ``Engine 000:``, SGLang ``Decode batch``)."""

    ts: float
    engine: str
    #: The log it came from (set by the Merger): engines of two logs are two engines.
    source: str
    phase: Literal["prefill", "decode", "engine", "spec"]
    prompt_throughput: float  # tokens/s
    generation_throughput: float  # tokens/s
    running: int
    waiting: int
    queued: int
    swapped: int
    kv_usage: float  # fraction 0..1
    prefix_cache_hit_rate: float  # fraction 0..1
    new_tokens: int  # prefill tokens computed in this batch
    cached_tokens: int  # prefill tokens served from the prefix cache
    batch_requests: int
    spec_accept_rate: float  # fraction 0..1
    spec_accept_length: float
    # vLLM V1 extras (printed only when they apply)
    deferred: int  # waiting requests skipped this step (a part of ``waiting``)
    preemptions: int  # requests preempted since the previous stats line
    corrupted: int  # requests with NaNs in their logits (VLLM_COMPUTE_NANS_IN_LOGITS)
    external_prefix_cache_hit_rate: float  # fraction 0..1 (KV connector cache)
    mm_cache_hit_rate: float  # fraction 0..1 (multi-modal input cache)
    aggregated_engines: int  # ``N Engines Aggregated:``: how many engines the line sums
    # SGLang prefill/decode disaggregation (PD) queues
    bootstrap_queue: int  # prefill: `#unbootstrapped-req` (older `#prealloc-req`)
    transferring: int  # prefill: `#transferring-req` (older `#inflight-req`), KV being sent
    prealloc_queue: int  # decode: `#prealloc-req`, waiting for KV space to be reserved
    transfer_queue: int  # decode: `#transfer-req`, KV being received
    retracted: int  # decode: `#retracted-req`
    preallocated_usage: float  # decode: `pre-allocated usage`, fraction of the KV pool


class ErrorPayload(TypedDict, total=False):
    """A grouped error (a traceback and its message), possibly tied to a request."""

    ts: float
    message: str
    exception: str
    request_id: str
    lines: int  # how many physical lines the error spans
    #: Its class (core.store: "traceback", "error", "http_5xx", "retraction",
    #: "kv_transfer", ...); absent: told from the text by the Merger.
    kind: str
    status: int  # an HTTP access line's status
    #: How many lines before the line it was given at its first line is (a traceback
    #: ended by a later line, an error line held for one line); absent: 0.
    back: int
    #: How many lines from its first to its last (more than ``lines`` when another
    #: process's lines are interleaved with a traceback); absent: ``lines``.
    span: int


class MetaPayload(TypedDict, total=False):
    """Trace header, or a server's start-up line: model description for the whole file."""

    model: str
    moe_layers: list[int]
    num_layers: int
    total_experts: int
    topk_experts: int
    total_attention_heads: int
    tokenizer: str
    # What a server logged at start-up (formats._startup): the model and tokenizer it
    # loaded (a local path or a hub name) and vLLM's --max-log-len.
    model_path: str
    tokenizer_path: str
    max_log_len: int


class ExpertCountPayload(TypedDict):
    """One row of an expert-distribution dump (SGLang ``layer_id,expert_id,count``): how
    many tokens a recording window routed to an expert of a layer. Counts, not per-token
    routing: no request, no token position."""

    layer: int
    expert: int
    count: int


EventType = Literal["request", "token", "stats", "error", "meta", "expert_count"]
Payload = (
    RequestPayload | TokenPayload | StatsPayload | ErrorPayload | MetaPayload | ExpertCountPayload
)
Event = (
    tuple[Literal["request"], RequestPayload]
    | tuple[Literal["token"], TokenPayload]
    | tuple[Literal["stats"], StatsPayload]
    | tuple[Literal["error"], ErrorPayload]
    | tuple[Literal["meta"], MetaPayload]
    | tuple[Literal["expert_count"], ExpertCountPayload]
)
ParsedLine = tuple[str, Event | None]
