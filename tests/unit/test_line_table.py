"""core.store.LineTable: a row's lines after its first, some kept in arrays (lines
added in bulk, one a row) and some in dicts, read back as one mapping, in line order, as
a plain dict of tuples would hold them; a snapshot keeps what the table held then."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from sparseety_tui.core.store._line_table import LineTable, MoreLines

SHIFT = 3  # segments of 8 rows: runs cross them
ROWS = 40

operation = st.one_of(
    # a run of rows that have no line yet, one line each, in any order (the batch applier, core.extraction)
    st.tuples(st.just("singles"), st.lists(st.integers(0, ROWS - 1), unique=True, max_size=12)),
    # one more line for a row (RequestStore.add_line)
    st.tuples(st.just("line"), st.integers(0, ROWS - 1)),
    st.tuples(st.just("snapshot"), st.integers(0, ROWS)),
)


def _check(table: LineTable, model: dict[int, MoreLines]) -> None:
    assert len(table) == len(model)
    assert dict(table.items()) == model
    assert sorted(table) == sorted(model)
    for row in range(-1, ROWS + 9):
        assert table.get(row) == model.get(row)
        assert (row in table) == (row in model)


@settings(max_examples=300, deadline=None)
@given(st.lists(operation, max_size=30))
def test_the_table_reads_as_a_dict_of_tuples(ops: list[tuple[str, object]]) -> None:
    table, model = LineTable(SHIFT), {}
    snapshots: list[tuple[LineTable, dict[int, MoreLines]]] = []
    for serial, (name, arg) in enumerate(ops, 1):
        if name == "singles":
            assert isinstance(arg, list)
            rows = [row for row in arg if row not in model]
            offsets = [1000 * serial + row for row in rows]
            order = np.argsort(rows, kind="stable")
            table.add_singles(
                np.array(rows, dtype=np.int64)[order],
                7,
                np.array(offsets, dtype=np.int64)[order],
                np.array([row + 1 for row in rows], dtype=np.uint32)[order],
            )
            for row, offset in zip(rows, offsets):
                model[row] = ((7, offset, row + 1),)
        elif name == "line":
            assert isinstance(arg, int)
            more = table.get(arg)
            line = (2, serial, 3)
            table[arg] = (line,) if more is None else (*more, line)
            model[arg] = (*model.get(arg, ()), line)
        else:
            assert isinstance(arg, int)
            parts = [table.part(i).snapshot(arg) for i in range((ROWS >> SHIFT) + 1)]
            frozen = LineTable(SHIFT, parts)
            snapshots.append((frozen, {r: m for r, m in model.items() if r < arg}))
        _check(table, model)
    for frozen, held in snapshots:  # what the table did later changed none of them
        _check(frozen, held)
