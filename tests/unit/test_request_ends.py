"""A request's end stands against a line of its arrival read after it: a span (or any
line) that ended a request, then a log line saying it was received or running at a time
not after that end, leave it ended with its end time; a line after the end reopens it as
before, and a line without a time still wins as it always did. The same rows whichever file
is read first, in one reader or in the parts of a split read; vLLM's DEBUG ``Request X
details`` line is an arrival, never an end."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import orjson
import pytest
from otlp_spans import VllmRequest, protobuf_body, vllm_spans

from sparseety_tui.core.extraction import Extractor
from sparseety_tui.core.figures import DEFAULT_SHAPE
from sparseety_tui.core.report import request_records
from sparseety_tui.formats.otlp import lines_from_proto_body
from sparseety_tui.formats.vllm import FAMILY as VLLM
from sparseety_tui.ingest.batch import ingest_file
from sparseety_tui.sources import iter_chunks

END = {"request_id": "r1", "received_ts": 1000.0, "finished_ts": 1009.0, "latency_s": 9.0}


def _write(path: Path, records: list[dict[str, Any]]) -> str:
    path.write_bytes(b"".join(orjson.dumps(r) + b"\n" for r in records))
    return str(path)


def _records(*paths: str) -> dict[str, dict[str, Any]]:
    extractor = Extractor()
    for path in paths:
        ingest_file(extractor, path)
    return {r["request_id"]: r for r in request_records(extractor.freeze(), DEFAULT_SHAPE)}


@pytest.mark.parametrize("end", ["finished", "aborted", "failed"])
@pytest.mark.parametrize("opening", ["received", "running"])
def test_an_arrival_read_after_the_end_leaves_it_ended(
    tmp_path: Path, end: str, opening: str
) -> None:
    for at in (1000.0, 1009.0):  # before the end, and at it: not after
        later = {"request_id": "r1", "state": opening, "received_ts": at}
        path = _write(tmp_path / "t.jsonl", [{**END, "state": end}, later])
        (record,) = _records(path).values()
        assert record["state"] == end, at
        assert (record["received_ts"], record["finished_ts"]) == (at, 1009.0)


def _one(path: Path, records: list[dict[str, Any]]) -> dict[str, Any]:
    (record,) = _records(_write(path, records)).values()
    return record


def test_a_line_after_the_end_or_without_a_time_reopens_as_before(tmp_path: Path) -> None:
    ended = {**END, "state": "finished"}
    after = {"request_id": "r1", "state": "running", "received_ts": 1009.5}
    assert _one(tmp_path / "a.jsonl", [ended, after])["state"] == "running"
    untimed = {"request_id": "r1", "state": "running"}
    assert _one(tmp_path / "b.jsonl", [ended, untimed])["state"] == "running"
    # An end without a known time: the later line wins, as it always did.
    no_end = {"request_id": "r1", "state": "finished", "latency_s": 9.0}
    early = {**after, "received_ts": 1.0}
    assert _one(tmp_path / "c.jsonl", [no_end, early])["state"] == "running"


def _vllm_lines(request: VllmRequest, api_id: str) -> bytes:
    """vLLM 0.15's lines of one request (``--enable-log-requests``, DEBUG), stamped at the
    span's start: details, Received, Added (under the engine-side id)."""
    stamp = time.strftime("%m-%d %H:%M:%S", time.localtime(request.start_ns / 1e9)).encode()
    debug = b"(APIServer pid=7) DEBUG " + stamp
    info = b"(APIServer pid=7) INFO " + stamp
    rid = api_id.encode()
    return b"\n".join(
        [
            debug
            + b" [logger.py:41] Request "
            + rid
            + b" details: prompt: 'hi', prompt_token_ids: [1, 2, 3], prompt_embeds shape: None.",
            info + b" [logger.py:49] Received request " + rid + b": params: SamplingParams("
            b"n=1, temperature=0.7, top_p=0.95, max_tokens=16), lora_request: None.",
            info + b" [async_llm.py:382] Added request " + rid + b"-0badcafe.",
            b"",
        ]
    )


def _span_and_log(tmp_path: Path) -> tuple[str, str, VllmRequest]:
    start = int(time.time() - 120) * 1_000_000_000  # a whole second, as the log says it
    request = VllmRequest(
        request_id="chatcmpl-e1-0badcafe",  # the engine-side id, as older vLLM names it
        prompt_tokens=3,
        completion_tokens=5,
        queue_s=0.5,
        ttft_s=0.75,
        latency_s=2.5,
        prefill_s=0.25,
        decode_s=1.75,
        inference_s=2.0,
        start_ns=start,
    )
    lines, rejected = lines_from_proto_body(protobuf_body(vllm_spans([request])))
    assert rejected == 0
    spans = tmp_path / "spans.jsonl"
    spans.write_bytes(b"".join(line + b"\n" for line in lines))
    log = tmp_path / "vllm.log"
    log.write_bytes(_vllm_lines(request, "chatcmpl-e1"))
    return str(spans), str(log), request


def test_a_span_and_the_vllm_log_read_after_it_give_the_span_end(tmp_path: Path) -> None:
    spans, log, request = _span_and_log(tmp_path)
    for order in ((spans, log), (log, spans)):
        (record,) = _records(*order).values()
        assert record["state"] == "finished", order
        assert record["received_ts"] == request.start_ns / 1e9
        assert record["finished_ts"] == pytest.approx(request.end_ns / 1e9)
        assert record["prompt_tokens"] == 3 and record["timing"]["queue_s"] == 0.5


def test_the_parts_of_a_split_read_merge_ends_the_same_way(tmp_path: Path) -> None:
    # Two parts: the span's file first, then the log's (as ingest.parallel merges them).
    spans, log, request = _span_and_log(tmp_path)
    merged = Extractor()
    for path, name in ((spans, "otlp"), (log, "vllm")):
        file = merged.add_file(path, format_name=name)
        part = Extractor(forced_format=name)
        part_file = part.add_file(path)
        part.feed_chunks(part_file, iter_chunks(path, 0, Path(path).stat().st_size))
        part.finish_file(part_file)
        merged.merge_part(file, part.export_part(part_file))
    ((record,),) = [list(request_records(merged.freeze(), DEFAULT_SHAPE))]
    assert record["state"] == "finished"
    assert record["finished_ts"] == pytest.approx(request.end_ns / 1e9)


def test_the_vllm_details_line_is_an_arrival_not_an_end() -> None:
    parser = VLLM.new_parser()
    line = (
        b"(APIServer pid=7) DEBUG 02-13 11:33:33 [logger.py:41] Request chatcmpl-d1 details: "
        b"prompt: 'hi', prompt_token_ids: [1, 2, 3], prompt_embeds shape: None."
    )
    kind, event = parser.parse(line)
    assert kind == "vllm.request" and event is not None and event[0] == "request"
    payload = event[1]
    assert payload["state"] == "received" and payload["prompt_tokens"] == 3
    assert payload["received_ts"] == payload["ts"] and "finished_ts" not in payload
