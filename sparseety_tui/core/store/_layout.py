"""The store's row layout: what a cell's codes mean and which columns a row has.

A request's row is a cell in each column below; unknown is ``-1`` in integer columns, NaN
in float columns and ``0`` in code columns, and becomes ``null`` at the edges. Columns most
rows leave at one value are lazy (``LAZY_COLUMNS``: no bytes until a row differs). Rows
with per-token data also get a ``RowExtras`` side record.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace

from sparseety_tui.batch import RECORD_COUNT_COLUMNS
from sparseety_tui.events import RequestState, TimingSource

UNKNOWN = -1
NAN = math.nan

STATES: tuple[str, ...] = (
    "unknown",
    RequestState.RECEIVED.value,
    RequestState.RUNNING.value,
    RequestState.FINISHED.value,
    RequestState.ABORTED.value,
    RequestState.FAILED.value,
    # Added last: the codes above keep their values.
    RequestState.END_UNLOGGED.value,
)
STATE_CODE: dict[str, int] = {name: code for code, name in enumerate(STATES)}

# Where a token count came from, so outputs can say so.
COUNT_UNKNOWN, COUNT_REPORTED, COUNT_FROM_IDS, COUNT_TOKENIZER = 0, 1, 2, 3
#: Counts from ids or text the server cut at ``--max-log-len``: lower bounds, not totals.
COUNT_IDS_LOWER_BOUND, COUNT_TOKENIZER_LOWER_BOUND = 4, 5
COUNT_SOURCES = (
    "unknown",
    "reported",
    "token_ids",
    "tokenizer",
    "token_ids_lower_bound",
    "tokenizer_lower_bound",
)
LOWER_BOUND_SOURCES = (COUNT_IDS_LOWER_BOUND, COUNT_TOKENIZER_LOWER_BOUND)

KV_SKIP_NONE, KV_SKIP_EVICTED, KV_SKIP_MASKED = 0, 1, 2
#: cache_hit column: 0 not said, 1 no hit, 2 a hit (a flag with no token count)
CACHE_HIT_REPORTED = 2
KV_SKIP_NAMES = {"evicted": KV_SKIP_EVICTED, "masked": KV_SKIP_MASKED}

# Integer columns hold -1 for unknown, float columns NaN. The counts a request record's
# batch carries (``sparseety_tui.batch``) come first, under the same names.
INT_COLUMNS = (
    *RECORD_COUNT_COLUMNS,
    "line_no",  # 1-based line number of the request's first line in its file
    # Sampling parameters the request was sent with (vLLM ``SamplingParams``).
    "max_tokens",
    "sampling_n",
    "preemptions",  # times the scheduler preempted the request (a span says it)
)
#: Where a request's time went (seconds), as its server measured it (``RequestPayload``).
PHASE_COLUMNS = ("queue_s", "prefill_s", "decode_s", "inference_s")
FLOAT32_COLUMNS = ("latency_s", "ttft_s", "temperature", "top_p", *PHASE_COLUMNS)
#: The largest finite float32: a duration above it would be stored as infinity, so it is
#: unknown instead (as a count above int32 is).
FLOAT32_MAX = 3.4028234663852886e38
#: ``ended_by_ts``: for a request whose end no line logged (state ``end_unlogged``), the
#: time of the first stats line after it that showed the engine idle (core.extraction).
FLOAT64_COLUMNS = ("received_ts", "finished_ts", "ended_by_ts")
#: The timing fields whose source a row keeps, and the code column of each (``TIMING_FROM``).
TIMING_FIELDS = (*PHASE_COLUMNS, "ttft_s", "latency_s", "preemptions")
TIMING_FROM: dict[str, str] = {name: name.removesuffix("_s") + "_from" for name in TIMING_FIELDS}
#: A timing source code: 0 is "as the row's file says" (``"trace"`` for a JSONL trace,
#: ``"log"`` for a server log: no byte a row for what most rows are), then each
#: ``TimingSource`` by its position here.
TIMING_SOURCES: tuple[str, ...] = ("", *(source.value for source in TimingSource))
TIMING_SOURCE_CODE: dict[str, int] = {
    name: code for code, name in enumerate(TIMING_SOURCES) if code
}
BYTE_COLUMNS = (
    "state",
    "kv_skip",
    "cache_hit",
    "prompt_source",
    "completion_source",
    *TIMING_FROM.values(),
)
SHORT_COLUMNS = ("model",)
#: The W3C ids of a request's span as unsigned 64-bit halves (0: unknown; an all-zero id
#: is not a valid W3C id): the trace id's high and low halves, the span id.
TRACE_COLUMNS = ("trace_hi", "trace_lo", "span_id")
#: The Extractor file of a row's first line. 32 bits: every incarnation of a rotated path is
#: a file of its own, and a path rotated every 100 ms passes 65,535 in under two hours.
FILE_COLUMN = "file"


#: The columns a request line can set, in the order ``Extractor._request_values`` gives
#: them: every column but ``line_no`` and ``file``, which are set once, from where the
#: first line was read.
ROW_LAYOUT = tuple(
    name
    for name in (
        *INT_COLUMNS,
        *FLOAT32_COLUMNS,
        *FLOAT64_COLUMNS,
        *BYTE_COLUMNS,
        *SHORT_COLUMNS,
        *TRACE_COLUMNS,
    )
    if name not in ("line_no", "file")
)

#: Columns most rows leave unknown (sampling parameters only vLLM's request lines give, the
#: bound core.extraction sets on a request whose end was not logged, the timing only spans
#: and a few logs give, the span's ids), the file index (one file in most runs), and codes
#: most logs give every row the same value of (no KV skip kind, no cache-hit flag, counts
#: as reported, timing as the file says): each is a ``LazyColumn`` until a row has another
#: value than its fill.
LAZY_COLUMNS = (
    "max_tokens",
    "sampling_n",
    "temperature",
    "top_p",
    "ended_by_ts",
    FILE_COLUMN,
    "kv_skip",
    "cache_hit",
    "prompt_source",
    "completion_source",
    "preemptions",
    *PHASE_COLUMNS,
    *TIMING_FROM.values(),
    *TRACE_COLUMNS,
)
#: A lazy column's fill where it is not the unknown of its type (NaN, -1, 0).
LAZY_FILLS: dict[str, float] = {
    "prompt_source": COUNT_REPORTED,
    "completion_source": COUNT_REPORTED,
}


def unknown_of(typecode: str) -> float:
    """A column's value for "not known" by its typecode (counts -1, floats NaN, codes 0)."""
    return NAN if typecode in "fd" else (UNKNOWN if typecode == "i" else 0)


@dataclass
class RowExtras:
    """Per-token aggregates of one request (rows with per-token data only)."""

    routed_tokens: int = 0  # tokens with routing
    routed_slots: int = 0  # expert assignments actually computed
    routing_rows: int = 0  # token x MoE-layer pairs with routing
    moe_layers: int = 0  # MoE layers per routed token (last seen)
    dropped_slots: int = 0
    kv_tokens: int = 0  # tokens with a KV selection summary
    kv_visible: int = 0  # sum over those tokens of visible positions
    kv_kept: int = 0
    evicted_positions: int = 0
    masked_positions: int = 0
    head_rows: int = 0  # token x layer pairs with a head mask
    head_slots: int = 0  # sum of heads over those pairs
    skipped_head_slots: int = 0
    # Where the per-token data counted above came from (core.extraction: a trace truncated and
    # written again repeats its tokens, which must not count twice): the latest file that
    # gave some, the highest token position counted, and the highest one counted from
    # earlier files of the same path (-1: none).
    token_file: int = -1
    max_pos: int = -1
    before_pos: int = -1

    def copy(self) -> RowExtras:
        return replace(self)

    def add(self, more: RowExtras) -> None:
        """Add another part's counts for the same request (a file read in ranges)."""
        for name in _EXTRAS_COUNTS:
            setattr(self, name, getattr(self, name) + getattr(more, name))
        self.moe_layers = more.moe_layers or self.moe_layers
        self.token_file = max(self.token_file, more.token_file)
        self.max_pos = max(self.max_pos, more.max_pos)
        self.before_pos = max(self.before_pos, more.before_pos)


_EXTRAS_COUNTS = (
    "routed_tokens",
    "routed_slots",
    "routing_rows",
    "dropped_slots",
    "kv_tokens",
    "kv_visible",
    "kv_kept",
    "evicted_positions",
    "masked_positions",
    "head_rows",
    "head_slots",
    "skipped_head_slots",
)
