"""Lazy request detail: re-read a request's lines, re-parse them, build the token trace.

The store keeps only where a request's lines live; the detail view calls ``load_detail``
when the user drills in, and an LRU cache keeps the last few. Nothing here grows the
store, whatever the number of tokens.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from sparseety_tui.core.store import (
    HEAT_INDICES,
    HEAT_LAYERS,
    LOWER_BOUND_SOURCES,
    ExtractorView,
    heat_index,
)
from sparseety_tui.core.tokens import TokenCounter, TokenizerError
from sparseety_tui.events import SkipKind
from sparseety_tui.formats.base import failure_reason
from sparseety_tui.formats.serverlog import ServerLogParser
from sparseety_tui.sources.lines import LineGoneError, read_line_at

#: Detail records kept (re-parsing a request with 50k tokens of routing takes ~100 ms).
CACHE_SIZE = 16

#: A source line longer than ``RAW_HEAD_BYTES + RAW_TAIL_BYTES`` is shown as its first and
#: last bytes around an "N bytes elided" marker: a 50 MB line must not become 50 MB of text
#: for the UI thread to lay out.
RAW_HEAD_BYTES = 8 * 1024
RAW_TAIL_BYTES = 2 * 1024
#: Source lines shown per request at most (bytes); further lines are counted, not shown.
RAW_BUDGET_BYTES = 256 * 1024

#: Tokens a detail holds at most. One ``TokenView`` costs a few hundred bytes and the trace
#: lays every one out on the UI thread, so a 5 MB prompt (a million tokens) would cost ~1 GB
#: and seconds; 131,072 covers a 128k context. Counts and heatmaps still cover all tokens.
DETAIL_MAX_TOKENS = 131_072
#: Prompt or completion text tokenized at most (characters), for the same reason; a
#: tokenizer makes about one token of four characters, so this reaches the token bound.
DETAIL_MAX_TEXT_CHARS = 4 * DETAIL_MAX_TOKENS


@dataclass(slots=True)
class TokenView:
    pos: int
    phase: str  # "prompt" or "completion"
    text: str  # display text; "" for a token whose bytes finish on a later token
    token_id: int | None = None
    skips: set[str] = field(default_factory=set)  # SkipKind values
    experts: list[list[int]] | None = None  # [layer][k]
    weights: list[list[float]] | None = None
    heads_skipped: dict[int, list[int]] | None = None
    kv: dict[str, Any] | None = None


@dataclass
class RequestDetail:
    request_id: str
    fields: dict[str, Any]  # merged request payload (last value wins)
    tokens: list[TokenView]
    token_source: str  # "token ids", "tokenizer: <name>", or "" when no text or ids
    moe_layers: list[int]
    expert_counts: dict[int, dict[int, int]]  # layer -> expert -> tokens routed
    head_skips: dict[int, dict[int, int]]  # layer -> head -> tokens skipped
    kv_points: list[dict[str, Any]]  # per-token KV summaries, in position order
    raw_lines: list[SourceText]  # the source lines, bounded (see RAW_BUDGET_BYTES)
    problems: list[str]  # lines that could not be re-read, and why
    raw_omitted: int = 0  # source lines past RAW_BUDGET_BYTES, not shown
    tokens_omitted: int = 0  # tokens past DETAIL_MAX_TOKENS (a lower bound for text)
    #: Phases ("prompt", "completion") whose logged text or ids the server may have cut
    #: (vLLM --max-log-len): their tokens are a prefix and their counts lower bounds.
    cut: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class SourceText:
    """One source line for display: whole, or its head and tail around an elided middle."""

    path: str
    offset: int
    head: str
    tail: str = ""
    elided: int = 0  # bytes between head and tail that are not shown

    @property
    def whole(self) -> bool:
        return self.elided == 0

    def shown_bytes(self) -> int:
        return len(self.head) + len(self.tail)


def _continuation(byte: int) -> bool:
    return 0x80 <= byte < 0xC0


def source_text(path: str, offset: int, length: int, data: bytes) -> SourceText:
    """The display form of a line whose first bytes are ``data`` and whose true length in
    the file is ``length`` (ending included). The tail of a line longer than ``data`` (cut
    at the line cap) is read again from the file; if it is gone, only the head is shown."""
    if length <= RAW_HEAD_BYTES + RAW_TAIL_BYTES:
        return SourceText(path, offset, data.decode("utf-8", errors="replace"))
    head_end = RAW_HEAD_BYTES
    while head_end > RAW_HEAD_BYTES - 3 and _continuation(data[head_end]):
        head_end -= 1  # never split a UTF-8 sequence
    ending = length - len(data)
    if ending <= 2:  # ``data`` is the whole line but its ending: the tail is in it
        tail = data[len(data) - (RAW_TAIL_BYTES - ending) :]
    else:
        try:
            # Read again: ``data`` stops at the line cap. The line's ending is stripped.
            tail = read_line_at(path, offset + length - RAW_TAIL_BYTES, RAW_TAIL_BYTES)
        except (OSError, ValueError):
            tail = b""
    body_end = length - (RAW_TAIL_BYTES - len(tail)) if tail else length
    skip = 0
    while skip < min(3, len(tail)) and _continuation(tail[skip]):
        skip += 1
    return SourceText(
        path,
        offset,
        data[:head_end].decode("utf-8", errors="replace"),
        tail[skip:].decode("utf-8", errors="replace"),
        elided=body_end - len(tail) + skip - head_end,
    )


#: Per-token lists inside ``sparse`` that accumulate over a request's lines, as the
#: Extractor's counts do (request-level fields: the last value wins).
_ACCUMULATING = ("kv", "dropped")


def _merge(fields: dict[str, Any], payload: dict[str, Any]) -> None:
    for key, value in payload.items():
        if key == "sparse" and isinstance(value, dict):
            sparse = fields.setdefault("sparse", {})
            if not isinstance(sparse, dict):
                sparse = fields["sparse"] = {}
            routing = value.get("routing")
            if isinstance(routing, list):  # each line's rows, at the positions it gives
                start = value.get("routing_start", 0)
                segments = sparse.setdefault("routing_segments", [])
                segments.append(
                    (
                        start if isinstance(start, int) else 0,
                        routing,
                        value.get("routing_weights"),
                        value.get("moe_layers"),
                    )
                )
            for name, item in value.items():
                if name in _ACCUMULATING and isinstance(item, list):
                    sparse.setdefault(name, []).extend(item)
                elif name not in ("routing", "routing_weights", "routing_start"):
                    sparse[name] = item
        else:
            fields[key] = value


@dataclass
class _Payloads:
    """What re-reading a request's lines gave."""

    fields: dict[str, Any] = field(default_factory=dict)
    token_events: list[dict[str, Any]] = field(default_factory=list)
    raw_lines: list[SourceText] = field(default_factory=list)
    raw_omitted: int = 0
    problems: list[str] = field(default_factory=list)


def _read_payloads(extractor: ExtractorView, row: int, raw: bool = True) -> _Payloads:
    """The request's lines re-read and re-parsed; ``raw``: also the lines as text for the
    detail view (``extract --text`` needs the fields only)."""
    out = _Payloads()
    shown = 0
    for location in extractor.store.lines_of(row):
        state = extractor.files[location.file]
        if state.superseded is not None:
            out.problems.append(
                f"{state.path} @ {location.offset}: not re-read, the file has "
                f"changed since ({state.superseded})"
            )
            continue
        try:
            data = read_line_at(state.path, location.offset, location.length)
        except (OSError, LineGoneError) as exc:
            out.problems.append(f"{state.path} @ {location.offset}: {exc}")
            continue
        if raw and shown < RAW_BUDGET_BYTES:
            text = source_text(state.path, location.offset, location.length, data)
            out.raw_lines.append(text)
            shown += text.shown_bytes()
        elif raw:
            out.raw_omitted += 1
        if state.family is None:
            continue
        parser = state.family.new_parser(reference_time=state.reference_time)
        _keep_token_ids(parser)
        try:
            _kind, event = parser.parse(data)
        except Exception as exc:  # as when ingesting: the line is lost, the rest is shown
            out.problems.append(
                f"{state.path} @ {location.offset}: {failure_reason('parser error', exc)}"
            )
            continue
        if event is None:
            out.problems.append(f"{state.path} @ {location.offset}: line no longer parses")
            continue
        event_type, payload = event
        if event_type == "request":
            _merge(out.fields, dict(payload))
        elif event_type == "token":
            out.token_events.append(dict(payload))
    return out


def _keep_token_ids(parser: Any) -> None:
    """Ask a server-log parser (bare or inside a wrapper) for the token ids it skips
    when ingesting (``ServerLogParser.keep_token_ids``: counting them is cheaper than
    building them). Without them the detail re-tokenised the logged text with whatever
    tokenizer was at hand, and its trace disagreed with the count in its own header."""
    target = getattr(parser, "inner", parser)
    if isinstance(target, ServerLogParser):
        target.keep_token_ids = True


def _ranges_contain(ranges: Any, pos: int) -> bool:
    if not isinstance(ranges, list):
        return False
    return any(isinstance(r, list) and len(r) == 2 and r[0] <= pos < r[1] for r in ranges)


def build_detail(extractor: ExtractorView, row: int) -> RequestDetail:
    store = extractor.store
    payloads = _read_payloads(extractor, row)
    fields, token_events = payloads.fields, payloads.token_events
    sparse: dict[str, Any] = fields.get("sparse") or {}
    meta = extractor.meta()
    moe_layers = list(sparse.get("moe_layers") or meta.get("moe_layers") or [])

    columns = store.columns
    cut = tuple(
        phase
        for phase in ("prompt", "completion")
        if columns[f"{phase}_source"][row] in LOWER_BOUND_SOURCES
    )
    # The prompt's length where its tokens are not listed: the completion starts there.
    counted = columns["prompt_tokens"][row]
    prompt_count = counted if counted >= 0 and "prompt" not in cut else None
    try:
        counter = extractor.tokens_for(columns["file"][row])
        tokens, token_source, tokens_omitted = _token_views(
            extractor, fields, counter, prompt_count, cut
        )
    except TokenizerError as exc:  # a tokenizer that fails to load: say so, show the rest
        tokens, token_source, tokens_omitted = [], "", 0
        payloads.problems.append(f"tokens not shown: {exc}")
    last_pos = len(tokens) - 1 + tokens_omitted  # the last token position known
    by_pos = {t.pos: t for t in tokens}
    cached = columns["cached_tokens"][row]
    listed = sum(1 for t in tokens if t.phase == "prompt")
    # Positions below the prompt's length are prompt tokens even when none is listed
    # (routing for a record with completion ids only: it was shown as more completion).
    prompt_len = listed if listed or prompt_count is None else prompt_count
    for token in tokens:
        if token.phase == "prompt" and 0 <= token.pos < cached:
            token.skips.add(SkipKind.CACHED.value)
        if _ranges_contain(sparse.get("evicted_ranges"), token.pos):
            token.skips.add(SkipKind.EVICTED.value)
        if _ranges_contain(sparse.get("masked_ranges"), token.pos):
            token.skips.add(SkipKind.MASKED.value)

    expert_counts: dict[int, dict[int, int]] = {}
    head_skips: dict[int, dict[int, int]] = {}
    kv_points: list[dict[str, Any]] = []

    def add_routing(pos: int, experts: Any, weights: Any, layers: list[int]) -> None:
        nonlocal last_pos
        if not isinstance(experts, list):
            return
        last_pos = max(last_pos, pos)
        token = by_pos.get(pos)
        if token is None and pos < DETAIL_MAX_TOKENS:
            token = TokenView(
                pos=pos, phase="prompt" if pos < prompt_len else "completion", text=""
            )
            by_pos[pos] = token
            tokens.append(token)
        if token is not None:
            token.experts = experts
            token.weights = weights if isinstance(weights, list) else None
        for j, chosen in enumerate(experts):
            layer = _as_int(layers[j]) if j < len(layers) else j
            if isinstance(chosen, list):  # expert ids are ints (as the Extractor takes them)
                _count(expert_counts, layer, [e for e in chosen if type(e) is int])

    for start, routing, weights, layers in sparse.get("routing_segments", []):
        segment_layers = list(layers) if isinstance(layers, list) else moe_layers
        for i, experts in enumerate(routing):
            w = weights[i] if isinstance(weights, list) and i < len(weights) else None
            add_routing(start + i, experts, w, segment_layers)
    for item in sparse.get("dropped") or []:
        if isinstance(item, list) and len(item) == 3 and item[0] in by_pos:
            by_pos[item[0]].skips.add(SkipKind.DROPPED.value)
    for summary in sparse.get("kv") or []:
        if isinstance(summary, dict):
            kv_points.append(summary)
            pos = summary.get("pos")
            if isinstance(pos, int) and pos in by_pos:
                by_pos[pos].kv = summary
    masks = sparse.get("head_masks")
    if isinstance(masks, dict) and isinstance(masks.get("skipped"), list):
        layers = masks.get("layers") or list(range(len(masks["skipped"])))
        for j, heads in enumerate(masks["skipped"]):
            if isinstance(heads, list) and j < len(layers):
                _count(head_skips, _as_int(layers[j]), heads)

    for event in sorted(token_events, key=lambda e: e.get("pos", 0)):
        pos = event.get("pos")
        if not isinstance(pos, int):
            continue
        layers = event.get("moe_layers") or moe_layers
        add_routing(pos, event.get("experts"), event.get("weights"), list(layers))
        found = by_pos.get(pos)
        if found is None:
            continue
        token = found
        if isinstance(event.get("text"), str):
            token.text = event["text"]  # what the server said this token was wins
        if event.get("cached"):
            token.skips.add(SkipKind.CACHED.value)
        if event.get("dropped"):
            token.skips.add(SkipKind.DROPPED.value)
        kv = event.get("kv")
        if isinstance(kv, dict):
            token.kv = kv
            kv_points.append({"pos": pos, **kv})
        heads = event.get("heads_skipped")
        if isinstance(heads, dict):
            token.heads_skipped = {}
            for key, head_list in heads.items():
                layer = _as_int(key)
                if layer is not None and isinstance(head_list, list):
                    token.heads_skipped[layer] = head_list
                    _count(head_skips, layer, head_list)

    tokens.sort(key=lambda t: t.pos)
    tokens_omitted = max(tokens_omitted, last_pos + 1 - DETAIL_MAX_TOKENS)
    kv_points.sort(key=lambda p: p.get("pos", 0))
    return RequestDetail(
        request_id=store.ids[row],
        fields=fields,
        tokens=tokens,
        token_source=token_source,
        moe_layers=moe_layers,
        expert_counts=expert_counts,
        head_skips=head_skips,
        kv_points=kv_points,
        raw_lines=payloads.raw_lines,
        problems=payloads.problems,
        raw_omitted=payloads.raw_omitted,
        tokens_omitted=tokens_omitted,
        cut=cut,
    )


def _as_int(value: Any) -> int | None:
    """A layer or index id as the Extractor's heat counts read it (``heat_index``), else
    None."""
    index = heat_index(value)
    return index if index >= 0 else None


def _count(counts: dict[int, dict[int, int]], layer: int | None, indices: Any) -> None:
    """Count one token's experts (or skipped heads) of one layer, in range only (as the
    Extractor's heat counts: ``HEAT_LAYERS``, ``HEAT_INDICES``)."""
    if layer is None or not 0 <= layer < HEAT_LAYERS or not isinstance(indices, list):
        return
    for value in indices:
        index = _as_int(value)
        if index is not None and 0 <= index < HEAT_INDICES:
            bucket = counts.setdefault(layer, {})
            bucket[index] = bucket.get(index, 0) + 1


def _token_views(
    extractor: ExtractorView,
    fields: dict[str, Any],
    counter: TokenCounter,
    prompt_count: int | None = None,
    cut: tuple[str, ...] = (),
) -> tuple[list[TokenView], str, int]:
    """Token list from ids (decoded) or text (tokenized), prompt first, at most
    ``DETAIL_MAX_TOKENS`` of them; also how many more tokens are known not to be there.
    ``counter``: the tokenizer of the request's file, the one that counted it.
    ``prompt_count``: the prompt's length when it is known (not cut), where the
    completion starts if the prompt's tokens are not in the log; ``cut``: the phases
    the server cut when logging them."""
    tokens: list[TokenView] = []
    sources: list[str] = []  # how the tokens were had, then what they leave out
    notes: list[str] = []
    pos = 0
    omitted = 0
    for phase in ("prompt", "completion"):
        ids = fields.get(f"{phase}_token_ids")
        text = fields.get(phase)
        room = max(0, DETAIL_MAX_TOKENS - pos)
        if phase == "completion" and (notes or "prompt" in cut):
            # The prompt's text was cut: where the completion starts is unknown, so its
            # tokens are not placed (routing and KV data are matched by position).
            notes.append("the completion is not shown: its positions follow a cut prompt")
            break
        if phase == "completion" and pos == 0 and (ids is not None or text is not None):
            if prompt_count is None:
                notes.append(
                    "the completion is not shown: the prompt's length is unknown, so "
                    "where it starts is too"
                )
                break
            pos = prompt_count  # no prompt tokens in the log: the completion follows it
            room = max(0, DETAIL_MAX_TOKENS - pos)
        if isinstance(ids, list) and all(isinstance(i, int) for i in ids):
            source = f"token ids, decoded with {counter.name}"
            omitted += max(0, len(ids) - room)
            ids = ids[:room]
            texts = _decode(counter, ids)
        elif isinstance(text, str) and counter.available:
            # The text past DETAIL_MAX_TEXT_CHARS is not tokenized: its tokens are not
            # counted in ``omitted`` (unknown), but the prefix's extra tokens are, and the
            # source says how much of the text the tokens cover.
            source = f"tokenizer: {counter.name}"
            if len(text) > DETAIL_MAX_TEXT_CHARS:
                notes.append(
                    f"the {phase}'s first {DETAIL_MAX_TEXT_CHARS:,} of {len(text):,} characters"
                )
                text = text[:DETAIL_MAX_TEXT_CHARS]
            ids = counter.encode(text)
            omitted += max(0, len(ids) - room)
            whole = len(ids) <= room
            ids = ids[:room]
            texts = _decode(counter, ids)
            if whole and "".join(texts) != text:  # a tokenizer that normalises: keep it whole
                texts = [text] + [""] * (len(ids) - 1)
        else:
            continue
        if source not in sources:
            sources.append(source)
        if phase in cut:
            notes.append(f"the {phase} as the log cut it (--max-log-len): a prefix")
        for token_id, token_text in zip(ids, texts):
            tokens.append(TokenView(pos=pos, phase=phase, text=token_text, token_id=token_id))
            pos += 1
    return tokens, "; ".join(sources + notes), omitted


def _decode(counter: TokenCounter, ids: list[int]) -> list[str]:
    if not counter.available:
        return [f"<{i}>" for i in ids]
    return counter.decode_tokens(ids)


class DetailCache:
    """LRU of built details, invalidated when the request's row gains lines. Thread-safe
    for one builder at a time (the detail screen builds in one exclusive worker)."""

    def __init__(
        self,
        post: Callable[[RequestDetail], RequestDetail] | None = None,
        size: int = CACHE_SIZE,
    ) -> None:
        """``post``: applied to each detail built (redaction), before it is kept."""
        self._post = post
        self._size = size
        self._items: OrderedDict[int, tuple[int, RequestDetail]] = OrderedDict()
        self._lock = threading.Lock()

    def get(self, state: ExtractorView, row: int) -> RequestDetail:
        """The detail of ``row`` as ``state`` (a frozen copy, on any thread) knows it."""
        line_count = len(state.store.lines_of(row))
        with self._lock:
            hit = self._items.get(row)
            if hit is not None and hit[0] == line_count:
                self._items.move_to_end(row)
                return hit[1]
        detail = build_detail(state, row)
        if self._post is not None:
            detail = self._post(detail)
        with self._lock:
            self._items[row] = (line_count, detail)
            self._items.move_to_end(row)
            while len(self._items) > self._size:
                self._items.popitem(last=False)
        return detail


def request_text(extractor: ExtractorView, row: int) -> dict[str, Any]:
    """Prompt and completion text of one request, re-read from its lines."""
    fields = _read_payloads(extractor, row, raw=False).fields
    return {"prompt": fields.get("prompt"), "completion": fields.get("completion")}


def request_prompt(extractor: ExtractorView, row: int) -> dict[str, Any]:
    """Prompt text and prompt token ids of one request, re-read from its lines (``compare``
    matches requests of two runs by a digest of these)."""
    fields = _read_payloads(extractor, row, raw=False).fields
    return {"prompt": fields.get("prompt"), "prompt_token_ids": fields.get("prompt_token_ids")}
