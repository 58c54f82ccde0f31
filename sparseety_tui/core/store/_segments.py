"""Columns in segments: full segments shared with frozen copies, compacted, copied on write.

A store's columns and side tables are cut into segments of ``SEGMENT_ROWS`` rows. Once a
segment is full it never grows again, so a frozen copy can share it instead of copying it:
the store seals full segments out of a growing tail (``SegmentedColumn.seal``), a freeze
hands them over read-only and compacted (``compact_segment``), and the store copies one
before it writes to it again.
"""

from __future__ import annotations

from array import array
from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import TYPE_CHECKING, Any, TypeAlias, TypeVar, overload

if TYPE_CHECKING:
    import numpy as np

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
        up again through ``__getitem__``, and the totals walk every row with extras.)"""
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
    copies that segment first (one segment, not the column), so a frozen copy never
    changes and a live tail does not hold every column twice. Between freezes (and for good
    in batch commands, which never freeze) the tail is one array. The
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
    output changes, and the segments a live tail holds take less memory."""
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
