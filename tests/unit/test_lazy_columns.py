"""The store's columns: segments a frozen copy shares (core.store.SegmentedColumn), and
columns that hold no bytes while every row is unknown (LazyColumn). Both read, write and
freeze exactly as arrays do; a frozen copy never sees a later write."""

from __future__ import annotations

import math
from array import array
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sparseety_tui.core.store import NAN, ROW_LAYOUT, SEGMENT_ROWS, UNKNOWN, RequestStore
from sparseety_tui.core.store._frozen import freeze_store
from sparseety_tui.core.store._layout import LAZY_COLUMNS
from sparseety_tui.core.store._lazy import LazyColumn, column_values
from sparseety_tui.core.store._segments import DeltaSegment, SegmentedColumn


def _same(a: Any, b: Any) -> bool:
    return bool(a == b or (a != a and b != b))


@settings(max_examples=60, deadline=None)
@given(
    typecode=st.sampled_from(["i", "f", "d", "I"]),
    ops=st.lists(
        st.tuples(st.sampled_from(["append", "set", "bytes"]), st.integers(0, 40), st.booleans()),
        max_size=30,
    ),
)
def test_a_lazy_column_behaves_as_an_array(typecode: str, ops: list[tuple[str, int, bool]]) -> None:
    fill: float = NAN if typecode in "fd" else (UNKNOWN if typecode == "i" else 0)
    lazy = LazyColumn(typecode, fill)
    plain: array[Any] = array(typecode)
    for op, value, known in ops:
        v: float = value if known else fill
        if typecode in "fd" and known:
            v = value / 4
        if op == "append":
            lazy.append(v)
            plain.append(v)
        elif op == "set" and len(plain):
            row = value % len(plain)
            lazy[row] = v
            plain[row] = v
        elif op == "bytes":
            blob = (array(typecode, [v]) * (value % 5)).tobytes()
            lazy.frombytes(blob)
            plain.frombytes(blob)
        assert len(lazy) == len(plain)
    assert all(_same(a, b) for a, b in zip(lazy, plain))
    assert [_same(lazy[i], plain[i]) for i in range(len(plain))] == [True] * len(plain)
    assert lazy.tobytes() == plain.tobytes() or typecode in "fd"  # NaN bits may differ
    np.testing.assert_array_equal(
        column_values(lazy, 0, len(plain)), np.frombuffer(plain, dtype=typecode)
    )


def test_all_unknown_holds_no_bytes_and_is_read_only() -> None:
    lazy = LazyColumn("d", NAN)
    lazy.frombytes(np.full(1000, math.nan).tobytes())
    lazy.append(NAN)
    lazy[5] = NAN  # the fill: still nothing held
    assert len(lazy) == 1001 and lazy.buffer_info() == (0, 0)
    values = column_values(lazy, 10, 500)
    assert values.nbytes == 500 * 8 and values.base is not None  # a broadcast of one value
    assert not values.flags.writeable
    with pytest.raises(IndexError):
        lazy[1001]
    with pytest.raises(IndexError):
        lazy[1001] = 1.0


def test_the_store_swaps_in_the_array_and_a_held_column_writes_through() -> None:
    store = RequestStore()
    # Every lazy column's fill (unknown, or the value most rows have), the others' unknown.
    unknown = tuple(
        column.fill
        if isinstance(column := store.columns[name], LazyColumn)
        else (NAN if column.typecode in "fd" else (UNKNOWN if column.typecode == "i" else 0))
        for name in ROW_LAYOUT
    )
    for i in range(10):
        store.append_row(f"r{i}", unknown, 0, i * 10, 10, i + 1)
    held = store.columns["ended_by_ts"]
    assert isinstance(held, LazyColumn) and all(
        isinstance(store.columns[name], LazyColumn) for name in LAZY_COLUMNS
    )
    held[3] = 12.5  # as core.extraction writes, through a column it holds
    assert isinstance(store.columns["ended_by_ts"], SegmentedColumn)  # the store's now
    held[4] = 13.5
    assert store.columns["ended_by_ts"][4] == 13.5 and store.get("ended_by_ts", 3) == 12.5
    store.append_row("r10", unknown, 1, 100, 10, 11)  # file 1: the file column is an array
    assert isinstance(store.columns["file"], SegmentedColumn)
    assert list(store.columns["file"]) == [0] * 10 + [1]
    view = store.numeric_view()
    assert math.isnan(view["ended_by_ts"][0]) and view["ended_by_ts"][3] == 12.5
    assert np.isnan(view["max_tokens"]).all()  # an unknown int: NaN, as for any int column


def test_a_frozen_lazy_column_shares_nothing_and_stays_as_it_was() -> None:
    store = RequestStore()
    # Every lazy column's fill (unknown, or the value most rows have), the others' unknown.
    unknown = tuple(
        column.fill
        if isinstance(column := store.columns[name], LazyColumn)
        else (NAN if column.typecode in "fd" else (UNKNOWN if column.typecode == "i" else 0))
        for name in ROW_LAYOUT
    )
    for i in range(5000):
        store.append_row(f"r{i}", unknown, 0, i, 1, i + 1)
    frozen = freeze_store(store, None)
    segment = frozen._segments[0]
    assert segment.columns["top_p"].base is not None  # the fill, broadcast: no bytes a row
    store.touch(0)
    store.columns["top_p"][0] = 0.5  # the writer goes on: the frozen copy must not see it
    store.columns["max_tokens"][4999] = 64
    assert math.isnan(frozen.columns["top_p"][0]) and frozen.columns["max_tokens"][4999] == -1
    again = freeze_store(store, frozen)
    assert again.columns["top_p"][0] == 0.5 and again.columns["max_tokens"][4999] == 64
    assert math.isnan(frozen.numeric_view()["top_p"][0])


@settings(max_examples=60, deadline=None)
@given(
    typecode=st.sampled_from(["i", "f", "d", "B", "q"]),
    ops=st.lists(
        st.tuples(
            st.sampled_from(["append", "bytes", "set", "seal", "share"]),
            st.integers(0, 3 * SEGMENT_ROWS),
        ),
        max_size=25,
    ),
)
def test_a_segmented_column_behaves_as_an_array_and_shared_segments_stay(
    typecode: str, ops: list[tuple[str, int]]
) -> None:
    column = SegmentedColumn(typecode)
    plain: array[Any] = array(typecode)
    shared: list[tuple[np.ndarray[Any, Any], bytes]] = []  # (segment, its bytes when shared)
    for op, value in ops:
        v = value % 200
        if op == "append":
            column.append(v)
            plain.append(v)
        elif op == "bytes":
            blob = array(typecode, [v]).tobytes() * value
            column.frombytes(blob)
            plain.frombytes(blob)
        elif op == "set" and len(plain):
            row = value % len(plain) - (len(plain) if value % 2 else 0)  # negative rows too
            column[row] = v + 1
            plain[row] = v + 1
        elif op == "seal":
            column.seal()
        elif op == "share" and len(plain) >= SEGMENT_ROWS:
            column.seal()
            segment = column.shared_segment(value % (len(plain) // SEGMENT_ROWS))
            shared.append((segment, segment.tobytes()))
        assert len(column) == len(plain)
    assert list(column) == list(plain)
    assert column.tobytes() == plain.tobytes()
    for row in range(0, len(plain), 97):
        assert column[row] == plain[row] and type(column[row]) is type(plain[row])
    for start, count in ((0, len(plain)), (len(plain) // 3, len(plain) // 2)):
        values = column_values(column, start, count)
        assert values.dtype == np.dtype(typecode)  # compacted segments widened back
        np.testing.assert_array_equal(values, np.frombuffer(plain, dtype=typecode)[start:][:count])
    for segment, was in shared:  # the store wrote on: what it shared did not change
        assert segment.tobytes() == was and not segment.flags.writeable


@pytest.mark.parametrize(
    ("typecode", "rows", "kept_as", "nbytes"),
    [
        ("I", [3] * SEGMENT_ROWS, "I", 4),  # one file: its index once
        ("d", [NAN] * SEGMENT_ROWS, "d", 8),  # unknown in every row
        ("i", [UNKNOWN, 127] * (SEGMENT_ROWS // 2), "i1", SEGMENT_ROWS),
        ("i", [UNKNOWN, 40_000] * (SEGMENT_ROWS // 2), "i4", 4 * SEGMENT_ROWS),  # -1: signed
        ("H", [0, 255] * (SEGMENT_ROWS // 2), "u1", SEGMENT_ROWS),
        ("H", [0, 100] * (SEGMENT_ROWS // 2), "i1", SEGMENT_ROWS),  # read with uint16 rows
        ("q", [0, 2**32 - 1] * (SEGMENT_ROWS // 2), "u4", 4 * SEGMENT_ROWS),
        ("q", [0, 2**32] * (SEGMENT_ROWS // 2), "q", 8 * SEGMENT_ROWS),
        ("f", [0.5, 1.5] * (SEGMENT_ROWS // 2), "f", 4 * SEGMENT_ROWS),  # floats: as they are
        # Deltas from the lowest value's bits: timestamps of a few minutes, line numbers.
        ("d", [1.7e9 + i * 0.023 for i in range(SEGMENT_ROWS)], "delta", 4 * SEGMENT_ROWS),
        ("i", [90_000 + i for i in range(SEGMENT_ROWS)], "delta", 2 * SEGMENT_ROWS),
        ("d", [NAN, 1.7e9] * (SEGMENT_ROWS // 2), "d", 8 * SEGMENT_ROWS),  # bits far apart
    ],
)
def test_a_shared_segment_is_compacted_and_reads_as_before(
    typecode: str, rows: list[Any], kept_as: str, nbytes: int
) -> None:
    plain = array(typecode, [*rows, *rows[:5]])
    column = SegmentedColumn(typecode, array(typecode, plain))
    column.seal()
    segment = column.shared_segment(0)
    if kept_as == "delta":
        assert isinstance(segment, DeltaSegment) and segment.nbytes == nbytes
        assert segment.dtype == np.dtype(typecode)
        kept_as = typecode
    else:
        assert isinstance(segment, np.ndarray) and segment.dtype == np.dtype(kept_as)
        owned = segment if segment.base is None else segment.base  # a broadcast: one value
        assert owned.nbytes == nbytes and not segment.flags.writeable
    assert segment.astype(typecode).tobytes() == plain.tobytes()[: SEGMENT_ROWS * plain.itemsize]
    assert _same(segment[5].item(), plain[5]) and _same(segment.tolist()[-1], plain[-6])
    assert column.tobytes() == plain.tobytes()
    values = column_values(column, 0, len(plain))
    assert values.dtype == np.dtype(typecode) and values.tobytes() == plain.tobytes()
    for row in (0, 1, SEGMENT_ROWS - 1, SEGMENT_ROWS):
        assert _same(column[row], plain[row]) and type(column[row]) is type(plain[row])
    was = segment.tobytes()
    column[1] = plain[0]  # copy on write: the column's own type again, the frozen one kept
    plain[1] = plain[0]
    assert column.tobytes() == plain.tobytes() and column_values(column, 0, 8).dtype == typecode
    assert segment.dtype == np.dtype(kept_as)
    assert segment.tobytes() == was  # the frozen copy's: unchanged
    assert column.shared_segment(0) is not segment  # compacted again at the next share


def test_segmented_column_keeps_the_array_checks() -> None:
    column = SegmentedColumn("i")
    column.frombytes(array("i", range(SEGMENT_ROWS + 5)).tobytes())
    column.seal()
    with pytest.raises(TypeError):
        column[3] = 1.5  # into a full segment, as into the tail: an array refuses it
    with pytest.raises(OverflowError):
        column[3] = 2**40
    with pytest.raises(IndexError):
        column[SEGMENT_ROWS + 5]
    assert column[-1] == SEGMENT_ROWS + 4 and column[3] == 3


def test_nbytes_counts_segments_as_compacted() -> None:
    column = SegmentedColumn("d")
    column.frombytes(
        array(
            "d", [NAN] * SEGMENT_ROWS + [1.7e9 + i * 0.023 for i in range(SEGMENT_ROWS + 3)]
        ).tobytes()
    )
    assert column.nbytes() == 8 * (2 * SEGMENT_ROWS + 3)
    column.seal()
    column.shared_segment(0), column.shared_segment(1)
    assert column.nbytes() == 8 + 4 * SEGMENT_ROWS + 8 * 3  # NaN once, deltas, the tail
    assert LazyColumn("i", UNKNOWN).nbytes() == 0
