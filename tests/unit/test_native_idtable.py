"""The id table's C loops (native/idtable.c) refuse tables they cannot probe safely.

core/store/ always passes a table of mask + 1 slots, at most half full, whose rows are
rows of the stored hashes; these tests pass what a broken caller might, which the fuzzer
(scripts/fuzz_native.py) found to hang or read out of bounds before.
"""

from __future__ import annotations

from array import array

import pytest

_idtable = pytest.importorskip("sparseety_tui._idtable")

EMPTY = -1


def test_a_new_hash_in_a_full_table_ends_the_probe() -> None:
    # Every slot taken, none with this hash: one lap, then "not there" (it looped forever).
    table = array("i", [0, 1, 2, 3])
    stored = array("q", [4, 5, 6, 7])
    assert _idtable.all_new(table, 3, stored, array("q", [8])) is True
    assert _idtable.all_new(table, 3, stored, array("q", [6])) is False


def test_placing_a_row_in_a_full_table_is_an_error() -> None:
    table = array("i", [0, 1])
    with pytest.raises(ValueError, match="no free slot"):
        _idtable.place_rows(table, 1, array("q", [5]), 2)
    assert table.tolist() == [0, 1]


def test_rows_before_a_full_table_stay_placed() -> None:
    table = array("i", [EMPTY, EMPTY])
    with pytest.raises(ValueError, match="no free slot"):
        _idtable.place_rows(table, 1, array("q", [0, 1, 2]), 10)
    assert table.tolist() == [10, 11]


def test_a_row_that_is_no_stored_row_matches_nothing() -> None:
    # -5 and 7 index nothing in the one stored hash (it read before / past the array).
    stored = array("q", [42])
    for bogus in (-5, -(1 << 31), 7):
        table = array("i", [bogus, EMPTY, EMPTY, EMPTY])
        assert _idtable.all_new(table, 3, stored, array("q", [0])) is True
    table = array("i", [0, EMPTY])
    assert _idtable.all_new(table, 1, stored, array("q", [42])) is False


def test_a_negative_mask_is_refused() -> None:
    # mask -1 with an empty table passed the size check (0 slots == -1 + 1), then probed
    # slot hash & ~0.
    for call in (
        lambda: _idtable.all_new(array("i"), -1, array("q"), array("q", [3])),
        lambda: _idtable.place_rows(array("i"), -1, array("q", [3]), 0),
    ):
        with pytest.raises(ValueError, match="mask"):
            call()


def test_the_ordinary_use_is_unchanged() -> None:
    table = array("i", [EMPTY] * 8)
    hashes = array("q", [3, 11, 4])  # 3 and 11 share slot 3
    _idtable.place_rows(table, 7, hashes, 0)
    assert table.tolist() == [EMPTY, EMPTY, EMPTY, 0, 1, 2, EMPTY, EMPTY]
    assert _idtable.all_new(table, 7, hashes, array("q", [19, 20])) is True
    assert _idtable.all_new(table, 7, hashes, array("q", [11])) is False
    assert _idtable.all_new(table, 7, hashes, array("q", [20, 20])) is False
