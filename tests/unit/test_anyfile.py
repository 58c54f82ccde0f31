"""Tracebacks, error lines and access lines are understood in any file (issue #10, items 5
and 6): a file of no known format, a JSONL trace with text pasted in, and SGLang PD
transfer failures, which are errors that fail their request."""

from __future__ import annotations

from pathlib import Path

import orjson

from sparseety_tui.cli.summary_view import render_summary
from sparseety_tui.core.extraction._extractor import Extractor
from sparseety_tui.core.figures._costmodel import DEFAULT_SHAPE
from sparseety_tui.core.report._report import summary_document
from sparseety_tui.core.store import STATES
from sparseety_tui.formats import FALLBACK, sglang, vllm
from sparseety_tui.formats import _registry as registry
from sparseety_tui.sources import iter_lines

REAL = Path(__file__).resolve().parent.parent / "data" / "real_logs"
ASGI = REAL / "sglang_docsci_20251031_native_api_asgi_traceback_expert_record.log"


def extract(tmp_path: Path, content: bytes, name: str = "ci.log") -> Extractor:
    path = tmp_path / name
    path.write_bytes(content)
    extractor = Extractor()
    file = extractor.add_file(str(path))
    extractor.feed(file, iter_lines(str(path)))
    extractor.finish_file(file)
    return extractor


def real_raw_tracebacks() -> list[list[bytes]]:
    """The raw tracebacks uvicorn printed after ``ERROR:    Exception in ASGI application``
    in a real SGLang CI log (each up to the next line with SGLang's prefix, or the
    notebook's print of a result, ``{'text': ...``)."""
    tracebacks: list[list[bytes]] = []
    current: list[bytes] | None = None
    for line in ASGI.read_bytes().split(b"\n"):
        if b"Exception in ASGI application" in line:
            current = []
            tracebacks.append(current)
        elif line.startswith((b"[", b"{")) or not line:
            current = None
        elif current is not None:
            current.append(line)
    return tracebacks


def test_a_ci_tail_of_tracebacks_counts_its_errors(tmp_path: Path) -> None:
    tracebacks = real_raw_tracebacks()
    assert len(tracebacks) == 3 and all(tb[0].startswith(b"Traceback") for tb in tracebacks)
    lines = [line for tb in tracebacks for line in tb]
    assert registry.detect(lines) is None  # no server format: the fallback reads it
    extractor = extract(tmp_path, b"\n".join(lines) + b"\n")
    state = extractor.files[0]
    assert state.format_name == "unknown"
    assert state.by_kind == {"traceback": len(lines)}
    assert extractor.error_count == 3
    errors = list(extractor.errors)
    assert [e["lines"] for e in errors] == [len(tb) for tb in tracebacks]
    assert {e["exception"] for e in errors} == {"TypeError"}
    assert errors[0]["message"] == "BaseReq.__init__() got an unexpected keyword argument 'action'"


CI_LOG = b"""+ python -m pytest tests/
2025-01-01 10:00:00,123 - ERROR - runner: job failed
Traceback (most recent call last):
  File "/app/run.py", line 3, in f
    g()
RuntimeError: boom
ERROR:root:disk full
2026-02-26 13:55:38  ERROR smg::server: could not reach the server
E0414 03:56:41.856248 77969 transfer_metadata_plugin.cpp:173] Unexpected code in http response
INFO:     127.0.0.1:5000 - "GET /health HTTP/1.1" 200 OK
10.0.0.7 - - [10/Oct/2025:13:55:36 +0000] "POST /v1/chat/completions HTTP/1.1" 200 2326 "-" "curl/8.5.0"
ERROR:    [Errno 98] error while attempting to bind on address ('0.0.0.0', 8000)
this line says ERROR but is no error line

"""


def test_error_and_access_lines_in_an_unknown_file(tmp_path: Path) -> None:
    extractor = extract(tmp_path, CI_LOG)
    state = extractor.files[0]
    assert state.format_name == "unknown"
    # The ERROR line just before the traceback is its message: one error of 5 lines.
    assert state.by_kind == {
        "unparsed": 2,
        "error": 5,
        "traceback": 4,
        "http.access": 2,
        "blank": 1,
    }
    assert sum(state.by_kind.values()) == CI_LOG.count(b"\n")
    errors = list(extractor.errors)
    assert [(e["message"], e["lines"]) for e in errors] == [
        ("boom", 5),
        ("root:disk full", 1),
        ("smg::server: could not reach the server", 1),
        ("Unexpected code in http response", 1),
        ("[Errno 98] error while attempting to bind on address ('0.0.0.0', 8000)", 1),
    ]
    assert errors[0]["exception"] == "RuntimeError"
    reasons = {d.reason for d in state.diagnostics}
    assert all("no server format matched" in r for r in reasons)


def test_the_summary_says_no_server_format_was_recognised(tmp_path: Path) -> None:
    from rich.console import Console

    extractor = extract(tmp_path, CI_LOG)
    doc = summary_document(extractor, DEFAULT_SHAPE).to_json()
    assert doc["errors"]["count"] == 5
    console = Console(width=200, record=True)
    console.print(render_summary(doc))
    assert "no server format recognised" in console.export_text()


def test_a_trace_with_a_traceback_pasted_in(tmp_path: Path) -> None:
    record = orjson.dumps({"request_id": "r1", "prompt_tokens": 3, "completion_tokens": 2})
    tail = b"ValueError: bad\n" + orjson.dumps({"request_id": "r2", "prompt_tokens": 4}) + b"\n"
    content = (
        record
        + b'\nTraceback (most recent call last):\n  File "/x.py", line 1, in f\n    f()\n'
        + tail
    )
    extractor = extract(tmp_path, content, name="trace.jsonl")
    state = extractor.files[0]
    assert state.format_name == "trace"
    assert state.by_kind == {"trace.request": 2, "traceback": 4}
    assert extractor.store.ids == ["r1", "r2"]
    (error,) = extractor.errors
    assert error["exception"] == "ValueError" and error["lines"] == 4


PD = b"""[2025-08-17 08:49:30 TP0] Receive: obj=GenerateReqInput(rid='ba0acf7c4647442f8fe9e38c0c0a7021', text='hi')
[2025-08-17 08:49:33 TP0 EP0] Prefill bootstrap failed for request rank=0 req.rid='ba0acf7c4647442f8fe9e38c0c0a7021' req.bootstrap_room=4618074507212012089 with exception KVTransferError(bootstrap_room=4618074507212012089): Aborted by AbortReq.
[2025-08-17 08:49:33 TP7 EP7] Prefill bootstrap failed for request rank=7 req.rid='ba0acf7c4647442f8fe9e38c0c0a7021' req.bootstrap_room=4618074507212012089 with exception KVTransferError(bootstrap_room=4618074507212012089): Aborted by AbortReq.
[2025-08-17 08:49:34 TP0] Prefill batch. #new-seq: 1, #new-token: 10, #cached-token: 0, token usage: 0.00, #running-req: 0, #queue-req: 0
[2025-11-05 16:39:09 TP0] Decode transfer failed for request rank=0 decode_req.req.rid='78fde411d57a4d7791b63963eac74968' decode_req.req.bootstrap_room=4793981895866140836 with exception KVTransferError(bootstrap_room=4793981895866140836): Aborted by AbortReq.
[2026-07-21 08:04:41 TP7 EP7] Prefill transfer failed for request rank=7 req.rid='a04107cc-ff53-49ba-b428-03eb77df5cd5' req.bootstrap_room=6555093254675405189 with exception NIXL_ERR_REMOTE_DISCONNECT
[2026-07-21 08:04:41 TP5 EP5] Prefill transfer failed for request rank=5 req.rid='a04107cc-ff53-49ba-b428-03eb77df5cd5' req.bootstrap_room=6555093254675405189 with exception NIXL_ERR_REMOTE_DISCONNECT
[2025-04-14 03:55:53] 10.6.131.6 [14/Apr/2025:03:55:53 +0000] "PUT /metadata?key=mooncake%2Frpc_meta HTTP/1.1" 200 176 "-" "-"
"""


def test_pd_transfer_failures_are_errors_that_fail_their_request(tmp_path: Path) -> None:
    extractor = extract(tmp_path, PD, name="prefill.log")
    state = extractor.files[0]
    assert state.format_name == "sglang"
    assert state.by_kind == {
        "sglang.request": 1,
        "error": 5,
        "sglang.prefill": 1,
        "http.access": 1,
    }
    # One error per failure: the next rank's report of the same one adds none.
    errors = list(extractor.errors)
    assert [e["request_id"] for e in errors] == [
        "ba0acf7c4647442f8fe9e38c0c0a7021",
        "78fde411d57a4d7791b63963eac74968",
        "a04107cc-ff53-49ba-b428-03eb77df5cd5",
    ]
    assert [e.get("exception") for e in errors] == ["KVTransferError", "KVTransferError", None]
    store = extractor.store
    assert store.ids == [e["request_id"] for e in errors]
    assert [STATES[store.columns["state"][row]] for row in range(3)] == ["failed"] * 3


def test_an_error_line_alone_is_one_error_in_a_vllm_log() -> None:
    parser = vllm.FAMILY.new_parser()
    lines = [
        b"(APIServer pid=1) ERROR 02-05 16:55:27 [serving_chat.py:1333] Error in preprocessing",
        b'(APIServer pid=1) INFO:     1.2.3.4:5 - "POST /v1/chat/completions HTTP/1.1" 500 OK',
    ]
    kinds = [parser.parse(line)[0] for line in lines]
    assert kinds == ["error", "http.access"]
    (error,) = [p for t, p in parser.pending if t == "error"]
    assert error["message"] == "Error in preprocessing" and error["lines"] == 1


def test_an_sglang_pd_failure_never_starts_a_split_range() -> None:
    line = PD.split(b"\n")[2]
    assert not sglang.FAMILY.range_start(line)
    assert sglang.FAMILY.range_start(PD.split(b"\n")[3])


def test_a_family_takes_over_from_the_fallback_when_it_becomes_confident(
    tmp_path: Path,
) -> None:
    path = tmp_path / "server.log"
    head = b'Traceback (most recent call last):\n  File "/x.py", line 1, in f\nOSError: gone\n'
    path.write_bytes(head)
    extractor = Extractor()
    file = extractor.add_file(str(path))
    extractor.feed(file, iter_lines(str(path)))
    assert extractor.files[file].family is FALLBACK
    stats = (
        b"INFO 02-22 16:52:30 metrics.py:161] Avg prompt throughput: 0.9 tokens/s, Avg "
        b"generation throughput: 0.0 tokens/s, Running: 1 reqs, Swapped: 0 reqs, Pending: "
        b"0 reqs, GPU KV cache usage: 0.0%, CPU KV cache usage: 0.0%\n"
    )
    with path.open("ab") as f:
        f.write(stats * 3)
    lines = list(iter_lines(str(path)))[3:]
    extractor.feed(file, lines, first_line_no=4)
    extractor.finish_file(file)
    state = extractor.files[file]
    assert state.format_name == "vllm"
    assert state.by_kind == {"traceback": 3, "vllm.stats": 3}
    assert extractor.error_count == 1


def test_a_file_that_begins_inside_a_traceback() -> None:
    """A CI tail cut mid-traceback starts with a frame's source line and its `^^^` marker
    (real: vllm #18417): they are the traceback's lines, one error with it. An indented
    first line that no frame or exception line follows is no error."""
    from sparseety_tui.formats import FALLBACK

    parser = FALLBACK.new_parser()
    lines = [
        b"    self.engine_core = core_client_class(",
        b"                       ^^^^^^^^^^^^^^^^^^",
        b'  File "/usr/lib/vllm/v1/engine/core_client.py", line 734, in __init__',
        b"    super().__init__(",
        b"RuntimeError: Engine core initialization failed.",
    ]
    assert [parser.parse(line)[0] for line in lines] == ["traceback"] * 5
    parser.finish()
    errors = [e[1] for e in parser.pending if e[0] == "error"]
    assert [(e.get("exception"), e["lines"]) for e in errors] == [("RuntimeError", 5)]

    parser = FALLBACK.new_parser()
    kinds = [parser.parse(line)[0] for line in (b"    an indented note", b"and some text")]
    parser.finish()
    assert kinds == ["traceback", "unparsed"]
    assert [e for e in parser.pending if e[0] == "error"] == []
