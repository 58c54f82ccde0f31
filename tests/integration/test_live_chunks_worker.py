"""The live worker fed in chunks (``FileFollower(chunks=True)``) ends with the store the
batch read gives: request JSONL and every real log, written in random pieces that cut lines
anywhere, the worker draining after each (the chunk reader alone is in
tests/unit/test_live_chunks.py)."""

from __future__ import annotations

import json
import random
import shutil
from pathlib import Path

import pytest
from follow_helpers import appender
from live_helpers import OffsetClock
from waiting import wait_for

from sparseety_tui.core.extraction import Extractor
from sparseety_tui.core.figures import DEFAULT_SHAPE
from sparseety_tui.core.report import request_records, summary_document
from sparseety_tui.formats import _registry as registry
from sparseety_tui.ingest.batch import ingest_file
from sparseety_tui.ingest.snapshot import LiveOptions
from sparseety_tui.ingest.worker import QUIET_FLUSH_S, IngestWorker

REAL_LOGS = sorted((Path(__file__).parents[1] / "data" / "real_logs").glob("*.log"))


def _request(i: int) -> bytes:
    record = {
        "request_id": f"r{i:06d}",
        "model": "m",
        "prompt_tokens": 10 + i % 97,
        "completion_tokens": 3 + i % 13,
        "latency_s": 0.5,
        "ts": 1_700_000_000 + i,
    }
    return json.dumps(record).encode() + b"\n"


def _end_of_line(data: bytes, n: int) -> int:
    """Where the first ``n`` lines of ``data`` end (all of it if it has fewer)."""
    pos = 0
    for _ in range(n):
        newline = data.find(b"\n", pos)
        if newline < 0:
            return len(data)
        pos = newline + 1
    return pos


def _live_then_batch(tmp_path: Path, source: bytes, seed: int) -> tuple[Extractor, Extractor]:
    """``source`` written in random pieces (lines cut anywhere) to a followed file, the
    worker draining after each; then the same file read by the batch reader."""
    path = tmp_path / "live.log"
    path.write_bytes(b"")
    live = Extractor()
    clock = OffsetClock()
    options = LiveOptions(paths=(str(path),), track_rate=False)
    worker = IngestWorker(live, DEFAULT_SHAPE, options, clock=clock)
    rng = random.Random(seed)
    worker.start()
    try:
        assert worker.drain()
        with appender(path) as w:
            # The first write holds what format detection reads (SNIFF_LINES lines): a log
            # that begins with a few lines is read under a provisional format until more
            # come, which the batch read of the whole file never does.
            pos = _end_of_line(source, registry.SNIFF_LINES)
            w.write(source[:pos])
            while pos < len(source):
                step = rng.randint(1, max(2, len(source) // 8))
                w.write(source[pos : pos + step])
                pos += step
                assert worker.drain(timeout=30)
        # A drain can end on a pass begun before the last write was seen: wait for its lines.
        lines = source.count(b"\n")
        wait_for(
            lambda: worker.drain(timeout=30) and worker.snapshot.files[0].lines >= lines,
            what=f"the worker to read the {lines} lines written",
        )
        # A file quiet for QUIET_FLUSH_S has its parser flushed as at the end of a batch
        # file (a traceback the log ends with is counted then). The clock moves past that;
        # the second drain ends on a pass begun after the move.
        clock.offset += QUIET_FLUSH_S
        assert worker.drain(timeout=30) and worker.drain(timeout=30)
    finally:
        worker.stop()
    batch = Extractor()
    ingest_file(batch, str(path))
    return live, batch


def _same_store(live: Extractor, batch: Extractor) -> None:
    """Field by field: every request as ``extract`` writes it, and the ``summary --json``
    document (lines by kind, engine figures, errors)."""
    assert len(live.files) == len(batch.files) == 1
    assert live.files[0].lines_total == batch.files[0].lines_total
    assert live.files[0].by_kind == batch.files[0].by_kind
    assert list(request_records(live, DEFAULT_SHAPE)) == list(request_records(batch, DEFAULT_SHAPE))
    live_doc = json.dumps(summary_document(live, DEFAULT_SHAPE), sort_keys=True, default=str)
    batch_doc = json.dumps(summary_document(batch, DEFAULT_SHAPE), sort_keys=True, default=str)
    assert live_doc == batch_doc


@pytest.mark.parametrize("seed", range(2))
def test_live_chunks_give_the_batch_store_for_request_jsonl(tmp_path: Path, seed: int) -> None:
    """Enough records a write for the native scanner's blocks, cut lines, odd lines."""
    rng = random.Random(seed)
    lines = [_request(i) for i in range(5000)]
    for i in rng.sample(range(len(lines)), 20):
        lines[i] = b"not json at all\n"
    live, batch = _live_then_batch(tmp_path, b"".join(lines), seed)
    _same_store(live, batch)


@pytest.mark.parametrize("log", REAL_LOGS, ids=[p.name for p in REAL_LOGS])
def test_live_chunks_give_the_batch_store_for_real_logs(tmp_path: Path, log: Path) -> None:
    """Every real server log, followed while it is written in pieces (the server scanners'
    hook on live chunks), gives the store the batch read gives."""
    source = log.read_bytes()
    if len(source) > 4 * 1024 * 1024:
        pytest.skip("big log: the batch differential tests cover it")
    shutil.copy(log, tmp_path / "copy.log")  # its name may matter to detection
    live, batch = _live_then_batch(tmp_path, source, 0)
    _same_store(live, batch)
