"""The live worker with a time window: tok/s is not sampled from the totals of a window
(the window itself is in tests/unit/test_timewindow.py)."""

from __future__ import annotations

from pathlib import Path

from sparseety_tui.core.extraction import Extractor
from sparseety_tui.core.figures import DEFAULT_SHAPE
from sparseety_tui.core.query import (
    ViewQuery,
    window_from_args,
)

REPO = Path(__file__).resolve().parents[2]
COUNTS = REPO / "sample_logs" / "count_only_500.jsonl"


# -- totals over a row subset ----------------------------------------------------------------


def test_tok_s_is_not_sampled_from_totals_of_a_window(tmp_path: Path) -> None:
    """Setting or clearing a window changes the totals by whole rows at once: that change
    is no token rate (it read as 0 tok/s, then as a spike of every token of the file)."""
    from live_helpers import OffsetClock, wait_for

    from sparseety_tui.ingest.snapshot import LiveOptions
    from sparseety_tui.ingest.worker import IngestWorker

    log = tmp_path / "rate.jsonl"
    log.write_bytes(COUNTS.read_bytes())
    clock = OffsetClock()
    worker = IngestWorker(Extractor(), DEFAULT_SHAPE, LiveOptions(paths=(str(log),)), clock=clock)
    worker.start()
    try:
        wait_for(worker, lambda s: s.totals is not None and s.totals.requests.count == 500)
        before = worker.snapshot.rate
        spec = window_from_args("1m", None)
        worker.set_query(ViewQuery(window=spec))
        wait_for(worker, lambda s: s.totals_query.window is not None and s.settled)
        worker.set_query(ViewQuery())
        snap = wait_for(worker, lambda s: s.totals_query.window is None and s.settled)
        assert snap.totals is not None and snap.totals.requests.count == 500
        # No sample came from a window's totals, nor from the jump back to the whole.
        assert snap.rate == before
    finally:
        worker.stop()
