"""Hard-wrapped stats lines where a thread or a process reads them: a quiet live file
reports its held head once, and a split read of wrapped lines equals one reading (the
rejoining itself is in tests/unit/test_terminal_wrap.py)."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest
from cli_helpers import summary_json
from live_helpers import OffsetClock, wait_for
from termwrap_helpers import ACCESS, DECODE, REAL, V1_ENGINE, wrap

from sparseety_tui.core.extraction import Extractor
from sparseety_tui.core.figures import DEFAULT_SHAPE
from sparseety_tui.ingest.batch import ingest_file
from sparseety_tui.ingest.snapshot import LiveOptions
from sparseety_tui.ingest.worker import QUIET_FLUSH_S, IngestWorker


def summary(capsys: pytest.CaptureFixture[str], path: Path, jobs: int = 1) -> dict[str, Any]:
    return summary_json(capsys, "--jobs", str(jobs), str(path))


# -- live tail -----------------------------------------------------------------------------


def test_a_quiet_live_file_reports_its_held_head_once(tmp_path: Path) -> None:
    lines = REAL.read_text().splitlines()
    log = tmp_path / "server.log"
    log.write_text("\n".join(lines[:3]) + "\n")  # ends with the :47 head
    clock = OffsetClock()
    worker = IngestWorker(
        Extractor(),
        DEFAULT_SHAPE,
        LiveOptions(paths=(str(log),), track_rate=False),
        clock=clock,
    )
    worker.start()
    try:
        assert worker.drain()
        state = worker.snapshot.state
        assert state is not None and state.engine.count == 1  # the :47 head is held
        clock.offset += QUIET_FLUSH_S + 0.5  # quiet: the head is all there is, for now
        snap = wait_for(worker, lambda s: s.state is not None and s.state.engine.count == 2)
        assert snap.state is not None and snap.state.engine.count == 2
        assert "kv_usage" not in snap.state.engine.last
        # The rest arrives after all: its continuation is the record's line, not a
        # second record, and the next records are read whole.
        with log.open("a") as f:
            f.write("\n".join(lines[3:]) + "\n")
        snap = wait_for(worker, lambda s: s.files[0].lines == 10)
        clock.offset += QUIET_FLUSH_S + 0.5
        worker.drain()
        snap = worker.snapshot
        assert snap.files[0].by_kind == {"vllm.stats": 10}
        assert snap.state is not None and snap.state.engine.count == 6
        assert snap.state.engine.last["kv_usage"] == 0.296
        whole = Extractor()
        ingest_file(whole, str(REAL))
        assert whole.engine.count == 6
    finally:
        worker.stop()


# -- split reads ---------------------------------------------------------------------------


@pytest.mark.parametrize("jobs", [2, 3, 5])
def test_split_read_of_wrapped_lines_equals_one_reading(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], split_outcomes: list[bool | str], jobs: int
) -> None:
    # Wrapped heads, cut heads and whole lines, so that range starts fall next to heads
    # and continuations alike.
    real = REAL.read_text().splitlines()
    lines: list[str] = []
    for i in range(400):
        s = i % 60
        lines.extend(
            wrap(DECODE.format(s=s, r=i % 64, u=i / 1000, g=100 + i, q=i % 7), 90 + i % 40)
        )
        lines.append(DECODE.format(s=s, r=1, u=0.5, g=1.5, q=0))
        if i % 3 == 0:
            lines.append(DECODE.format(s=s, r=2, u=0.25, g=2.5, q=0)[: 60 + i % 50])
        lines.append(ACCESS.format(s=s))
    path = tmp_path / "sglang.log"
    path.write_text("\n".join(lines) + "\n")
    single = summary(capsys, path, 1)
    split = summary(capsys, path, jobs)
    assert split == single
    assert split_outcomes == [True]
    assert "unparsed" not in single["files"][0]["lines"]["by_kind"]
    # vLLM: the real file many times over (a minute later each time), whole lines between.
    vpath = tmp_path / "vllm.log"
    v1 = V1_ENGINE.format(e=0, p=1.0, g=2.0, r=3, w=4, kv=5.0)
    body: list[str] = []
    for k in range(300):
        stamp = f"07-{4 + k // 1440:02d} {k // 60 % 24:02d}:{k % 60:02d}"
        body.extend(re.sub(r"07-03 23:2\d", stamp, line) for line in real)
        body.extend([v1.replace("03-11 06:16", stamp)] * 5)
    vpath.write_text("\n".join(body) + "\n")
    single = summary(capsys, vpath, 1)
    split = summary(capsys, vpath, jobs)
    assert split == single
    assert split_outcomes[-1] is True
    assert single["files"][0]["lines"]["by_kind"] == {"vllm.stats": 15 * 300}
    assert single["engine"]["stats_lines"] == 11 * 300
