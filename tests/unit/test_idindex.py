"""IdIndex: the compact id store behaves like a list plus a dict, and stays small."""

from __future__ import annotations

import pickle
import threading

from hypothesis import given, settings
from hypothesis import strategies as st
from native_marks import needs_native

from sparseety_tui.core.store._idindex import IdIndex


@settings(max_examples=60, deadline=None)
@given(
    ids=st.lists(st.text(min_size=1, max_size=20), unique=True, max_size=3000),
    probes=st.lists(st.text(max_size=20), max_size=50),
)
def test_behaves_like_list_and_dict(ids: list[str], probes: list[str]) -> None:
    index = IdIndex()
    for i, request_id in enumerate(ids):
        assert index.append(request_id) == i
    assert len(index) == len(ids)
    assert list(index) == ids and index == ids
    assert index[:] == ids and index[3:17] == ids[3:17]
    lookup = {rid: i for i, rid in enumerate(ids)}
    for request_id in ids + probes:
        assert index.find(request_id) == lookup.get(request_id)
        assert (request_id in index) == (request_id in lookup)
    assert index.any_present(probes) == any(p in lookup for p in probes)


def test_pickle_round_trip_and_extend_from() -> None:
    first, second = IdIndex(), IdIndex()
    first.extend(f"a{i}" for i in range(5000))
    second.extend(f"b{i}" for i in range(7000))
    restored = pickle.loads(pickle.dumps(second))
    assert restored == second
    assert not first.shares_ids_with(restored)
    first.extend_from(restored)
    assert len(first) == 12000 and first.find("b6999") == 11999 and first.find("a0") == 0
    assert first.shares_ids_with(restored)


def test_small_per_id() -> None:
    index = IdIndex()
    index.extend(f"req-{i:07d}" for i in range(200_000))
    assert index.nbytes() / len(index) < 60  # vs ~120 B for str + dict entry + int + slot


def test_reader_never_sees_a_half_grown_table() -> None:
    index = IdIndex()
    index.append("seed")
    stop = threading.Event()
    errors: list[BaseException] = []

    def reader() -> None:
        try:
            while not stop.is_set():
                assert index.find("seed") == 0
        except BaseException as exc:  # the test reports it below
            errors.append(exc)

    thread = threading.Thread(target=reader)
    thread.start()
    index.extend(f"x{i}" for i in range(100_000))  # many rehashes while the reader runs
    stop.set()
    thread.join()
    assert not errors


@needs_native
@settings(max_examples=40, deadline=None)
@given(
    batches=st.lists(st.lists(st.text(min_size=1, max_size=8), max_size=400), max_size=8),
    native=st.booleans(),
)
def test_encoded_batches_native_and_numpy_loops_agree(
    batches: list[list[str]], native: bool
) -> None:
    """Batches as the native scanner hands them over: ``all_new`` says whether a batch can
    be added whole (no id known, none repeated), with the C loops or the numpy ones."""
    import numpy as np
    import pytest

    from sparseety_tui.core.store import _idindex as idindex

    assert idindex._idtable is not None  # built with the package (needs a C compiler)
    with pytest.MonkeyPatch.context() as patch:
        if not native:
            patch.setattr(idindex, "_idtable", None)
        index, lookup = IdIndex(), {}
        for batch in batches:
            encoded = [i.encode("utf-8", errors="surrogatepass") for i in batch]
            ids = idindex.EncodedIds(
                b"".join(encoded),
                np.cumsum([len(e) for e in encoded], dtype=np.int64),
                np.array([hash(i) for i in batch], dtype=np.int64),
            )
            expected = len(set(batch)) == len(batch) and not any(i in lookup for i in batch)
            assert index.all_new(ids) == expected
            if expected:
                index.extend(ids)
                lookup.update((i, len(lookup)) for i in batch)
        assert list(index) == list(lookup)
        for request_id, row in lookup.items():
            assert index.find(request_id) == row


@settings(max_examples=40, deadline=None)
@given(
    batches=st.lists(st.integers(0, 40), min_size=1, max_size=12),
    shift=st.integers(2, 4),
    probes=st.lists(st.text(alphabet="x1\u00e9", max_size=4), max_size=20),
)
def test_sealed_segments_read_and_share_as_the_tail_did(
    batches: list[int], shift: int, probes: list[str]
) -> None:
    """``seal`` (before every freeze of the live tail) moves full segments out of the tail;
    every read stays the same, and a whole sealed segment is handed out as it is."""
    index, ids = IdIndex(), []
    for n in batches:
        new = [f"x{len(ids) + i}\u00e9" * (1 + (len(ids) + i) % 3) for i in range(n)]
        if n % 2:
            index.extend(new)
        else:
            for request_id in new:
                index.append(request_id)
        ids.extend(new)
        index.seal(shift)
    assert list(index) == ids and len(index) == len(ids)
    assert index[:] == ids and index[3:29] == ids[3:29] and index[-1:] == ids[-1:]
    lookup = {rid: i for i, rid in enumerate(ids)}
    for request_id in ids + probes:
        assert index.find(request_id) == lookup.get(request_id)
    assert pickle.loads(pickle.dumps(index)) == ids  # one blob again
    rows = 1 << shift
    for start in range(0, len(ids), rows):
        stop = min(start + rows, len(ids))
        part = index.encoded_range(start, stop, with_hashes=False)
        assert list(part) == ids[start:stop]
        if stop - start == rows and stop <= len(ids) - len(ids) % rows:
            assert part is index.encoded_range(start, stop, with_hashes=False)  # shared
    spanning = index.encoded_range(1, len(ids))
    assert list(spanning) == ids[1:] and list(spanning.hashes) == [hash(i) for i in ids[1:]]
