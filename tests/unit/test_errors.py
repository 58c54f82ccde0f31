"""The error log (core.store): every error with its file, first line and class, from real
logs; exact counts by class and minute; ``summary --json`` records whose line numbers are
checked against the file's own lines (a split read, by forked workers, is in
tests/integration/test_errors_parallel.py).
"""

from __future__ import annotations

import pickle
import random
from pathlib import Path

import pytest
from cli_helpers import summary_json
from errors_helpers import file_lines, records

import sparseety_tui.core.report._report as report
from sparseety_tui.core.extraction._extractor import Extractor
from sparseety_tui.core.store._errors import ErrorLog, ErrorRecord, classify
from sparseety_tui.ingest.batch import ingest_file

ROOT = Path(__file__).resolve().parents[2]
REAL = ROOT / "tests" / "data" / "real_logs"
#: An SGLang PD router's HTTP 500 (line 15) and two KV transfer failures (lines 1, 12).
SGLANG_500 = REAL / "sglang_0.5.8_pd_prefill_decode_transfer_failed_mooncake_tp16_2node_slurmv4.log"
#: Three uvicorn ASGI tracebacks of 47 lines (lines 162, 210, 257).
SGLANG_TB = REAL / "sglang_docsci_20251031_native_api_asgi_traceback_expert_record.log"
#: Two EngineCore tracebacks interleaved line by line, an ERROR line, an EngineDeadError.
VLLM_DP = REAL / "vllm_0.9.1_ascend_dp2_engine000_001_idle_enginecore_traceback_ascend1170.log"


def record(**fields: object) -> ErrorRecord:
    base: dict[str, object] = {
        "ts": None,
        "kind": "error",
        "file": 0,
        "line": 1,
        "lines": 1,
        "last": 1,
        "message": "m",
        "exception": "",
        "request_id": None,
        "status": None,
    }
    base.update(fields)
    return ErrorRecord(**base)  # type: ignore[arg-type]


# ---- the log itself ---------------------------------------------------------------------


def test_error_log_counts_exactly_by_class_and_minute_and_says_what_it_dropped() -> None:
    log = ErrorLog(cap=3)
    log.add(record(ts=120.5, kind="http_5xx"))
    log.add(record(ts=179.9, kind="http_5xx"))
    log.add(record(ts=180.0, kind="oom"))
    log.add(record(ts=None, kind="traceback"))  # no time: counted, in no minute
    log.add(record(ts=61.0, kind="traceback"))
    assert log.by_kind == {"http_5xx": 2, "oom": 1, "traceback": 2}
    assert log.per_minute == {120: {"http_5xx": 2}, 180: {"oom": 1}, 60: {"traceback": 1}}
    assert (log.total, len(log.records), log.dropped) == (5, 3, 2)
    assert [r.kind for r in log.records] == ["oom", "traceback", "traceback"]  # the newest


def test_a_later_byte_range_moves_its_records_and_adds_its_counts() -> None:
    whole, part = ErrorLog(), ErrorLog()
    whole.add(record(ts=0.0, line=3, last=3))
    part.add(record(ts=30.0, file=0, line=2, last=5, lines=4, kind="traceback"))
    part = pickle.loads(pickle.dumps(part))  # parts come back from worker processes
    whole.extend(part, file=7, shift=100)
    moved = whole.records[-1]
    assert (moved.file, moved.line, moved.last, moved.lines) == (7, 102, 105, 4)
    assert whole.per_minute == {0: {"error": 1, "traceback": 1}}
    assert whole.total == 2


def test_a_frozen_copy_does_not_change_and_is_shared_while_nothing_changes() -> None:
    log = ErrorLog()
    log.add(record(ts=0.0))
    frozen = log.freeze()
    assert log.freeze(frozen) is frozen
    log.add(record(ts=60.0, kind="oom"))
    assert (frozen.total, dict(frozen.by_kind), len(frozen.records)) == (1, {"error": 1}, 1)
    newer = log.freeze(frozen)
    assert newer is not frozen and newer.by_kind["oom"] == 1 and 60 in newer.per_minute
    with pytest.raises(TypeError):
        newer.by_kind["oom"] = 5  # type: ignore[index]
    log.add(record(ts=75.0, kind="error"))  # the minute 60 again
    log.add(record(ts=250.0))
    latest = log.freeze(newer)
    assert latest.per_minute[0] is newer.per_minute[0]  # unchanged minutes are shared
    assert dict(latest.per_minute[60]) == {"oom": 1, "error": 1}
    assert dict(newer.per_minute[60]) == {"oom": 1}  # the older copy did not change
    assert {m: dict(c) for m, c in latest.per_minute.items()} == log.per_minute


def test_classes_told_by_text() -> None:
    # torch's message (torch.cuda.OutOfMemoryError), and vLLM V1's dead engine
    oom = "CUDA out of memory. Tried to allocate 2.00 GiB. GPU 0 has a total capacity of 79.15 GiB"
    assert classify("traceback", oom, "torch.OutOfMemoryError") == "oom"
    assert classify("error", "x", "vllm.v1.engine.exceptions.EngineDeadError") == "engine_dead"
    assert classify(None, "x", "ValueError") == "traceback"
    assert classify(None, "x", "") == "error"
    # a 5xx or a KV transfer failure keeps its class whatever its text says
    assert classify("http_5xx", "out of memory", "") == "http_5xx"
    assert classify("kv_transfer", "m", "KVTransferError") == "kv_transfer"


# ---- each class from real logs, at its line -----------------------------------------------


def test_sglang_http_500_is_an_error_at_its_line_and_stays_an_access_line() -> None:
    errors = [r for r in records(SGLANG_500) if r.kind == "http_5xx"]
    assert len(errors) == 1
    err = errors[0]
    assert (err.line, err.last, err.status, err.request_id) == (15, 15, 500, None)
    text = file_lines(SGLANG_500)[err.line - 1]
    assert '"POST /generate HTTP/1.1" 500 Internal Server Error' in text
    assert err.ts == 1772204511.0  # [2026-02-27 15:01:51]
    ex = Extractor()
    ingest_file(ex, str(SGLANG_500))
    assert ex.files[0].by_kind["http.access"] == 1  # its kind is still the access line's


def test_sglang_kv_transfer_failures_name_their_request_at_their_first_report() -> None:
    errors = [r for r in records(SGLANG_500) if r.kind == "kv_transfer"]
    lines = file_lines(SGLANG_500)
    assert [(r.line, r.request_id) for r in errors] == [
        (1, "63b1b22dad53465b92560ebdda56d075"),
        (12, "ca271fb6eab2421f98ac61976e6f0f34"),
    ]
    for r in errors:
        assert f"rid='{r.request_id}'" in lines[r.line - 1]
        assert "transfer failed for request" in lines[r.line - 1]


def test_sglang_asgi_tracebacks_span_their_header_to_their_exception() -> None:
    errors = records(SGLANG_TB)
    lines = file_lines(SGLANG_TB)
    assert [(r.kind, r.line, r.lines, r.last) for r in errors] == [
        ("traceback", 162, 47, 208),
        ("traceback", 210, 47, 256),
        ("traceback", 257, 47, 303),
    ]
    for r in errors:
        assert lines[r.line - 1].endswith("ERROR:    Exception in ASGI application")
        assert lines[r.last - 1] == (
            "TypeError: BaseReq.__init__() got an unexpected keyword argument 'action'"
        )
        assert r.exception == "TypeError"


def test_vllm_error_line_interleaved_tracebacks_and_dead_engine() -> None:
    errors = records(VLLM_DP)
    lines = file_lines(VLLM_DP)
    by_line = {r.line: r for r in errors}
    # EngineCore_0's traceback takes the ERROR line before it as its first line, and runs
    # to its exception line, with EngineCore_1's lines in between.
    tb0 = by_line[4]
    assert (tb0.kind, tb0.lines, tb0.last) == ("traceback", 7, 14)
    assert "EngineCore encountered a fatal error." in lines[3]
    assert lines[13].endswith(
        "AttributeError: 'DPEngineCoreProc' object has no attribute 'dp_rank'"
    )
    assert "EngineCore_0 pid=2651" in lines[13]
    # EngineCore_1's ERROR line is an error of its own (class error, not other)
    err = by_line[7]
    assert (err.kind, err.lines, err.message) == (
        "error",
        1,
        "EngineCore encountered a fatal error.",
    )
    tb1 = by_line[9]
    assert (tb1.kind, tb1.last) == ("traceback", 17)
    assert "EngineCore_1 pid=2655" in lines[16] and "AttributeError" in lines[16]
    dead = by_line[18]
    assert (dead.kind, dead.lines, dead.last) == ("engine_dead", 7, 24)
    assert "EngineDeadError" in lines[23]


def test_every_error_of_every_real_log_is_where_the_file_says() -> None:
    """The first and last line of each error hold what it says: a traceback ends at its
    exception line and starts at its header (or at the file's first line when the file
    begins inside it); an error line, 5xx or transfer failure is its own line."""
    checked = 0
    for path in sorted(REAL.glob("*.log")):
        lines = file_lines(path)
        for r in records(path):
            first, last = lines[r.line - 1], lines[r.last - 1]
            assert r.line <= r.last and r.last - r.line + 1 >= r.lines
            if r.kind == "http_5xx":
                assert f'" {r.status}' in first and r.last == r.line
            elif r.kind in ("error", "kv_transfer"):
                assert r.message[:40] in first
            elif r.exception:
                assert r.exception.rsplit(".", 1)[-1] in last, (path.name, r)
                headers = ("Traceback", "ERROR", "Exception", "Process ")
                assert r.line == 1 or any(h in first for h in headers), (path.name, r)
            checked += 1
    assert checked >= 38


def test_retraction_and_oom_warnings_are_errors_and_keep_their_kind(tmp_path: Path) -> None:
    # Real SGLang lines around the retraction warning SGLang's docs quote
    # (docs/advanced_features/hyperparameter_tuning.md) and torch's OOM message.
    real = file_lines(
        REAL / "sglang_0.5.9_pd_decode_node_prealloc_transfer_retracted_stats_slurmv4.log"
    )
    lines = [
        real[0],
        "[2026-03-02 14:44:12 TP0] KV cache pool is full. Retract requests. "
        "#retracted_reqs: 1, #new_token_ratio: 0.9998 -> 1.0000",
        real[1],
        "[2026-03-02 14:44:13 TP0] Decode out of memory happened. #retracted_reqs: 2, "
        "#new_token_ratio: 0.5000 -> 1.0000",
        "[2026-03-02 14:44:14 TP0] torch.OutOfMemoryError: CUDA out of memory. Tried to "
        "allocate 2.00 GiB. GPU 0 has a total capacity of 79.15 GiB of which 1.23 GiB is free.",
        real[2],
    ]
    path = tmp_path / "sglang.log"
    path.write_text("\n".join(lines) + "\n")
    ex = Extractor()
    ingest_file(ex, str(path))
    found = [(r.kind, r.line, r.ts) for r in ex.error_log.records]
    assert found == [
        ("retraction", 2, 1772462652.0),
        ("retraction", 4, 1772462653.0),
        ("oom", 5, 1772462654.0),
    ]
    by_kind = ex.files[0].by_kind
    assert by_kind.get("other") == 3 and sum(by_kind.values()) == 6  # one kind per line


# ---- summary --json ------------------------------------------------------------------------


def test_summary_lists_errors_with_path_and_line(capsys: pytest.CaptureFixture[str]) -> None:
    doc = summary_json(capsys, str(SGLANG_500), str(SGLANG_TB))
    errors = doc["errors"]
    assert errors["count"] == 6 and errors["listed"] == 6 and errors["kept"] == 6
    assert errors["by_kind"] == {"traceback": 3, "http_5xx": 1, "kv_transfer": 2}
    for listed in errors["records"]:
        text = file_lines(Path(listed["path"]))
        assert listed["message"][:30] in "\n".join(text[listed["line"] - 1 : listed["last_line"]])
    http = next(r for r in errors["records"] if r["kind"] == "http_5xx")
    assert http == {
        "path": str(SGLANG_500),
        "line": 15,
        "last_line": 15,
        "lines": 1,
        "ts": 1772204511.0,
        "kind": "http_5xx",
        "message": '10.99.91.39:38178 - "POST /generate HTTP/1.1" 500 Internal Server Error',
        "exception": None,
        "request_id": None,
        "status": 500,
    }
    assert errors["recent"] == errors["records"][-5:]


def test_summary_lists_the_first_and_last_errors_when_there_are_many(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(report, "LISTED_ERRORS", 3)
    access = '[2026-02-27 15:01:{:02d}] INFO:     10.0.0.1:1 - "POST /generate HTTP/1.1" 503 x'
    path = tmp_path / "sglang.log"
    path.write_text("\n".join(access.format(s) for s in range(10)) + "\n")
    errors = summary_json(capsys, str(path))["errors"]
    assert (errors["count"], errors["listed"], errors["kept"]) == (10, 6, 10)
    assert [r["line"] for r in errors["records"]] == [1, 2, 3, 8, 9, 10]
    assert {r["status"] for r in errors["records"]} == {503}


# ---- a split read --------------------------------------------------------------------------


def test_a_frozen_extractor_exposes_the_error_log() -> None:
    ex = Extractor()
    ingest_file(ex, str(SGLANG_500))
    frozen = ex.freeze().error_log
    assert list(frozen.records) == list(ex.error_log.records)
    assert dict(frozen.by_kind) == {"kv_transfer": 2, "http_5xx": 1}
    assert {m: dict(c) for m, c in frozen.per_minute.items()} == {
        1772204460: {"kv_transfer": 2, "http_5xx": 1}  # 2026-02-27 15:01
    }
    assert ex.error_count == frozen.total == 3  # the old count still works


# ---- line numbers by construction ----------------------------------------------------------

VLLM_HEAD = "(APIServer pid=7) {level} 12-01 10:00:{s:02d} [{src}] "
VLLM_STATS = (
    "Engine 000: Avg prompt throughput: 1.0 tokens/s, Avg generation throughput: 2.0 tokens/s, "
    "Running: 1 reqs, Waiting: 0 reqs, GPU KV cache usage: 1.0%, Prefix cache hit rate: 0.0%"
)


def vllm_piece(kind: str, s: int) -> list[str]:
    """Lines of one piece of a vLLM log (real line shapes: vllm_0.11_enginedead_* and the
    uvicorn access lines of vllm_v1_compose_prefix_500_*)."""
    info = VLLM_HEAD.format(level="INFO", s=s, src="loggers.py:123")
    err = VLLM_HEAD.format(level="ERROR", s=s, src="serving_chat.py:1051")
    if kind == "stats":
        return [info + VLLM_STATS]
    if kind == "error":
        return [err + "Error in chat completion stream generator."]
    if kind == "traceback":  # logged by logger.exception: its message, then the traceback
        return [
            err + "Error in chat completion stream generator.",
            err + "Traceback (most recent call last):",
            err + '  File "/vllm/entrypoints/openai/serving_chat.py", line 1018, in gen',
            err + "    async for res in result_generator:",
            err + "vllm.v1.engine.exceptions.EngineDeadError: EngineCore encountered an issue.",
        ]
    if kind == "http_5xx":
        return ['(APIServer pid=7) INFO:     10.0.0.1:5 - "POST /v1/chat/completions HTTP/1.1" 500']
    return [""]  # blank


SGLANG_STATS = (
    "Decode batch, #running-req: 1, #token: 33, token usage: 0.00, cuda graph: True, "
    "gen throughput (token/s): 0.04, #queue-req: 0"
)


def sglang_piece(kind: str, s: int) -> list[str]:
    """Lines of one piece of an SGLang log (real shapes: the slurmv4 and 25887 logs)."""
    stamp = f"[2026-03-02 14:44:{s:02d} TP0] "
    if kind == "stats":
        return [stamp + SGLANG_STATS]
    if kind == "error":
        return [stamp + "ERROR scheduler.py:1234: Watchdog timeout (self.watchdog_timeout=300)"]
    if kind == "traceback":  # raw on stderr after the prefixed header
        return [
            stamp + "Scheduler hit an exception: Traceback (most recent call last):",
            '  File "/sglang/srt/managers/scheduler.py", line 2101, in run_scheduler_process',
            "    scheduler.event_loop_overlap()",
            "RuntimeError: The size of tensor a (4) must match the size of tensor b (8)",
        ]
    if kind == "http_5xx":
        return [
            f'[2026-03-02 14:44:{s:02d}] INFO:     10.0.0.1:5 - "POST /generate HTTP/1.1" 503 x'
        ]
    if kind == "retraction":
        return [stamp + "KV cache pool is full. Retract requests. #retracted_reqs: 1"]
    return [""]


@pytest.mark.parametrize("family", ["vllm", "sglang"])
@pytest.mark.parametrize("seed", range(6))
def test_errors_are_where_they_were_written(tmp_path: Path, family: str, seed: int) -> None:
    """Errors, tracebacks, 5xx lines, blank and stats lines in random order: each error's
    first and last line are those it was written at."""
    rng = random.Random(seed)
    piece = vllm_piece if family == "vllm" else sglang_piece
    kinds = ["stats", "error", "traceback", "http_5xx", "blank"]
    if family == "sglang":
        kinds.append("retraction")
    lines: list[str] = [piece("stats", 0)[0]]
    expected: list[tuple[str, int, int]] = []
    for n in range(120):
        kind = rng.choice(kinds)
        written = piece(kind, n % 60)
        if kind not in ("stats", "blank"):
            cls = "engine_dead" if kind == "traceback" and family == "vllm" else kind
            expected.append((cls, len(lines) + 1, len(lines) + len(written)))
        lines.extend(written)
        if kind == "traceback":
            lines.append(piece("stats", n % 60)[0])  # what ends it
    path = tmp_path / f"{family}.log"
    path.write_text("\n".join(lines) + "\n")
    ex = Extractor()
    ingest_file(ex, str(path))
    assert ex.files[0].format_name == family
    found = sorted((r.kind, r.line, r.last) for r in ex.error_log.records)
    assert found == sorted(expected)


def test_human_summary_counts_errors_by_class_and_shows_the_last_with_file_and_line(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    from sparseety_tui.cli.main import run

    monkeypatch.setenv("COLUMNS", "200")
    assert run(["summary", str(SGLANG_500)]) == 0
    out = capsys.readouterr().out
    assert "errors: 3 (tracebacks grouped): http_5xx 1, kv_transfer 2" in out
    name = SGLANG_500.name
    assert f"kv_transfer  {name}:1\n" in out and f"kv_transfer  {name}:12\n" in out
    assert f"2026-02-27 15:01:51  http_5xx  {name}:15\n" in out
    assert '"POST /generate HTTP/1.1" 500 Internal Server Error' in out
