"""The ingest worker across rotations (issue #9, items 5 and 6): what the status and the
diagnostics keep, per-token data read twice, files that appear later, tracebacks at the end
of a quiet file.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

from live_helpers import OffsetClock, start, wait_for

from sparseety_tui.core.extraction import Extractor
from sparseety_tui.ingest.batch import ingest_file
from sparseety_tui.ingest.worker import QUIET_FLUSH_S


def record(i: int) -> str:
    return json.dumps({"request_id": f"r{i:04d}", "prompt_tokens": 10, "latency_s": 0.5}) + "\n"


# -- item 5: the old file is not forgotten --------------------------------------------------


def test_status_and_diagnostics_keep_a_rotated_files_counts(tmp_path: Path) -> None:
    log = tmp_path / "server.jsonl"
    log.write_text(record(1) + "not json at all\n" + record(2) + "{broken\n")
    worker = start([log])
    try:
        assert worker.drain()
        assert worker.snapshot.files[0].unparsed == 2
        os.rename(log, tmp_path / "server.jsonl.1")
        log.write_text(record(3) + "still not json\n")
        snap = wait_for(worker, lambda s: s.rows == 3 and s.files[0].lines >= 6)
        status = snap.files[0]
        # Lines and unparsed lines of both incarnations, each line counted once.
        assert status.lines == 6
        assert sum(status.by_kind.values()) == 6
        assert status.unparsed == 3
        assert status.by_kind["trace.request"] == 3
        # The diagnostics keep the old file's unparsed lines, with where they were.
        assert snap.state is not None
        previews = [d.preview for part in status.parts for d in snap.state.files[part].diagnostics]
        assert sorted(previews) == ["not json at all", "still not json", "{broken"]
        assert status.incarnations == (1, 2)
    finally:
        worker.stop()


def test_diagnostics_screen_lists_every_incarnation_and_its_events(tmp_path: Path) -> None:
    from sparseety_tui.ui.screens.diagnostics import DiagnosticsScreen

    log = tmp_path / "server.jsonl"
    log.write_text(record(1) + "not json at all\n")
    worker = start([log])
    try:
        assert worker.drain()
        os.rename(log, tmp_path / "server.jsonl.1")
        log.write_text(record(3) + "still not json\n")
        snap = wait_for(worker, lambda s: s.rows == 2 and s.files[0].lines == 4)
    finally:
        worker.stop()
    _, plain = DiagnosticsScreen(snap)._render_files(snap)
    assert "not json at all" in plain and "still not json" in plain
    assert "unparsed 2" in plain
    assert "file rotated, reopened" in plain  # the events of the file are listed
    assert "(file #2)" in plain  # a line of the new file says which file it is in


# -- item 5: per-token data of a trace read again ------------------------------------------


def token(rid: str, pos: int) -> str:
    return json.dumps({"type": "token", "request_id": rid, "pos": pos, "experts": [[1, 2]]}) + "\n"


def test_a_truncated_trace_read_again_does_not_count_its_tokens_twice(tmp_path: Path) -> None:
    """A trace truncated and written again repeats each token of its requests: counted once.
    Tokens written after a rotation that carry on a request (later positions) still add."""
    log = tmp_path / "trace.jsonl"
    first = [token("a", pos) for pos in range(5)] + [token("b", pos) for pos in range(3)]
    log.write_text("".join(first))
    worker = start([log])
    try:
        assert worker.drain()
        state = worker.snapshot.state
        assert state is not None and state.expert_load.total() == 16
        os.truncate(log, 0)  # the writer starts over...
        wait_for(worker, lambda s: any("truncated" in e for e in s.events))
        with log.open("a") as f:  # ...and writes the same tokens again, then new ones
            f.writelines(first + [token("a", pos) for pos in range(5, 8)])
        snap = wait_for(
            worker,
            lambda s: (
                s.state is not None
                and s.state.version > 0
                and 19 in {s.files[0].lines, sum(f.lines_total for f in s.state.files)}
            ),
        )
        assert snap.state is not None
        assert snap.state.expert_load.total() == 2 * (5 + 3 + 3)
        a = snap.state.store.ids.find("a")
        assert a is not None
        assert snap.state.store.extras[a].routed_tokens == 8
        assert snap.files[0].lines == 19
    finally:
        worker.stop()


# -- item 5: files that appear later --------------------------------------------------------


def test_new_files_in_a_followed_directory_are_picked_up(tmp_path: Path) -> None:
    logs = tmp_path / "logs"
    logs.mkdir()
    first = logs / "a.jsonl"
    first.write_text(record(1))
    worker = start([first], directories=(str(logs),))
    try:
        assert worker.drain()
        (logs / "b.jsonl").write_text(record(2) + record(3))
        snap = wait_for(worker, lambda s: s.rows == 3)
        assert snap.rows == 3
        assert sorted(os.path.basename(f.path) for f in snap.files) == ["a.jsonl", "b.jsonl"]
        # A rotated copy of a followed file is history, not a new log: not read twice.
        os.rename(first, logs / "a.jsonl.1")
        first.write_text(record(4))
        snap = wait_for(worker, lambda s: s.rows == 4)
        # Whatever the worker would read of the rotated copy, it has read after a drain.
        assert worker.drain()
        snap = worker.snapshot
        assert snap.rows == 4
        assert sorted(os.path.basename(f.path) for f in snap.files) == ["a.jsonl", "b.jsonl"]
        assert sum(f.lines for f in snap.files) == 4
    finally:
        worker.stop()


def test_a_file_that_appears_later_says_it_is_awaited(tmp_path: Path) -> None:
    later = tmp_path / "later.jsonl"
    worker = start([later])
    try:
        worker.drain(2)
        assert worker.snapshot.events[-1] == f"waiting for {later} to appear"
        later.write_text(record(1))
        snap = wait_for(worker, lambda s: s.rows == 1)
        assert snap.rows == 1 and "appeared" in snap.events[-1]
    finally:
        worker.stop()


# -- item 6: a traceback at the end of a quiet file ----------------------------------------

VLLM_HEAD = """\
INFO 11-10 04:36:40 [api_server.py:1] vLLM API server version 0.11.0
ERROR 11-10 04:36:43 [serving_chat.py:1051] Error in chat completion stream generator.
ERROR 11-10 04:36:43 [serving_chat.py:1051] Traceback (most recent call last):
ERROR 11-10 04:36:43 [serving_chat.py:1051]   File "/app/serving_chat.py", line 545, in gen
ERROR 11-10 04:36:43 [serving_chat.py:1051] ValueError: boom
INFO 11-10 04:36:44 [loggers.py:123] Engine 000: Avg prompt throughput: 10.0 tokens/s, \
Avg generation throughput: 5.0 tokens/s, Running: 1 reqs, Waiting: 0 reqs, \
GPU KV cache usage: 1.0%, Prefix cache hit rate: 0.0%
Traceback (most recent call last):
  File "/usr/lib/python3.12/runpy.py", line 198, in _run_module_as_main
    return _run_code(code, main_globals, None,
"""
VLLM_REST = """\
  File "/app/engine/core.py", line 712, in run_engine_core
RuntimeError: engine died
"""


def test_a_traceback_at_the_end_of_a_quiet_file_is_counted(tmp_path: Path) -> None:
    log = tmp_path / "server.log"
    log.write_text(VLLM_HEAD)
    batch = Extractor()
    ingest_file(batch, str(log))
    assert batch.error_count == 2  # what `summary` says: the file ends mid-traceback
    clock = OffsetClock()
    worker = start([log], clock=clock)
    try:
        assert worker.drain()
        state = worker.snapshot.state
        assert state is not None and state.error_count == 1  # the last one may go on
        clock.offset += QUIET_FLUSH_S + 0.5  # the file stays quiet: the traceback is over
        snap = wait_for(worker, lambda s: s.state is not None and s.state.error_count == 2)
        assert snap.state is not None and snap.state.error_count == 2
        # The server was only slow: the same traceback goes on. Still one error, and its
        # lines are traceback lines, not a second error.
        with log.open("a") as f:
            f.write(VLLM_REST)
        snap = wait_for(worker, lambda s: s.files[0].lines == 11)
        clock.offset += QUIET_FLUSH_S + 0.5
        worker.drain()
        snap = worker.snapshot
        whole = Extractor()
        ingest_file(whole, str(log))
        assert snap.files[0].by_kind == whole.files[0].by_kind
        assert snap.state is not None and snap.state.error_count == whole.error_count == 2
    finally:
        worker.stop()
