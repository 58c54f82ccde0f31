"""Stats lines a terminal hard-wrapped or cut at a ``$`` marker are read whole again (issue
#10, item 4; formats/_termwrap.py).

The real file: a vLLM V0 log copied from a 130-column terminal, every stats line wrapped
after ``Running: 32 r``, and one record cut at ``Running: 32 $`` with the next one fused
behind it. The rest are built from real line shapes (SGLang batch lines of
real_logs/sglang_*, vLLM V1 ``Engine 000:`` lines of the DP8 excerpt), wrapped here the way
a terminal does: at its width, the last row padded with spaces when copied as a screen.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import pytest
from cli_helpers import summary_json
from termwrap_helpers import ACCESS, DECODE, PREFILL, REAL, V1_ENGINE, wrap

from sparseety_tui.events import Event, ParsedLine
from sparseety_tui.formats import LineParser, sglang, vllm


def feed(parser: LineParser, lines: list[str]) -> tuple[list[ParsedLine], list[Event]]:
    """Parse like the Extractor: each line's kind, and every event in merge order (the
    line's own, then what the parser completed meanwhile; at the end, ``finish``)."""
    results: list[ParsedLine] = []
    events: list[Event] = []
    for line in lines:
        kind, event = parser.parse(line.encode())
        results.append((kind, event))
        if event is not None:
            events.append(event)
        events.extend(parser.pending)
        parser.pending.clear()
    parser.finish()
    events.extend(parser.pending)
    parser.pending.clear()
    return results, events


def stats_of(events: list[Event]) -> list[dict[str, Any]]:
    return [dict(p) for t, p in events if t == "stats"]


def kinds(results: list[ParsedLine]) -> list[str]:
    return [k for k, _ in results]


def summary(capsys: pytest.CaptureFixture[str], path: Path, jobs: int = 1) -> dict[str, Any]:
    return summary_json(capsys, "--jobs", str(jobs), str(path))


# -- the real file -------------------------------------------------------------------------


def test_real_hard_wrapped_and_fused_v0_stats(capsys: pytest.CaptureFixture[str]) -> None:
    lines = REAL.read_text().splitlines()
    results, events = feed(vllm.FAMILY.new_parser(reference_time=REAL.stat().st_mtime), lines)
    assert kinds(results) == ["vllm.stats"] * 10
    got = stats_of(events)
    assert [s["generation_throughput"] for s in got] == [616.1, 614.0, 597.0, 589.1, 579.6, 578.9]
    assert [s.get("kv_usage") for s in got] == [0.176, 0.202, None, 0.248, 0.273, 0.296]
    assert all(s["prompt_throughput"] == 0.0 and s["running"] == 32 for s in got)
    # The five whole records have their second half; the cut one (:53) has none of it.
    whole = [s for s in got if "kv_usage" in s]
    assert all(s["swapped"] == 0 and s["waiting"] == 0 for s in whole)
    cut = got[2]
    assert "swapped" not in cut and "waiting" not in cut
    stamps = [time.localtime(s["ts"])[3:6] for s in got]
    assert stamps == [
        (23, 23, 42),
        (23, 23, 47),
        (23, 23, 53),
        (23, 23, 58),
        (23, 24, 4),
        (23, 24, 9),
    ]

    out = summary(capsys, REAL)
    assert out["files"][0]["lines"] == {"total": 10, "by_kind": {"vllm.stats": 10}}
    engine = out["engine"]
    assert engine["stats_lines"] == 6
    assert engine["last"]["kv_usage"] == 0.296
    assert engine["mean"]["kv_usage"] == pytest.approx((0.176 + 0.202 + 0.248 + 0.273 + 0.296) / 5)


def test_without_the_fix_the_continuations_were_unparsed() -> None:
    # What the lines give read one by one, each on a fresh parser (no line before it):
    # a continuation alone is no known line, so it can only be the joining that reads it.
    continuations = [line for line in REAL.read_text().splitlines() if line.startswith("eqs")]
    assert len(continuations) == 5
    for line in continuations:
        kind, _ = vllm.FAMILY.new_parser().parse(line.encode())
        assert kind == "unparsed"


# -- synthetic lines of real shapes -------------------------------------------------------


@pytest.mark.parametrize("width", [60, 100, 130])
def test_sglang_batch_lines_wrapped_at_a_terminal_width(width: int) -> None:
    records = [
        DECODE.format(s=21, r=5, u=0.29, g=144.95, q=0),
        PREFILL.format(s=22, n=896, u=0.31, r=6, q=3),
        ACCESS.format(s=22),
        DECODE.format(s=24, r=6, u=0.33, g=136.39, q=1),
    ]
    bare_results, bare_events = feed(sglang.FAMILY.new_parser(), records)
    # The batch lines wrapped (the access line, no record we rejoin, stays whole).
    rows = [wrap(rec, width, pad=True) if "batch" in rec else [rec] for rec in records]
    lines = [row for rec_rows in rows for row in rec_rows]
    assert len(lines) > len(records)
    results, events = feed(sglang.FAMILY.new_parser(), lines)
    assert events == bare_events  # the same records, whole, in the same order
    # Every row counted as its record's kind.
    expected = [k for rec_rows, (k, _) in zip(rows, bare_results) for _ in rec_rows]
    assert kinds(results) == expected
    assert stats_of(events)[1]["queued"] == 3 and stats_of(events)[2]["kv_usage"] == 0.33


def test_v1_engine_lines_wrapped_behind_a_process_prefix() -> None:
    records = [
        V1_ENGINE.format(e=0, p=16.5, g=1157.2, r=51, w=117, kv=100.0),
        V1_ENGINE.format(e=1, p=0.0, g=809.3, r=31, w=108, kv=98.6),
    ]
    _, bare_events = feed(vllm.FAMILY.new_parser(), records)
    for width in (80, 120, 200):
        lines = [row for rec in records for row in wrap(rec, width)]
        results, events = feed(vllm.FAMILY.new_parser(), lines)
        assert kinds(results) == ["vllm.stats"] * len(lines)
        assert events == bare_events, width
    assert [s["engine"] for s in stats_of(bare_events)] == ["0", "1"]
    assert [s["kv_usage"] for s in stats_of(bare_events)] == [1.0, 0.986]


def test_fused_records_split_at_the_marker() -> None:
    first = V1_ENGINE.format(e=0, p=16.5, g=1157.2, r=51, w=117, kv=100.0)
    second = V1_ENGINE.format(e=1, p=0.0, g=809.3, r=31, w=108, kv=98.6)
    cut = first[: first.index("Waiting") + 4]  # ...Running: 51 reqs, Wait
    results, events = feed(vllm.FAMILY.new_parser(), [cut + "$" + second])
    assert kinds(results) == ["vllm.stats"]
    a, b = stats_of(events)
    assert a["engine"] == "0" and a["running"] == 51 and a["generation_throughput"] == 1157.2
    assert "waiting" not in a and "kv_usage" not in a
    assert b["engine"] == "1" and b["kv_usage"] == 0.986
    # Cut inside a number: that value may be short, so it is unknown, not a smaller one.
    cut = first[: first.index("Running: 51") + len("Running: 5")]
    _, events = feed(vllm.FAMILY.new_parser(), [cut + "$" + second])
    assert "running" not in stats_of(events)[0]
    # SGLang: the fused record's head is a dated prefix.
    decode = DECODE.format(s=21, r=5, u=0.29, g=144.95, q=0)
    cut = decode[: decode.index(", cuda") + 6]  # ...token usage: 0.29, cuda
    results, events = feed(
        sglang.FAMILY.new_parser(), [cut + "$" + DECODE.format(s=24, r=6, u=0.33, g=136.39, q=1)]
    )
    assert kinds(results) == ["sglang.decode"]
    a, b = stats_of(events)
    assert a["kv_usage"] == 0.29 and "generation_throughput" not in a
    assert b["generation_throughput"] == 136.39
    # A ``$`` followed by no log head is no fusion: the line is one (cut) record.
    results, events = feed(vllm.FAMILY.new_parser(), [first[:150] + "$ not a head"])
    assert kinds(results) == ["vllm.stats"] and len(stats_of(events)) == 1


def test_a_head_followed_by_a_line_of_its_own_is_a_partial_record() -> None:
    head = V1_ENGINE.format(e=0, p=16.5, g=1157.2, r=51, w=117, kv=100.0)[:150]
    access = '(APIServer pid=387731) INFO:     127.0.0.1:1 - "POST /v1/completions HTTP/1.1" 200 OK'
    other = V1_ENGINE.format(e=1, p=0.0, g=809.3, r=31, w=108, kv=98.6)
    results, events = feed(
        vllm.FAMILY.new_parser(), [head, access, head, other, head, "hello world"]
    )
    assert kinds(results) == [
        "vllm.stats",
        "http.access",
        "vllm.stats",
        "vllm.stats",
        "vllm.stats",
        "unparsed",
    ]
    got = stats_of(events)
    assert len(got) == 4
    # The partial records keep the order of their lines: a cut one comes before the
    # whole one that followed it.
    assert [s["engine"] for s in got] == ["0", "0", "1", "0"]
    for partial in (got[0], got[1], got[3]):
        assert partial["generation_throughput"] == 1157.2
        assert "kv_usage" not in partial and "waiting" not in partial  # unknown, not 0
    assert got[2]["kv_usage"] == 0.986


def test_a_head_followed_by_a_request_line_keeps_the_request_at_its_line() -> None:
    head = V1_ENGINE.format(e=0, p=16.5, g=1157.2, r=51, w=117, kv=100.0)[:150]
    added = "(APIServer pid=1) INFO 03-11 06:16:53 [async_llm.py:382] Added request cmpl-9."
    results, events = feed(vllm.FAMILY.new_parser(), [head, added])
    assert kinds(results) == ["vllm.stats", "vllm.request"]
    assert results[1][1] is not None and results[1][1][0] == "request"  # still its line's
    assert [t for t, _ in events] == ["request", "stats"]


def test_a_head_at_the_end_of_the_file_is_reported(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    head = DECODE.format(s=21, r=5, u=0.29, g=144.95, q=0)[:100]
    path = tmp_path / "sglang.log"
    path.write_text(DECODE.format(s=20, r=5, u=0.28, g=140.0, q=0) + "\n" + head + "\n")
    out = summary(capsys, path)
    assert out["files"][0]["lines"] == {"total": 2, "by_kind": {"sglang.decode": 2}}
    assert out["engine"]["stats_lines"] == 2
    assert out["engine"]["last"]["kv_usage"] == 0.29
    assert "generation_throughput" not in out["engine"]["last"]


def test_a_narrow_terminal_wraps_a_record_over_several_rows() -> None:
    line = (
        REAL.read_text().splitlines()[0]
        + "eqs, Swapped: 0 reqs, Pending: 0 reqs, GPU KV cache usage: 17.6%, CPU KV cache usage: 0.0%."
    )
    rows = wrap(line, 50)  # the first row ends inside ``Avg prompt throughput``
    assert len(rows) == 5 and rows[0].endswith("] Avg prompt th")
    results, events = feed(vllm.FAMILY.new_parser(), rows)
    assert kinds(results) == ["vllm.stats"] * 5
    (s,) = stats_of(events)
    assert s["kv_usage"] == 0.176 and s["swapped"] == 0 and s["generation_throughput"] == 616.1
    # A row shorter than the head's that does not end the record is no middle row.
    results, events = feed(vllm.FAMILY.new_parser(), [rows[0], rows[1][:-1], *rows[2:]])
    assert "unparsed" in kinds(results)
    assert "kv_usage" not in stats_of(events)[0]
