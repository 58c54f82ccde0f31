"""Wrappers (formats/_wrappers.py, formats/_wrapped.py) on real line shapes: detection, the
CloudWatch SGLang ``Finish:`` line, Docker's 16 KiB split entries, JSON traces still
traces, ``kubectl logs --timestamps`` and journald around uvicorn lines."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from sparseety_tui.core.detail._detail import build_detail
from sparseety_tui.formats import _registry as registry
from sparseety_tui.formats import wrapper_name
from sparseety_tui.formats._registry import detect_wrapper
from sparseety_tui.formats._wrappers import WRAPPERS
from sparseety_tui.ingest.batch import Options, ingest_file, make_extractor

SGLANG_FINISH = (
    b"[2024-06-10 06:13:20 TP0] Prefill batch. #new-seq: 1, #new-token: 7, #cached-token: 0, "
    b"token usage: 0.00, #running-req: 0, #queue-req: 0",
    b"Finish: obj=GenerateReqInput(rid='a1b2c3', text='Hi'), out={'text': 'Hello', "
    b"'meta_info': {'id': 'a1b2c3', 'finish_reason': {'type': 'stop'}, 'prompt_tokens': 7, "
    b"'completion_tokens': 2, 'cached_tokens': 0}}",
)


def _summary(path: Path) -> tuple[object, dict[str, int], object]:
    extractor = make_extractor(Options())
    ingest_file(extractor, str(path))
    state = extractor.files[0]
    return wrapper_name(state.family), dict(state.by_kind), extractor


@pytest.mark.parametrize("kind", WRAPPERS, ids=lambda k: k.name)
def test_every_sample_unwraps_and_names_its_kind(kind: object) -> None:
    for sample in kind.samples:  # type: ignore[attr-defined]
        assert kind.unwrap(sample) is not None  # type: ignore[attr-defined]
        assert detect_wrapper([sample]) is kind


def test_cloudwatch_sglang_finish_line_is_a_request_with_the_wrappers_time(tmp_path: Path) -> None:
    log = tmp_path / "export.tsv"
    log.write_bytes(
        b"".join(
            b"1718000000123\t2024-06-10T06:13:20.123Z\t" + line + b"\n" for line in SGLANG_FINISH
        )
    )
    wrapper, by_kind, extractor = _summary(log)
    assert wrapper == "cloudwatch"
    assert by_kind == {"sglang.prefill": 1, "sglang.request": 1}
    row = extractor.store.ids.find("a1b2c3")  # type: ignore[attr-defined]
    assert row is not None
    assert extractor.store.columns["finished_ts"][row] == pytest.approx(1718000000.123)  # type: ignore[attr-defined]


def _docker(text: str, ts: str = "2024-07-08T07:17:34.123456789Z") -> bytes:
    return json.dumps({"log": text, "stream": "stderr", "time": ts}).encode() + b"\n"


def test_docker_split_entries_are_one_record_every_line_counted(tmp_path: Path) -> None:
    prompt = "x" * 40000
    line = (
        "INFO 07-08 07:17:34 [logger.py:43] Received request chatcmpl-9: prompt: "
        f"'{prompt}', params: SamplingParams(n=1), prompt_token_ids: [1, 2, 3].\n"
    )
    pieces = [line[i : i + 16384] for i in range(0, len(line), 16384)]
    log = tmp_path / "abc-json.log"
    log.write_bytes(
        b"".join(_docker(p) for p in pieces)
        + _docker('INFO:     10.0.0.1:5 - "POST /v1/chat/completions HTTP/1.1" 200 OK\n')
    )
    wrapper, by_kind, extractor = _summary(log)
    assert wrapper == "docker-json"
    assert len(pieces) == 3
    assert by_kind == {"vllm.request": 3, "http.access": 1}
    detail = build_detail(extractor, 0)  # type: ignore[arg-type]
    assert detail.fields["prompt"] == prompt  # re-read from the span of the three entries


def test_json_trace_is_still_a_trace() -> None:
    lines = [
        b'{"request_id": "req-001", "prompt": "Hello", "completion": "Hi!", "ts": 1718000000}',
        b'{"type": "token", "request_id": "req-001", "pos": 7, "message": "m", "timestamp": 1}',
    ]
    assert detect_wrapper(lines) is None
    family = registry.detect(lines)
    assert family is not None and family.name == "trace" and wrapper_name(family) is None


def test_kubectl_timestamps_and_stern_keep_traceback_frames(tmp_path: Path) -> None:
    body = [
        b"ERROR 07-08 07:17:34 [serving_chat.py:1] Error in chat completion",
        b"Traceback (most recent call last):",
        b'  File "/app/vllm/entrypoints/openai/serving_chat.py", line 3, in create',
        b"ValueError: boom",
        b"INFO 07-08 07:17:35 [loggers.py:123] Engine 000: Avg prompt throughput: 1.0 tokens/s, "
        b"Avg generation throughput: 2.0 tokens/s, Running: 1 reqs, Waiting: 0 reqs, GPU KV cache "
        b"usage: 0.5%, Prefix cache hit rate: 0.0%",
    ]
    bare = tmp_path / "bare.log"
    bare.write_bytes(b"".join(line + b"\n" for line in body))
    assert _summary(bare)[1] == {"error": 1, "traceback": 3, "vllm.stats": 1}
    for name, prefix in (
        ("kubectl.log", b"2024-07-08T07:17:34.000000001Z "),
        ("stern.log", b"vllm-7d9f8c6b5-x2k9p vllm 2024-07-08T07:17:34.000000001Z "),
    ):
        log = tmp_path / name
        log.write_bytes(b"".join(prefix + line + b"\n" for line in body))
        _, by_kind, extractor = _summary(log)
        assert by_kind == {"error": 1, "traceback": 3, "vllm.stats": 1}, name
        assert extractor.error_count == 1  # type: ignore[attr-defined]


def test_journald_uvicorn_lifecycle_lines_are_not_unparsed(tmp_path: Path) -> None:
    log = tmp_path / "journal.txt"
    log.write_bytes(
        b"Dec 01 02:23:57 gpu-node-3 vllm[1234]: INFO:     Started server process [1234]\n"
        b"Dec 01 02:23:57 gpu-node-3 vllm[1234]: INFO:     Waiting for application startup.\n"
        b"Dec 01 02:23:57 gpu-node-3 vllm[1234]: INFO 12-01 02:23:57 [api_server.py:1] "
        b"Starting vLLM API server on http://0.0.0.0:8000\n"
        b'Dec 01 02:23:58 gpu-node-3 vllm[1234]: INFO:     10.0.0.1:5 - "GET /health HTTP/1.1" 200 OK\n'
    )
    wrapper, by_kind, _ = _summary(log)
    assert wrapper == "journald"
    assert by_kind == {"other": 3, "http.access": 1}
