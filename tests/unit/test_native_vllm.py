"""The native scanner of vLLM lines (native/vllm_scan.c, formats.vllm._native,
core.extraction._apply) leaves the Extractor exactly as the per-line path does.

It reads only the Received / Added / access lines it is sure of and stops at any other;
these tests feed both paths real logs, generated logs and odd lines, cut into chunks and
runs at every kind of place, and compare the whole state: store (columns, ids, line
locations, extras), counts by kind, diagnostics, engine series, errors, lifecycle and the
parser's own state after.
"""

from __future__ import annotations

import pickle
import random
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from native_marks import needs_native

import sparseety_tui.core.extraction._apply as applier
import sparseety_tui.formats.vllm._native as native_module
from sparseety_tui import _vllmscan
from sparseety_tui.core.extraction._extractor import Extractor
from sparseety_tui.core.tokens._tokens import TokenCounter
from sparseety_tui.formats import vllm as vllm_module
from sparseety_tui.formats.vllm import VllmParser
from sparseety_tui.ingest.batch import ingest_file
from sparseety_tui.sources import Chunk

REAL_LOGS = sorted((Path(__file__).parent.parent / "data" / "real_logs").glob("vllm*.log"))
#: One tokenizer for every Extractor (loading it is the slow part).
_TOKENS = TokenCounter()
_MTIME = 1_764_500_000  # 2025-11-30: the year the clock infers for "11-30" stamps


@needs_native
def test_the_scanner_is_built_and_used() -> None:
    assert native_module.SCANNER is not None
    assert vllm_module.FAMILY.scan_server is not None


# -- snapshots of the whole state -------------------------------------------------------


def _snapshot(extractor: Extractor) -> dict[str, Any]:
    store = extractor.store
    merger = extractor._merger
    out: dict[str, Any] = {
        "ids": list(store.ids),
        "models": store.models,
        "columns": {name: column.tobytes() for name, column in store.columns.items()},
        "offsets": store.offset.tobytes(),
        "lengths": store.length.tobytes(),
        "extras": list(store.extras.items()),
        "dirty_from": store.dirty_from,
        "engine": pickle.dumps(extractor.engine),
        "errors": list(extractor.errors),
        "error_count": extractor.error_count,
        "error_log": pickle.dumps(extractor.error_log),
        "lifecycle": {
            path: (t.engines, t.busy, t.open_rows.tobytes(), t.compact_at)
            for path, t in merger.lifecycle._tracks.items()
        },
    }
    for i, state in enumerate(extractor.files):
        out[f"file{i}"] = (
            state.lines_total,
            list(state.by_kind.items()),
            [(d.line_no, d.offset, d.reason, d.preview) for d in state.diagnostics],
            state.ignored,
            state.meta,
        )
        parser = state.parser
        if isinstance(parser, VllmParser):
            out[f"parser{i}"] = (
                parser.recent_ids(),
                parser.remembered,
                parser._last_stamp,
                parser._last_ts,
                parser._year,
                parser._last_month,
                parser._in_warning,
            )
    return out


def _extract(data: bytes, cuts: list[int], native: bool, path: Path) -> Extractor:
    """``data`` fed as chunks ending at the line ends ``cuts`` (as the batch reader does)."""
    with pytest.MonkeyPatch.context() as patch:
        if not native:
            patch.setattr(vllm_module.VllmFamily, "scan_server", None)
        extractor = Extractor(tokens=_TOKENS)
        file = extractor.add_file(str(path), "vllm")
        chunks, start = [], 0
        for cut in [*cuts, len(data)]:
            if cut > start:
                chunks.append(Chunk(start, data[start:cut]))
                start = cut
        for chunk in chunks:
            extractor.feed_chunks(file, [chunk])
            extractor.freeze()  # (as the TUI does): rows changed since count from here
        extractor.finish_file(file)
    return extractor


def _assert_same(data: bytes, tmp_path: Path, cuts: list[int] | None = None) -> None:
    path = tmp_path / "vllm.log"
    path.write_bytes(data)
    import os

    os.utime(path, (_MTIME, _MTIME))
    cuts = cuts or []
    expected = _snapshot(_extract(data, cuts, native=False, path=path))
    assert _snapshot(_extract(data, cuts, native=True, path=path)) == expected


# -- generated logs ---------------------------------------------------------------------

_WORDS = [
    "the",
    "batch",
    "token",
    "router",
    "expert",
    "prompt",
    "cache",
    "model",
    "request",
    "layer",
]


def _received(rng: random.Random, rid: str, stamp: str, max_log_len: int | None) -> str:
    words = " ".join(rng.choices(_WORDS, k=rng.randint(1, 20)))
    n_ids = rng.randint(0, 90)
    if max_log_len is not None:
        words, n_ids = words[:max_log_len], min(n_ids, max_log_len)
    ids = ", ".join(str(rng.randint(0, 151_935)) for _ in range(n_ids))
    params = (
        f"SamplingParams(n={rng.choice((1, 2))}, presence_penalty=0.0, "
        f"temperature={rng.choice(('0.0', '0.7', '1.0', 'None', '-1.0'))}, "
        f"top_p={rng.choice(('1.0', '0.95', 'None'))}, top_k=0, stop=[], "
        f"max_tokens={rng.choice(('256', 'None', '8192', '99999999999'))}, min_tokens=0)"
    )
    return (
        f"INFO {stamp} [logger.py:43] Received request {rid}: prompt: '{words}', "
        f"params: {params}, prompt_token_ids: [{ids}], lora_request: None."
    )


def _stats(stamp: str, running: int) -> str:
    return (
        f"INFO {stamp} [loggers.py:116] Engine 000: Avg prompt throughput: 10.0 tokens/s, "
        f"Avg generation throughput: 2.0 tokens/s, Running: {running} reqs, Waiting: 0 "
        "reqs, GPU KV cache usage: 20.4%, Prefix cache hit rate: 25.8%"
    )


def _generated_log(
    seed: int, max_log_len: int | None, odd: bool, steps: int = 600, idle: bool = True
) -> bytes:
    rng = random.Random(seed)
    lines: list[str] = []
    if max_log_len is not None:
        lines.append(
            "INFO 11-30 11:59:59 [cli_args.py:309] non-default args: {'model': 'Qwen/Qwen3-8B',"
            f" 'max_log_len': {max_log_len}}}"
        )
    second = 0
    ids: list[str] = []
    for _ in range(steps):
        second += rng.random() < 0.3
        stamp = f"11-30 12:{second // 60 % 60:02d}:{second % 60:02d}"
        prefix = rng.choice(("", "", "", "(APIServer pid=7) "))
        r = rng.random()
        rid = f"chatcmpl-{rng.getrandbits(64):016x}"
        if r < 0.55:
            ids.append(rid)
            lines.append(prefix + _received(rng, rid, stamp, max_log_len))
            if rng.random() < 0.9:
                added = rid if rng.random() < 0.8 else f"{rid}-{rng.getrandbits(32):08x}"
                second += rng.random() < 0.3  # its time is the row's received_ts then
                stamp = f"11-30 12:{second // 60 % 60:02d}:{second % 60:02d}"
                lines.append(f"{prefix}INFO {stamp} [async_llm.py:270] Added request {added}.")
            status = rng.choice((200, 200, 200, 404, 500, 503))
            lines.append(
                f'{prefix}INFO:     127.0.0.1:{rng.randint(1024, 65535)} - "POST '
                f'/v1/chat/completions HTTP/1.1" {status} OK'
            )
        elif r < 0.65 and ids:  # an Added line long after (another run), or re-received
            old = rng.choice(ids)
            if rng.random() < 0.5:
                lines.append(f"INFO {stamp} [async_llm.py:270] Added request {old}.")
            else:
                lines.append(_received(rng, old, stamp, max_log_len))
        elif r < 0.7:
            lines.append(f"INFO {stamp} [async_llm.py:270] Added request {rid}.")  # never seen
        elif r < 0.75 and ids:  # a request's end: recent (often in the same run) or older
            what = rng.choice(("Aborted", "Aborted", "Finished"))
            ended = rng.choice(ids[-3:] if rng.random() < 0.7 else ids)
            lines.append(f"{prefix}INFO {stamp} [async_llm.py:420] {what} request {ended}.")
        elif r < 0.8:
            lines.append(_stats(stamp, rng.choice((0, 0, 3)) if idle else 3))
        elif r < 0.85:
            lines.append(f"ERROR {stamp} [core.py:586] EngineCore encountered a fatal error.")
            lines.append("Traceback (most recent call last):")
            lines.append('  File "/x/vllm/engine.py", line 1, in step')
            lines.append("RuntimeError: CUDA error")
        elif odd:
            lines.append(rng.choice(_ODD_LINES).replace("STAMP", stamp))
    return ("\n".join(lines) + "\n").encode("utf-8", "surrogateescape")


#: Lines the scanner must leave to the parser, or read exactly as it does.
_ODD_LINES = [
    "INFO STAMP [logger.py:43] Received request a\\b: prompt: 'x', params: "
    "SamplingParams(n=1, max_tokens=5), prompt_token_ids: [1, 2], lora_request: None.",
    "INFO STAMP [logger.py:43] Received request esc1: prompt: 'it\\'s \\n', params: "
    "SamplingParams(n=1, max_tokens=5), prompt_token_ids: [1], lora_request: None.",
    'INFO STAMP [logger.py:43] Received request dq1: prompt: "it\'s", params: '
    "SamplingParams(n=1, max_tokens=5), prompt_token_ids: [1], lora_request: None.",
    "INFO STAMP [logger.py:43] Received request utf1: prompt: 'caf\u00e9 \u65e5\u672c', params: "
    "SamplingParams(n=1, max_tokens=7), prompt_token_ids: [3, 4], lora_request: None.",
    "INFO STAMP [logger.py:43] Received request bad\udcff: prompt: 'x', params: "
    "SamplingParams(n=1, max_tokens=7), prompt_token_ids: [3], lora_request: None.",
    "INFO STAMP [logger.py:43] Received request badutf: prompt: 'x\udcc3', params: "
    "SamplingParams(n=1, max_tokens=7), prompt_token_ids: [3], lora_request: None.",
    "INFO STAMP [logger.py:43] Received request crlf1: prompt: 'x', params: "
    "SamplingParams(n=1, max_tokens=7), prompt_token_ids: [3], lora_request: None.\r",
    "INFO STAMP [logger.py:43] Received request noids: prompt: 'hello world', params: "
    "SamplingParams(n=1, max_tokens=7), lora_request: None.",
    "INFO STAMP [logger.py:43] Received request cut1: prompt: 'x', params: "
    "SamplingParams(n=1, max_tokens=7), prompt_token_ids: [1, 2, 3",
    "INFO STAMP [logger.py:43] Received request stop1: prompt: 'x', params: "
    "SamplingParams(n=1, stop=['a'], max_tokens=7), prompt_token_ids: [3], lora_request: None.",
    "INFO STAMP [logger.py:43] Received request exp1: prompt: 'x', params: "
    "SamplingParams(n=1, temperature=1e-05, top_p=1.0, max_tokens=7), prompt_token_ids: [3].",
    "INFO STAMP [logger.py:43] Received request tb1: prompt: 'Traceback (most recent', "
    "params: SamplingParams(n=1, max_tokens=7), prompt_token_ids: [3], lora_request: None.",
    "INFO STAMP [logger.py:43] Received request st1: prompt: 'Avg prompt throughput: 1', "
    "params: SamplingParams(n=1, max_tokens=7), prompt_token_ids: [3], lora_request: None.",
    "INFO STAMP [logger.py:43] Received request params1: params: SamplingParams(n=1, "
    "max_tokens=9), prompt_token_ids: [5, 6], lora_request: None.",
    "INFO STAMP [logger.py:43] Received request empty1: prompt: '', params: "
    "SamplingParams(n=1, max_tokens=7), prompt_token_ids: [], lora_request: None.",
    "INFO 13-30 12:00:00 [logger.py:43] Received request month13: prompt: 'x', params: "
    "SamplingParams(n=1, max_tokens=7), prompt_token_ids: [3], lora_request: None.",
    "INFO 02-31 12:00:00 [logger.py:43] Received request feb31: prompt: 'x', params: "
    "SamplingParams(n=1, max_tokens=7), prompt_token_ids: [3], lora_request: None.",
    "(EngineCore_0 pid=9) (Worker pid=10) INFO STAMP [async_llm.py:270] Added request two.",
    "(Map(Batches) pid=9) INFO STAMP [async_llm.py:270] Added request paren.",
    "(APIServer pid=12345678901) INFO STAMP [async_llm.py:270] Added request longpid.",
    "INFO STAMP [async_llm.py:270] Added request tail. ",
    "INFO STAMP [async_llm.py:270] Added request \x1b[0mcolour.",
    "INFO STAMP [v1/engine/async_llm.py:270] Added request pathfile.",
    "INFO STAMP [async_llm.py:485[] Added request glitch.",
    "WARNING STAMP [async_llm.py:270] Added request warned.",
    "INFO STAMP [async_llm.py:420] Aborted request chatcmpl-1.",
    'INFO:     127.0.0.1:5 - "GET /metrics HTTP/1.1" 200 OK',
    'INFO:     127.0.0.1:5 - "GET /metrics HTTP/1.1"',
    'INFO:     127.0.0.1:5 - "GET /metrics HTTP/1.1" 2000',
    'INFO:     127.0.0.1:5 - "GET /health HTTP/1.1" 503 Service Unavailable',
    'INFO:     127.0.0.1:5 12 - "GET /health HTTP/1.1" 200 OK',
    'INFO:     127.0.0.1:5 - "GET /a"b HTTP/1.1" 200 OK',
    'INFO:     127.0.0.1:5 - "GET /x HTTP/1.1" 200 OK [repeated 2x across cluster]',
    'INFO:     127.0.0.1:5 - "GET /File "x" HTTP/1.1" 200 OK',
    'INFO:\t127.0.0.1:5 - "GET / HTTP/1.1" 200 OK',
    "INFO:     Shutting down",
    "WARNING STAMP [scheduler.py:1754] Sequence group 1 is preempted.",
    "",
    "   ",
    "\u00e9\u00e9 random text",
]


@pytest.mark.parametrize("max_lines", [1 << 16, 3])
@pytest.mark.parametrize("max_log_len", [None, 64])
@pytest.mark.parametrize("seed", [1, 2])
def test_generated_logs_equal_per_line(
    tmp_path: Path, seed: int, max_log_len: int | None, max_lines: int
) -> None:
    data = _generated_log(seed, max_log_len, odd=True)
    rng = random.Random(seed)
    ends = [i + 1 for i, b in enumerate(data) if b == 0x0A]
    cuts = sorted(rng.sample(ends, 25))
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(native_module, "MAX_LINES", max_lines)  # runs cut every few lines
        _assert_same(data, tmp_path, cuts)


@needs_native
def test_a_run_carries_the_end_of_a_request_it_made(tmp_path: Path) -> None:
    # Stats lines and the end of a request of the run ride inside it: one run, applied
    # in bulk, not line by line; an end that comes before a later line of its request
    # sends the run line by line. Both equal the per-line path.
    def received(rid: str) -> str:
        return (
            f"INFO 11-30 12:00:01 [logger.py:43] Received request {rid}: prompt: 'x', "
            "params: SamplingParams(n=1, max_tokens=5), prompt_token_ids: [1, 2], "
            "lora_request: None."
        )

    carried = [
        received("r1"),
        "INFO 11-30 12:00:01 [async_llm.py:270] Added request r1.",
        _stats("11-30 12:00:02", 3),
        received("r2"),
        "INFO 11-30 12:00:03 [async_llm.py:420] Aborted request r1.",
        'INFO:     127.0.0.1:5 - "POST /v1/completions HTTP/1.1" 500 Internal Server Error',
        "INFO 11-30 12:00:04 [async_llm.py:270] Added request r2.",
    ]
    not_last = [*carried, "INFO 11-30 12:00:05 [async_llm.py:270] Added request r1."]
    for lines, bulk in ((carried, True), (not_last, False)):
        data = ("\n".join(lines) + "\n").encode()
        by_line: list[int] = []
        real = applier._apply_by_line

        def spy(*args: Any, real: Any = real, calls: list[int] = by_line) -> None:
            calls.append(1)
            real(*args)

        with pytest.MonkeyPatch.context() as patch:
            patch.setattr(applier, "_apply_by_line", spy)
            _assert_same(data, tmp_path)
        assert (not by_line) == bulk


def test_an_end_before_the_open_rows_are_compacted_equals_per_line(tmp_path: Path) -> None:
    # The lifecycle compacts its list of open rows when it reaches a size (1,024 first),
    # dropping those that ended: an end merged after the run's rows would come after that
    # compaction instead of before it.
    lines = []
    for i in range(1100):
        lines.append(
            f"INFO 11-30 12:00:01 [logger.py:43] Received request r{i}: prompt: 'x', params: "
            "SamplingParams(n=1, max_tokens=5), prompt_token_ids: [1], lora_request: None."
        )
        lines.append(f"INFO 11-30 12:00:01 [async_llm.py:270] Added request r{i}.")
        if i == 1000:
            lines.append("INFO 11-30 12:00:02 [async_llm.py:420] Aborted request r5.")
    _assert_same(("\n".join(lines) + "\n").encode(), tmp_path)


def test_a_carried_line_moves_the_clock_for_the_request_lines_after_it(
    tmp_path: Path,
) -> None:
    # Line by line, each request line compares its stamp with the clock's last: a stats
    # line carried in a run moves that clock (here across a new year), so the request
    # lines after it, though of the C module's run of one stamp, are read anew.
    def added(rid: str, stamp: str) -> str:
        return f"INFO {stamp} [async_llm.py:270] Added request {rid}."

    def received(rid: str, stamp: str) -> str:
        return (
            f"INFO {stamp} [logger.py:43] Received request {rid}: prompt: 'x', params: "
            "SamplingParams(n=1, max_tokens=5), prompt_token_ids: [1], lora_request: None."
        )

    late = "12-31 23:59:59"
    lines = [received("a", late), _stats("01-01 00:00:00", 3), added("a", late)]
    lines += [received("b", late), _stats("01-01 00:00:01", 2), received("c", late)]
    _assert_same(("\n".join(lines) + "\n").encode(), tmp_path)


def test_a_long_busy_log_equals_per_line(tmp_path: Path) -> None:
    # Thousands of open rows: the lifecycle's list of them is compacted along the way.
    data = _generated_log(3, 64, odd=False, steps=6000, idle=False)
    ends = [i + 1 for i, b in enumerate(data) if b == 0x0A]
    _assert_same(data, tmp_path, ends[:: len(ends) // 9])


@pytest.mark.parametrize("path", REAL_LOGS, ids=[p.name for p in REAL_LOGS])
def test_real_logs_equal_per_line(tmp_path: Path, path: Path) -> None:
    data = path.read_bytes()
    _assert_same(data, tmp_path)
    _assert_same(data, tmp_path, [i + 1 for i, b in enumerate(data) if b == 0x0A][::7])


def test_real_logs_through_the_batch_reader_equal_per_line() -> None:
    for path in REAL_LOGS:
        with pytest.MonkeyPatch.context() as patch:
            patch.setattr(vllm_module.VllmFamily, "scan_server", None)
            per_line = Extractor(tokens=_TOKENS)
            ingest_file(per_line, str(path))
        native = Extractor(tokens=_TOKENS)
        ingest_file(native, str(path))
        assert _snapshot(native) == _snapshot(per_line), path.name


_odd_line = st.sampled_from(_ODD_LINES).map(lambda s: s.replace("STAMP", "11-30 12:00:01"))
_received_line = st.builds(
    lambda seed, rid: _received(random.Random(seed), rid, "11-30 12:00:02", None),
    st.integers(0, 1000),
    st.sampled_from(["r1", "r2", "r3", "chatcmpl-1", "cmpl-x-0"]),
)
_added_line = st.sampled_from(["r1", "r2", "r3", "r1-0a1b2c3d", "r9", "chatcmpl-1"]).map(
    lambda rid: f"INFO 11-30 12:00:03 [async_llm.py:270] Added request {rid}."
)


@settings(
    max_examples=150,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(
    lines=st.lists(st.one_of(_odd_line, _received_line, _added_line), min_size=1, max_size=40),
    cut_every=st.integers(1, 7),
    max_lines=st.integers(1, 5),
)
def test_mixed_lines_equal_per_line(
    tmp_path: Path, lines: list[str], cut_every: int, max_lines: int
) -> None:
    data = ("\n".join(lines) + "\n").encode("utf-8", "surrogateescape")
    ends = [i + 1 for i, b in enumerate(data) if b == 0x0A]
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(native_module, "MAX_LINES", max_lines)
        _assert_same(data, tmp_path, ends[::cut_every])


# -- the C module alone -----------------------------------------------------------------


def test_scan_stops_at_the_first_line_it_does_not_read() -> None:
    lines = [
        b"INFO 11-30 12:00:00 [logger.py:43] Received request a: prompt: 'x y', params: "
        b"SamplingParams(n=2, temperature=0.7, top_p=0.95, max_tokens=256, min_tokens=0), "
        b"prompt_token_ids: [1, 2, 3], lora_request: None.",
        b"INFO 11-30 12:00:00 [async_llm.py:270] Added request a.",
        b'INFO:     127.0.0.1:5 - "POST /v1/completions HTTP/1.1" 200 OK',
        b"INFO 11-30 12:00:10 [loggers.py:116] Engine 000: Avg prompt throughput: 1.0",
    ]
    data = b"\n".join(lines) + b"\n"
    result = _vllmscan.scan_vllm(data, 0, 100, 1 << 20)
    n, end, reason, next_end, kinds, _o, _l, ids, _s, stamps, ints, floats, spans, refs = result[
        :14
    ]
    received, blob, ends, hashes = result[14:]
    assert (n, reason) == (3, _vllmscan.STOP_ODD)
    assert end == sum(len(line) + 1 for line in lines[:3])
    assert next_end == len(data)
    assert kinds == bytes([0, 1, 2])
    assert ids == ["a", "a"]
    assert stamps == [b"11-30 12:00:00"]
    import numpy as np

    assert np.frombuffer(ints, dtype=np.int32).tolist() == [3, 256, 2]
    assert np.frombuffer(floats, dtype=np.float64).tolist() == [0.7, 0.95]
    begin, stop = np.frombuffer(spans, dtype=np.int64).tolist()
    assert data[begin:stop] == b"x y"
    assert np.frombuffer(refs, dtype=np.int32).tolist() == [-1, 0]
    # The Received ids as the id table takes them; an Added id is its Received id's str.
    assert received == ["a"] and ids[1] is ids[0] is received[0]
    assert blob == b"a" and np.frombuffer(ends, dtype=np.int64).tolist() == [1]
    assert np.frombuffer(hashes, dtype=np.int64).tolist() == [hash("a")]


def test_a_carrying_scan_records_the_lines_it_does_not_read_and_links_added_lines() -> None:
    lines = [
        b"INFO 11-30 12:00:00 [logger.py:43] Received request a: prompt: 'x', params: "
        b"SamplingParams(n=1, max_tokens=5), prompt_token_ids: [1], lora_request: None.",
        b"INFO 11-30 12:00:10 [loggers.py:116] Engine 000: Avg prompt throughput: 1.0",
        b"INFO 11-30 12:00:00 [logger.py:43] Received request b: prompt: 'x', params: "
        b"SamplingParams(n=1, max_tokens=5), prompt_token_ids: [1], lora_request: None.",
        b"WARNING 11-30 12:00:11 [scheduler.py:1754] Sequence group 1 is preempted.",
        b"INFO 11-30 12:00:12 [async_llm.py:270] Added request b.",
        b"INFO 11-30 12:00:12 [async_llm.py:270] Added request a.",
        b"INFO 11-30 12:00:12 [async_llm.py:270] Added request never.",
        b"(APIServer pid=1) INFO 11-30 12:00:12 [x.py:1] anything at all",
        b"Traceback (most recent call last):",
        b"INFO 11-30 12:00:12 [async_llm.py:270] Added request a.",
    ]
    data = b"\n".join(lines) + b"\n"
    import numpy as np

    plain = _vllmscan.scan_vllm(data, 0, 100, 1 << 20)
    assert plain[0] == 1  # without carrying it stops at the stats line
    n, end, reason, next_end, kinds, *_, refs = _vllmscan.scan_vllm(data, 0, 100, 1 << 20, True)[
        :14
    ]
    assert (n, reason) == (8, _vllmscan.STOP_ODD)  # stops at the traceback's first line
    assert kinds == bytes([0, 3, 0, 3, 1, 1, 1, 3])
    assert end == sum(len(line) + 1 for line in lines[:8])
    assert next_end == end + len(lines[8]) + 1
    # Added b -> the 2nd Received line, a -> the 1st, never -> none.
    assert np.frombuffer(refs, dtype=np.int32).tolist() == [-1, -1, 1, 0, -1]
    long_line = _vllmscan.scan_vllm(data, 0, 100, 100, True)
    assert long_line[0] == 0  # a line over max_line_bytes is never carried


def test_a_scan_longer_than_its_first_buffers_keeps_every_line() -> None:
    # The C buffers start with room for a few thousand lines and double: what was read
    # before each growth (per-Received blocks included) must come out unchanged.
    import numpy as np

    count = 10_000
    lines = [
        f"INFO 11-30 12:00:00 [logger.py:43] Received request r{i}: prompt: 'x', params: "
        f"SamplingParams(n={i % 3 + 1}, temperature={i % 10 / 10}, max_tokens={i}, "
        f"min_tokens=0), "
        f"prompt_token_ids: [{', '.join(['1'] * (i % 7 + 1))}], lora_request: None."
        for i in range(count)
    ]
    lines += [f"INFO 11-30 12:00:01 [async_llm.py:270] Added request r{i}." for i in range(count)]
    data = ("\n".join(lines) + "\n").encode()
    scan = _vllmscan.scan_vllm(data, 0, 1 << 16, 1 << 20, True)
    n, end, reason, _next, kinds, _o, lengths, ids, *_s, ints, floats, _sp, refs = scan[:14]
    received, blob, ends, hashes = scan[14:]
    assert received == ids[:count] and blob == "".join(received).encode()
    assert (
        np.frombuffer(ends, dtype=np.int64).tolist()
        == np.cumsum([len(i) for i in received]).tolist()
    )
    assert np.frombuffer(hashes, dtype=np.int64).tolist() == [hash(i) for i in received]
    assert (n, end, reason) == (2 * count, len(data), _vllmscan.STOP_END)
    assert kinds == bytes([0] * count + [1] * count)
    assert np.frombuffer(lengths, dtype=np.uint32).sum() == len(data)
    assert ids == [f"r{i}" for i in range(count)] * 2
    prompt, max_tokens, n_ = np.frombuffer(ints, dtype=np.int32).reshape(3, count)
    assert prompt.tolist() == [i % 7 + 1 for i in range(count)]
    assert max_tokens.tolist() == list(range(count))
    assert n_.tolist() == [i % 3 + 1 for i in range(count)]
    temperature = np.frombuffer(floats, dtype=np.float64).reshape(2, count)[0]
    assert temperature.tolist() == [i % 10 / 10 for i in range(count)]
    assert np.frombuffer(refs, dtype=np.int32).tolist() == [-1] * count + list(range(count))
    full = _vllmscan.scan_vllm(data, 0, 9_000, 1 << 20, True)
    assert (full[0], full[2]) == (9_000, _vllmscan.STOP_FULL)
    assert full[1] == sum(len(line) + 1 for line in lines[:9_000])


def test_an_id_list_is_counted_or_refused_whatever_its_length_and_bytes() -> None:
    # The C module reads a list sixteen bytes at a time where it can, then byte by byte:
    # every length, and an odd byte at every place, against the count Python would give.
    def line(ids: bytes) -> bytes:
        return (
            b"INFO 11-30 12:00:00 [logger.py:43] Received request a: prompt: 'x', params: "
            b"SamplingParams(n=1, max_tokens=5), prompt_token_ids: [" + ids + b"], "
            b"lora_request: None.\n"
        )

    import numpy as np

    for count in range(0, 12):
        ids = b", ".join(str(7 * i).encode() for i in range(count))
        n, *_rest = _vllmscan.scan_vllm(line(ids), 0, 10, 1 << 20)
        ints = _rest[9]
        assert n == 1 and np.frombuffer(ints, dtype=np.int32)[0] == count
        for at in range(len(ids)):
            for odd in (b"x", b"\x80", b"-", b"\t"):
                bad = ids[:at] + odd + ids[at + 1 :]
                assert _vllmscan.scan_vllm(line(bad), 0, 10, 1 << 20)[0] == 0, (bad, at)


def test_scan_never_reads_past_the_data_on_any_prefix_of_a_line() -> None:
    line = (
        b"(APIServer pid=1) INFO 11-30 12:00:00 [logger.py:43] Received request a: prompt:"
        b" 'x', params: SamplingParams(n=1, temperature=0.5, top_p=1.0, max_tokens=9), "
        b"prompt_token_ids: [1, 2], lora_request: None."
    )
    for cut in range(len(line) + 1):
        n = _vllmscan.scan_vllm(line[:cut], 0, 10, 1 << 20)[0]
        assert n in (0, 1)


@needs_native
def test_a_vllm_log_with_the_scanner_is_read_in_one_process(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], split_attempts: list[bool | str]
) -> None:
    # (split_attempts makes every file big enough to split: ingest.parallel does not.)
    from sparseety_tui.cli.main import run

    path = tmp_path / "vllm.log"
    path.write_bytes(_generated_log(4, 64, odd=True))
    assert run(["summary", "--json", "--jobs", "1", str(path)]) == 0
    single = capsys.readouterr().out
    assert run(["summary", "--json", "--jobs", "3", str(path)]) == 0
    assert capsys.readouterr().out == single
    assert split_attempts == []
