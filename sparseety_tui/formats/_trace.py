"""The sparseety JSONL trace format, v1 (spec: docs/trace-format.md).

One JSON object per line. Three record types, told apart by ``"type"``:

- request (the default): request-level fields, e.g.
  ``{"request_id": "req-001", "prompt": "Hello", "completion": "Hi!", "model": "m",
  "sparse": {"topk_experts": 2, "total_experts": 8, "skipped_attention_heads": 4}}``
- ``"type": "token"``: one streamed per-token event, merged into its request by id, e.g.
  ``{"type": "token", "request_id": "req-001", "pos": 7, "experts": [[1, 5], [0, 2]]}``
- ``"type": "meta"``: a header describing the model for the whole file.

The decoded object *is* the event payload (field names are the event vocabulary), so the
hot path is ``orjson.loads`` plus a few key checks.
"""

from __future__ import annotations

from collections.abc import Callable
from operator import itemgetter
from typing import Any, cast

import orjson

from sparseety_tui.batch import SPARSE_SUMMARY_KEYS, Batch
from sparseety_tui.events import (
    LineKind,
    MetaPayload,
    ParsedLine,
    RequestPayload,
    SparseInfo,
    TokenPayload,
)
from sparseety_tui.formats._base import note_ignored
from sparseety_tui.formats._generic import AnyLinesParser
from sparseety_tui.formats._lenient_json import contains_unrepresentable, loads_lenient
from sparseety_tui.formats._timestamps import SECONDS_BELOW, parse_timestamp, timestamp_problem
from sparseety_tui.formats._trace_native import BATCH_SCANNER

_TS_FIELDS = ("ts", "received_ts", "first_token_ts", "finished_ts")
#: Why a field whose number no float holds is ignored.
NOT_REPRESENTABLE = "number not representable"


def _fields(payload: Any, *aliases: str) -> frozenset[str]:
    """The field names of a payload ``TypedDict``, and the aliases the parser maps."""
    return frozenset(payload.__required_keys__ | payload.__optional_keys__ | set(aliases))


_REQUEST_FIELDS = _fields(RequestPayload, "id", "token_ids", "experts", "expert_layers")
_SPARSE_FIELDS = _fields(SparseInfo)
_TOKEN_FIELDS = _fields(TokenPayload)
_META_FIELDS = _fields(MetaPayload)


def _alias_request(obj: dict[str, Any]) -> RequestPayload:
    """Map accepted aliases onto the canonical names, in place (cheap when none apply)."""
    if "token_ids" in obj and "completion_token_ids" not in obj:
        # Common in user traces (and shared/tools/gen_logs.py): ids of the generated tokens.
        obj["completion_token_ids"] = obj.pop("token_ids")
    if "experts" in obj:
        # Top-level per-generated-token routing: {"expert_layers": [...], "experts": [...]}.
        sparse = obj.setdefault("sparse", {})
        if isinstance(sparse, dict):
            sparse.setdefault("routing", obj.pop("experts"))
            if "expert_layers" in obj:
                sparse.setdefault("moe_layers", obj.pop("expert_layers"))
            prompt_tokens = obj.get("prompt_tokens")
            if isinstance(prompt_tokens, int):
                sparse.setdefault("routing_start", prompt_tokens)
    return cast(RequestPayload, obj)


class TraceParser(AnyLinesParser):
    """Per-file parser; stateless apart from the protocol's bookkeeping and the text lines
    pasted between records (a traceback, an error line: ``formats._generic``)."""

    def __init__(self) -> None:
        super().__init__()
        self._tb_open = self._any.tb.open_by_key

    def _unparsed(self, reason: str) -> ParsedLine:
        self.last_reason = reason
        return LineKind.UNPARSED, None

    def _times(self, obj: dict[str, Any], keys: tuple[str, ...]) -> None:
        """Timestamps as unix seconds, in place; one that is none, or out of range, is
        ignored (and counted). A float in range is already unix seconds: kept as it is."""
        for key in keys:
            if key in obj:
                value = obj[key]
                if type(value) is float and 0.0 <= value < SECONDS_BELOW:
                    continue  # the common case: unix seconds
                parsed = parse_timestamp(value)
                if parsed is not None:
                    obj[key] = parsed
                elif value is not None:
                    del obj[key]
                    note_ignored(self.ignored, key, timestamp_problem(value))
                else:
                    del obj[key]

    def _drop_unrepresentable(self, obj: dict[str, Any], fields: frozenset[str]) -> None:
        """The spec's per-field rule for numbers no float holds: the field (of the record,
        or of its ``sparse`` object) that holds one is read as ``null``, the rest of the
        line is kept. Only the format's own fields are counted: the names of others are
        the log's, and the tool ignores those fields anyway."""
        for key, value in obj.items():
            if key == "sparse" and type(value) is dict:
                for inner, inner_value in value.items():
                    if contains_unrepresentable(inner_value):
                        value[inner] = None
                        if inner in _SPARSE_FIELDS:
                            note_ignored(self.ignored, f"sparse.{inner}", NOT_REPRESENTABLE)
            elif contains_unrepresentable(value):
                obj[key] = None
                if key in fields:
                    note_ignored(self.ignored, key, NOT_REPRESENTABLE)

    def parse(self, line: bytes) -> ParsedLine:
        if self._held or self._tb_open:  # after text lines (formats._generic): rare
            return self._any.tb.settle_held(self._after_text, line)
        return self._record(line)

    def _after_text(self, line: bytes) -> ParsedLine:
        parsed = self._record(line)
        if self._tb_open and parsed[0] not in (LineKind.TRACEBACK, LineKind.BLANK):
            self._any.tb.end_all()  # a record: nothing after it continues a traceback
        return parsed

    def _record(self, line: bytes) -> ParsedLine:
        try:
            obj = orjson.loads(line)
            lenient = False
        except orjson.JSONDecodeError as exc:
            if not line.strip():
                self._any.tb.blank()
                return LineKind.BLANK, None
            # A number orjson cannot hold costs its field only (docs/trace-format.md §1).
            obj = loads_lenient(line)
            if obj is None:
                # Text pasted between records: a traceback, an error or access line?
                text = self._any.parse(line)
                if text is not None:
                    return text
                return self._unparsed(f"invalid JSON: {exc}")
            lenient = True
        if type(obj) is not dict:
            return self._unparsed(f"JSON {type(obj).__name__}, not an object")
        record_type = obj.get("type")
        if record_type is None or record_type == "request":
            return self._request_record(obj, lenient)
        if record_type == "token":
            if type(obj.get("request_id")) is not str:
                return self._unparsed("token event without a string request_id")
            if lenient:
                self._drop_unrepresentable(obj, _TOKEN_FIELDS)
            self._times(obj, ("ts",))
            return LineKind.TRACE_TOKEN, ("token", cast(TokenPayload, obj))
        if record_type == "meta":
            if lenient:
                self._drop_unrepresentable(obj, _META_FIELDS)
            return LineKind.TRACE_META, ("meta", cast(MetaPayload, obj))
        return self._unparsed(f"unknown record type {str(record_type)[:40]!r}")

    def _request_record(self, obj: dict[str, Any], lenient: bool) -> ParsedLine:
        """A request record: its id as a non-empty string (from ``id`` when it has no
        ``request_id``, or from an integer id), its times read, its fields aliased."""
        rid = obj.get("request_id")
        if type(rid) is not str:
            if rid is None and type(obj.get("id")) is str:
                obj["request_id"] = rid = obj["id"]
            elif isinstance(rid, int) and not isinstance(rid, bool):
                obj["request_id"] = rid = str(rid)
            else:
                return self._unparsed("JSON object without a string request_id")
        if not rid:
            return self._unparsed("empty request_id")
        if lenient:
            self._drop_unrepresentable(obj, _REQUEST_FIELDS)
        self._times(obj, _TS_FIELDS)
        return LineKind.TRACE_REQUEST, ("request", _alias_request(obj))


_REQUEST_HINTS = (b'"request_id"', b'"type"')


class TraceFamily:
    name = "trace"
    description = "sparseety JSONL trace v1 (docs/trace-format.md)"

    def sniff(self, lines: list[bytes]) -> float:
        nonblank = objects = hinted = 0
        for line in lines:
            stripped = line.strip()
            if not stripped:
                continue
            nonblank += 1
            if stripped.startswith(b"{"):  # the sniffed head of a long line may be cut
                objects += 1
                if any(hint in stripped for hint in _REQUEST_HINTS):
                    hinted += 1
        if not objects:
            return 0.0
        # JSON lines that name request ids are ours; bare JSON bodies (an OpenAI usage
        # object pasted into a server log) are only weak evidence.
        if hinted:
            return 0.95 * hinted / nonblank
        return 0.3 * objects / nonblank

    #: No state across lines (a meta header is merged by the Extractor, not carried by
    #: the parser): a split read may start at any line.
    range_start = None
    scan_server = None  # its records take scan_requests

    def new_parser(self, *, reference_time: float | None = None) -> TraceParser:
        return TraceParser()  # its timestamps carry the year

    def decode_simple_block(self, lines: list[bytes]) -> Batch | None:
        """The pure-Python block path (formats._trace_block), imported when first used:
        it uses numpy, which commands that read no records never load."""
        from sparseety_tui.formats._trace_block import block_batch

        return block_batch(lines)

    @property
    def scan_requests(self) -> Callable[[bytes, int, int], Batch] | None:
        """The batch commands' chunk scanner (native/scan.c), None when it was not built."""
        return BATCH_SCANNER


FAMILY = TraceFamily()


# -- bulk decoding ---------------------------------------------------------------------
#
# A request log of millions of count-only records spends most of its time in per-line
# Python. For a block of records that all have the same keys, every one of them a field
# the bulk path handles, ``decode_simple_block`` hands the Extractor one tuple of values
# per field (transposed in C with itemgetter and zip), and formats/_trace_block.py builds
# typed columns with numpy, a batch for core's applier. Anything else (a missing or extra key, per-token data, text to tokenize,
# a bad line) returns None and the block takes the per-line path, unchanged.

#: Request fields the bulk path handles (or the core ignores).
BULK_REQUEST_KEYS = frozenset(
    {
        "request_id",
        "ts",
        "model",
        "prompt_tokens",
        "completion_tokens",
        "cached_tokens",
        "latency_s",
        "ttft_s",
        "sparse",
        "state",
        "received_ts",
        "finished_ts",
        "cache_hit",
        "finish_reason",
    }
)


def _same_keys_columns(
    records: list[Any], allowed: frozenset[str]
) -> dict[str, tuple[Any, ...]] | None:
    """Field -> values if every record is a dict with exactly the first one's keys."""
    first = records[0]
    if type(first) is not dict:
        return None
    keys = tuple(first)
    if not keys or not allowed.issuperset(keys):
        return None
    getter = itemgetter(*keys)
    try:
        rows = list(map(getter, records))
    except (KeyError, TypeError, AttributeError):
        return None  # a record lacks a key, or is not a dict
    if sum(map(len, records)) != len(records) * len(keys):
        return None  # some record has extra keys
    if len(keys) == 1:
        return {keys[0]: tuple(rows)}
    return dict(zip(keys, zip(*rows)))


def decode_simple_block(lines: list[bytes]) -> dict[str, tuple[Any, ...]] | None:
    """Columns of a block of same-shaped request records, or None (per-line path).

    Keys of the nested ``sparse`` object come back as ``"sparse.<key>"``.
    """
    loads = orjson.loads
    try:
        records = [loads(line) for line in lines]
    except orjson.JSONDecodeError:
        return None
    if not records:
        return None
    columns = _same_keys_columns(records, BULK_REQUEST_KEYS)
    if columns is None:
        return None
    ids = columns.get("request_id", ())
    if set(map(type, ids)) != {str}:
        return None
    sparse = columns.pop("sparse", None)
    if sparse is not None:
        inner = _same_keys_columns(list(sparse), SPARSE_SUMMARY_KEYS)
        if inner is None:
            return None
        for key, values in inner.items():
            columns[f"sparse.{key}"] = values
    return columns
