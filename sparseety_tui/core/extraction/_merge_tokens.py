"""Per-token data merged into the store: a request record's ``sparse`` details (routing,
KV selection summaries, head masks) and per-token events become row extras and heat
counts (``Merger``'s part for them; see ``core.extraction._merge`` for the rules of a
trace read again)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeGuard

from sparseety_tui.core.store import (
    STATE_CODE,
    UNKNOWN_MODEL,
    HeatByModel,
    HeatCounts,
    RequestStore,
    RowExtras,
    heat_for,
    heat_index,
)
from sparseety_tui.events import TokenPayload

#: The largest count an int32 column holds; a line claiming more is taken as unknown.
COUNT_MAX = 2**31 - 1


def is_count(value: Any) -> TypeGuard[int]:
    return type(value) is int and 0 <= value <= COUNT_MAX


def _add_heat(heat: HeatCounts, layer: Any, index: Any, n: int = 1) -> None:
    heat.add(heat_index(layer), heat_index(index), n)


class TokenMerge:
    """The per-token part of ``Merger`` (its attributes are the merger's)."""

    store: RequestStore
    dropped: HeatCounts
    head_skips: HeatCounts
    expert_by_model: HeatByModel
    dropped_by_model: HeatByModel
    heat_fallback: int
    lineage: list[int]

    def _row_for(self, request_id: str, file: int, offset: int, length: int, line_no: int) -> int:
        store = self.store
        row = store.ids.find(request_id)
        if row is None:
            return store.new_row(request_id, file, offset, length, line_no)
        if offset >= 0:
            store.add_line(row, file, offset, length)
        return row

    def _on_sparse_detail(
        self, sparse: dict[str, Any], row: int, meta: Mapping[str, Any], file: int
    ) -> None:
        """Per-token sparse data inside a request record: routing, drops, KV, head masks."""
        if not (
            any(type(sparse.get(key)) is list for key in ("routing", "dropped", "kv"))
            or type(sparse.get("head_masks")) is dict
        ):
            return  # nothing per token (and no extras made for nothing)
        if not self._first_reading(self.store.extras_for(row), file, None):
            return
        layers = sparse.get("moe_layers") or meta.get("moe_layers")
        model = self._model_of(row, meta)
        routing = sparse.get("routing")
        if type(routing) is list:
            load = heat_for(self.expert_by_model, model)
            self._on_routing(routing, layers, self.store.extras_for(row), load)
        dropped = sparse.get("dropped")
        if type(dropped) is list:
            extras = self.store.extras_for(row)
            by_model = heat_for(self.dropped_by_model, model)
            for item in dropped:
                if type(item) is list and len(item) == 3:
                    extras.dropped_slots += 1
                    _add_heat(self.dropped, item[1], item[2])
                    _add_heat(by_model, item[1], item[2])
        kv = sparse.get("kv")
        if type(kv) is list:
            extras = self.store.extras_for(row)
            for summary in kv:
                if type(summary) is dict:
                    self._on_kv(summary, extras)
        masks = sparse.get("head_masks")
        if type(masks) is dict:
            self._on_head_masks(masks, row)

    def _model_of(self, row: int, meta: Mapping[str, Any]) -> str:
        """Whose experts a request's routing counts: the model the request names, else the
        one its file names (a trace header, a server's start-up line), else unknown."""
        store = self.store
        code: int = store.columns["model"][row]
        if code > 0:
            name: str = store.models[code]
            return name
        self.heat_fallback += 1
        named = meta.get("model") or meta.get("model_path")
        return named if type(named) is str and named else UNKNOWN_MODEL

    def _on_routing(
        self, routing: list[Any], layers: Any, extras: RowExtras, per_model: HeatCounts
    ) -> None:
        # The heat-map row of each column: its layer id, else the column number.
        layer_of = [heat_index(x) for x in layers] if type(layers) is list else []
        for token in routing:
            if type(token) is not list:
                continue
            extras.routed_tokens += 1
            for j, experts in enumerate(token):
                if type(experts) is not list:
                    continue
                real = [e for e in experts if is_count(e)]
                if not real:
                    continue  # a dense layer's placeholder row
                extras.routing_rows += 1
                extras.routed_slots += len(real)
                layer = layer_of[j] if j < len(layer_of) else j
                # One call a routing row, not a slot: millions of slots in a big trace.
                per_model.add_row(layer, real)
            extras.moe_layers = len(token)

    def _on_kv(self, summary: dict[str, Any], extras: RowExtras) -> None:
        visible, kept = summary.get("visible"), summary.get("kept")
        if not is_count(visible) or not is_count(kept) or kept > visible:
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
        if type(skipped) is not list or not is_count(heads) or heads <= 0:
            return
        extras = self.store.extras_for(row)
        prompt = max(self.store.prompt_tokens[row], 0)
        completion = max(self.store.completion_tokens[row], 0)
        tokens = prompt + completion or 1
        for j, head_list in enumerate(skipped):
            if type(head_list) is not list:
                continue
            layer = heat_index(layers[j]) if type(layers) is list and j < len(layers) else j
            extras.head_rows += tokens
            extras.head_slots += heads * tokens
            extras.skipped_head_slots += len(head_list) * tokens
            for head in head_list:
                _add_heat(self.head_skips, layer, head, tokens)

    def _on_token(
        self,
        p: TokenPayload,
        file: int,
        meta: Mapping[str, Any],
        offset: int,
        length: int,
        line_no: int,
    ) -> None:
        rid = p["request_id"]
        if type(rid) is not str:
            raise TypeError(f"request_id is a {type(rid).__name__}, not a string")
        row = self._row_for(rid, file, offset, length, line_no)
        extras = self.store.extras_for(row)  # from here on every value is checked as used
        if not self._first_reading(extras, file, p.get("pos")):
            return
        experts = p.get("experts")
        dropped = p.get("dropped")
        model = self._model_of(row, meta) if type(experts) is list or type(dropped) is list else ""
        if type(experts) is list:
            layers = p.get("moe_layers") or meta.get("moe_layers")
            self._on_routing([experts], layers, extras, heat_for(self.expert_by_model, model))
        kv = p.get("kv")
        if type(kv) is dict:
            self._on_kv(kv, extras)
        heads = p.get("heads_skipped")
        num_heads = p.get("num_heads") or meta.get("total_attention_heads")
        if type(heads) is dict and is_count(num_heads):
            for layer_key, head_list in heads.items():
                if type(head_list) is not list:
                    continue
                extras.head_rows += 1
                extras.head_slots += num_heads
                extras.skipped_head_slots += len(head_list)
                for head in head_list:
                    _add_heat(self.head_skips, layer_key, head)
        if type(dropped) is list:
            by_model = heat_for(self.dropped_by_model, model)
            for item in dropped:
                if type(item) is list and len(item) == 2:
                    extras.dropped_slots += 1
                    _add_heat(self.dropped, item[0], item[1])
                    _add_heat(by_model, item[0], item[1])
        if self.store.state[row] == 0:
            self.store.state[row] = STATE_CODE["running"]

    def _first_reading(self, extras: RowExtras, file: int, pos: Any) -> bool:
        """Whether per-token data of ``file`` for this row is read for the first time (not
        a later incarnation of the same path repeating what an earlier one gave).

        ``pos``: the token event's position; None for per-token data in a request record,
        which is written once per request (docs/trace-format.md §4)."""
        last = extras.token_file
        if file > last:
            if last >= 0 and self.lineage[file] == self.lineage[last]:
                if pos is None:
                    return False
                extras.before_pos = extras.max_pos  # what earlier incarnations counted
            extras.token_file = file
        if type(pos) is int:
            if pos <= extras.before_pos and file == extras.token_file:
                return False
            extras.max_pos = max(extras.max_pos, pos)
        return True
