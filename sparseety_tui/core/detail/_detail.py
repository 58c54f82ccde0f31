"""Lazy request detail: re-read a request's lines, re-parse them, build the token trace.

The store keeps only where a request's lines live; the detail view calls ``build_detail``
when the user drills in, and an LRU cache keeps the last few. Nothing here grows the
store, whatever the number of tokens. Re-reading the lines is ``_reread``'s; here the
fields they give become the token trace, its skips and its heat maps.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from sparseety_tui.core.detail._reread import SourceText, read_payloads
from sparseety_tui.core.store import (
    HEAT_INDICES,
    HEAT_LAYERS,
    LOWER_BOUND_SOURCES,
    ColumnView,
    ExtractorView,
    heat_index,
)
from sparseety_tui.core.tokens import TokenCounter, TokenizerError
from sparseety_tui.events import SkipKind

#: Detail records kept (re-parsing a request with a long routed trace is the slow part of
#: showing it again).
CACHE_SIZE = 16

#: Tokens a detail holds at most. Each ``TokenView`` costs a few hundred bytes and the
#: trace lays every one out on the UI thread, so a prompt of a million tokens would cost
#: memory and seconds; the bound covers a 128k context. Counts and heatmaps still cover
#: all tokens.
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


def _ranges_contain(ranges: Any, pos: int) -> bool:
    if not isinstance(ranges, list):
        return False
    return any(isinstance(r, list) and len(r) == 2 and r[0] <= pos < r[1] for r in ranges)


def build_detail(extractor: ExtractorView, row: int) -> RequestDetail:
    """The detail of ``row``: its lines re-read, its fields merged, its token trace with
    the skips, routing, KV summaries and head masks its lines give."""
    store = extractor.store
    payloads = read_payloads(extractor, row)
    fields = payloads.fields
    sparse: dict[str, Any] = fields.get("sparse") or {}
    meta = extractor.meta()
    moe_layers = list(sparse.get("moe_layers") or meta.get("moe_layers") or [])

    columns = store.columns
    cut = _cut_phases(columns, row)
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

    trace = _Trace(tokens, tokens_omitted, prompt_count)
    trace.mark_skipped_ranges(sparse, columns["cached_tokens"][row])
    trace.add_routing_segments(sparse.get("routing_segments", []), moe_layers)
    trace.mark_dropped(sparse.get("dropped") or [])
    trace.add_kv_summaries(sparse.get("kv") or [])
    trace.count_head_masks(sparse.get("head_masks"))
    for event in sorted(payloads.token_events, key=lambda e: e.get("pos", 0)):
        trace.add_token_event(event, moe_layers)

    tokens.sort(key=lambda t: t.pos)
    tokens_omitted = max(tokens_omitted, trace.last_pos + 1 - DETAIL_MAX_TOKENS)
    trace.kv_points.sort(key=lambda p: p.get("pos", 0))
    return RequestDetail(
        request_id=store.ids[row],
        fields=fields,
        tokens=tokens,
        token_source=token_source,
        moe_layers=moe_layers,
        expert_counts=trace.expert_counts,
        head_skips=trace.head_skips,
        kv_points=trace.kv_points,
        raw_lines=payloads.raw_lines,
        problems=payloads.problems,
        raw_omitted=payloads.raw_omitted,
        tokens_omitted=tokens_omitted,
        cut=cut,
    )


def _cut_phases(columns: Mapping[str, ColumnView], row: int) -> tuple[str, ...]:
    """The phases whose counts are lower bounds: the server cut their logged text or ids."""
    return tuple(
        phase
        for phase in ("prompt", "completion")
        if columns[f"{phase}_source"][row] in LOWER_BOUND_SOURCES
    )


class _Trace:
    """A request's token trace as its per-token data is laid on it: the tokens by
    position (a position with routing but no listed token gets one, up to
    ``DETAIL_MAX_TOKENS``), and the expert and head-skip counts and KV summaries of all
    positions, shown or not."""

    def __init__(
        self, tokens: list[TokenView], tokens_omitted: int, prompt_count: int | None
    ) -> None:
        self.tokens = tokens
        self.by_pos = {t.pos: t for t in tokens}
        #: The last token position known (listed, omitted, or with routing).
        self.last_pos = len(tokens) - 1 + tokens_omitted
        listed = sum(1 for t in tokens if t.phase == "prompt")
        # Positions below the prompt's length are prompt tokens even when none is listed
        # (routing for a record with completion ids only: it was shown as more completion).
        self.prompt_len = listed if listed or prompt_count is None else prompt_count
        self.expert_counts: dict[int, dict[int, int]] = {}
        self.head_skips: dict[int, dict[int, int]] = {}
        self.kv_points: list[dict[str, Any]] = []

    def mark_skipped_ranges(self, sparse: dict[str, Any], cached: int) -> None:
        """Mark the listed tokens the prefix cache served (prompt positions below
        ``cached``) and those in the request's evicted or masked position ranges."""
        evicted, masked = sparse.get("evicted_ranges"), sparse.get("masked_ranges")
        for token in self.tokens:
            if token.phase == "prompt" and 0 <= token.pos < cached:
                token.skips.add(SkipKind.CACHED.value)
            if _ranges_contain(evicted, token.pos):
                token.skips.add(SkipKind.EVICTED.value)
            if _ranges_contain(masked, token.pos):
                token.skips.add(SkipKind.MASKED.value)

    def add_routing(self, pos: int, experts: Any, weights: Any, layers: list[int]) -> None:
        """One position's experts (``[layer][k]``) and weights: on its token, made if the
        position has none yet, and counted in the expert heat map."""
        if not isinstance(experts, list):
            return
        self.last_pos = max(self.last_pos, pos)
        token = self.by_pos.get(pos)
        if token is None and pos < DETAIL_MAX_TOKENS:
            token = TokenView(
                pos=pos, phase="prompt" if pos < self.prompt_len else "completion", text=""
            )
            self.by_pos[pos] = token
            self.tokens.append(token)
        if token is not None:
            token.experts = experts
            token.weights = weights if isinstance(weights, list) else None
        for j, chosen in enumerate(experts):
            layer = _as_int(layers[j]) if j < len(layers) else j
            if isinstance(chosen, list):  # expert ids are ints (as the Extractor takes them)
                _count(self.expert_counts, layer, [e for e in chosen if type(e) is int])

    def add_routing_segments(self, segments: Any, moe_layers: list[int]) -> None:
        """The routing rows each request line gave, from the position it starts at."""
        for start, routing, weights, layers in segments:
            segment_layers = list(layers) if isinstance(layers, list) else moe_layers
            for i, experts in enumerate(routing):
                w = weights[i] if isinstance(weights, list) and i < len(weights) else None
                self.add_routing(start + i, experts, w, segment_layers)

    def mark_dropped(self, dropped: Any) -> None:
        """Mark the tokens an expert's capacity dropped (``[pos, layer, expert]`` items)."""
        for item in dropped:
            if isinstance(item, list) and len(item) == 3 and item[0] in self.by_pos:
                self.by_pos[item[0]].skips.add(SkipKind.DROPPED.value)

    def add_kv_summaries(self, summaries: Any) -> None:
        """The request's per-token KV summaries: kept, and each on its token."""
        for summary in summaries:
            if isinstance(summary, dict):
                self.kv_points.append(summary)
                pos = summary.get("pos")
                if isinstance(pos, int) and pos in self.by_pos:
                    self.by_pos[pos].kv = summary

    def count_head_masks(self, masks: Any) -> None:
        """The request's skipped heads per layer, counted in the head-skip heat map."""
        if not isinstance(masks, dict) or not isinstance(masks.get("skipped"), list):
            return
        layers = masks.get("layers") or list(range(len(masks["skipped"])))
        for j, heads in enumerate(masks["skipped"]):
            if isinstance(heads, list) and j < len(layers):
                _count(self.head_skips, _as_int(layers[j]), heads)

    def add_token_event(self, event: dict[str, Any], moe_layers: list[int]) -> None:
        """One per-token line (a trace's token record): its routing, and on its token
        its text, skips, KV summary and skipped heads."""
        pos = event.get("pos")
        if not isinstance(pos, int):
            return
        layers = event.get("moe_layers") or moe_layers
        self.add_routing(pos, event.get("experts"), event.get("weights"), list(layers))
        token = self.by_pos.get(pos)
        if token is None:
            return
        if isinstance(event.get("text"), str):
            token.text = event["text"]  # what the server said this token was wins
        if event.get("cached"):
            token.skips.add(SkipKind.CACHED.value)
        if event.get("dropped"):
            token.skips.add(SkipKind.DROPPED.value)
        kv = event.get("kv")
        if isinstance(kv, dict):
            token.kv = kv
            self.kv_points.append({"pos": pos, **kv})
        heads = event.get("heads_skipped")
        if isinstance(heads, dict):
            self._add_heads_skipped(token, heads)

    def _add_heads_skipped(self, token: TokenView, heads: dict[Any, Any]) -> None:
        """A token's skipped heads by layer: on the token, and counted in the heat map."""
        token.heads_skipped = {}
        for key, head_list in heads.items():
            layer = _as_int(key)
            if layer is not None and isinstance(head_list, list):
                token.heads_skipped[layer] = head_list
                _count(self.head_skips, layer, head_list)


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
    fields = read_payloads(extractor, row, raw=False).fields
    return {"prompt": fields.get("prompt"), "completion": fields.get("completion")}


def request_prompt(extractor: ExtractorView, row: int) -> dict[str, Any]:
    """Prompt text and prompt token ids of one request, re-read from its lines (``compare``
    matches requests of two runs by a digest of these)."""
    fields = read_payloads(extractor, row, raw=False).fields
    return {"prompt": fields.get("prompt"), "prompt_token_ids": fields.get("prompt_token_ids")}
