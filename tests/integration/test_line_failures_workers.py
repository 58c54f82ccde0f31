"""One bad line costs that line only, where lines are read by a thread or a process: the
live worker keeps reading after a line that raises, and forked range workers lose only that
line (the batch path is in tests/unit/test_line_failures.py)."""

from __future__ import annotations

from pathlib import Path

import pytest
from line_failure_helpers import (
    assert_one_line_lost,
    kv_line,
    kv_log,
    raising_parse,
)

from sparseety_tui.core.extraction import Extractor
from sparseety_tui.core.figures import DEFAULT_SHAPE
from sparseety_tui.formats._kvline import KvLineParser
from sparseety_tui.ingest import parallel
from sparseety_tui.ingest.batch import Options
from sparseety_tui.ingest.snapshot import LiveOptions
from sparseety_tui.ingest.worker import IngestWorker

# -- whatever still raises costs one line -------------------------------------------------


def test_the_live_worker_keeps_reading_after_a_line_that_raises(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``tail`` used to show "ingest stopped" and never read another line."""
    monkeypatch.setattr(KvLineParser, "parse", raising_parse(KvLineParser.parse))
    log = tmp_path / "kv.log"
    kv_log(log, 10, bad_at=5)
    worker = IngestWorker(
        Extractor(), DEFAULT_SHAPE, LiveOptions(paths=(str(log),), track_rate=False)
    )
    worker.start()
    try:
        assert worker.drain()
        with log.open("a") as f:
            f.write(kv_line("later", prompt_tokens=1) + kv_line("BOOM again") + kv_line("last"))
        assert worker.drain()
        snap = worker.snapshot
        assert snap.error is None
        assert snap.rows == 11
        (status,) = snap.files
        assert status.lines == 13 and status.unparsed == 2
    finally:
        worker.stop()


def test_parallel_range_workers_lose_only_the_line_that_raises(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(KvLineParser, "parse", raising_parse(KvLineParser.parse))
    monkeypatch.setattr(parallel, "PARALLEL_MIN_BYTES", 1)
    log = tmp_path / "kv.log"
    kv_log(log, 4000, bad_at=3000)
    extractor = Extractor()
    parallel.ingest_all(extractor, Options(format="kv"), [str(log)], jobs=2)
    assert_one_line_lost(extractor, 4000, bad_line_no=3001, kind="kv.request")
