"""Columns that hold no bytes while every row is unknown (core.store.LazyColumn): they
read, write and freeze exactly as arrays do, and the first known value makes them one."""

from __future__ import annotations

import math
from array import array
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sparseety_tui.core.frozen import freeze_store
from sparseety_tui.core.store import (
    LAZY_COLUMNS,
    NAN,
    ROW_LAYOUT,
    UNKNOWN,
    LazyColumn,
    RequestStore,
    column_values,
)


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
    unknown = tuple(
        NAN
        if store.columns[name].typecode in "fd"
        else (UNKNOWN if store.columns[name].typecode == "i" else 0)
        for name in ROW_LAYOUT
    )
    for i in range(10):
        store.append_row(f"r{i}", unknown, 0, i * 10, 10, i + 1)
    held = store.columns["ended_by_ts"]
    assert isinstance(held, LazyColumn) and all(
        isinstance(store.columns[name], LazyColumn) for name in LAZY_COLUMNS
    )
    held[3] = 12.5  # as core.lifecycle writes, through a column it holds
    assert isinstance(store.columns["ended_by_ts"], array)  # the store now has the array
    held[4] = 13.5
    assert store.columns["ended_by_ts"][4] == 13.5 and store.get("ended_by_ts", 3) == 12.5
    store.append_row("r10", unknown, 1, 100, 10, 11)  # file 1: the file column is an array
    assert isinstance(store.columns["file"], array)
    assert list(store.columns["file"]) == [0] * 10 + [1]
    view = store.numeric_view()
    assert math.isnan(view["ended_by_ts"][0]) and view["ended_by_ts"][3] == 12.5
    assert np.isnan(view["max_tokens"]).all()  # an unknown int: NaN, as for any int column


def test_a_frozen_lazy_column_shares_nothing_and_stays_as_it_was() -> None:
    store = RequestStore()
    unknown = tuple(
        NAN
        if store.columns[name].typecode in "fd"
        else (UNKNOWN if store.columns[name].typecode == "i" else 0)
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
