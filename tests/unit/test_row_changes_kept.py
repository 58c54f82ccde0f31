"""Which rows a snapshot says are unchanged since an older state (``Snapshot.changes``):
a state older than the changes kept keeps nothing (the bound over a running worker is in
tests/integration/test_row_changes.py)."""

from __future__ import annotations

from sparseety_tui.core.extraction import Extractor
from sparseety_tui.ingest.snapshot import Snapshot


def test_a_state_older_than_the_changes_kept_keeps_nothing() -> None:
    extractor = Extractor()
    state = extractor.freeze()
    snap = Snapshot(version=1, state=state, changes=((state.version, 0),))
    assert snap.unchanged_below(state.version - 1) == 0  # not among the changes: unknown
    later = Snapshot(version=2, state=state, changes=())
    assert later.unchanged_below(state.version) == len(state.store)  # the same state
