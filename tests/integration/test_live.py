"""The ingest worker's thread (no UI): snapshots, appends, rotation, backfill, an idle
worker's stop (the filter and the view alone are in tests/unit/test_live_query.py)."""

from __future__ import annotations

import contextlib
import json
import os
from pathlib import Path

from live_helpers import OffsetClock, record, start, write

from sparseety_tui.core.detail import build_detail
from sparseety_tui.core.extraction import Extractor
from sparseety_tui.core.figures import DEFAULT_SHAPE, compute_totals
from sparseety_tui.core.query import ViewQuery, parse_filter
from sparseety_tui.ingest.snapshot import LiveOptions
from sparseety_tui.ingest.worker import IngestWorker


def test_worker_follows_appends_and_totals_match_core(tmp_path: Path) -> None:
    log = tmp_path / "live.jsonl"
    write(log, [record(i) for i in range(20)])
    worker = start([log])
    try:
        assert worker.drain()
        snap = worker.snapshot
        assert snap.rows == 20 and snap.settled and snap.view is None
        write(log, [record(i) for i in range(20, 30)], mode="a")
        assert worker.drain()
        snap = worker.snapshot
        assert snap.rows == 30 and snap.totals is not None
        assert snap.totals.requests.count == 30
        expected = compute_totals(snap.state, DEFAULT_SHAPE)
        assert snap.totals.requests == expected.requests
        assert snap.files[0].lines == 30 and snap.files[0].format == "trace"
        worker.set_query(ViewQuery(clauses=parse_filter("latency>=2.5"), serial=1))
        assert worker.drain()
        assert worker.snapshot.visible == 5
    finally:
        worker.stop()


def test_settled_worker_publishes_nothing_while_nothing_changes(tmp_path: Path) -> None:
    """The snapshot a drain() returns is the last one until something changes: a UI tick
    (or a test's screenshot) after settling sees no new version. A heavy result used to
    count as a change twice (when it came and when it was gone), one empty publish later."""
    log = tmp_path / "live.jsonl"
    write(log, [record(i) for i in range(20)])
    worker = start([log])
    try:
        assert worker.drain()
        settled = worker.snapshot
        for _ in range(3):  # each drain waits for another full pass of the worker's loop
            assert worker.drain()
        assert worker.snapshot is settled
    finally:
        worker.stop()


def _inotify_descriptors() -> int:
    count = 0
    for fd in os.listdir("/proc/self/fd"):
        with contextlib.suppress(OSError):  # closed meanwhile (the listing's own descriptor)
            count += "inotify" in os.readlink(f"/proc/self/fd/{fd}")
    return count


def test_an_idle_worker_stops_and_releases_its_watch(tmp_path: Path) -> None:
    """An idle worker sleeps until a file changes, with no deadline. stop() used to leave
    it asleep: the join timed out after 5 s and the thread lived on with its inotify
    descriptor, 128 of which exhausted the user's inotify instances (CI failed on it)."""
    log = tmp_path / "live.jsonl"
    write(log, [record(i) for i in range(5)])
    before = _inotify_descriptors()
    clock = OffsetClock()
    worker = IngestWorker(
        Extractor(), DEFAULT_SHAPE, LiveOptions(paths=(str(log),), track_rate=False), clock=clock
    )
    worker.start()
    assert worker.drain()
    # Past the quiet flush and every other due: nothing more is due. The second drain ends
    # on a pass begun after the move (the first may end on one begun before).
    clock.offset += 3600
    assert worker.drain() and worker.drain()
    assert worker.running
    worker.stop(timeout=5.0)
    assert not worker.running
    assert _inotify_descriptors() == before


def test_worker_reports_rotation(tmp_path: Path) -> None:
    log = tmp_path / "server.log"
    write(log, [record(i) for i in range(5)])
    worker = start([log])
    try:
        assert worker.drain()
        os.rename(log, tmp_path / "server.log.1")
        write(log, [record(i) for i in range(100, 103)])
        for _ in range(50):
            worker.drain()
            if worker.snapshot.rows == 8:
                break
        snap = worker.snapshot
        assert snap.rows == 8
        assert any("rotated" in event for event in snap.events)
        # New lines belong to a new incarnation of the path; earlier rows are not re-read
        # at offsets that now hold other data.
        state = snap.state
        assert state is not None
        files = [f for f in state.files if f.path == str(log)]
        assert len(files) == 2 and files[0].superseded and not files[1].superseded
        assert sum(f.lines_total for f in files) == 8
        old = build_detail(state, state.store.ids.find("r0001") or -1)
        assert old.raw_lines == [] and "changed since" in old.problems[0]
        new = build_detail(state, state.store.ids.find("r0101") or -1)
        assert json.loads(new.raw_lines[0].head)["request_id"] == "r0101"
    finally:
        worker.stop()


def test_big_file_shows_tail_first_then_backfills(tmp_path: Path) -> None:
    log = tmp_path / "big.jsonl"
    write(log, [record(i) for i in range(3000)])
    size = log.stat().st_size
    worker = start([log], big_file_bytes=size // 2, tail_window_bytes=size // 10)
    try:
        assert worker.drain(30)
        snap = worker.snapshot
        assert snap.rows == 3000
        status = snap.files[0]
        assert len(status.parts) == 2 and not status.backfilling
        assert status.lines == 3000 and status.line_base is not None
        # The tail part was read first: its rows come first in the store...
        assert snap.state is not None
        store = snap.state.store
        assert store.ids[0] > "r2000"
        assert sum(status.by_kind.values()) == 3000
        # ...but the table shows log order, so End (and follow) is the file's last line.
        shown = [store.ids[snap.row_at(p)] for p in range(snap.visible)]
        assert shown == [f"r{i:04d}" for i in range(3000)]
        write(log, [record(3000)], mode="a")
        assert worker.drain(30)
        snap = worker.snapshot
        assert snap.state is not None
        assert snap.state.store.ids[snap.row_at(snap.visible - 1)] == "r3000"
    finally:
        worker.stop()


def test_finished_backfill_totals_are_not_throttled(tmp_path: Path) -> None:
    """Once a big file's older part is read, its totals and order are computed at once:
    the throttle between recomputes (here an hour) is for lines that keep coming, and a
    backfill ends once. Before, the last totals waited for it (~2 s on 1 GB)."""
    log = tmp_path / "big.jsonl"
    lines = [record(i) for i in range(3000)]
    write(log, lines)
    size = log.stat().st_size
    worker = start(
        [log], big_file_bytes=size // 2, tail_window_bytes=size // 10, totals_interval_s=3600
    )
    try:
        assert worker.drain(30), "the last totals waited for the throttle"
        snap = worker.snapshot
        assert snap.rows == 3000 and snap.totals_rows == 3000
        assert snap.totals is not None
        assert snap.totals.requests.count == 3000
    finally:
        worker.stop()


def test_last_n_lines(tmp_path: Path) -> None:
    log = tmp_path / "a.jsonl"
    write(log, [record(i) for i in range(100)])
    worker = start([log], start="last", last_lines=10)
    try:
        assert worker.drain()
        assert worker.snapshot.rows == 10
        state = worker.snapshot.state
        assert state is not None and state.store.ids[0] == "r0090"
    finally:
        worker.stop()


def test_missing_file_waits_and_appears(tmp_path: Path) -> None:
    log = tmp_path / "later.jsonl"
    worker = start([log])
    try:
        worker.drain(2)
        assert worker.snapshot.rows == 0
        write(log, [record(1)])
        for _ in range(50):
            worker.drain(1)
            if worker.snapshot.rows == 1:
                break
        assert worker.snapshot.rows == 1
    finally:
        worker.stop()
