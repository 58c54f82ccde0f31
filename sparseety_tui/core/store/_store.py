"""RequestStore: one compact row per request, O(1) lookup by id, lines located not kept.

Columns hold a few bytes per request each (no per-row Python object);
unknown is ``-1`` in integer columns and NaN in float columns, and becomes ``null`` at the
edges. Heavy per-request data (text, token ids, per-token routing) is never stored: each
row keeps where its lines live (file index, byte offset, length) and the detail view
re-reads and re-parses them on demand. Rows that have per-token data get a small
``RowExtras`` side record, and rows of more than one line the places of the others in
``more_lines``; request-level-only rows (the common case in big request logs) get
neither, and the totals walk only the rows with per-token data.

Columns are kept in segments of ``SEGMENT_ROWS`` rows (``SegmentedColumn``) so that a
frozen copy shares the full ones instead of copying them, and a column every row leaves
unknown holds no bytes at all (``LazyColumn``).

Only the Extractor writes (one writer), on one thread. Readers on other threads never
touch a RequestStore: they get a ``core.frozen.FrozenStore`` (``Extractor.freeze()``), an
immutable copy that is built incrementally. For that the store keeps ``dirty_from``: the
lowest row changed in place since the last freeze (rows are only ever appended at the end,
so rows below it and below the last frozen length are unchanged and their frozen copy can
be shared).
"""

from __future__ import annotations

import math
from array import array
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any, TypeAlias, TypeVar, overload

from sparseety_tui.core.store._idindex import EncodedIds, IdIndex
from sparseety_tui.core.store._line_table import LineTable, MoreLines
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
    # Sampling parameters the request was sent with (vLLM ``SamplingParams``).
    "max_tokens",
    "sampling_n",
)
FLOAT32_COLUMNS = ("latency_s", "ttft_s", "temperature", "top_p")
#: The largest finite float32: a duration above it would be stored as infinity, so it is
#: unknown instead (as a count above int32 is).
FLOAT32_MAX = 3.4028234663852886e38
#: ``ended_by_ts``: for a request whose end no line logged (state ``end_unlogged``), the
#: time of the first stats line after it that showed the engine idle (core.lifecycle).
FLOAT64_COLUMNS = ("received_ts", "finished_ts", "ended_by_ts")
BYTE_COLUMNS = ("state", "kv_skip", "cache_hit", "prompt_source", "completion_source")
SHORT_COLUMNS = ("model",)
#: The Extractor file of a row's first line. 32 bits: every incarnation of a rotated path is
#: a file of its own, and a path rotated every 100 ms passes 65,535 in under two hours.
FILE_COLUMN = "file"


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
    # Where the per-token data counted above came from (core.merge: a trace truncated and
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

#: Rows per segment of the side tables and of a frozen store (a power of two).
SEGMENT_SHIFT = 12
SEGMENT_ROWS = 1 << SEGMENT_SHIFT


_V = TypeVar("_V")


class RowTable(Mapping[int, _V]):
    """Row -> value for some rows (``RowExtras``), kept in one dict per
    segment of SEGMENT_ROWS rows, so that a freeze copies the values of the segments that
    changed without looking at the others."""

    def __init__(self, parts: list[dict[int, _V]] | None = None) -> None:
        self._parts: list[dict[int, _V]] = parts if parts is not None else []
        self._len = sum(map(len, self._parts))

    def part(self, segment: int) -> dict[int, _V]:
        """The values of one segment's rows (the live dict: writer thread only)."""
        return self._parts[segment] if segment < len(self._parts) else {}

    def __getitem__(self, row: int) -> _V:
        segment = row >> SEGMENT_SHIFT
        if 0 <= segment < len(self._parts):
            return self._parts[segment][row]
        raise KeyError(row)

    def get(self, row: int, default: _V | None = None) -> _V | None:  # type: ignore[override]
        segment = row >> SEGMENT_SHIFT
        if 0 <= segment < len(self._parts):
            return self._parts[segment].get(row, default)
        return default

    def __setitem__(self, row: int, value: _V) -> None:
        segment = row >> SEGMENT_SHIFT
        while len(self._parts) <= segment:
            self._parts.append({})
        part = self._parts[segment]
        if row not in part:
            self._len += 1
        part[row] = value

    def __iter__(self) -> Iterator[int]:
        for part in self._parts:
            yield from part

    def items(self) -> Iterator[tuple[int, _V]]:  # type: ignore[override]
        """Each row's value, segment by segment. (``Mapping.items`` would look every row
        up again through ``__getitem__``: 42.6 M calls in the totals of a 1 GB vLLM log.)"""
        for part in self._parts:
            yield from part.items()

    def values(self) -> Iterator[_V]:  # type: ignore[override]
        for part in self._parts:
            yield from part.values()

    def __len__(self) -> int:
        return self._len


class SegmentedColumn:
    """A store column as full segments of ``SEGMENT_ROWS`` rows plus a growing tail, so
    that a frozen copy shares the full segments instead of copying them.

    Rows are appended to ``_tail`` (an ``array``); ``seal`` (at every freeze) moves its
    full segments out as numpy arrays. A freeze hands those very arrays to the frozen
    store, marked read-only (``shared_segment``); the store's next write to one of them
    copies that segment first (4,096 rows), so a frozen copy never changes and the live
    tail of a 1 GB log no longer holds every column twice. Between freezes (and for good
    in batch commands, which never freeze) the tail is one array, as before. The
    ``array`` interface the store and its readers use is kept (``len``, ``[row]`` get
    and set, ``append``, ``frombytes``, ``tobytes``, iteration, ``typecode``,
    ``itemsize``).
    """

    __slots__ = ("_full", "_start", "_tail", "itemsize", "typecode")

    def __init__(self, typecode: str, tail: array[Any] | None = None) -> None:
        self.typecode = typecode
        self._tail: array[Any] = array(typecode) if tail is None else tail
        self.itemsize = self._tail.itemsize
        self._full: list[Segment] = []
        #: The tail's first row (rows in full segments before it): per-row access is on
        #: the per-line path, so no method call computes it.
        self._start = 0

    @property
    def append(self) -> Callable[[Any], None]:
        """The tail's own ``append`` (C): bound again by the store after each ``seal``."""
        return self._tail.append

    def __len__(self) -> int:
        return self._start + len(self._tail)

    def _index(self, row: int) -> int:
        n = len(self)
        if row < 0:
            row += n
        if not 0 <= row < n:
            raise IndexError("array index out of range")
        return row

    def __getitem__(self, row: int) -> Any:
        if row >= self._start:  # the usual case: the tail (a negative row is not)
            return self._tail[row - self._start]
        row = self._index(row)
        if row >= self._start:
            return self._tail[row - self._start]
        return self._full[row >> SEGMENT_SHIFT][row & (SEGMENT_ROWS - 1)].item()

    def __setitem__(self, row: int, value: Any) -> None:
        if row >= self._start:  # the usual case: the tail (a negative row is not)
            self._tail[row - self._start] = value
            return
        row = self._index(row)
        if row >= self._start:
            self._tail[row - self._start] = value
            return
        segment = row >> SEGMENT_SHIFT
        full = self._full[segment]
        if isinstance(full, DeltaSegment) or not full.flags.writeable:
            # A frozen copy holds it: copy on write, in the column's own type again.
            full = self._full[segment] = full.astype(self.typecode)
        part = full
        # The array's own checks first (a float into an int column, an int too big):
        # numpy would convert silently where ``array`` raises.
        part[row & (SEGMENT_ROWS - 1)] = array(self.typecode, [value])[0]

    def __iter__(self) -> Iterator[Any]:
        for part in self._full:
            yield from part.tolist()
        yield from self._tail

    def frombytes(self, blob: bytes) -> None:
        self._tail.frombytes(blob)

    def tobytes(self) -> bytes:
        full = (part.astype(self.typecode, copy=False).tobytes() for part in self._full)
        return b"".join([*full, self._tail.tobytes()])

    def buffer_info(self) -> tuple[int, int]:
        """``array.buffer_info``-like: (0, items held)."""
        return (0, len(self))

    def nbytes(self) -> int:
        """Bytes the rows take: the tail's, and each full segment's as compacted (a
        broadcast value: one item)."""
        held = len(self._tail) * self.itemsize
        for part in self._full:
            broadcast = not isinstance(part, DeltaSegment) and part.strides == (0,)
            held += self.itemsize if broadcast else int(part.nbytes)
        return held

    def seal(self) -> bool:
        """Move the tail's full segments out (numpy arrays); True if any was."""
        import numpy as np

        tail = self._tail
        whole = len(tail) >> SEGMENT_SHIFT
        if not whole:
            return False
        values = np.frombuffer(tail, dtype=np.dtype(self.typecode))
        for i in range(whole):
            self._full.append(values[i << SEGMENT_SHIFT : (i + 1) << SEGMENT_SHIFT].copy())
        rest = array(self.typecode, values[whole << SEGMENT_SHIFT :].tobytes())
        del values  # release the buffer export
        self._tail = rest
        self._start = len(self._full) << SEGMENT_SHIFT
        return True

    def shared_segment(self, segment: int) -> Segment:
        """Full segment ``segment`` (sealed) as the frozen store keeps it: the very array,
        from now on read-only (the store copies it before writing to it again), and
        compacted first (``compact_segment``: the store keeps that copy too)."""
        part = self._full[segment]
        if not isinstance(part, DeltaSegment) and part.flags.writeable:
            # Sealed, or copied on write since it was last shared: compacted now.
            compact = compact_segment(part)
            if not isinstance(compact, DeltaSegment):
                compact.flags.writeable = False
            part = self._full[segment] = compact
        return part

    def values(self, start: int, count: int) -> np.ndarray[Any, Any]:
        """Rows ``[start, start + count)``: a view when they lie in one segment or in the
        tail (copy it before the writer goes on), else a fresh array."""
        import numpy as np

        if count < 0 or start < 0 or start + count > len(self):
            raise ValueError("rows out of range")
        dtype = np.dtype(self.typecode)
        base = self._start
        stop = start + count
        pieces = []
        at = start
        while at < stop and at < base:
            segment = at >> SEGMENT_SHIFT
            first = segment << SEGMENT_SHIFT
            end = min(stop, first + SEGMENT_ROWS)
            pieces.append(self._full[segment][at - first : end - first])
            at = end
        if at < stop:
            pieces.append(
                np.frombuffer(
                    self._tail, dtype=dtype, count=stop - at, offset=(at - base) * self.itemsize
                )
            )
        return joined(pieces, dtype)


#: Narrower integer types a full segment's values may be kept in, smallest first.
_NARROW_INTS = ("i1", "u1", "i2", "u2", "i4", "u4")


class DeltaSegment:
    """A full segment as the bit pattern of its lowest value plus each row's difference
    from it, in 16 or 32 bits: timestamps of one segment (a few minutes of a log) take 4
    bytes a row instead of 8, line numbers 2 instead of 4. Exact for any values, NaN
    included: bits are added back, no arithmetic is done on the values themselves.

    Read as the full segment it stands for: ``[row]`` (a numpy scalar), ``[a:b]``,
    ``astype``, ``tolist``, ``tobytes`` give what the plain array would. Read-only."""

    __slots__ = ("_base", "_deltas", "dtype")

    def __init__(self, base: Any, deltas: np.ndarray[Any, Any], dtype: np.dtype[Any]) -> None:
        self._base = base  # the lowest bit pattern, as the unsigned type of the dtype's size
        self._deltas = deltas
        self.dtype = dtype

    def __len__(self) -> int:
        return len(self._deltas)

    @property
    def nbytes(self) -> int:
        return int(self._deltas.nbytes)

    def _rows(self, rows: slice) -> np.ndarray[Any, Any]:
        bits = self._deltas[rows].astype(self._base.dtype)
        bits += self._base
        return bits.view(self.dtype)

    @overload
    def __getitem__(self, row: int) -> Any: ...
    @overload
    def __getitem__(self, row: slice) -> np.ndarray[Any, Any]: ...

    def __getitem__(self, row: int | slice) -> Any:
        if isinstance(row, slice):
            return self._rows(row)
        return self._rows(slice(row, row + 1 if row != -1 else None))[0]

    def astype(self, dtype: Any, copy: bool = True) -> np.ndarray[Any, Any]:
        return self._rows(slice(None)).astype(dtype, copy=False)

    def tolist(self) -> list[Any]:
        return self._rows(slice(None)).tolist()  # type: ignore[no-any-return]

    def tobytes(self) -> bytes:
        return self._rows(slice(None)).tobytes()


#: A full segment of a column: its numpy array (compacted once shared), or its deltas.
Segment: TypeAlias = "np.ndarray[Any, Any] | DeltaSegment"


def compact_segment(part: np.ndarray[Any, Any]) -> Segment:
    """A full segment in fewer bytes, the same values: one value broadcast when every row
    has it (a file index, a state, a fill), integers in the narrowest type that holds
    them (token counts fit 16 bits, offsets in a file under 4 GiB 32), or its deltas
    (``DeltaSegment``) when they are narrower still (timestamps, line numbers). Readers
    widen on the way out (``joined``; ``.item()`` gives the same Python number), so no
    output changes; the live tail of a 1 GB request log held ~135 MiB less."""
    import numpy as np

    bits = part.view(f"u{part.itemsize}")  # NaN equals itself bit for bit
    low_bits, high_bits = bits.min(), bits.max()
    if low_bits == high_bits:
        return np.broadcast_to(part[:1].copy(), part.shape)
    best: Segment = part
    if part.dtype.kind in "iu":
        low, high = int(part.min()), int(part.max())
        for name in _NARROW_INTS:
            narrow = np.dtype(name)
            if narrow.itemsize >= part.itemsize:
                break
            info = np.iinfo(narrow)
            if info.min <= low and high <= info.max:
                best = part.astype(narrow)
                break
    spread = int(high_bits) - int(low_bits)
    for name in ("u2", "u4"):
        delta = np.dtype(name)
        if delta.itemsize * 2 > best.dtype.itemsize:
            break  # not worth a DeltaSegment's arithmetic on every read
        if spread <= np.iinfo(delta).max:
            return DeltaSegment(low_bits, (bits - low_bits).astype(delta), part.dtype)
    return best


def joined(pieces: Sequence[np.ndarray[Any, Any]], dtype: Any) -> np.ndarray[Any, Any]:
    """Pieces of a column (compacted segments among them) as one array of its ``dtype``:
    the one piece itself when it already is one (a view), else a new array."""
    import numpy as np

    if len(pieces) == 1 and pieces[0].dtype == dtype:
        return pieces[0]
    if not pieces:
        return np.empty(0, dtype=dtype)
    # "unsafe" casting only in numpy's sense: a compacted segment's type holds each of
    # its values (compact_segment), an int8 segment of a uint16 column among them.
    return np.concatenate(pieces, dtype=dtype, casting="unsafe")


#: Columns most rows leave unknown (sampling parameters only vLLM's request lines give, the
#: bound core.lifecycle sets on a request whose end was not logged), the file index (one
#: file in most runs), and codes most logs give every row the same value of (no KV skip
#: kind, no cache-hit flag, counts as reported): each is a ``LazyColumn`` until a row has
#: another value than its fill.
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
)
#: A lazy column's fill where it is not the unknown of its type (NaN, -1, 0).
LAZY_FILLS: dict[str, float] = {
    "prompt_source": COUNT_REPORTED,
    "completion_source": COUNT_REPORTED,
}


def _unknown_of(typecode: str) -> float:
    """A column's value for "not known" by its typecode (counts -1, floats NaN, codes 0)."""
    return NAN if typecode in "fd" else (UNKNOWN if typecode == "i" else 0)


class LazyColumn:
    """A store column that holds no bytes while every row has its ``fill`` value.

    Request logs often never say most of these (a request JSONL has no sampling
    parameters: 24 of a row's ~150 bytes were unknowns). The first other value written
    makes it an ``array`` (``materialize``) and from then on every operation is the
    array's; the store then swaps the array itself in (``on_array``), and a caller still
    holding this object keeps writing to the same array. The ``array`` interface the
    store and its readers use is kept: ``len``, ``[row]`` (get, set), ``append``,
    ``frombytes``, ``tobytes``, iteration, ``typecode``, ``itemsize``.
    """

    __slots__ = ("_array", "_n", "_on_array", "fill", "itemsize", "typecode")

    def __init__(
        self,
        typecode: str,
        fill: float,
        on_array: Callable[[SegmentedColumn], None] | None = None,
    ) -> None:
        self.typecode = typecode
        self.itemsize = array(typecode).itemsize
        self.fill = fill
        self._n = 0
        self._array: SegmentedColumn | None = None
        self._on_array = on_array

    def is_fill(self, value: float) -> bool:
        fill = self.fill
        return value != value if fill != fill else value == fill

    def materialize(self) -> SegmentedColumn:
        column = self._array
        if column is None:
            filled = array(self.typecode, [self.fill]) * self._n
            column = self._array = SegmentedColumn(self.typecode, filled)
            if self._on_array is not None:
                self._on_array(column)
        return column

    def __len__(self) -> int:
        return self._n if self._array is None else len(self._array)

    def __getitem__(self, row: int) -> Any:
        if self._array is not None:
            return self._array[row]
        if not -self._n <= row < self._n:
            raise IndexError("array index out of range")
        return self.fill

    def __setitem__(self, row: int, value: Any) -> None:
        if self._array is None:
            if not -self._n <= row < self._n:
                raise IndexError("array assignment index out of range")
            if self.is_fill(value):
                return
        self.materialize()[row] = value

    def __iter__(self) -> Iterator[Any]:
        if self._array is not None:
            return iter(self._array)
        return iter([self.fill] * self._n)

    def append(self, value: Any) -> None:
        if self._array is None and self.is_fill(value):
            self._n += 1
        else:
            self.materialize().append(value)

    def extend_fill(self, n: int) -> None:
        """Append ``n`` rows of ``fill``."""
        if self._array is None:
            self._n += n
        else:
            self._array.frombytes((array(self.typecode, [self.fill]) * n).tobytes())

    def frombytes(self, blob: bytes) -> None:
        """Append rows given as the bytes of an array of this typecode."""
        import numpy as np

        if self._array is None:
            values = np.frombuffer(blob, dtype=np.dtype(self.typecode))
            same = np.isnan(values) if self.fill != self.fill else values == self.fill
            if same.all():
                self._n += len(values)
                return
        self.materialize().frombytes(blob)

    def buffer_info(self) -> tuple[int, int]:
        """``array.buffer_info``: (address, items held); no items while all is ``fill``."""
        return (0, 0) if self._array is None else self._array.buffer_info()

    def nbytes(self) -> int:
        """Bytes the rows take (none while all is ``fill``)."""
        return 0 if self._array is None else self._array.nbytes()

    def tobytes(self) -> bytes:
        if self._array is not None:
            return self._array.tobytes()
        return (array(self.typecode, [self.fill]) * self._n).tobytes()

    def values(self, start: int, count: int) -> np.ndarray[Any, Any]:
        """Rows ``[start, start + count)`` as a read-only numpy array that owns no memory
        while the column has none."""
        import numpy as np

        if self._array is not None:
            return self._array.values(start, count)
        if count < 0 or start + count > self._n:
            raise ValueError("rows out of range")
        return np.broadcast_to(np.array(self.fill, dtype=np.dtype(self.typecode)), (count,))


#: A column of a store: a ``SegmentedColumn``, or a ``LazyColumn`` while it is all unknown.
Column = SegmentedColumn | LazyColumn


def column_values(column: Column, start: int, count: int) -> np.ndarray[Any, Any]:
    """Rows ``[start, start + count)`` of a column as numpy: a view where it can be (copy
    it before the writer goes on), or a read-only broadcast of a lazy column's fill."""
    return column.values(start, count)


@dataclass(frozen=True)
class LineLocation:
    file: int
    offset: int
    length: int


@dataclass
class StorePart:
    """A store's rows in a picklable form: what a reader of one byte range of a file sends
    back to be merged (``RequestStore.export_part`` / ``merge_part``)."""

    ids: IdIndex
    columns: dict[str, bytes]
    offsets: bytes
    lengths: bytes
    models: list[str]
    extras: dict[int, RowExtras]
    more_lines: dict[int, MoreLines]


class RequestStore:
    def __init__(self) -> None:
        # Row -> id (``ids[row]``) and id -> row (``ids.find(id)``): one compact object.
        self.ids = IdIndex()
        self.models: list[str] = [""]
        self._model_code: dict[str, int] = {"": 0}
        self.columns: dict[str, Column] = {}
        typecodes = {
            **dict.fromkeys(INT_COLUMNS, "i"),
            **dict.fromkeys(FLOAT32_COLUMNS, "f"),
            **dict.fromkeys(FLOAT64_COLUMNS, "d"),
            **dict.fromkeys(BYTE_COLUMNS, "B"),
            **dict.fromkeys(SHORT_COLUMNS, "H"),
            FILE_COLUMN: "I",
        }
        for name, typecode in typecodes.items():
            if name in LAZY_COLUMNS:
                fill = _unknown_of(typecode)
                fill = LAZY_FILLS.get(name, fill)
                self.columns[name] = LazyColumn(typecode, fill, self._array_setter(name))
            else:
                self.columns[name] = SegmentedColumn(typecode)
        self.offset = SegmentedColumn("q")
        self.length = SegmentedColumn("I")
        self.extras: RowTable[RowExtras] = RowTable()
        self.more_lines = LineTable(SEGMENT_SHIFT)
        #: Lowest row changed in place since the last freeze (see the module docstring).
        self.dirty_from = 0
        self._bind_columns()
        # Attribute shortcuts for the hot path.
        c = self.columns
        self.prompt_tokens = c["prompt_tokens"]
        self.completion_tokens = c["completion_tokens"]
        self.cached_tokens = c["cached_tokens"]
        self.latency_s = c["latency_s"]
        self.ttft_s = c["ttft_s"]
        self.state = c["state"]

    def _bind_columns(self) -> None:
        """The hot path's shortcuts to the columns (again once a lazy one is an array)."""
        self._row_columns = [self.columns[name] for name in ROW_LAYOUT]
        self._row_appenders = [column.append for column in self._row_columns]
        self._append_line_no = self.columns["line_no"].append
        self._append_file = self.columns[FILE_COLUMN].append
        self._append_offset = self.offset.append
        self._append_length = self.length.append

    def seal(self) -> None:
        """Move every column's full segments out of its tail (``SegmentedColumn.seal``),
        and the ids' (``IdIndex.seal``), before a freeze shares them."""
        self.ids.seal(SEGMENT_SHIFT)
        sealed = [
            column.seal()
            for column in (*self.columns.values(), self.offset, self.length)
            if isinstance(column, SegmentedColumn)
        ]
        if any(sealed):
            self._bind_columns()  # the tails are new arrays

    def _array_setter(self, name: str) -> Callable[[SegmentedColumn], None]:
        def on_array(column: SegmentedColumn) -> None:
            self.columns[name] = column
            self._bind_columns()

        return on_array

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
        self._append_offset(offset)
        self._append_length(length)
        return row

    def extend_rows(
        self,
        request_ids: list[str] | EncodedIds,
        columns: dict[str, Any],
        file: int,
        offsets: Any,
        lengths: Any,
        line_nos: Any,
        unknown: Sequence[str] = (),
    ) -> None:
        """Append many new rows at once; ``columns`` are numpy arrays keyed by name, line
        offsets and lengths lists or arrays; the columns named in ``unknown`` get their
        unknown value (-1, NaN, 0: a column that holds none yet stays empty). Every
        conversion is done before the first write, so a failing one leaves the store as
        it was."""
        import numpy as np

        files = self.columns["file"]
        n = len(request_ids)
        blobs = [
            (self.columns[name], values.astype(self.columns[name].typecode, copy=False).tobytes())
            for name, values in columns.items()
        ]
        fills: dict[str, bytes] = {}
        lazy: list[LazyColumn] = []
        for name in unknown:
            column = self.columns[name]
            code = column.typecode
            if isinstance(column, LazyColumn) and column.is_fill(_unknown_of(code)):
                lazy.append(column)
            else:  # (a lazy column whose fill is another value: the unknowns are values)
                if code not in fills:
                    fills[code] = (array(code, [_unknown_of(code)]) * n).tobytes()
                blobs.append((column, fills[code]))
        blobs.append((self.columns["line_no"], line_nos.astype("i", copy=False).tobytes()))
        blobs.append((files, np.full(len(request_ids), file, dtype=files.typecode).tobytes()))
        blobs.append((self.offset, np.asarray(offsets, dtype=np.int64).tobytes()))
        blobs.append((self.length, np.asarray(lengths, dtype=np.uint32).tobytes()))
        self.ids.extend(request_ids)
        for column, blob in blobs:
            column.frombytes(blob)
        for lazy_column in lazy:
            lazy_column.extend_fill(n)

    def touch(self, row: int) -> None:
        """Note that ``row`` is about to change in place (see ``dirty_from``)."""
        if row < self.dirty_from:
            self.dirty_from = row

    def set_state(self, row: int, code: int) -> None:
        self.touch(row)
        self.state[row] = code

    def merge_row(self, row: int, values: tuple[Any, ...]) -> None:
        """Overwrite the cells ``values`` knows (not -1, not NaN, not 0 for codes): the one
        rule for merging what two lines, or two parts of a file, say of a request."""
        if row < self.dirty_from:
            self.dirty_from = row
        for column, value in zip(self._row_columns, values):
            if value == value and value != UNKNOWN and (value or column.typecode in "if"):
                column[row] = value

    def add_line(self, row: int, file: int, offset: int, length: int) -> None:
        """Record one more line that contributed to ``row``."""
        self.touch(row)
        more = self.more_lines.get(row)
        self.more_lines[row] = (
            ((file, offset, length),) if more is None else (*more, (file, offset, length))
        )

    def extras_for(self, row: int) -> RowExtras:
        """The row's extras, created if need be; the caller is about to change them."""
        if row < self.dirty_from:
            self.dirty_from = row
        extras = self.extras.get(row)
        if extras is None:
            extras = self.extras[row] = RowExtras()
        return extras

    def lines_of(self, row: int) -> list[LineLocation]:
        """Where every line of this request lives, first line first."""
        locations = [LineLocation(self.columns["file"][row], self.offset[row], self.length[row])]
        more = self.more_lines.get(row)
        if more is not None:
            locations.extend(LineLocation(f, o, n) for f, o, n in more)
        return locations

    def get(self, name: str, row: int) -> int | float | None:
        """One cell with unknown mapped to None."""
        value: int | float = self.columns[name][row]
        if isinstance(value, float):
            return None if math.isnan(value) else value
        if name in INT_COLUMNS:
            return None if value == UNKNOWN else value
        return value

    def numeric_view(
        self, start: int = 0, stop: int | None = None, names: Sequence[str] | None = None
    ) -> dict[str, np.ndarray[Any, Any]]:
        """Copies of rows [start, stop) of all columns (or of ``names``) as numpy arrays
        (unknown ints become NaN floats).

        Copies, not views: the writer may append (and so reallocate) at any time. Call it
        from the writer's thread: the buffer is exported while it is copied.
        """
        import numpy as np

        out: dict[str, np.ndarray[Any, Any]] = {}
        n = len(self.ids)
        stop = n if stop is None else min(stop, n)
        count = max(stop - start, 0)
        for name in self.columns if names is None else names:
            values = column_values(self.columns[name], start, count).copy()
            if name in INT_COLUMNS:
                as_float = values.astype(np.float64)
                as_float[values == UNKNOWN] = np.nan
                out[name] = as_float
            else:
                out[name] = values
        return out

    # -- parts of one file read in ranges ------------------------------------------------

    def export_part(self) -> StorePart:
        return StorePart(
            ids=self.ids,
            columns={name: col.tobytes() for name, col in self.columns.items()},
            offsets=self.offset.tobytes(),
            lengths=self.length.tobytes(),
            models=self.models,
            extras=dict(self.extras.items()),
            more_lines=dict(self.more_lines.items()),
        )

    def merge_part(
        self, part: StorePart, file: int, line_shift: int, renames: Mapping[str, str] | None
    ) -> None:
        """Append the rows of a later part of file ``file`` (whose first line is line
        ``line_shift + 1``), as if its lines had been fed here: a request id already here
        (or renamed to one by ``renames``) is merged with ``merge_row``'s rule, a known
        value wins; every other row is appended, in order."""
        import numpy as np

        base = len(self)
        model_map = np.array([self.model_code(name) for name in part.models], dtype=np.uint16)
        incoming: dict[str, Any] = {}
        for name, raw in part.columns.items():
            incoming[name] = np.frombuffer(raw, dtype=np.dtype(self.columns[name].typecode)).copy()
        if len(model_map):
            incoming["model"] = model_map[incoming["model"]]
        incoming["file"][:] = file
        incoming["line_no"] += line_shift

        if not renames and not self.ids.shares_ids_with(part.ids):
            for name, values in incoming.items():
                self.columns[name].frombytes(values.tobytes())
            self.offset.frombytes(part.offsets)
            self.length.frombytes(part.lengths)
            self.ids.extend_from(part.ids)
            for row, extras in part.extras.items():
                self.extras[base + row] = extras
            for row, more in part.more_lines.items():
                self.more_lines[base + row] = _in_file(more, file)
            return
        # Most rows are new here too (only requests that straddle a boundary are shared):
        # new rows are appended in bulk, in order; shared rows merged one by one.
        part_ids = list(part.ids)
        if renames:
            part_ids = [renames.get(rid, rid) for rid in part_ids]
        find = self.ids.find
        shared = [i for i, rid in enumerate(part_ids) if find(rid) is not None]
        keep = np.ones(len(part_ids), dtype=bool)
        keep[shared] = False
        for name, values in incoming.items():
            self.columns[name].frombytes(values[keep].tobytes())
        offsets = np.frombuffer(part.offsets, dtype=np.int64)
        lengths = np.frombuffer(part.lengths, dtype=np.uint32)
        self.offset.frombytes(offsets[keep].tobytes())
        self.length.frombytes(lengths[keep].tobytes())
        self.ids.extend([part_ids[i] for i in np.flatnonzero(keep).tolist()])
        new_row = np.cumsum(keep) - 1 + base
        for i, extras in part.extras.items():
            if keep[i]:
                self.extras[int(new_row[i])] = extras
        for i, more in part.more_lines.items():
            if keep[i]:
                self.more_lines[int(new_row[i])] = _in_file(more, file)
        layout = [incoming[name] for name in ROW_LAYOUT]
        for i in shared:
            found = find(part_ids[i])
            assert found is not None
            row = found
            self.add_line(row, file, int(offsets[i]), int(lengths[i]))
            for _f, offset, length in part.more_lines.get(i, ()):
                self.add_line(row, file, offset, length)
            self.merge_row(row, tuple(values[i].item() for values in layout))
            part_extras = part.extras.get(i)
            if part_extras is not None:
                self.extras_for(row).add(part_extras)


def _in_file(more: MoreLines, file: int) -> MoreLines:
    """A part's line locations pointed at file ``file``."""
    return tuple([(file, offset, length) for _f, offset, length in more])
