"""Extractor.freeze(): an immutable copy equal to the store at that moment, however the
store changed before (appends, in-place updates of old rows, per-token extras), and
unchanged by whatever the writer does after."""

from __future__ import annotations

import random
from typing import Any

import numpy as np
import orjson
from hypothesis import given, settings
from hypothesis import strategies as st

from sparseety_tui.core.extraction._extractor import Extractor
from sparseety_tui.core.figures._costmodel import DEFAULT_SHAPE
from sparseety_tui.core.figures._totals import compute_totals
from sparseety_tui.core.store import SEGMENT_ROWS, RequestStore
from sparseety_tui.core.store._frozen import FrozenStore


class Line:
    def __init__(self, data: bytes, offset: int) -> None:
        self.data, self.offset, self.length, self.truncated = data, offset, len(data) + 1, False


def record(rng: random.Random, rid: int) -> dict[str, Any]:
    rec: dict[str, Any] = {"request_id": f"r{rid}", "prompt_tokens": rng.randint(1, 999)}
    if rng.random() < 0.5:
        rec["completion_tokens"] = rng.randint(1, 99)
        rec["latency_s"] = rng.random() * 3
    if rng.random() < 0.2:
        rec["sparse"] = {
            "routing": [[[rng.randint(0, 7), rng.randint(0, 7)]]],
            "moe_layers": [0],
            "topk_experts": 2,
            "total_experts": 8,
        }
    return rec


def same(frozen: FrozenStore, store: RequestStore) -> None:
    assert len(frozen) == len(store)
    want, got = store.numeric_view(), frozen.numeric_view()
    assert want.keys() == got.keys()
    for name in want:
        np.testing.assert_array_equal(got[name], want[name], err_msg=name)
    assert list(frozen.ids) == list(store.ids)
    assert dict(frozen.extras.items()) == dict(store.extras.items())
    for row in range(0, len(store), max(1, len(store) // 50)):
        assert frozen.lines_of(row) == store.lines_of(row)
        assert frozen.ids.find(store.ids[row]) == row
        for name in ("prompt_tokens", "latency_s", "state", "model"):
            got, want = frozen.columns[name][row], store.columns[name][row]
            assert got == want or (got != got and want != want)  # NaN: unknown in both


@settings(max_examples=15, deadline=None)
@given(seed=st.integers(0, 2**32), batches=st.integers(1, 12))
def test_every_freeze_equals_the_store(seed: int, batches: int) -> None:
    rng = random.Random(seed)
    extractor = Extractor()
    file = extractor.add_file("/dev/null")
    offset, next_id = 0, 0
    frozen_copies = []
    for _ in range(batches):
        lines = []
        for _ in range(rng.choice([1, 50, SEGMENT_ROWS + 7])):
            # Mostly new requests; some update a request seen long before (an old row
            # changes in place: its segment must be copied again).
            rid = next_id if rng.random() < 0.8 or next_id == 0 else rng.randrange(next_id)
            next_id += rid == next_id
            data = orjson.dumps(record(rng, rid))
            lines.append(Line(data, offset))
            offset += len(data) + 1
        extractor.feed(file, lines)
        frozen = extractor.freeze()
        same(frozen.store, extractor.store)
        frozen_copies.append((frozen, frozen.store.numeric_view(), list(frozen.store.ids)))
    # Earlier copies never changed while the writer went on.
    for frozen, view, ids in frozen_copies:
        again = frozen.store.numeric_view()
        for name in view:
            np.testing.assert_array_equal(again[name], view[name])
        assert list(frozen.store.ids) == ids


def test_totals_of_a_frozen_copy_equal_the_extractors() -> None:
    rng = random.Random(7)
    extractor = Extractor()
    file = extractor.add_file("/dev/null")
    lines = [Line(orjson.dumps(record(rng, i % 3000)), i * 100) for i in range(9000)]
    extractor.feed(file, lines)
    assert compute_totals(extractor.freeze(), DEFAULT_SHAPE) == compute_totals(
        extractor, DEFAULT_SHAPE
    )


def test_unchanged_segments_are_shared_not_copied() -> None:
    extractor = Extractor()
    file = extractor.add_file("/dev/null")
    n = 3 * SEGMENT_ROWS + 10
    extractor.feed(
        file, [Line(b'{"request_id":"r%d","prompt_tokens":1}' % i, i * 40) for i in range(n)]
    )
    first = extractor.freeze().store
    # A late line for a request of the second segment: that segment and later ones are
    # copied again, the first is shared.
    extractor.feed(
        file, [Line(b'{"request_id":"r%d","completion_tokens":5}' % (SEGMENT_ROWS + 3), n * 40)]
    )
    second = extractor.freeze().store
    assert second._segments[0] is first._segments[0]
    assert second._segments[1] is not first._segments[1]
    assert first.columns["completion_tokens"][SEGMENT_ROWS + 3] == -1
    assert second.columns["completion_tokens"][SEGMENT_ROWS + 3] == 5


def test_a_store_without_rows_freezes_with_its_columns() -> None:
    # A log of engine stats only (no request yet): totals of the frozen copy still work
    # and equal the Extractor's (it failed with KeyError: no segment, no column names).
    extractor = Extractor()
    file = extractor.add_file("/dev/null")
    extractor.feed(file, [Line(b'{"type": "meta", "model": "m"}', 0)])
    frozen = extractor.freeze()
    assert len(frozen.store) == 0
    view = frozen.store.numeric_view()
    assert view.keys() == extractor.store.numeric_view().keys()
    assert all(len(values) == 0 for values in view.values())
    assert compute_totals(frozen, DEFAULT_SHAPE) == compute_totals(extractor, DEFAULT_SHAPE)
