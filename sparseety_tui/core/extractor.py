"""The Extractor: lines in, RequestStore rows and running aggregates out.

Fed incrementally (a batch of complete lines per call) by the one ingest worker of the
TUI, or in one go by the batch commands. It owns the per-file parsers and counts, so
"every line is accounted for" is enforced in one place: each line fed gets exactly one
kind, and per file the counts by kind add up to the lines fed.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from itertools import islice
from operator import attrgetter
from typing import Any, Protocol

from sparseety_tui.core.bulk import append_block, append_scanned
from sparseety_tui.core.files import SNIFF_HEAD_BYTES, Diagnostic, FileState
from sparseety_tui.core.frozen import FrozenExtractor, freeze_store
from sparseety_tui.core.series import EngineSeries, HeatCounts, RecordingEngineSeries
from sparseety_tui.core.store import (
    COUNT_FROM_IDS,
    COUNT_REPORTED,
    COUNT_TOKENIZER,
    KV_SKIP_NAMES,
    NAN,
    STATE_CODE,
    UNKNOWN,
    RequestStore,
    RowExtras,
    StorePart,
)
from sparseety_tui.core.timing import derive_times
from sparseety_tui.core.tokens import TokenCounter
from sparseety_tui.events import (
    ErrorPayload,
    Event,
    LineKind,
    MetaPayload,
    RequestPayload,
    TokenPayload,
)
from sparseety_tui.formats import registry
from sparseety_tui.formats.trace_native import Scanner
from sparseety_tui.sources.lines import (
    DEFAULT_MAX_LINE_BYTES,
    Chunk,
    RawLine,
    mtime_or_none,
    split_chunk,
)

#: How many characters of an unparsed line are kept for display.
PREVIEW_CHARS = 300
#: Errors kept with their text (all are counted).
ERROR_SAMPLES = 1000
#: Lines per block on the bulk path, and the fewest worth trying it on.
BULK_BLOCK_LINES = 2048
BULK_MIN_LINES = 32
#: A `sparse` object with only these keys holds no per-token data (the common case).
_SUMMARY_KEYS = frozenset({
    "topk_experts", "total_experts", "skipped_attention_heads", "total_attention_heads",
    "kv_kept", "kv_total", "kv_skip",
})


#: Meta header fields that default a request's columns: (meta key, column).
_META_DEFAULTS = (
    ("topk_experts", "topk_experts"),
    ("total_experts", "total_experts"),
    ("total_attention_heads", "total_heads"),
)


#: The largest count an int32 column holds; a line claiming more is taken as unknown.
COUNT_MAX = 2**31 - 1


def _is_count(value: Any) -> bool:
    return type(value) is int and 0 <= value <= COUNT_MAX


def _count_or_unknown(value: Any) -> int:
    return value if _is_count(value) else UNKNOWN


class LineLike(Protocol):
    @property
    def offset(self) -> int: ...
    @property
    def length(self) -> int: ...
    @property
    def data(self) -> bytes: ...
    @property
    def truncated(self) -> bool: ...


_TRUNCATED = attrgetter("truncated")


def _end_of_lines(data: bytes, start: int, count: int) -> int:
    """Where the ``count`` lines of ``data`` from ``start`` end (or the end of data)."""
    pos = start
    for _ in range(count):
        newline = data.find(b"\n", pos)
        if newline < 0:
            return len(data)
        pos = newline + 1
    return pos


class Extractor:
    def __init__(
        self,
        *,
        store: RequestStore | None = None,
        tokens: TokenCounter | None = None,
        forced_format: str | None = None,
    ) -> None:
        if forced_format is not None:
            registry.family_by_name(forced_format)  # fail early on a bad --format
        self.store = store if store is not None else RequestStore()
        self.tokens = tokens if tokens is not None else TokenCounter()
        self.forced_format = forced_format
        self.files: list[FileState] = []
        self.engine = EngineSeries()
        self.expert_load = HeatCounts()
        self.dropped = HeatCounts()
        self.head_skips = HeatCounts()
        self.errors: deque[ErrorPayload] = deque(maxlen=ERROR_SAMPLES)
        self.error_count = 0
        self.version = 0
        self._frozen: FrozenExtractor | None = None

    # -- files -----------------------------------------------------------------------

    def add_file(self, path: str, format_name: str | None = None) -> int:
        """Start a file; ``format_name`` (else the Extractor's forced format) skips
        detection."""
        forced = format_name or self.forced_format
        state = FileState(path=path, forced_format=forced, reference_time=mtime_or_none(path))
        if forced is not None:
            state.family = registry.family_by_name(forced)
            state.parser = state.family.new_parser(reference_time=state.reference_time)
        self.files.append(state)
        return len(self.files) - 1

    def note(self, file: int, message: str) -> None:
        """A source event worth showing (rotation, truncation...)."""
        self.files[file].events.append(message)
        self._changed(file)

    def new_incarnation(self, file: int, reason: str) -> int:
        """The path of ``file`` now holds another file (rotated, replaced, truncated).

        Closes the old one (its open tracebacks end, its counts stay as they are) and
        returns a new file index for what the path holds now, so stored line locations
        never point into the wrong file.
        """
        self.finish_file(file)
        old = self.files[file]
        old.superseded = reason
        old.revision += 1
        new = self.add_file(old.path)
        self.files[new].meta = dict(old.meta)
        return new

    def finish_file(self, file: int) -> None:
        state = self.files[file]
        if state.sniff_buffer:
            self._detect(state, final=True)
        if state.parser is not None:
            state.parser.finish()
            self._drain_pending(state, file)
        self._changed(file)

    # -- feeding ---------------------------------------------------------------------

    def feed(self, file: int, lines: Iterable[LineLike], first_line_no: int | None = None) -> None:
        """Account for and extract a batch of complete lines of one file."""
        state = self.files[file]
        if first_line_no is not None:
            state.lines_total = first_line_no - 1
        iterator: Iterator[LineLike] = iter(lines)
        if state.parser is None:
            iterator = self._sniff_then(state, iterator)
        self._run(state, file, iterator)
        self._changed(file)

    def feed_chunks(self, file: int, items: Iterable[Chunk | RawLine]) -> None:
        """``feed`` for a file read in big chunks of whole lines (sources.lines.iter_chunks):
        the batch commands' reader, which splits lines in C rather than one readline each."""
        state = self.files[file]
        for item in items:
            if not isinstance(item, Chunk):  # one huge line
                huge: Iterator[LineLike] = iter([item])
                if state.parser is None:
                    huge = self._sniff_then(state, huge)
                self._run(state, file, huge)
                continue
            if state.parser is None:
                self._sniff_chunk(state, item)
            scanner = None if state.family is None else state.family.scan_requests
            if scanner is not None:
                self._run_chunk_scanned(state, file, item, scanner)
                continue
            lines = split_chunk(item)
            for first in range(0, len(lines), BULK_BLOCK_LINES):
                # Without a parser (format not recognised yet) the lines are counted as
                # unparsed; the next chunk is sniffed again.
                self._run_block(state, file, lines[first : first + BULK_BLOCK_LINES])
        self._changed(file)

    def _run_chunk_scanned(
        self, state: FileState, file: int, chunk: Chunk, scanner: Scanner
    ) -> None:
        """A chunk through the native scanner: runs of simple request records become rows
        in one step; each line it stops at (and a run too short to be worth a block) goes
        through the per-line path, so every line still gets exactly one kind."""
        data = chunk.data
        pos = 0
        odd_lines_in_a_row = 0
        while pos < len(data):
            scan = scanner(data, pos, DEFAULT_MAX_LINE_BYTES)
            if scan.n >= BULK_MIN_LINES and append_scanned(
                self.store, scan, file, chunk.offset, state.lines_total + 1
            ):
                self._count_bulk(state, file, scan.n)
                pos, odd_lines_in_a_row = scan.end, 0
                continue
            stop = scan.next_end
            if scan.n == 0:
                # A file of records the scanner never takes (escaped or non-ASCII text,
                # per-token data): give the Python block path whole blocks of them.
                odd_lines_in_a_row += 1
                if odd_lines_in_a_row > 1:
                    stop = _end_of_lines(data, pos, BULK_BLOCK_LINES)
            lines = split_chunk(Chunk(chunk.offset + pos, data[pos:stop]))
            if len(lines) >= BULK_MIN_LINES:
                self._run_block(state, file, lines)
            else:
                self._run_lines(state, file, lines)
            pos = stop

    def _count_bulk(self, state: FileState, file: int, n: int) -> None:
        """Bookkeeping for ``n`` request lines that became the store's last ``n`` rows."""
        if state.meta:
            self._apply_meta_defaults(file, len(self.store) - n, len(self.store))
        state.lines_total += n
        state.by_kind[LineKind.TRACE_REQUEST] = state.by_kind.get(LineKind.TRACE_REQUEST, 0) + n

    def _sniff_chunk(self, state: FileState, chunk: Chunk) -> None:
        """Detect the format from a chunk's first lines (as ``_sniff_then`` does for lines),
        so that even the first chunk can take the native scanner."""
        data, start = chunk.data, 0
        while len(state.sniff_buffer) < registry.SNIFF_LINES and start < len(data):
            end = data.find(b"\n", start)
            end = len(data) if end < 0 else end
            state.keep_for_sniffing(data[start : min(end, start + SNIFF_HEAD_BYTES)])
            start = end + 1
        self._detect(state, final=True)

    def _sniff_then(self, state: FileState, lines: Iterator[LineLike]) -> Iterator[LineLike]:
        """Hold lines until the format is known, then replay them."""
        held: list[LineLike] = []
        for line in lines:
            held.append(line)
            state.keep_for_sniffing(line.data)
            if len(state.sniff_buffer) >= registry.SNIFF_LINES:
                break
        # Whatever is available now is enough to decide (a live file may grow slowly).
        self._detect(state, final=True)
        yield from held
        yield from lines

    def _detect(self, state: FileState, final: bool) -> None:
        if state.parser is not None or not state.sniff_buffer:
            return
        family = registry.detect(state.sniff_buffer, path=state.path)
        if family is not None:
            state.family = family
            state.parser = family.new_parser(reference_time=state.reference_time)
            state.sniff_buffer.clear()
        elif final and len(state.sniff_buffer) >= registry.SNIFF_LINES:
            state.sniff_buffer.clear()  # give up re-sniffing this head; later lines may tell

    def _run(self, state: FileState, file: int, lines: Iterable[LineLike]) -> None:
        iterator = iter(lines)
        while True:
            block = list(islice(iterator, BULK_BLOCK_LINES))
            if not block:
                return
            self._run_block(state, file, block)

    def _run_block(self, state: FileState, file: int, block: Sequence[LineLike]) -> None:
        decoder = None if state.family is None else state.family.decode_simple_block
        if decoder is None or not self._run_bulk(state, file, block, decoder):
            self._run_lines(state, file, block)

    def _run_bulk(
        self,
        state: FileState,
        file: int,
        block: Sequence[LineLike],
        decoder: Callable[[list[bytes]], dict[str, tuple[Any, ...]] | None],
    ) -> bool:
        """The fast path for a block of simple request records (see core/bulk.py)."""
        if len(block) < BULK_MIN_LINES or any(map(_TRUNCATED, block)):
            return False
        columns = decoder([line.data for line in block])
        if columns is None:
            return False
        appended = append_block(
            self.store,
            columns,
            file,
            [line.offset for line in block],
            [line.length for line in block],
            state.lines_total + 1,
        )
        if appended:
            self._count_bulk(state, file, len(block))
        return appended

    def _run_lines(self, state: FileState, file: int, lines: Iterable[LineLike]) -> None:
        by_kind = state.by_kind
        line_no = state.lines_total
        on_event = self._on_event
        unparsed = LineKind.UNPARSED
        parser = state.parser
        for line in lines:
            line_no += 1
            if parser is None:
                parser = state.parser  # detection happened inside the sniffing generator
            if parser is None:
                kind = unparsed
                event: Event | None = None
                reason = "format not recognised (no format family matched this file)"
            else:
                kind, event = parser.parse(line.data)
                reason = parser.last_reason if kind == unparsed else ""
            by_kind[kind] = by_kind.get(kind, 0) + 1
            if event is not None:
                on_event(event, file, line.offset, line.length, line_no)
            if kind == unparsed:
                self._diagnose(state, line, line_no, reason)
            if parser is not None and parser.pending:
                state.lines_total = line_no
                self._drain_pending(state, file)
        state.lines_total = line_no

    def _diagnose(self, state: FileState, line: LineLike, line_no: int, reason: str) -> None:
        preview = line.data[: PREVIEW_CHARS * 4].decode("utf-8", errors="replace")
        if len(preview) > PREVIEW_CHARS:
            preview = preview[:PREVIEW_CHARS] + "…"
        if line.truncated:
            reason = f"{reason} (line of {line.length:,} bytes, truncated when read)"
        state.diagnostics.append(Diagnostic(line_no, line.offset, reason, preview))

    def _drain_pending(self, state: FileState, file: int) -> None:
        parser = state.parser
        if parser is None:
            return
        pending, parser.pending = parser.pending, []
        for event in pending:
            self._on_event(event, file, -1, 0, state.lines_total)

    # -- events ----------------------------------------------------------------------

    def _on_event(self, event: Event, file: int, offset: int, length: int, line_no: int) -> None:
        # Events are tagged tuples: testing event[0] narrows event[1] to its payload type.
        if event[0] == "request":
            self._on_request(event[1], file, offset, length, line_no)
        elif event[0] == "token":
            self._on_token(event[1], file, offset, length, line_no)
        elif event[0] == "stats":
            self.engine.add(event[1])
        elif event[0] == "error":
            self._on_error(event[1])
        elif event[0] == "meta":
            self.files[file].meta.update(event[1])

    def _row_for(self, request_id: str, file: int, offset: int, length: int, line_no: int) -> int:
        store = self.store
        row = store.ids.find(request_id)
        if row is None:
            return store.new_row(request_id, file, offset, length, line_no)
        if offset >= 0:
            store.add_line(row, file, offset, length)
        return row

    def _on_request(
        self, p: RequestPayload, file: int, offset: int, length: int, line_no: int
    ) -> None:
        store = self.store
        rid = p["request_id"]
        row = store.ids.find(rid)
        values = self._request_values(p)
        if row is None:
            row = store.append_row(rid, values, file, offset, length, line_no)
        else:
            if offset >= 0:
                store.add_line(row, file, offset, length)
            store.merge_row(row, values)
        cols = store.columns
        if store.state[row] == 0 and (
            "completion" in p
            or "completion_tokens" in p
            or "completion_token_ids" in p
            or "latency_s" in p
        ):
            store.state[row] = STATE_CODE["finished"]
        # Times that need what earlier lines said (start = finish - latency, TTFT from the
        # first-token time): only when one of them is still unknown, the rare case.
        received, ttft = cols["received_ts"][row], cols["ttft_s"][row]
        first: Any = p.get("first_token_ts")
        if received != received or (first is not None and ttft != ttft):
            times = derive_times(
                received=received,
                first_token=NAN if first is None else first,
                finished=cols["finished_ts"][row],
                ttft=ttft,
                latency=cols["latency_s"][row],
            )
            if times.received != received and times.received == times.received:
                cols["received_ts"][row] = times.received
            if times.ttft == times.ttft and ttft != ttft:
                cols["ttft_s"][row] = times.ttft
        sparse = p.get("sparse")
        if type(sparse) is dict and not sparse.keys() <= _SUMMARY_KEYS:
            self._on_sparse_detail(dict(sparse), row, file)
        if self.files[file].meta:
            self._apply_meta_defaults(file, row, row + 1)

    def _apply_meta_defaults(self, file: int, first: int, last: int) -> None:
        """A trace's meta header describes the model for every request of the file: its
        expert and head counts fill in what a request line did not say."""
        meta = self.files[file].meta
        cols = self.store.columns
        for key, column in _META_DEFAULTS:
            value = meta.get(key)
            if not _is_count(value):
                continue
            cells = cols[column]
            for row in range(first, last):
                if cells[row] == UNKNOWN:
                    cells[row] = value

    def _request_values(self, p: RequestPayload) -> tuple[Any, ...]:
        """Every column value one request line says, in ``store.ROW_LAYOUT`` order.

        Unknown is -1 (ints), NaN (floats) or 0 (codes). This is the one place that maps
        payload fields to columns, for new rows and for updates alike.
        """
        get = p.get
        prompt: Any = get("prompt_tokens")
        prompt_source = COUNT_REPORTED
        if not _is_count(prompt):
            prompt, prompt_source = self._count_from(p, "prompt", "prompt_token_ids")
        completion: Any = get("completion_tokens")
        completion_source = COUNT_REPORTED
        if not _is_count(completion):
            completion, completion_source = self._count_from(
                p, "completion", "completion_token_ids"
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
        latency: Any = get("latency_s")
        if type(latency) is not float or latency < 0:
            latency = float(latency) if type(latency) is int and latency >= 0 else NAN
        ttft: Any = get("ttft_s")
        if type(ttft) is not float or ttft < 0:
            ttft = float(ttft) if type(ttft) is int and ttft >= 0 else NAN
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
        cache_hit: Any = get("cache_hit")
        model: Any = get("model")
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
            latency,
            ttft,
            NAN if received is None else received,
            NAN if finished is None else finished,
            state,
            kv_skip,
            0 if cache_hit is None else (2 if cache_hit else 1),
            prompt_source if prompt >= 0 else 0,
            completion_source if completion >= 0 else 0,
            self.store.model_code(model) if type(model) is str else 0,
        )

    def _count_from(self, p: RequestPayload, text_key: str, ids_key: str) -> tuple[int, int]:
        """A token count from token ids, else from text with the named tokenizer."""
        ids = p.get(ids_key)
        if type(ids) is list:
            return len(ids), COUNT_FROM_IDS
        text = p.get(text_key)
        if type(text) is str and self.tokens.available:
            return self.tokens.count(text), COUNT_TOKENIZER
        return UNKNOWN, 0

    def _on_sparse_detail(self, sparse: dict[str, Any], row: int, file: int) -> None:
        """Per-token sparse data inside a request record: routing, drops, KV, head masks."""
        layers = sparse.get("moe_layers") or self.files[file].meta.get("moe_layers")
        routing = sparse.get("routing")
        if type(routing) is list:
            self._on_routing(routing, layers, self.store.extras_for(row))
        dropped = sparse.get("dropped")
        if type(dropped) is list:
            extras = self.store.extras_for(row)
            for item in dropped:
                if type(item) is list and len(item) == 3:
                    extras.dropped_slots += 1
                    self.dropped.add(_as_int(item[1]), _as_int(item[2]))
        kv = sparse.get("kv")
        if type(kv) is list:
            extras = self.store.extras_for(row)
            for summary in kv:
                if type(summary) is dict:
                    self._on_kv(summary, extras)
        masks = sparse.get("head_masks")
        if type(masks) is dict:
            self._on_head_masks(masks, row)

    def _on_routing(self, routing: list[Any], layers: Any, extras: RowExtras) -> None:
        load = self.expert_load
        layer_ids = layers if type(layers) is list else None
        for token in routing:
            if type(token) is not list:
                continue
            extras.routed_tokens += 1
            for j, experts in enumerate(token):
                if type(experts) is not list:
                    continue
                layer = layer_ids[j] if layer_ids is not None and j < len(layer_ids) else j
                real = [e for e in experts if type(e) is int and e >= 0]
                if not real:
                    continue  # a dense layer's placeholder row
                extras.routing_rows += 1
                extras.routed_slots += len(real)
                for expert in real:
                    load.add(layer, expert)
            extras.moe_layers = len(token)

    def _on_kv(self, summary: dict[str, Any], extras: RowExtras) -> None:
        visible, kept = summary.get("visible"), summary.get("kept")
        if type(visible) is not int or type(kept) is not int or kept > visible:
            return
        extras.kv_tokens += 1
        extras.kv_visible += visible
        extras.kv_kept += kept
        skip = summary.get("skip")
        if skip == "masked":
            extras.masked_positions += visible - kept
        elif skip == "evicted":
            extras.evicted_positions += visible - kept
        # Without a skip kind the gap still lowers attended compute (kv_kept/kv_visible)
        # but is neither evicted nor masked: unknown stays unknown.

    def _on_head_masks(self, masks: dict[str, Any], row: int) -> None:
        layers = masks.get("layers")
        skipped = masks.get("skipped")
        heads = masks.get("num_heads")
        if type(skipped) is not list or type(heads) is not int or heads <= 0:
            return
        extras = self.store.extras_for(row)
        prompt = max(self.store.prompt_tokens[row], 0)
        completion = max(self.store.completion_tokens[row], 0)
        tokens = prompt + completion or 1
        for j, head_list in enumerate(skipped):
            if type(head_list) is not list:
                continue
            layer = layers[j] if type(layers) is list and j < len(layers) else j
            extras.head_rows += tokens
            extras.head_slots += heads * tokens
            extras.skipped_head_slots += len(head_list) * tokens
            for head in head_list:
                self.head_skips.add(_as_int(layer), _as_int(head), tokens)

    def _on_token(
        self, p: TokenPayload, file: int, offset: int, length: int, line_no: int
    ) -> None:
        row = self._row_for(p["request_id"], file, offset, length, line_no)
        extras = self.store.extras_for(row)
        experts = p.get("experts")
        if type(experts) is list:
            layers = p.get("moe_layers") or self.files[file].meta.get("moe_layers")
            self._on_routing([experts], layers, extras)
        kv = p.get("kv")
        if type(kv) is dict:
            self._on_kv(kv, extras)
        heads = p.get("heads_skipped")
        num_heads = p.get("num_heads") or self.files[file].meta.get("total_attention_heads")
        if type(heads) is dict and type(num_heads) is int:
            for layer_key, head_list in heads.items():
                if type(head_list) is not list:
                    continue
                extras.head_rows += 1
                extras.head_slots += num_heads
                extras.skipped_head_slots += len(head_list)
                for head in head_list:
                    self.head_skips.add(_as_int(layer_key), _as_int(head))
        dropped = p.get("dropped")
        if type(dropped) is list:
            for item in dropped:
                if type(item) is list and len(item) == 2:
                    extras.dropped_slots += 1
                    self.dropped.add(_as_int(item[0]), _as_int(item[1]))
        if self.store.state[row] == 0:
            self.store.state[row] = STATE_CODE["running"]

    def _on_error(self, p: ErrorPayload) -> None:
        self.error_count += 1
        self.errors.append(p)
        rid = p.get("request_id")
        if rid is not None:
            row = self.store.ids.find(rid)
            if row is not None:
                self.store.set_state(row, STATE_CODE["failed"])

    def _changed(self, file: int) -> None:
        self.files[file].revision += 1
        self.version += 1

    # -- readers on other threads ----------------------------------------------------

    def freeze(self) -> FrozenExtractor:
        """An immutable copy of everything read so far, for readers on other threads
        (``core.frozen``). Writer thread only; cheap when little changed since the last
        call: what did not change is shared with the previous copy."""
        prev = self._frozen
        engine = self.engine
        frozen = FrozenExtractor(
            version=self.version,
            store=freeze_store(self.store, prev.store if prev is not None else None),
            files=tuple(
                state.freeze(prev.files[i] if prev is not None and i < len(prev.files) else None)
                for i, state in enumerate(self.files)
            ),
            engine=prev.engine if prev is not None and prev.engine.count == engine.count
            else engine.copy(),
            expert_load=_heat_copy(self.expert_load, prev.expert_load if prev else None),
            dropped=_heat_copy(self.dropped, prev.dropped if prev else None),
            head_skips=_heat_copy(self.head_skips, prev.head_skips if prev else None),
            errors=prev.errors if prev is not None and prev.error_count == self.error_count
            else tuple(self.errors),
            error_count=self.error_count,
            tokens=self.tokens,
        )
        self._frozen = frozen
        return frozen

    # -- a file read in byte ranges ----------------------------------------------------

    def export_part(self, file: int) -> ExtractorPart:
        """What this Extractor read of ``file`` (one byte range of a bigger file, in a
        worker process), to be merged by ``merge_part`` in the reading process."""
        state = self.files[file]
        return ExtractorPart(
            lines_total=state.lines_total,
            by_kind=state.by_kind,
            diagnostics=list(state.diagnostics),
            meta=state.meta,
            store=self.store.export_part(),
            engine=self.engine,
            expert_load=self.expert_load,
            dropped=self.dropped,
            head_skips=self.head_skips,
            errors=list(self.errors),
            error_count=self.error_count,
        )

    def merge_part(
        self, file: int, part: ExtractorPart, renames: Mapping[str, str] | None = None
    ) -> None:
        """Append the next byte range of ``file`` as if its lines had been fed here: counts
        add, line numbers shift, rows merge by id (a known value wins), aggregates add, and
        the engine series is extended exactly when the part recorded what that needs."""
        shift = self.files[file].append_part(
            part.lines_total, part.by_kind, part.diagnostics, part.meta
        )
        self.store.merge_part(part.store, file, shift, renames)
        self.expert_load.merge(part.expert_load)
        self.dropped.merge(part.dropped)
        self.head_skips.merge(part.head_skips)
        if isinstance(part.engine, RecordingEngineSeries):
            self.engine.extend_exact(part.engine)
        else:
            self.engine.extend(part.engine)
        self.errors.extend(part.errors)
        self.error_count += part.error_count
        self.version += 1

    def meta(self) -> MetaPayload:
        merged: dict[str, Any] = {}
        for state in self.files:
            merged.update(state.meta)
        return merged  # type: ignore[return-value]


def _as_int(value: Any) -> int:
    try:
        return int(value)
    except (TypeError, ValueError):
        return -1


@dataclass
class ExtractorPart:
    """What an Extractor read of one byte range of a file, in a picklable form
    (``Extractor.export_part`` / ``merge_part``)."""

    lines_total: int
    by_kind: dict[str, int]
    diagnostics: list[Diagnostic]
    meta: dict[str, Any]
    store: StorePart
    engine: EngineSeries
    expert_load: HeatCounts
    dropped: HeatCounts
    head_skips: HeatCounts
    errors: list[ErrorPayload]
    error_count: int


def _heat_copy(heat: HeatCounts, previous: HeatCounts | None) -> HeatCounts:
    if previous is not None and previous.revision == heat.revision:
        return previous
    return heat.copy()
