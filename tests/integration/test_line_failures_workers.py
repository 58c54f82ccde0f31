"""One bad line costs that line only, where lines are read by a thread or a process: the
live worker keeps reading after a line that raises, and forked range workers lose only that
line (the batch path is in tests/unit/test_line_failures.py)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from sparseety_tui.core.extraction import Extractor
from sparseety_tui.core.figures import DEFAULT_SHAPE
from sparseety_tui.events import LineKind, ParsedLine
from sparseety_tui.formats._kvline import KvLineParser
from sparseety_tui.ingest import parallel
from sparseety_tui.ingest.batch import Options
from sparseety_tui.ingest.snapshot import LiveOptions
from sparseety_tui.ingest.worker import IngestWorker


def kv_line(rid: str, **fields: object) -> str:
    parts = [f"req_id={rid}", *(f"{key}={value}" for key, value in fields.items())]
    return "INFO:sglang.srt.server:Request completed | " + " | ".join(parts) + "\n"


def column(extractor: Extractor, name: str, rid: str) -> Any:
    row = extractor.store.ids.find(rid)
    assert row is not None, rid
    return extractor.store.columns[name][row]


def assert_consistent(extractor: Extractor) -> None:
    """Every column, offset and length has one entry per id: no half-appended row."""
    store = extractor.store
    sizes = {name: len(col) for name, col in store.columns.items()}
    sizes["offset"], sizes["length"] = len(store.offset), len(store.length)
    assert set(sizes.values()) == {len(store.ids)}, sizes


def accounted(extractor: Extractor, file: int = 0) -> dict[str, int]:
    state = extractor.files[file]
    assert sum(state.by_kind.values()) == state.lines_total
    return dict(state.by_kind)


# -- whatever still raises costs one line -------------------------------------------------

MARK = b"BOOM"


def raising_parse(real: Callable[[Any, bytes], ParsedLine]) -> Callable[[Any, bytes], ParsedLine]:
    """A parser's parse that raises on lines holding ``MARK`` (a parser bug stand-in)."""

    def parse(self: Any, line: bytes) -> ParsedLine:
        if MARK in line:
            raise RuntimeError("boom")
        return real(self, line)

    return parse


def kv_log(path: Path, n: int, bad_at: int) -> None:
    path.write_text(
        "".join(kv_line("BOOM" if i == bad_at else f"r{i}", prompt_tokens=i) for i in range(n))
    )


def assert_one_line_lost(extractor: Extractor, n: int, bad_line_no: int, kind: str) -> None:
    assert accounted(extractor) == {kind: n - 1, LineKind.UNPARSED: 1}
    (diagnostic,) = extractor.files[0].diagnostics
    assert diagnostic.line_no == bad_line_no
    assert diagnostic.reason == "parser error: RuntimeError: boom"
    assert len(extractor.store) == n - 1
    assert_consistent(extractor)


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
