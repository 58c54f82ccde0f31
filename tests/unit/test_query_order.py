"""compute_view's row order: in log order (a big log's older part first, read after its
tail), filtered, reversed and sorted, exactly as the stable sorts over an int64 index it
replaced gave, as int32 and however many chunks the positions are taken in."""

from __future__ import annotations

import random
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sparseety_tui.core.figures._costmodel import DEFAULT_SHAPE
from sparseety_tui.core.query import _query as query_module
from sparseety_tui.core.query._query import ViewQuery, compute_view, parse_filter
from sparseety_tui.core.store import NAN, ROW_LAYOUT, UNKNOWN, RequestStore
from sparseety_tui.core.store._frozen import freeze_store

LATENCY = ROW_LAYOUT.index("latency_s")
PROMPT = ROW_LAYOUT.index("prompt_tokens")


def _store(rng: random.Random, rows: int) -> RequestStore:
    store = RequestStore()
    for i in range(rows):
        values: list[Any] = [
            NAN
            if store.columns[name].typecode in "fd"
            else (UNKNOWN if store.columns[name].typecode == "i" else 0)
            for name in ROW_LAYOUT
        ]
        values[LATENCY] = rng.choice([NAN, 0.5, 1.0, rng.random() * 3])
        values[PROMPT] = rng.choice([UNKNOWN, 10, rng.randrange(1000)])
        store.append_row(f"r{i}", tuple(values), rng.randrange(3), i, 1, i + 1)
    return store


def _reference(store: RequestStore, q: ViewQuery, older: frozenset[int]) -> Any:
    """The order as computed before: an int64 index of the matching rows, then stable
    sorts (unknown latencies last, also reversed)."""
    view = store.numeric_view()
    mask = np.ones(len(store), dtype=bool)
    for clause in q.clauses:  # only "latency>x" and "prompt<y" here
        values = view["latency_s" if clause.field == "latency" else "prompt_tokens"]
        with np.errstate(invalid="ignore"):
            hit = values > clause.value if clause.op == ">" else values < clause.value
        mask &= hit & ~np.isnan(values)
    index = np.nonzero(mask)[0]
    if q.sort == "latency":
        keys = view["latency_s"].astype(np.float64)[index]
        unknown = np.isnan(keys)
        order = np.argsort(np.where(unknown, np.inf, keys), kind="stable")
        if q.reverse:
            order = np.concatenate([order[~unknown[order]][::-1], order[unknown[order]]])
        return index[order]
    if older:
        later = ~np.isin(view["file"][index].astype(np.int64), list(older))
        index = index[np.argsort(later, kind="stable")]
    return index[::-1] if q.reverse else index


@settings(max_examples=40, deadline=None)
@given(
    seed=st.integers(0, 2**32),
    rows=st.integers(0, 300),
    older=st.frozensets(st.integers(0, 3), max_size=2),
    text=st.sampled_from(["", "latency>0.7", "prompt<500", "latency>0.2 prompt<900"]),
    sort=st.sampled_from([None, "latency"]),
    reverse=st.booleans(),
    chunk=st.sampled_from([1, 7, 1 << 20]),
    frozen=st.booleans(),
)
def test_view_order_is_the_stable_sorts(
    seed: int,
    rows: int,
    older: frozenset[int],
    text: str,
    sort: str | None,
    reverse: bool,
    chunk: int,
    frozen: bool,
) -> None:
    store = _store(random.Random(seed), rows)
    q = ViewQuery(text=text, clauses=parse_filter(text), sort=sort, reverse=reverse)
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(query_module, "_POSITION_CHUNK", chunk)
        source = freeze_store(store, None) if frozen else store
        got = compute_view(source, DEFAULT_SHAPE, q, rows, older)
    assert got.dtype == np.int32
    np.testing.assert_array_equal(got, _reference(store, q, older))
