"""RequestStore: one compact row per request, O(1) lookup by id, lines located not kept.

Columns are ``array.array``s (a few bytes per request each, no per-row Python object);
unknown is ``-1`` in integer columns and NaN in float columns, and becomes ``null`` at the
edges. Heavy per-request data (text, token ids, per-token routing) is never stored: each
row keeps where its lines live (file index, byte offset, length) and the detail view
re-reads and re-parses them on demand. Rows that have per-token data or more than one
line get a small ``RowExtras`` side record; request-level-only rows (the common case in
big request logs) do not.

Only the Extractor writes (one writer). Readers take ``version`` to tell whether anything
changed, and ``numeric_view()`` for vectorised totals.
"""

from __future__ import annotations

import math
from array import array
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from sparseety_tui.core.idindex import EncodedIds, IdIndex
from sparseety_tui.events import RequestState

if TYPE_CHECKING:
    import numpy as np

UNKNOWN = -1
NAN = math.nan

STATES: tuple[str, ...] = (
    "unknown",
    RequestState.RECEIVED.value,
    RequestState.RUNNING.value,
    RequestState.FINISHED.value,
    RequestState.ABORTED.value,
    RequestState.FAILED.value,
)
STATE_CODE: dict[str, int] = {name: code for code, name in enumerate(STATES)}

# Where a token count came from, so outputs can say so.
COUNT_UNKNOWN, COUNT_REPORTED, COUNT_FROM_IDS, COUNT_TOKENIZER = 0, 1, 2, 3
COUNT_SOURCES = ("unknown", "reported", "token_ids", "tokenizer")

KV_SKIP_NONE, KV_SKIP_EVICTED, KV_SKIP_MASKED = 0, 1, 2
#: cache_hit column: 0 not said, 1 no hit, 2 a hit (a flag with no token count)
CACHE_HIT_REPORTED = 2
KV_SKIP_NAMES = {"evicted": KV_SKIP_EVICTED, "masked": KV_SKIP_MASKED}

# (name, typecode). Integer columns hold -1 for unknown, float columns NaN.
INT_COLUMNS = (
    "prompt_tokens",
    "completion_tokens",
    "cached_tokens",
    "topk_experts",
    "total_experts",
    "skipped_heads",
    "total_heads",
    "kv_kept",
    "kv_total",
    "line_no",  # 1-based line number of the request's first line in its file
)
FLOAT32_COLUMNS = ("latency_s", "ttft_s")
FLOAT64_COLUMNS = ("received_ts", "finished_ts")
BYTE_COLUMNS = ("state", "kv_skip", "cache_hit", "prompt_source", "completion_source")
SHORT_COLUMNS = ("model", "file")


#: The columns a request line can set, in the order ``Extractor._request_values`` gives
#: them: every column but ``line_no`` and ``file``, which are set once, from where the
#: first line was read.
ROW_LAYOUT = tuple(
    name
    for name in (*INT_COLUMNS, *FLOAT32_COLUMNS, *FLOAT64_COLUMNS, *BYTE_COLUMNS, *SHORT_COLUMNS)
    if name not in ("line_no", "file")
)


@dataclass
class RowExtras:
    """Per-token aggregates and extra line locations for one request (rare rows only)."""

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
    # (file, offset, length) of every line after the first
    more_lines: list[tuple[int, int, int]] = field(default_factory=list)


@dataclass(frozen=True)
class LineLocation:
    file: int
    offset: int
    length: int


class RequestStore:
    def __init__(self) -> None:
        # Row -> id (``ids[row]``) and id -> row (``index.get(id)``): one compact object.
        self.ids = IdIndex()
        self.index = self.ids
        self.models: list[str] = [""]
        self._model_code: dict[str, int] = {"": 0}
        self.columns: dict[str, array[Any]] = {}
        for name in INT_COLUMNS:
            self.columns[name] = array("i")
        for name in FLOAT32_COLUMNS:
            self.columns[name] = array("f")
        for name in FLOAT64_COLUMNS:
            self.columns[name] = array("d")
        for name in BYTE_COLUMNS:
            self.columns[name] = array("B")
        for name in SHORT_COLUMNS:
            self.columns[name] = array("H")
        self.offset: array[int] = array("q")
        self.length: array[int] = array("I")
        self.extras: dict[int, RowExtras] = {}
        self.version = 0
        self._row_columns = [self.columns[name] for name in ROW_LAYOUT]
        self._row_appenders = [column.append for column in self._row_columns]
        self._append_line_no = self.columns["line_no"].append
        self._append_file = self.columns["file"].append
        # Attribute shortcuts for the hot path.
        c = self.columns
        self.prompt_tokens = c["prompt_tokens"]
        self.completion_tokens = c["completion_tokens"]
        self.cached_tokens = c["cached_tokens"]
        self.latency_s = c["latency_s"]
        self.ttft_s = c["ttft_s"]
        self.state = c["state"]

    def __len__(self) -> int:
        return len(self.ids)

    def model_code(self, name: str) -> int:
        code = self._model_code.get(name)
        if code is None:
            code = len(self.models)
            if code > 0xFFFF:
                code = 0  # beyond 65,535 distinct model names the name is not kept
            else:
                self.models.append(name)
                self._model_code[name] = code
        return code

    def new_row(self, request_id: str, file: int, offset: int, length: int, line_no: int) -> int:
        """Append an all-unknown row for ``request_id`` and return its index."""
        row = self.ids.append(request_id)
        for name in INT_COLUMNS:
            self.columns[name].append(UNKNOWN)
        self.columns["line_no"][row] = line_no
        for name in FLOAT32_COLUMNS:
            self.columns[name].append(NAN)
        for name in FLOAT64_COLUMNS:
            self.columns[name].append(NAN)
        for name in BYTE_COLUMNS:
            self.columns[name].append(0)
        self.columns["model"].append(0)
        self.columns["file"].append(file)
        self.offset.append(offset)
        self.length.append(length)
        return row

    def append_row(
        self,
        request_id: str,
        values: tuple[Any, ...],
        file: int,
        offset: int,
        length: int,
        line_no: int,
    ) -> int:
        """Append a row from values in ``ROW_LAYOUT`` order (the Extractor's hot path)."""
        row = self.ids.append(request_id)
        for append, value in zip(self._row_appenders, values):
            append(value)
        self._append_line_no(line_no)
        self._append_file(file)
        self.offset.append(offset)
        self.length.append(length)
        return row

    def extend_rows(
        self,
        request_ids: list[str] | EncodedIds,
        columns: dict[str, Any],
        file: int,
        offsets: Any,
        lengths: Any,
        line_nos: Any,
    ) -> None:
        """Append many new rows at once; ``columns`` are numpy arrays keyed by name, line
        offsets and lengths lists or arrays."""
        import numpy as np

        for name, values in columns.items():
            column = self.columns[name]
            column.frombytes(values.astype(column.typecode, copy=False).tobytes())
        self.columns["line_no"].frombytes(line_nos.astype("i", copy=False).tobytes())
        files = self.columns["file"]
        files.frombytes(np.full(len(request_ids), file, dtype=files.typecode).tobytes())
        self.offset.frombytes(np.asarray(offsets, dtype=np.int64).tobytes())
        self.length.frombytes(np.asarray(lengths, dtype=np.uint32).tobytes())
        self.ids.extend(request_ids)

    def merge_row(self, row: int, values: tuple[Any, ...]) -> None:
        """Overwrite the cells ``values`` knows (not -1, not NaN, not 0 for codes)."""
        for column, value in zip(self._row_columns, values):
            if value == value and value != UNKNOWN and (value or column.typecode in "if"):
                column[row] = value

    def add_line(self, row: int, file: int, offset: int, length: int) -> None:
        """Record one more line that contributed to ``row``."""
        self.extras_for(row).more_lines.append((file, offset, length))

    def extras_for(self, row: int) -> RowExtras:
        extras = self.extras.get(row)
        if extras is None:
            extras = self.extras[row] = RowExtras()
        return extras

    def lines_of(self, row: int) -> list[LineLocation]:
        """Where every line of this request lives, first line first."""
        locations = [LineLocation(self.columns["file"][row], self.offset[row], self.length[row])]
        extras = self.extras.get(row)
        if extras is not None:
            locations.extend(LineLocation(f, o, n) for f, o, n in extras.more_lines)
        return locations

    def get(self, name: str, row: int) -> int | float | None:
        """One cell with unknown mapped to None."""
        value: int | float = self.columns[name][row]
        if isinstance(value, float):
            return None if math.isnan(value) else value
        if name in INT_COLUMNS:
            return None if value == UNKNOWN else value
        return value

    def numeric_view(self, start: int = 0, stop: int | None = None) -> dict[str, np.ndarray[Any, Any]]:
        """Copies of rows [start, stop) of all columns as numpy arrays (unknown ints become
        NaN floats).

        Copies, not views: the writer may append (and so reallocate) at any time. Call it
        from the writer's thread: the buffer is exported while it is copied.
        """
        import numpy as np

        out: dict[str, np.ndarray[Any, Any]] = {}
        n = len(self.ids)
        stop = n if stop is None else min(stop, n)
        count = max(stop - start, 0)
        for name, col in self.columns.items():
            itemsize = col.itemsize
            values = np.frombuffer(
                col, dtype=np.dtype(col.typecode), count=count, offset=start * itemsize
            ).copy()
            if name in INT_COLUMNS:
                as_float = values.astype(np.float64)
                as_float[values == UNKNOWN] = np.nan
                out[name] = as_float
            else:
                out[name] = values
        return out
