"""FrozenIds.find searches the frozen ids' bytes (no hashes kept): it finds every id at
its row, and nothing for an id that is only a part of others or spans two of them."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from sparseety_tui.core.store import NAN, ROW_LAYOUT, SEGMENT_ROWS, UNKNOWN, RequestStore
from sparseety_tui.core.store._frozen import freeze_store


def _store(ids: list[str]) -> RequestStore:
    store = RequestStore()
    unknown = tuple(
        NAN
        if store.columns[name].typecode in "fd"
        else (UNKNOWN if store.columns[name].typecode == "i" else 0)
        for name in ROW_LAYOUT
    )
    for i, rid in enumerate(ids):
        store.append_row(rid, unknown, 0, i, 1, i + 1)
    return store


@settings(max_examples=80, deadline=None)
@given(
    ids=st.lists(st.text(alphabet="ab\u00e9\ud800", max_size=4), unique=True, max_size=30),
    probes=st.lists(st.text(alphabet="ab\u00e9\ud800", max_size=6), max_size=10),
)
def test_find_equals_the_stores(ids: list[str], probes: list[str]) -> None:
    store = _store(ids)
    frozen = freeze_store(store, None)
    for rid in [*ids, *probes]:
        assert frozen.ids.find(rid) == store.ids.find(rid)


def test_find_across_segments() -> None:
    ids = [f"r{i}" for i in range(2 * SEGMENT_ROWS + 7)]
    frozen = freeze_store(_store(ids), None)
    for row in (0, 1, 10, SEGMENT_ROWS - 1, SEGMENT_ROWS, 2 * SEGMENT_ROWS + 6):
        assert frozen.ids.find(ids[row]) == row
    assert frozen.ids.find("r") is None and frozen.ids.find("1r") is None
    assert frozen.ids.find(f"r{2 * SEGMENT_ROWS + 7}") is None


def test_full_segments_share_the_stores_id_bytes() -> None:
    ids = [f"r{i}" for i in range(2 * SEGMENT_ROWS + 7)]
    store = _store(ids)
    frozen = freeze_store(store, None)
    again = freeze_store(store, frozen)
    for segment in (0, 1):
        shared = frozen._segments[segment].ids
        assert shared is store.ids.encoded_range(
            segment * SEGMENT_ROWS, (segment + 1) * SEGMENT_ROWS, False
        )
        assert again._segments[segment].ids is shared
    assert list(frozen.ids) == ids and store.ids.find(ids[5]) == 5
