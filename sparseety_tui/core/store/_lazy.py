"""Columns that hold no bytes while every row has the same value (``LazyColumn``)."""

from __future__ import annotations

from array import array
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING, Any

from sparseety_tui.core.store._segments import SegmentedColumn

if TYPE_CHECKING:
    import numpy as np


class LazyColumn:
    """A store column that holds no bytes while every row has its ``fill`` value.

    Request logs often never say most of these (a request JSONL has no sampling
    parameters, a good part of each row would be unknowns). The first other value written
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
