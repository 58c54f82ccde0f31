"""Request ids in a few bytes each, with O(1) lookup.

A ``dict[str, int]`` plus a ``list[str]`` costs ~120 bytes per request in CPython (a str
object, a dict entry, an int object and a list slot); with millions of requests that is
most of the store. Here ids live as UTF-8 bytes in one ``bytearray`` with an end-offset
array, and an open-addressing hash table of row numbers (``array('i')``, load factor at
most 1/2) finds them: about 11 + 8 + 8 + 12 bytes for an 11-character id.

Hashes are Python's own ``hash(str)`` (computed in C, randomised per process, which is
fine: the table is never persisted or shared between processes).

For the live tail, ``seal`` moves every full segment of rows out of the growing tail into
an immutable ``EncodedIds`` (bytes, int32 ends): a frozen copy of the store shares those
instead of copying every id's bytes and ends (most of a frozen copy of a big request log),
and their ends take 4 bytes a row instead of 8. Batch commands never seal: one tail.
"""

from __future__ import annotations

from array import array
from collections.abc import Iterable, Iterator, Sequence
from typing import Any, overload

from sparseety_tui.native import PURE_PYTHON

try:  # the probing loops in C (native/idtable.c), when the package was built with them
    from sparseety_tui import _idtable
except ImportError:
    _idtable = None  # type: ignore[assignment]
if PURE_PYTHON:
    _idtable = None  # type: ignore[assignment]

_EMPTY = -1
#: The table is grown before it is more than half full: short probes, ~8-16 B a request.
_MAX_LOAD_INVERSE = 2
_PROBE = "sparseety-hash-probe"
_MIN_CAPACITY = 1 << 10


class IdIndex(Sequence[str]):
    """An append-only sequence of distinct ids with ``find(id) -> row``."""

    def __init__(self) -> None:
        #: Rows before ``_tail_start``, ``1 << _shift`` a segment (``seal``).
        self._sealed: list[EncodedIds] = []
        self._shift = 0
        self._tail_start = 0
        #: The tail's rows: their bytes, and the end of each in them.
        self._blob = bytearray()
        self._ends: array[int] = array("q")
        self._hashes: array[int] = array("q")
        # (mask, table) in one attribute: a reader in another thread (the UI) always sees a
        # matching pair, even while the writer rehashes into a bigger table.
        self._slots: tuple[int, array[int]] = (
            _MIN_CAPACITY - 1,
            array("i", [_EMPTY]) * _MIN_CAPACITY,
        )

    # -- Sequence ----------------------------------------------------------------------

    def __len__(self) -> int:
        return self._tail_start + len(self._ends)

    def _bounds(self, row: int) -> tuple[bytes | bytearray, int, int]:
        """Where row ``row`` (0 <= row < len) lives: its blob, start and end in it."""
        t = row - self._tail_start
        if t >= 0:
            ends = self._ends
            return self._blob, (ends[t - 1] if t else 0), ends[t]
        segment = self._sealed[row >> self._shift]
        i = row & ((1 << self._shift) - 1)
        sealed_ends = segment.ends
        return segment.blob, (sealed_ends[i - 1] if i else 0), sealed_ends[i]

    @overload
    def __getitem__(self, row: int) -> str: ...
    @overload
    def __getitem__(self, row: slice) -> list[str]: ...

    def __getitem__(self, row: int | slice) -> str | list[str]:
        """The id at a row (``ids[3]``); ``index["req-1"]`` style lookups use ``row_of``."""
        if isinstance(row, slice):
            start, stop, step = row.indices(len(self))
            if step != 1 or start >= stop or start < self._tail_start:
                return [self[i] for i in range(start, stop, step)]
            start, stop = start - self._tail_start, stop - self._tail_start
            ends = self._ends[start:stop]
            begin = self._ends[start - 1] if start else 0
            blob = bytes(self._blob[begin : ends[-1]])
            starts = [begin, *ends[:-1]]
            return [
                blob[a - begin : b - begin].decode("utf-8", errors="surrogatepass")
                for a, b in zip(starts, ends)
            ]
        if row < 0:
            row += len(self)
        if not 0 <= row < len(self):
            raise IndexError("id index out of range")
        where, start, end = self._bounds(row)
        return where[start:end].decode("utf-8", errors="surrogatepass")

    def __iter__(self) -> Iterator[str]:
        return (self[i] for i in range(len(self)))

    def __contains__(self, request_id: object) -> bool:
        return isinstance(request_id, str) and self.find(request_id) is not None

    def __eq__(self, other: object) -> bool:
        if isinstance(other, (list, tuple, IdIndex)):
            return len(other) == len(self) and all(a == b for a, b in zip(self, other))
        return NotImplemented

    __hash__ = None  # type: ignore[assignment]

    # -- lookup ------------------------------------------------------------------------

    def find(self, request_id: str) -> int | None:
        mask, table = self._slots
        slot = hash(request_id) & mask
        key: bytes | None = None
        while True:
            row = table[slot]
            if row == _EMPTY:
                return None
            if key is None:
                key = request_id.encode("utf-8", errors="surrogatepass")
            blob, start, end = self._bounds(row)
            if end - start == len(key) and blob[start:end] == key:
                return row
            slot = (slot + 1) & mask

    def get(self, request_id: str, default: Any = None) -> Any:
        row = self.find(request_id)
        return default if row is None else row

    def row_of(self, request_id: str) -> int:
        row = self.find(request_id)
        if row is None:
            raise KeyError(request_id)
        return row

    def __getstate__(self) -> dict[str, Any]:
        # The table is rebuilt on arrival; hashes travel only between forked processes,
        # which share the hash secret (checked with a probe hash).
        blob, ends = self._blob, self._ends
        if self._sealed:  # one blob and ends in it, as if nothing had been sealed
            import numpy as np

            blob = bytearray(b"".join([*(s.blob for s in self._sealed), self._blob]))
            parts, base = [], 0
            for segment in self._sealed:
                parts.append(np.asarray(segment.ends, dtype=np.int64) + base)
                base += len(segment.blob)
            parts.append(np.frombuffer(self._ends, dtype=np.int64) + base)
            ends = array("q", np.concatenate(parts).tobytes())
        return {
            "blob": bytes(blob),
            "ends": ends,
            "hashes": self._hashes,
            "probe": hash(_PROBE),
        }

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__init__()  # type: ignore[misc]
        self.extend_from_state(state)

    def extend_from(self, other: IdIndex) -> None:
        """Append all of ``other``'s ids (the caller knows none is present)."""
        self.extend_from_state(other.__getstate__())

    def extend_from_state(self, state: dict[str, Any]) -> None:
        import numpy as np

        ends = np.frombuffer(state["ends"], dtype=np.int64)
        if state["probe"] == hash(_PROBE):
            hashes = np.frombuffer(state["hashes"], dtype=np.int64)
        else:  # another process's hash secret: hash again here
            incoming = EncodedIds(state["blob"], ends, None)
            hashes = np.fromiter(map(hash, incoming), dtype=np.int64, count=len(ends))
        self._extend_encoded(state["blob"], ends, hashes)

    # -- insertion ---------------------------------------------------------------------

    def append(self, request_id: str) -> int:
        """Add a new id (the caller knows it is not present) and return its row."""
        row = self._tail_start + len(self._ends)
        h = hash(request_id)
        self._blob += request_id.encode("utf-8", errors="surrogatepass")
        self._ends.append(len(self._blob))
        self._hashes.append(h)
        if (row + 1) * _MAX_LOAD_INVERSE > self._slots[0] + 1:
            self._grow()
        else:
            self._place(h, row)
        return row

    def extend(self, request_ids: Iterable[str] | EncodedIds) -> None:
        """Add many new ids at once (the caller knows none is present, nor repeated).

        The bulk path of big request logs: encoding, hashing and table placement are
        done for the whole batch in C (join, map, numpy) instead of id by id.
        """
        import numpy as np

        if isinstance(request_ids, EncodedIds):
            self._extend_encoded(request_ids.blob, request_ids.ends, request_ids.hashes)
            return
        ids = request_ids if isinstance(request_ids, list) else list(request_ids)
        if not ids:
            return
        joined = "".join(ids)
        if joined.isascii():
            blob = joined.encode("ascii")
            lengths = np.fromiter(map(len, ids), dtype=np.int64, count=len(ids))
        else:
            encoded = [i.encode("utf-8", errors="surrogatepass") for i in ids]
            blob = b"".join(encoded)
            lengths = np.fromiter(map(len, encoded), dtype=np.int64, count=len(ids))
        hashes = np.fromiter(map(hash, ids), dtype=np.int64, count=len(ids))
        self._extend_encoded(blob, np.cumsum(lengths), hashes)

    def _extend_encoded(self, blob: bytes, ends: Any, hashes: Any) -> None:
        """Append ids given as one blob, their end offsets in it and their hashes."""
        import numpy as np

        if not len(ends):
            return
        base_row, base_byte = len(self), len(self._blob)
        # In this order, so that a reader in another thread (the UI) never sees a row
        # whose bytes or hash are not there yet: len() counts ends, lookups use the table.
        self._blob += blob
        self._hashes.frombytes(np.asarray(hashes, dtype=np.int64).tobytes())
        self._ends.frombytes((np.asarray(ends, dtype=np.int64) + base_byte).tobytes())
        if len(self) * _MAX_LOAD_INVERSE > self._slots[0] + 1:
            self._grow()
        else:
            mask, table = self._slots
            _place_many(table, mask, np.asarray(hashes, dtype=np.int64), base_row)

    def any_present(self, request_ids: Sequence[str], hashes: Any = None) -> bool:
        """Whether any of these ids is already here (vectorised first-probe test)."""
        if not len(self) or not request_ids:
            return False
        import numpy as np

        if hashes is None and isinstance(request_ids, EncodedIds):
            hashes = request_ids.hashes
        if hashes is None:
            hashes = np.fromiter(map(hash, request_ids), dtype=np.int64, count=len(request_ids))
        hashes = np.asarray(hashes, dtype=np.int64)
        mask, slots = self._slots
        table = np.frombuffer(slots, dtype=np.int32)
        stored = np.frombuffer(self._hashes, dtype=np.int64)[: len(self)]
        pending = np.arange(len(hashes))
        slot = hashes & mask
        maybe: list[int] = []
        # Probe all ids together: an empty slot ends an id's probe (absent); an equal
        # stored hash makes it a candidate, compared in full below.
        while pending.size:
            rows = table[slot]
            occupied = rows != _EMPTY
            same = np.zeros(pending.size, dtype=bool)
            same[occupied] = stored[rows[occupied]] == hashes[pending[occupied]]
            maybe.extend(pending[same].tolist())
            go_on = occupied & ~same
            pending, slot = pending[go_on], (slot[go_on] + 1) & mask
        del table, stored  # release the buffer exports before anyone appends
        return any(self.find(request_ids[i]) is not None for i in maybe)

    def all_new(self, ids: EncodedIds) -> bool:
        """Whether none of ``ids`` is here and none repeats. Equal hashes count as equal
        ids (a true 64-bit collision only sends the caller the slower exact way)."""
        if _idtable is not None:
            mask, table = self._slots
            return _idtable.all_new(table, mask, self._hashes, ids.hashes)
        return not ids.has_repeats() and not self.any_present(ids)

    def shares_ids_with(self, other: IdIndex) -> bool:
        """Whether any id of ``other`` is here. Its hashes are this process's (one that
        arrived pickled was rebuilt by ``__setstate__``), so they are reused."""
        import numpy as np

        return self.any_present(other, np.frombuffer(other._hashes, dtype=np.int64).copy())

    def _place(self, h: int, row: int) -> None:
        mask, table = self._slots
        slot = h & mask
        while table[slot] != _EMPTY:
            slot = (slot + 1) & mask
        table[slot] = row

    def _grow(self) -> None:
        import numpy as np

        capacity = (self._slots[0] + 1) * 2
        while len(self) * _MAX_LOAD_INVERSE > capacity:
            capacity *= 2
        mask = capacity - 1
        table = array("i", [_EMPTY]) * capacity
        # A view, not a copy (8 bytes a row at the moment the old and the new table are
        # both alive: the peak of a growing index); released before anyone appends.
        hashes = np.frombuffer(self._hashes, dtype=np.int64)
        _place_many(table, mask, hashes, 0)
        del hashes
        self._slots = (mask, table)  # published whole, after it is complete

    def seal(self, shift: int) -> None:
        """Move the tail's full segments of ``1 << shift`` rows out, each an immutable
        ``EncodedIds`` that ``encoded_range`` hands out as it is (``shift`` must be the
        same at every call). Writer thread, with no reader of this index elsewhere (the
        store's readers on other threads read frozen copies)."""
        import numpy as np

        assert not self._sealed or shift == self._shift
        self._shift = shift
        whole = len(self._ends) >> shift
        if not whole:
            return
        ends = np.frombuffer(self._ends, dtype=np.int64)
        begin = 0
        for i in range(whole):
            part = ends[i << shift : (i + 1) << shift]
            end = int(part[-1])
            wide = end - begin >= 1 << 31  # 512 KiB ids: their ends as they are
            rebased = (part - begin).astype(np.int64 if wide else np.int32)
            rebased.flags.writeable = False
            self._sealed.append(EncodedIds(bytes(self._blob[begin:end]), rebased, None))
            begin = end
        rest = ends[whole << shift :] - begin
        del ends  # release the buffer export
        self._blob = self._blob[begin:]
        self._ends = array("q", rest.tobytes())
        self._tail_start += whole << shift

    def encoded_range(self, start: int, stop: int, with_hashes: bool = True) -> EncodedIds:
        """Rows [start, stop): their bytes, ends in them, and hashes unless
        ``with_hashes`` is False (a frozen copy finds ids without them: 8 bytes a row
        less). A sealed segment, asked for whole and without hashes, is shared; else a
        copy. Writer thread; the result is immutable and safe to read anywhere."""
        import numpy as np

        shift = self._shift
        if (
            not with_hashes
            and stop <= self._tail_start
            and start & ((1 << shift) - 1) == 0
            and stop - start == 1 << shift
        ):
            return self._sealed[start >> shift]
        blobs, ends_parts, base = [], [], 0
        blob: bytes | bytearray
        row = start
        while row < stop:  # segment by segment: sealed ones, then the tail
            if row >= self._tail_start:
                t, last = row - self._tail_start, stop - self._tail_start
                blob, ends = self._blob, np.frombuffer(self._ends, dtype=np.int64)[t:last]
                first = self._ends[t - 1] if t else 0
                row = stop
            else:
                segment = self._sealed[row >> shift]
                i = row & ((1 << shift) - 1)
                n = min(stop - row, (1 << shift) - i)
                blob, ends = segment.blob, np.asarray(segment.ends, dtype=np.int64)[i : i + n]
                first = int(segment.ends[i - 1]) if i else 0
                row += n
            last_end = int(ends[-1])
            blobs.append(bytes(blob[first:last_end]))
            ends_parts.append(ends - first + base)
            base += last_end - first
            del ends  # release a buffer export of the tail
        all_ends = np.concatenate(ends_parts) if ends_parts else np.empty(0, dtype=np.int64)
        hashes = None
        if with_hashes:
            hashes = np.frombuffer(self._hashes, dtype=np.int64)[start:stop].copy()
        elif base < 1 << 31:
            all_ends = all_ends.astype(np.int32)  # a frozen segment's: 4 bytes a row less
        return EncodedIds(b"".join(blobs), all_ends, hashes)

    def nbytes(self) -> int:
        sealed = sum(len(s.blob) + int(s.ends.nbytes) for s in self._sealed)
        tail = len(self._blob) + len(self._ends) * 8
        return sealed + tail + len(self._hashes) * 8 + len(self._slots[1]) * 4


class EncodedIds(Sequence[str]):
    """New ids as the native scanner gives them: one blob of their bytes, the end offset
    of each in it, and each id's ``hash(str)`` (so the table needs no str objects)."""

    def __init__(self, blob: bytes, ends: Any, hashes: Any) -> None:
        self.blob = blob
        self.ends = ends
        self.hashes = hashes

    def __len__(self) -> int:
        return len(self.ends)

    @overload
    def __getitem__(self, i: int) -> str: ...
    @overload
    def __getitem__(self, i: slice) -> list[str]: ...

    def __getitem__(self, i: int | slice) -> str | list[str]:
        if isinstance(i, slice):
            return [self[j] for j in range(*i.indices(len(self)))]
        if i < 0:
            i += len(self)
        start = int(self.ends[i - 1]) if i else 0
        return self.blob[start : int(self.ends[i])].decode("utf-8", errors="surrogatepass")

    def __iter__(self) -> Iterator[str]:
        # All at once: one decode and slicing by the ends (ASCII ids, the usual case).
        blob, ends = self.blob, self.ends
        if not blob.isascii():
            return (self[i] for i in range(len(self)))
        text = blob.decode("ascii")
        bounds = [int(e) for e in ends]
        return iter([text[a:b] for a, b in zip([0, *bounds[:-1]], bounds)])

    def has_repeats(self) -> bool:
        """Whether two ids may be equal (equal hashes: a true repeat, or a rare collision)."""
        import numpy as np

        return bool(np.unique(self.hashes).size != len(self.hashes))


def _place_many(table: array[int], mask: int, hashes: Any, first_row: int) -> None:
    """Linear-probing insertion of the consecutive rows ``first_row ..`` (one a hash) at
    once, vectorised.

    Each round puts every pending row whose current slot is free (the first of several
    rows that want the same slot wins); the others move one slot on. A row only ever
    passes slots that are occupied for good, so probing from its home slot finds it, as
    with one-by-one insertion.
    """
    import numpy as np

    if _idtable is not None:
        if len(hashes):
            _idtable.place_rows(
                table, mask, np.ascontiguousarray(hashes, dtype=np.int64), first_row
            )
        return
    rows = np.arange(first_row, first_row + len(hashes), dtype=np.int32)
    view = np.frombuffer(table, dtype=np.int32)
    slots = hashes & mask
    pending = rows
    while pending.size:
        free = view[slots] == _EMPTY
        candidates = np.flatnonzero(free)
        unique_slots, first = np.unique(slots[candidates], return_index=True)
        winners = candidates[first]
        view[unique_slots] = pending[winners]
        keep = np.ones(pending.size, dtype=bool)
        keep[winners] = False
        pending = pending[keep]
        slots = (slots[keep] + 1) & mask
    del view  # release the buffer export
