"""vLLM requests whose end no line logs (issue #10 item 2): the engine's idle stats line
ends them as ``end_unlogged`` with ``ended_by_ts``; throughput per minute says its basis;
the ``SamplingParams`` fields are request fields.

Lines are the real shapes of tests/data/real_logs (vLLM 0.15 ``Received``/``Added``,
``Engine 000`` stats of vLLM 0.20, V0 0.8 lines), with their times moved.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import orjson
import pytest
from lifecycle_helpers import V1_PARAMS, added, read, received, stats

from sparseety_tui.cli.main import run
from sparseety_tui.core.extraction import Extractor
from sparseety_tui.core.figures import DEFAULT_SHAPE
from sparseety_tui.core.figures._totals import compute_totals, throughput_basis
from sparseety_tui.core.query import ViewQuery, compute_view, parse_filter
from sparseety_tui.core.report import request_records
from sparseety_tui.formats.vllm import sampling_params
from sparseety_tui.ingest.batch import ingest_file
from sparseety_tui.sources import RawLine

DATA = Path(__file__).resolve().parent.parent / "data" / "real_logs"


def rows(extractor: Extractor) -> dict[str, dict[str, Any]]:
    return {r["request_id"]: r for r in request_records(extractor, DEFAULT_SHAPE)}


def test_an_idle_stats_line_after_a_request_ends_it_unlogged(tmp_path: Path) -> None:
    extractor = read(
        tmp_path,
        [
            received("chatcmpl-a", "11:33:33"),
            added("chatcmpl-a", "11:33:33"),
            stats("11:33:43", running=1),  # busy: still running
            stats("11:33:53", running=0),  # idle: it ended by now
            stats("11:34:03", running=0),  # a second idle line changes nothing
        ],
    )
    record = rows(extractor)["chatcmpl-a"]
    assert record["state"] == "end_unlogged"
    assert record["ended_by_ts"] - record["received_ts"] == 20.0
    assert record["latency_s"] is None and record["finished_ts"] is None
    assert record["sampling"] == {"max_tokens": 100, "temperature": 0.7, "top_p": 0.95, "n": 1}
    totals = compute_totals(extractor, DEFAULT_SHAPE)
    assert totals.requests.by_state == {"end_unlogged": 1}


def test_a_request_added_after_the_idle_line_stays_running(tmp_path: Path) -> None:
    extractor = read(
        tmp_path,
        [
            stats("11:33:20", running=0),
            received("chatcmpl-late", "11:33:33"),
            added("chatcmpl-late", "11:33:34"),
        ],
    )
    record = rows(extractor)["chatcmpl-late"]
    assert (record["state"], record["ended_by_ts"]) == ("running", None)


def test_the_same_second_is_not_after(tmp_path: Path) -> None:
    # Received and the idle line in one second: the engine may not have had it yet.
    extractor = read(
        tmp_path,
        [
            received("chatcmpl-a", "11:33:33"),
            stats("11:33:33", running=0),
            stats("11:33:43", running=0),
        ],
    )
    record = rows(extractor)["chatcmpl-a"]
    assert record["state"] == "end_unlogged"
    assert record["ended_by_ts"] - record["received_ts"] == 10.0


def test_every_engine_of_the_file_must_be_idle(tmp_path: Path) -> None:
    extractor = read(
        tmp_path,
        [
            received("chatcmpl-a", "11:33:33"),
            stats("11:33:40", running=3, engine="001"),
            stats("11:33:43", running=0, engine="000"),  # engine 1 still busy
            stats("11:33:44", running=0, waiting=2, engine="001"),  # waiting is not idle
            stats("11:33:50", running=0, engine="001"),  # now both are idle
        ],
    )
    record = rows(extractor)["chatcmpl-a"]
    assert record["state"] == "end_unlogged"
    assert record["ended_by_ts"] - record["received_ts"] == 17.0


def test_finished_and_aborted_requests_are_unaffected(tmp_path: Path) -> None:
    # V0 0.8 lines (vllm #17954); V0's AsyncLLMEngine logs `Finished request <id>.`
    v0 = (DATA / "vllm_0.8_v0_cpu_received_added_metrics_uvicorn_17954.log").read_text()
    head = v0.splitlines()[:2]  # Received, Added
    rid = "chatcmpl-b73b4b2df7fd461ca116a2d6cc7a1316"
    idle = (
        "INFO 05-11 12:04:29 [metrics.py:486] Avg prompt throughput: 0.0 tokens/s, Avg "
        "generation throughput: 0.0 tokens/s, Running: 0 reqs, Swapped: 0 reqs, Pending: 0 "
        "reqs, GPU KV cache usage: 0.0%, CPU KV cache usage: 0.0%."
    )
    extractor = read(
        tmp_path,
        [
            *head,
            f"INFO 05-11 12:04:21 [async_llm_engine.py:179] Finished request {rid}.",
            received("chatcmpl-x", "11:00:00").replace("02-13", "05-11"),
            "INFO 05-11 12:04:22 [async_llm_engine.py:154] Aborted request chatcmpl-x.",
            idle,
        ],
    )
    got = rows(extractor)
    assert got[rid]["state"] == "finished"
    assert got[rid]["sampling"] == {"max_tokens": 32735, "temperature": 0.7, "top_p": 0.8, "n": 1}
    assert got["chatcmpl-x"]["state"] == "aborted"
    assert got[rid]["ended_by_ts"] is None and got["chatcmpl-x"]["ended_by_ts"] is None


def test_swapped_requests_keep_the_engine_busy(tmp_path: Path) -> None:
    v0_stats = (
        "INFO 05-11 12:04:{s} [metrics.py:486] Avg prompt throughput: 0.0 tokens/s, Avg "
        "generation throughput: 0.0 tokens/s, Running: 0 reqs, Swapped: {sw} reqs, Pending: 0 "
        "reqs, GPU KV cache usage: 0.0%, CPU KV cache usage: 0.0%."
    )
    extractor = read(
        tmp_path,
        [
            received("chatcmpl-a", "12:04:00").replace("02-13", "05-11"),
            v0_stats.format(s="10", sw=1),
        ],
    )
    assert rows(extractor)["chatcmpl-a"]["state"] == "received"


def test_an_idle_engine_in_another_file_ends_nothing(tmp_path: Path) -> None:
    a = tmp_path / "a.log"
    b = tmp_path / "b.log"
    a.write_text(received("chatcmpl-a", "11:33:33") + "\n")
    b.write_text(stats("11:33:53", running=0) + "\n")
    extractor = Extractor()
    ingest_file(extractor, str(a))
    ingest_file(extractor, str(b))
    assert rows(extractor)["chatcmpl-a"]["state"] == "received"


def test_a_request_seen_open_again_is_reopened(tmp_path: Path) -> None:
    extractor = read(
        tmp_path,
        [
            received("chatcmpl-a", "11:33:33"),
            stats("11:33:43", running=0),
            added("chatcmpl-a", "11:33:50"),
        ],
    )
    record = rows(extractor)["chatcmpl-a"]
    assert (record["state"], record["ended_by_ts"]) == ("running", None)


def test_live_the_state_changes_when_the_idle_line_arrives(tmp_path: Path) -> None:
    path = tmp_path / "live.log"
    path.write_text("")
    extractor = Extractor(forced_format="vllm")
    file = extractor.add_file(str(path))
    offset = 0

    def feed(line: str) -> None:
        nonlocal offset
        data = line.encode()
        extractor.feed(file, [RawLine(offset, len(data) + 1, data, False)])
        offset += len(data) + 1

    feed(received("chatcmpl-a", "11:33:33"))
    feed(added("chatcmpl-a", "11:33:33"))
    before = extractor.freeze()
    feed(stats("11:33:43", running=0))
    after = extractor.freeze()
    assert rows_of(before) == ["running"]
    assert rows_of(after) == ["end_unlogged"]
    assert not math.isnan(after.store.columns["ended_by_ts"][0])


def rows_of(state: Any) -> list[str]:
    return [r["state"] for r in request_records(state, DEFAULT_SHAPE)]


# -- throughput per minute -----------------------------------------------------------------


def test_throughput_counts_arrivals_when_finish_times_are_unknown(tmp_path: Path) -> None:
    lines = []
    for i in range(6):
        lines.append(received(f"chatcmpl-{i}", f"11:3{i}:00"))
    lines.append(
        "(APIServer pid=90458) INFO 02-13 11:35:30 [async_llm.py:400] Aborted request chatcmpl-5."
    )
    lines.append(stats("11:40:00", running=0))
    totals = compute_totals(read(tmp_path, lines), DEFAULT_SHAPE)
    assert totals.throughput_per_minute_by == "received"
    assert [row.requests for row in totals.throughput_per_minute] == [1] * 6
    # no request reported a token count: unknown, not 0
    assert {row.prompt_tokens for row in totals.throughput_per_minute} == {None}


def test_throughput_keeps_finish_times_where_they_are_known(tmp_path: Path) -> None:
    path = tmp_path / "t.jsonl"
    path.write_bytes(
        b'{"request_id": "a", "ts": 1732968000, "prompt_tokens": 1, "completion_tokens": 2}\n'
        b'{"request_id": "b", "ts": 1732968100, "state": "running"}\n'
    )
    extractor = Extractor()
    ingest_file(extractor, str(path))
    totals = compute_totals(extractor, DEFAULT_SHAPE)
    assert totals.throughput_per_minute_by == "finished"
    assert totals.to_json()["throughput_per_minute"] == [
        {"minute": 1732968000 // 60 * 60, "requests": 1, "prompt_tokens": 1, "completion_tokens": 2}
    ]


def test_throughput_basis_rule() -> None:
    assert throughput_basis(0, 0) is None
    assert throughput_basis(10, 10) == "finished"
    assert throughput_basis(5, 10) == "finished"  # half: finish times still cover it
    assert throughput_basis(2, 735) == "received"  # V1: only aborted requests finish
    assert throughput_basis(3, 0) == "finished"


# -- sampling parameters -----------------------------------------------------------------


@pytest.mark.parametrize(
    ("name", "expected"),
    [
        (
            "vllm_0.15_received_added_request_uvicorn_34503.log",
            {"n": 1, "temperature": 0.7, "top_p": 0.95, "max_tokens": 100},
        ),
        (
            "vllm_0.8_v0_cpu_received_added_metrics_uvicorn_17954.log",
            {"n": 1, "temperature": 0.7, "top_p": 0.8, "max_tokens": 32735},
        ),
        (
            "vllm_0.2_received_request_ray_worker_2177.log",  # `sampling params: ...`
            {"n": 1, "temperature": 0.0, "top_p": 1.0, "max_tokens": 128},
        ),
    ],
)
def test_sampling_params_of_real_received_lines(name: str, expected: dict[str, Any]) -> None:
    line = next(li for li in (DATA / name).read_bytes().splitlines() if b"SamplingParams" in li)
    assert sampling_params(line) == expected


def test_a_stop_string_cannot_pass_for_a_field() -> None:
    body = (
        b"params: SamplingParams(n=2, temperature=0.0, top_p=1.0, "
        b"stop=['x, max_tokens=5)'], stop_token_ids=[], max_tokens=7, min_tokens=0)"
    )
    assert sampling_params(body) == {"n": 2, "temperature": 0.0, "top_p": 1.0, "max_tokens": 7}


def test_a_field_that_is_none_or_odd_is_unknown() -> None:
    body = b"SamplingParams(n=1, temperature=nan, top_p=1.0, stop=[], max_tokens=None)"
    assert sampling_params(body) == {"n": 1, "top_p": 1.0}
    assert sampling_params(b"no params here") is None


# -- the filter language -------------------------------------------------------------------


def test_filters_on_sampling_fields_and_the_new_state(tmp_path: Path) -> None:
    hot = V1_PARAMS.replace("max_tokens=100", "max_tokens=4096").replace(
        "temperature=0.7", "temperature=0.0"
    )
    extractor = read(
        tmp_path,
        [
            received("chatcmpl-a", "11:33:33"),
            received("chatcmpl-b", "11:33:34").replace(V1_PARAMS, hot),
            stats("11:33:40", running=0),
            received("chatcmpl-c", "11:33:50").replace(V1_PARAMS, "params: None"),
        ],
    )

    def ids(text: str) -> list[str]:
        query = ViewQuery(text, parse_filter(text))
        rows = compute_view(extractor.store, DEFAULT_SHAPE, query, len(extractor.store))
        return [extractor.store.ids[int(r)] for r in rows]

    assert ids("max_tokens>1000") == ["chatcmpl-b"]
    assert ids("temperature=0") == ["chatcmpl-b"]
    assert ids("temperature=0.7") == ["chatcmpl-a"]
    assert ids("top_p=0.95 n=1") == ["chatcmpl-a", "chatcmpl-b"]
    assert ids("!max_tokens>0") == ["chatcmpl-c"]  # unknown never matches a comparison
    assert ids("state=end_unlogged") == ["chatcmpl-a", "chatcmpl-b"]
    assert ids("state~unlogged") == ["chatcmpl-a", "chatcmpl-b"]
    assert ids("state=received") == ["chatcmpl-c"]


# -- split reads ---------------------------------------------------------------------------


def test_summary_json_and_extract_name_the_new_keys(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "v1.log"
    path.write_text(
        "\n".join([received("chatcmpl-a", "11:33:33"), stats("11:33:43", running=0)]) + "\n"
    )
    assert run(["summary", "--json", str(path)]) == 0
    doc = orjson.loads(capsys.readouterr().out)
    assert doc["requests"]["by_state"] == {"end_unlogged": 1}
    assert doc["throughput_per_minute_by"] == "received"
    assert run(["extract", str(path)]) == 0
    record = orjson.loads(capsys.readouterr().out.splitlines()[0])
    assert record["state"] == "end_unlogged"
    assert record["ended_by_ts"] == record["received_ts"] + 10
    assert record["sampling"]["max_tokens"] == 100
