"""One bad line costs that line only (issue #9, item 2).

A value that passes ``str.isdigit()`` but not ``int()`` (``completion_tokens=¹²``), or a
5,000-digit number, made ``summary``/``extract`` exit with a traceback and ``tail`` stop
ingesting for good. The root causes are fixed (numbers are read with formats/_numbers.py:
such a value leaves its field unknown), and whatever a parser or the merge of its event
still raises on one line is caught where lines are dispatched (``Extractor._run_lines``
and the block and native fast paths): the line is counted ``unparsed`` with the exception
as its reason, nothing half-merged stays behind, and reading goes on, in the batch path,
the live worker and the parallel range workers alike.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import orjson
import pytest
from line_failure_helpers import (
    MARK,
    accounted,
    assert_consistent,
    assert_one_line_lost,
    column,
    kv_line,
    kv_log,
    raising_parse,
)
from native_marks import needs_native

import sparseety_tui.core.extraction._chunks as chunks_module
import sparseety_tui.core.extraction._extractor as extractor_module
from sparseety_tui.cli import main as cli
from sparseety_tui.core.extraction import Extractor
from sparseety_tui.core.store import UNKNOWN
from sparseety_tui.events import Event, LineKind, ParsedLine
from sparseety_tui.formats import sglang, vllm
from sparseety_tui.formats._kvline import KvLineParser
from sparseety_tui.formats._trace import TraceParser
from sparseety_tui.ingest.batch import ingest_file
from sparseety_tui.sources import iter_lines

HUGE = "9" * 5000


# -- the reported lines: odd numbers leave their field unknown -------------------------


def test_odd_digits_and_huge_numbers_in_a_kv_line_leave_that_field_unknown(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    log = tmp_path / "kv.log"
    log.write_text(
        kv_line("sup", prompt_tokens=3, completion_tokens="¹²", latency="1.5s")
        + kv_line("arabic", prompt_tokens="١٢", completion_tokens=4)
        + kv_line("huge", prompt_tokens=HUGE, completion_tokens=5, latency="1e400s")
        + kv_line("plain", prompt_tokens=6, completion_tokens=7, latency="inf")
    )
    assert cli.run(["summary", "--json", str(log)]) == 0
    summary = json.loads(capsys.readouterr().out)
    assert summary["files"][0]["lines"]["by_kind"] == {"kv.request": 4}
    assert cli.run(["extract", str(log)]) == 0
    rows = {
        row["request_id"]: row for row in map(json.loads, capsys.readouterr().out.split("\n")[:-1])
    }
    assert (rows["sup"]["prompt_tokens"], rows["sup"]["completion_tokens"]) == (3, None)
    assert rows["sup"]["latency_s"] == 1.5
    assert (rows["arabic"]["prompt_tokens"], rows["arabic"]["completion_tokens"]) == (None, 4)
    assert (rows["huge"]["prompt_tokens"], rows["huge"]["latency_s"]) == (None, None)
    assert (rows["plain"]["completion_tokens"], rows["plain"]["latency_s"]) == (7, None)


def parse_one(family: Any, line: bytes) -> tuple[ParsedLine, str]:
    parser = family.new_parser()
    parsed = parser.parse(line)
    return parsed, parser.last_reason


def test_absurd_numbers_in_server_stats_leave_that_field_unknown() -> None:
    """The stats line is read (not ``unparsed`` by the parser's catch-all): a count of
    5,000 digits or a non-finite throughput is left out, the other fields are kept."""
    v1 = (
        "INFO 11-30 12:00:00 [loggers.py:1] Engine 000: Avg prompt throughput: 1e400 tokens/s, "
        "Avg generation throughput: 25.0 tokens/s, Running: " + HUGE + " reqs, Waiting: 2 reqs, "
        "GPU KV cache usage: 1.5%, Prefix cache hit rate: 64.4%"
    ).encode()
    (kind, event), reason = parse_one(vllm.FAMILY, v1)
    assert kind == "vllm.stats", reason
    assert event is not None and event[0] == "stats"
    stats = dict(event[1])
    assert "running" not in stats and "prompt_throughput" not in stats
    assert (stats["waiting"], stats["generation_throughput"], stats["kv_usage"]) == (2, 25.0, 0.015)

    prefill = (
        "[2026-11-30 12:00:00 TP0] Prefill batch. #new-seq: 3, #new-token: " + HUGE + ", "
        "#cached-token: 2784, token usage: 0.01, #running-req: 0, #queue-req: 1e400"
    ).encode()
    (kind, event), reason = parse_one(sglang.FAMILY, prefill)
    assert kind == "sglang.prefill", reason
    assert event is not None and event[0] == "stats"
    stats = dict(event[1])
    assert "new_tokens" not in stats and "queued" not in stats
    assert (stats["batch_requests"], stats["cached_tokens"]) == (3, 2784)


def test_a_huge_integer_in_a_response_body_is_unknown_not_an_error() -> None:
    line = (
        '{"id": "cmpl-1", "usage": {"prompt_tokens": ' + HUGE + ', "completion_tokens": 3}}'
    ).encode()
    (kind, event), reason = parse_one(vllm.FAMILY, line)
    assert kind == "api.response", reason
    assert event is not None and event[0] == "request"
    payload = dict(event[1])
    assert "prompt_tokens" not in payload and payload["completion_tokens"] == 3


# -- whatever still raises costs one line -------------------------------------------------


@pytest.mark.parametrize("path_kind", ["live", "batch"])
def test_a_line_that_makes_the_parser_raise_costs_that_line_only(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, path_kind: str
) -> None:
    monkeypatch.setattr(KvLineParser, "parse", raising_parse(KvLineParser.parse))
    log = tmp_path / "kv.log"
    kv_log(log, 50, bad_at=20)
    extractor = Extractor(forced_format="kv")
    if path_kind == "batch":
        ingest_file(extractor, str(log))
    else:
        file = extractor.add_file(str(log))
        extractor.feed(file, iter_lines(str(log)))
        extractor.finish_file(file)
    assert_one_line_lost(extractor, 50, bad_line_no=21, kind="kv.request")


def trace_log(path: Path, n: int, bad_at: int) -> None:
    path.write_bytes(
        b"".join(
            orjson.dumps({"request_id": "BOOM" if i == bad_at else f"q{i}", "prompt_tokens": i})
            + b"\n"
            for i in range(n)
        )
    )


def raising_on_the_bad_line(
    real: Callable[..., Any], holds_mark: Callable[..., bool], *, after: bool = False
) -> Callable[..., Any]:
    """``real``, raising when ``holds_mark(args, result)`` says the bad line is in what it
    was given (before the call: an append that fails writes nothing, core.store) or, with
    ``after``, in what it produced (a scan, which writes nothing)."""

    def wrapper(*args: Any) -> Any:
        if not after and holds_mark(args, None):
            raise RuntimeError("fast path broke")
        result = real(*args)
        if after and holds_mark(args, result):
            raise RuntimeError("fast path broke")
        return result

    return wrapper


@needs_native
@pytest.mark.parametrize("broken", ["scanner", "applier_scanned", "decoder", "applier_block"])
def test_a_fast_path_that_raises_falls_back_to_lines(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, broken: str
) -> None:
    """A native scan or a block decode that throws on a block holding one bad line sends
    the block down the per-line path: only that line is lost, every other row is there."""
    from sparseety_tui.formats import _trace as trace

    monkeypatch.setattr(TraceParser, "parse", raising_parse(TraceParser.parse))
    real_scanner = trace.FAMILY.scan_requests
    assert real_scanner is not None, "the native scanner is built (setup.py)"
    if broken == "scanner":
        scanner = raising_on_the_bad_line(
            real_scanner, lambda args, scan: MARK in args[0][args[1] : scan.next_end], after=True
        )
        monkeypatch.setattr(trace.TraceFamily, "scan_requests", property(lambda self: scanner))
    elif broken == "applier_scanned":
        append = raising_on_the_bad_line(
            chunks_module.apply_batch, lambda args, _: MARK in args[1].rows.ids.blob
        )
        monkeypatch.setattr(chunks_module, "apply_batch", append)
    else:  # the Python block path (as without the native scanner)
        monkeypatch.setattr(trace.TraceFamily, "scan_requests", property(lambda self: None))
        if broken == "decoder":
            decode = raising_on_the_bad_line(
                trace.TraceFamily.decode_simple_block,
                lambda args, _: any(MARK in x for x in args[1]),
            )
            monkeypatch.setattr(trace.TraceFamily, "decode_simple_block", decode)
        else:
            append = raising_on_the_bad_line(
                extractor_module.apply_batch, lambda args, _: "BOOM" in args[1].rows.ids
            )
            monkeypatch.setattr(extractor_module, "apply_batch", append)
    log = tmp_path / "trace.jsonl"
    trace_log(log, 3000, bad_at=2500)
    extractor = Extractor()
    ingest_file(extractor, str(log))
    assert_one_line_lost(extractor, 3000, bad_line_no=2501, kind=LineKind.TRACE_REQUEST)
    assert column(extractor, "prompt_tokens", "q2999") == 2999


# -- a merge either happens whole or changes nothing -----------------------------------


def test_a_merge_that_fails_changes_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Events a merge cannot hold: values beyond their column become unknown, and an
    event that cannot be merged at all costs its line, before anything is written."""
    events: dict[bytes, Event] = {
        b"bad-id": ("request", {"request_id": ["not", "a", "string"]}),  # type: ignore[typeddict-item]
        b"odd-values": (
            "request",
            {
                "request_id": "odd",
                "received_ts": 10**400,  # beyond any float
                "finished_ts": float("inf"),
                "latency_s": 1e300,  # beyond float32
                "ttft_s": float("nan"),
                "prompt_tokens": 2**40,  # beyond int32
                "completion_tokens": 5,
            },
        ),
        b"odd-first": (  # not a time: it used to fail after the row was added
            "request",
            {"request_id": "first", "received_ts": 1_800_000_000.0, "first_token_ts": "soon"},  # type: ignore[typeddict-item]
        ),
        b"odd-layers": (
            "token",
            {"request_id": "odd", "experts": [[1, 2], [3]], "moe_layers": [[0], "x"]},  # type: ignore[typeddict-item]
        ),
        b"odd-ts": ("stats", {"ts": float("inf"), "running": 3}),
        b"good-stats": ("stats", {"ts": 1_800_000_000.0, "running": 4}),
    }

    def parse(self: Any, line: bytes) -> ParsedLine:
        return LineKind.KV_REQUEST, events[line]

    monkeypatch.setattr(KvLineParser, "parse", parse)
    log = tmp_path / "kv.log"
    log.write_bytes(b"\n".join(events) + b"\n")
    extractor = Extractor(forced_format="kv")
    ingest_file(extractor, str(log))
    assert_consistent(extractor)
    assert accounted(extractor) == {LineKind.KV_REQUEST: 4, LineKind.UNPARSED: 2}
    reasons = {d.line_no: d.reason for d in extractor.files[0].diagnostics}
    assert reasons[1].startswith("not merged: TypeError: request_id is a list")
    assert reasons[5].startswith("not merged: ValueError: cannot convert float NaN")
    assert len(extractor.store) == 2
    ttft = column(extractor, "ttft_s", "first")
    assert ttft != ttft
    for name in ("received_ts", "finished_ts", "latency_s", "ttft_s"):
        value = column(extractor, name, "odd")
        assert value != value, name  # NaN: unknown
    assert column(extractor, "prompt_tokens", "odd") == UNKNOWN
    assert column(extractor, "completion_tokens", "odd") == 5
    assert extractor.expert_load.counts == {}  # layer ids unknown: out of the heat map,
    assert extractor.expert_load.out_of_range == 3  # and counted
    [series] = extractor.engine.labels.values()  # the log's one, unlabelled engine
    assert extractor.engine.count == 1 and series.sums["running"] == [4.0, 1]
