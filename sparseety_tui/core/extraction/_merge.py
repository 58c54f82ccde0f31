"""Merging parsed events into the RequestStore and the running aggregates.

The Extractor (``core.extraction``) reads lines and counts their kinds; every event a
parser gives goes through ``Merger.on_event``: request updates become store rows (merged by
request id with ``RequestStore.merge_row``: a known value wins), per-token data becomes row
extras and heat counts, stats lines the engine series, errors a count and a failed state.
This is the one place that maps payload fields to columns.

Per-token data read again: a later incarnation of the same path (a trace truncated and
written anew, see ``Extractor.new_incarnation``) may repeat a request's tokens. A token
event at a position already counted from an earlier incarnation, and per-token data in a
request record of a later incarnation for a request whose per-token data an earlier one
gave, are not counted again: the first reading stands. Tokens at later positions (a request
that goes on after a rotation) still add, and so does a token event without ``pos`` (nothing
tells it is a repeat).

A merge either happens whole or changes nothing: every value is checked and converted to
what its column holds before anything is written (a value a column cannot hold, such as a
count beyond int32, a non-finite time or a layer id that is not a count, is unknown), so
an exception can only come before the first write. The Extractor then counts the line
``unparsed`` with the exception as its reason and goes on.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Mapping
from typing import Any, Protocol

from sparseety_tui.batch import SPARSE_SUMMARY_KEYS
from sparseety_tui.core.detail import derive_times
from sparseety_tui.core.extraction._lifecycle import OPEN_CODES, Lifecycle
from sparseety_tui.core.extraction._merge_timing import (
    DERIVED_CODE,
    NO_PHASES,
    NO_SOURCES,
    NO_TRACE,
    TIMING_KEYS,
    note_span_row,
    reset_sources,
    span_row,
    timing_values,
)
from sparseety_tui.core.extraction._merge_timing import duration_or_nan as _duration_or_nan
from sparseety_tui.core.extraction._merge_tokens import TokenMerge, is_count
from sparseety_tui.core.store import (
    COUNT_FROM_IDS,
    COUNT_IDS_LOWER_BOUND,
    COUNT_REPORTED,
    COUNT_TOKENIZER,
    COUNT_TOKENIZER_LOWER_BOUND,
    KV_SKIP_NAMES,
    MESSAGE_CHARS,
    NAN,
    STATE_CODE,
    UNKNOWN,
    UNKNOWN_MODEL,
    EngineSeries,
    ErrorLog,
    ErrorRecord,
    HeatByModel,
    HeatCounts,
    RequestStore,
    classify,
    combined_heat,
    heat_for,
)
from sparseety_tui.core.tokens import STARTUP_KEYS, FileTokenizers
from sparseety_tui.events import ErrorPayload, Event, RequestPayload

#: Errors kept with their text (all are counted).
ERROR_SAMPLES = 1000


#: Meta header fields that default a request's columns: (meta key, column).
_META_DEFAULTS = (
    ("topk_experts", "topk_experts"),
    ("total_experts", "total_experts"),
    ("total_attention_heads", "total_heads"),
)
#: A meta event holding one of these is a server's start-up line (core.tokens).
STARTUP_KEY_SET = frozenset(STARTUP_KEYS)
_META_DEFAULT_KEYS = frozenset(key for key, _column in _META_DEFAULTS)


def _count_or_unknown(value: Any) -> int:
    return value if is_count(value) else UNKNOWN


#: (max_tokens, n, temperature, top_p) of a request that gave no sampling parameters.
_NO_SAMPLING = (UNKNOWN, UNKNOWN, NAN, NAN)


def _sampling_values(sampling: Any) -> tuple[int, int, float, float]:
    """(max_tokens, n, temperature, top_p) of a ``sampling`` object: counts -1 and reals
    NaN where unknown (temperature and top_p are non-negative numbers a float32 holds,
    as durations are)."""
    if type(sampling) is not dict:
        return _NO_SAMPLING
    get = sampling.get
    return (
        _count_or_unknown(get("max_tokens")),
        _count_or_unknown(get("n")),
        _duration_or_nan(get("temperature")),
        _duration_or_nan(get("top_p")),
    )


def _time_or_nan(value: Any) -> float:
    """Unix seconds: a finite number (an int is converted), else NaN."""
    if type(value) is float:
        return value if value - value == 0.0 else NAN  # inf - inf and nan - nan are nan
    if type(value) is int:
        try:
            return float(value)
        except OverflowError:
            return NAN
    return NAN


def _cut_at_log_len(logged: Any, meta: Mapping[str, Any]) -> bool:
    """Whether ``logged`` ids or characters reach the ``--max-log-len`` the server logged
    at start-up: it cuts there without a mark, so the text or list may be a prefix."""
    cut = meta.get("max_log_len")
    return type(cut) is int and cut > 0 and type(logged) is int and logged >= cut


class EventObserver(Protocol):
    """Told of some events before they are merged: ``ingest.parallel`` notes, per byte
    range of a file, what merging its rows with other ranges' will depend on."""

    def request(self, payload: RequestPayload) -> None:
        """A request update is about to be merged."""
        ...

    def error(self, payload: ErrorPayload, row: int | None) -> None:
        """An error naming a request (``row``: its row, None when not seen yet)."""
        ...


class Merger(TokenMerge):
    """Merges events into a store and the aggregates beside it (one writer thread)."""

    def __init__(
        self,
        store: RequestStore,
        file_tokens: FileTokenizers,
        engine: EngineSeries,
        observer: EventObserver | None = None,
        record_lifecycle: bool = False,
    ) -> None:
        """``file_tokens``: each file's tokenizer (the model its server logged, else the
        commands'); ``record_lifecycle``: keep what a split read's merge needs
        (core.extraction)."""
        self.store = store
        self.file_tokens = file_tokens
        self.engine = engine
        self.dropped = HeatCounts()
        self.head_skips = HeatCounts()
        #: Expert counts per model (the request's, else its file's; core.store); all
        #: models together are ``expert_load``, made from these when read.
        self.expert_by_model: HeatByModel = {}
        self._load = HeatCounts()
        self.dropped_by_model: HeatByModel = {}
        #: Routing records whose model came from the file or was unknown (not the
        #: request's): a byte range of a file cannot know those as one reader would.
        self.heat_fallback = 0
        #: Expert counts from expert-distribution dumps (counts over a recording window,
        #: not per-token routing: kept apart from ``expert_load``), all and per model.
        self.expert_dumps = HeatCounts()
        self.dump_by_model: HeatByModel = {}
        self.errors: deque[ErrorPayload] = deque(maxlen=ERROR_SAMPLES)
        self.error_count = 0
        #: Every error with its file, line and class (core.store).
        self.error_log = ErrorLog()
        self._observer = observer
        #: For each file index, the first file of its path (the same for every incarnation
        #: of one path; kept by the Extractor).
        self.lineage: list[int] = []
        #: For each file index, its path: stats lines are tagged with it (``source``), so
        #: that two logs' ``Engine 000`` are two engines (core.figures).
        self.sources: list[str] = []
        #: Open requests ended by idle stats lines (``end_unlogged``).
        self.lifecycle = Lifecycle(store, self.lineage, record_lifecycle)

    @property
    def expert_load(self) -> HeatCounts:
        """Every model's expert counts added (made again only after a count changed)."""
        by_model = self.expert_by_model
        if len(by_model) == 1:
            return next(iter(by_model.values()))  # one model: its counts are everyone's
        revision = sum(heat.revision for heat in by_model.values())
        if revision != self._load.revision:
            self._load = combined_heat(by_model.values(), revision)
        return self._load

    def on_event(
        self,
        event: Event,
        file: int,
        meta: dict[str, Any],
        offset: int,
        length: int,
        line_no: int,
    ) -> None:
        """Merge one event of file ``file`` (whose meta header is ``meta``), read from the
        line at ``offset`` (-1: an event completed by a later line) numbered ``line_no``."""
        # Events are tagged tuples: testing event[0] narrows event[1] to its payload type.
        if event[0] == "request":
            self._on_request(event[1], file, meta, offset, length, line_no)
        elif event[0] == "token":
            self._on_token(event[1], file, meta, offset, length, line_no)
        elif event[0] == "stats":
            event[1]["source"] = self.sources[file]  # a fresh dict per line (the parsers')
            self.engine.add(event[1])
            self.lifecycle.stats(event[1], file)
        elif event[0] == "error":
            self._on_error(event[1], file, line_no)
        elif event[0] == "expert_count":
            # A dump's counts (SGLang expert-distribution recorder): the file's model.
            row = event[1]
            named = meta.get("model") or meta.get("model_path")
            model = named if type(named) is str and named else UNKNOWN_MODEL
            self.expert_dumps.add(row["layer"], row["expert"], row["count"])
            heat_for(self.dump_by_model, model).add(row["layer"], row["expert"], row["count"])
        elif event[0] == "meta":
            payload = event[1]
            if not STARTUP_KEY_SET.isdisjoint(payload):
                # A server's start-up line: the first of a file stands (its head was read
                # for it at add_file, so every byte range of the file agrees), and picks
                # the file's tokenizer if its head had none (a live log still empty then).
                for key, value in payload.items():
                    meta.setdefault(key, value)
                self.file_tokens.choose(file, meta)
            else:
                meta.update(payload)

    def _on_request(
        self,
        p: RequestPayload,
        file: int,
        meta: dict[str, Any],
        offset: int,
        length: int,
        line_no: int,
    ) -> None:
        store = self.store
        rid = p["request_id"]
        if type(rid) is not str:
            raise TypeError(f"request_id is a {type(rid).__name__}, not a string")
        row = store.ids.find(rid)
        if row is None and (store.span_aliases or "timing_from" in p):
            row = span_row(store, rid, p)  # a span and its request's log lines: one row
        values = self._request_values(p, file, meta)  # may raise: nothing written before
        first = _time_or_nan(p.get("first_token_ts"))
        if self._observer is not None:
            self._observer.request(p)
        if row is None:
            was_open = False
            row = store.append_row(rid, values, file, offset, length, line_no)
            if "timing_from" in p:
                note_span_row(store, rid, row, p)
        else:
            was_open = store.state[row] in OPEN_CODES
            self._merge_into(row, p, values, file, offset, length)
        cols = store.columns
        state = store.state[row]
        if state == 0 and (
            "completion" in p
            or "completion_tokens" in p
            or "completion_token_ids" in p
            or "latency_s" in p
        ):
            store.state[row] = STATE_CODE["finished"]
        elif not was_open and state in OPEN_CODES:
            # Open again after an end (core.extraction): an open row has no end bound.
            ended = cols["ended_by_ts"]
            if ended[row] == ended[row]:
                ended[row] = NAN
            self.lifecycle.opened(row, file)
        # Times that need what earlier lines said (start = finish - latency, TTFT from the
        # first-token time): only when one of them is still unknown, the rare case.
        received, ttft = cols["received_ts"][row], cols["ttft_s"][row]
        if received != received or (first == first and ttft != ttft):
            times = derive_times(
                received=received,
                first_token=first,
                finished=cols["finished_ts"][row],
                ttft=ttft,
                latency=cols["latency_s"][row],
            )
            if times.received != received and times.received == times.received:
                cols["received_ts"][row] = times.received
            if times.ttft == times.ttft and ttft != ttft:
                cols["ttft_s"][row] = times.ttft
                cols["ttft_from"][row] = DERIVED_CODE
        sparse = p.get("sparse")
        if type(sparse) is dict and not sparse.keys() <= SPARSE_SUMMARY_KEYS:
            self._on_sparse_detail(dict(sparse), row, meta, file)
        if meta and not _META_DEFAULT_KEYS.isdisjoint(meta):  # a server log's start-up
            self.apply_meta_defaults(meta, row, row + 1)  # meta names no expert counts

    def _merge_into(
        self,
        row: int,
        p: RequestPayload,
        values: tuple[Any, ...],
        file: int,
        offset: int,
        length: int,
    ) -> None:
        """Merge a line's values into an existing row (``offset`` -1: no line of its own)."""
        store = self.store
        if offset >= 0:
            store.add_line(row, file, offset, length)
        store.merge_row(row, values)
        if store.timing_codes and "timing_from" not in p:
            reset_sources(store, row, p)  # its times as its file says now

    def apply_meta_defaults(self, meta: Mapping[str, Any], first: int, last: int) -> None:
        """A trace's meta header describes the model for every request of the file: its
        expert and head counts fill in what a request line did not say (rows first..last,
        new rows of that file)."""
        cols = self.store.columns
        for key, column in _META_DEFAULTS:
            value = meta.get(key)
            if not is_count(value):
                continue
            cells = cols[column]
            for row in range(first, last):
                if cells[row] == UNKNOWN:
                    cells[row] = value

    def _request_values(
        self, p: RequestPayload, file: int, meta: Mapping[str, Any] | None
    ) -> tuple[Any, ...]:
        """Every column value one request line says, in ``store.ROW_LAYOUT`` order.

        Unknown is -1 (ints), NaN (floats) or 0 (codes). This is the one place that maps
        payload fields to columns, for new rows and for updates alike.
        """
        get = p.get
        prompt: Any = get("prompt_tokens")
        prompt_source = COUNT_REPORTED
        if not is_count(prompt):
            prompt, prompt_source = self._count_from(p, "prompt", "prompt_token_ids", file, meta)
        elif meta and _cut_at_log_len(get("prompt_ids_logged"), meta):
            prompt_source = COUNT_IDS_LOWER_BOUND  # a count of ids the server cut short
        completion: Any = get("completion_tokens")
        completion_source = COUNT_REPORTED
        if not is_count(completion):
            completion, completion_source = self._count_from(
                p, "completion", "completion_token_ids", file, meta
            )
        cached = _count_or_unknown(get("cached_tokens"))
        topk = total_experts = skipped_heads = total_heads = kv_kept = kv_total = UNKNOWN
        kv_skip = 0
        sparse: Any = get("sparse")
        if type(sparse) is dict:
            sget = sparse.get
            topk = _count_or_unknown(sget("topk_experts"))
            total_experts = _count_or_unknown(sget("total_experts"))
            skipped_heads = _count_or_unknown(sget("skipped_attention_heads"))
            total_heads = _count_or_unknown(sget("total_attention_heads"))
            kv_kept = _count_or_unknown(sget("kv_kept"))
            kv_total = _count_or_unknown(sget("kv_total"))
            kv_name = sget("kv_skip")
            kv_skip = KV_SKIP_NAMES.get(kv_name, 0) if type(kv_name) is str else 0
        latency = _duration_or_nan(get("latency_s"))
        ttft = _duration_or_nan(get("ttft_s"))
        state_name: Any = get("state")
        state = STATE_CODE.get(state_name, 0) if type(state_name) is str else 0
        if type(state_name) is not str:
            state_name = None
        received: Any = get("received_ts")
        finished: Any = get("finished_ts")
        ts: Any = get("ts")
        if ts is not None:
            if finished is None and state_name in (None, "finished", "aborted"):
                finished = ts
            elif received is None and state_name in ("received", "running"):
                received = ts
        if received is not None and (type(received) is not float or received - received != 0.0):
            received = _time_or_nan(received)
        if finished is not None and (type(finished) is not float or finished - finished != 0.0):
            finished = _time_or_nan(finished)
        cache_hit: Any = get("cache_hit")
        model: Any = get("model")
        sampling: Any = get("sampling")
        max_tokens, n, temperature, top_p = (
            _NO_SAMPLING if sampling is None else _sampling_values(sampling)
        )
        if TIMING_KEYS.isdisjoint(p):
            phases, sources, trace = NO_PHASES, NO_SOURCES, NO_TRACE
        else:
            phases, sources, trace = timing_values(p, latency, ttft)
        return (
            prompt,
            completion,
            cached,
            topk,
            total_experts,
            skipped_heads,
            total_heads,
            kv_kept,
            kv_total,
            max_tokens,
            n,
            phases[0],  # preemptions
            latency,
            ttft,
            temperature,
            top_p,
            *phases[1:],  # queue, prefill, decode, inference
            NAN if received is None else received,
            NAN if finished is None else finished,
            NAN,  # ended_by_ts: only core.extraction sets it, never a line
            state,
            kv_skip,
            0 if cache_hit is None else (2 if cache_hit else 1),
            prompt_source if prompt >= 0 else 0,
            completion_source if completion >= 0 else 0,
            *sources,  # where each timing field comes from (0: as the file says)
            self.store.model_code(model) if type(model) is str else 0,
            *trace,  # the span's W3C ids
        )

    def _count_from(
        self,
        p: RequestPayload,
        text_key: str,
        ids_key: str,
        file: int,
        meta: Mapping[str, Any] | None,
    ) -> tuple[int, int]:
        """A token count from token ids, else from text with the file's tokenizer.

        vLLM's ``--max-log-len N`` (logged at start-up, in ``meta``) cuts the logged text
        to N characters and the ids to N ids, without a mark: a text or list that long may
        have been cut, so its count is only a lower bound, and says so.
        """
        ids = p.get(ids_key)
        if type(ids) is list:
            if meta and _cut_at_log_len(len(ids), meta):
                return len(ids), COUNT_IDS_LOWER_BOUND
            return len(ids), COUNT_FROM_IDS
        text = p.get(text_key)
        tokens = self.file_tokens.for_file(file)
        if type(text) is str and tokens.available:
            if meta and _cut_at_log_len(len(text), meta):
                return tokens.count(text), COUNT_TOKENIZER_LOWER_BOUND
            return tokens.count(text), COUNT_TOKENIZER
        return UNKNOWN, 0

    def _on_error(self, p: ErrorPayload, file: int, line_no: int) -> None:
        record = _error_record(p, file, line_no)  # may raise: nothing written before
        self.error_count += 1
        self.errors.append(p)
        self.error_log.add(record)
        rid = p.get("request_id")
        if rid is not None:
            row = self.store.ids.find(rid)
            if self._observer is not None:
                self._observer.error(p, row)
            if row is not None:
                self.store.set_state(row, STATE_CODE["failed"])


def _text(value: Any) -> str:
    return value[:MESSAGE_CHARS] if type(value) is str else ""


def _error_record(p: ErrorPayload, file: int, line_no: int) -> ErrorRecord:
    """The record of an error given at line ``line_no`` of ``file``: its first line is
    ``back`` lines before (a traceback ended by a later line)."""
    back = p.get("back", 0)
    lines = p.get("lines", 1)
    back = back if is_count(back) else 0
    lines = lines if is_count(lines) and lines > 0 else 1
    span = p.get("span", lines)
    span = span if is_count(span) and span >= lines else lines
    first = max(1, line_no - back)
    message, exception = _text(p.get("message")), _text(p.get("exception"))
    kind = p.get("kind")
    ts = _time_or_nan(p.get("ts"))
    rid = p.get("request_id")
    status = p.get("status")
    return ErrorRecord(
        ts=ts if ts == ts else None,
        kind=classify(kind if type(kind) is str else None, message, exception),
        file=file,
        line=first,
        lines=lines,
        last=first + span - 1,
        message=message,
        exception=exception,
        request_id=rid if type(rid) is str else None,
        status=status if is_count(status) else None,
    )
