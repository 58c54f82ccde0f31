"""Lazy request detail: re-read a request's lines, re-parse them, build the token trace.

The store keeps only where a request's lines live; the detail view calls ``load_detail``
when the user drills in, and an LRU cache keeps the last few. Nothing here grows the
store, whatever the number of tokens.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from dataclasses import dataclass, field
from typing import Any

from sparseety_tui.core.views import ExtractorView
from sparseety_tui.events import SkipKind
from sparseety_tui.formats.base import failure_reason
from sparseety_tui.sources.lines import LineGoneError, read_line_at

#: Detail records kept (re-parsing a request with 50k tokens of routing takes ~100 ms).
CACHE_SIZE = 16


@dataclass
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
    raw_lines: list[tuple[str, int, str]]  # (path, offset, text) of every source line
    problems: list[str]  # lines that could not be re-read, and why


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


def _read_payloads(
    extractor: ExtractorView, row: int
) -> tuple[dict[str, Any], list[dict[str, Any]], list[tuple[str, int, str]], list[str]]:
    fields: dict[str, Any] = {}
    token_events: list[dict[str, Any]] = []
    raw_lines: list[tuple[str, int, str]] = []
    problems: list[str] = []
    for location in extractor.store.lines_of(row):
        state = extractor.files[location.file]
        if state.superseded is not None:
            problems.append(
                f"{state.path} @ {location.offset}: not re-read, the file has "
                f"changed since ({state.superseded})"
            )
            continue
        try:
            data = read_line_at(state.path, location.offset, location.length)
        except (OSError, LineGoneError) as exc:
            problems.append(f"{state.path} @ {location.offset}: {exc}")
            continue
        raw_lines.append((state.path, location.offset, data.decode("utf-8", errors="replace")))
        if state.family is None:
            continue
        parser = state.family.new_parser(reference_time=state.reference_time)
        try:
            _kind, event = parser.parse(data)
        except Exception as exc:  # as when ingesting: the line is lost, the rest is shown
            problems.append(
                f"{state.path} @ {location.offset}: {failure_reason('parser error', exc)}"
            )
            continue
        if event is None:
            problems.append(f"{state.path} @ {location.offset}: line no longer parses")
            continue
        event_type, payload = event
        if event_type == "request":
            _merge(fields, dict(payload))
        elif event_type == "token":
            token_events.append(dict(payload))
    return fields, token_events, raw_lines, problems


def _ranges_contain(ranges: Any, pos: int) -> bool:
    if not isinstance(ranges, list):
        return False
    return any(isinstance(r, list) and len(r) == 2 and r[0] <= pos < r[1] for r in ranges)


def build_detail(extractor: ExtractorView, row: int) -> RequestDetail:
    store = extractor.store
    fields, token_events, raw_lines, problems = _read_payloads(extractor, row)
    sparse: dict[str, Any] = fields.get("sparse") or {}
    meta = extractor.meta()
    moe_layers = list(sparse.get("moe_layers") or meta.get("moe_layers") or [])

    tokens, token_source = _token_views(extractor, fields)
    by_pos = {t.pos: t for t in tokens}
    cached = store.columns["cached_tokens"][row]
    prompt_len = sum(1 for t in tokens if t.phase == "prompt")
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
        if not isinstance(experts, list):
            return
        token = by_pos.get(pos)
        if token is None:
            token = TokenView(
                pos=pos, phase="prompt" if pos < prompt_len else "completion", text=""
            )
            by_pos[pos] = token
            tokens.append(token)
        token.experts = experts
        token.weights = weights if isinstance(weights, list) else None
        for j, chosen in enumerate(experts):
            layer = layers[j] if j < len(layers) else j
            if isinstance(chosen, list):
                for expert in chosen:
                    if isinstance(expert, int) and expert >= 0:
                        bucket = expert_counts.setdefault(layer, {})
                        bucket[expert] = bucket.get(expert, 0) + 1

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
                for head in heads:
                    bucket = head_skips.setdefault(int(layers[j]), {})
                    bucket[int(head)] = bucket.get(int(head), 0) + 1

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
            token.heads_skipped = {int(k): v for k, v in heads.items() if isinstance(v, list)}
            for layer, head_list in token.heads_skipped.items():
                for head in head_list:
                    bucket = head_skips.setdefault(layer, {})
                    bucket[int(head)] = bucket.get(int(head), 0) + 1

    tokens.sort(key=lambda t: t.pos)
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
        raw_lines=raw_lines,
        problems=problems,
    )


def _token_views(extractor: ExtractorView, fields: dict[str, Any]) -> tuple[list[TokenView], str]:
    """Token list from ids (decoded) or text (tokenized), prompt first."""
    tokens: list[TokenView] = []
    source = ""
    pos = 0
    for phase in ("prompt", "completion"):
        ids = fields.get(f"{phase}_token_ids")
        text = fields.get(phase)
        if isinstance(ids, list) and all(isinstance(i, int) for i in ids):
            source = f"token ids, decoded with {extractor.tokens.name}"
            texts = _decode(extractor, ids)
        elif isinstance(text, str) and extractor.tokens.available:
            ids = extractor.tokens.encode(text)
            source = f"tokenizer: {extractor.tokens.name}"
            texts = _decode(extractor, ids)
            if "".join(texts) != text:  # a tokenizer that normalises: keep the text whole
                texts = [text] + [""] * (len(ids) - 1)
        else:
            continue
        for token_id, token_text in zip(ids, texts):
            tokens.append(TokenView(pos=pos, phase=phase, text=token_text, token_id=token_id))
            pos += 1
    return tokens, source


def _decode(extractor: ExtractorView, ids: list[int]) -> list[str]:
    if not extractor.tokens.available:
        return [f"<{i}>" for i in ids]
    return extractor.tokens.decode_tokens(ids)


class DetailCache:
    """LRU of built details, invalidated when the request's row gains lines. Thread-safe
    for one builder at a time (the detail screen builds in one exclusive worker)."""

    def __init__(self, size: int = CACHE_SIZE) -> None:
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
        with self._lock:
            self._items[row] = (line_count, detail)
            self._items.move_to_end(row)
            while len(self._items) > self._size:
                self._items.popitem(last=False)
        return detail


def request_text(extractor: ExtractorView, row: int) -> dict[str, Any]:
    """Prompt and completion text of one request, re-read from its lines."""
    fields, _tokens, _raw, _problems = _read_payloads(extractor, row)
    return {"prompt": fields.get("prompt"), "completion": fields.get("completion")}
