"""The native SGLang scanner (native/sglang_scan.c, formats/sglang/_native.py,
core.extraction._apply_stats) leaves the Extractor exactly as the per-line path does.

It reads only the common lines it is sure of and stops at any other; these tests read
every real SGLang log, generated logs and hand-made odd lines both ways and compare the
whole state: counts by kind, diagnostics, the engine series (sums, per-minute arrays,
points, last lines, bit for bit), errors and the store.
"""

from __future__ import annotations

import random
import struct
from array import array
from pathlib import Path
from typing import Any

import pytest
from native_marks import needs_native

import sparseety_tui.core.extraction._extractor as extractor_module
import sparseety_tui.formats.sglang as sglang_family
from sparseety_tui import _sglscan
from sparseety_tui.core.extraction._extractor import Extractor
from sparseety_tui.core.store._series import _SLOT, STATS_POINTS
from sparseety_tui.formats.sglang import SCANNER, SUM_FIELDS
from sparseety_tui.sources import iter_chunks

REAL_LOGS = Path(__file__).resolve().parents[1] / "data" / "real_logs"
SGLANG_LOGS = sorted(REAL_LOGS.glob("sglang_*.log"))
MAX_LINE = 1 << 20


def bits(value: Any) -> Any:
    """Floats compared by their bits (0.0 and -0.0, and every rounding, differ)."""
    if type(value) is float:
        return ("f", struct.pack("<d", value))
    if isinstance(value, dict):
        return {key: bits(item) for key, item in value.items()}
    if isinstance(value, (list, tuple, array)):
        return [bits(item) for item in value]
    return value


def state_of(ex: Extractor) -> dict[str, Any]:
    """Everything reading a file changes, in comparable form (key order included)."""
    engine = ex.engine
    merger = ex._merger
    return {
        "files": [
            (
                list(f.by_kind.items()),
                f.lines_total,
                [(d.line_no, d.offset, d.reason, d.preview) for d in f.diagnostics],
            )
            for f in ex.files
        ],
        "engine": {
            "count": engine.count,
            "last": bits(list(engine.last.items())),
            "points": [bits(list(p.items())) for p in engine.points],
            "labels": {
                label: {
                    "count": s.count,
                    "main": s.main,
                    "sums": bits(list(s.sums.items())),
                    "per_minute": [(m, bits(b)) for m, b in s.per_minute.items()],
                    "last": bits(list(s.last.items())),
                }
                for label, s in engine.labels.items()
            },
        },
        "errors": bits(list(merger.errors)),
        "error_count": merger.error_count,
        "error_log": (
            merger.error_log.total,
            merger.error_log.by_kind,
            merger.error_log.per_minute,
            [repr(r) for r in merger.error_log.records],
        ),
        "store": len(ex.store),
    }


def read(path: Path, *, native: bool, chunk_bytes: int = 1 << 20, eager: bool = False) -> Extractor:
    """``path`` read as ``ingest_file`` does, with or without the native scanner.
    ``eager``: the scanner is tried at every line (the Extractor otherwise reads a block
    of lines in Python after two lines in a row the scanner would not take)."""
    saved_block = extractor_module.BULK_MIN_LINES
    if not native:  # shadows the class's staticmethod on the one family object
        sglang_family.FAMILY.scan_server = None  # type: ignore[misc]
    if eager:
        extractor_module.BULK_MIN_LINES = 1
    try:
        ex = Extractor(forced_format="sglang")
        file = ex.add_file(str(path))
        ex.feed_chunks(file, iter_chunks(path, chunk_bytes=chunk_bytes))
        ex.finish_file(file)
    finally:
        if not native:
            del sglang_family.FAMILY.scan_server
        extractor_module.BULK_MIN_LINES = saved_block
    return ex


def assert_same(path: Path, chunk_bytes: int = 1 << 20) -> Extractor:
    """The state after reading ``path`` natively (the Extractor's way, and trying the
    scanner at every line) equals the per-line path's."""
    per_line = state_of(read(path, native=False, chunk_bytes=chunk_bytes))
    eager = read(path, native=True, chunk_bytes=chunk_bytes, eager=True)
    assert state_of(eager) == per_line
    native = read(path, native=True, chunk_bytes=chunk_bytes)
    assert state_of(native) == per_line
    return native


@needs_native
def test_the_scanner_is_built_and_used() -> None:
    assert SCANNER is not None
    assert sglang_family.FAMILY.scan_server is SCANNER


def test_the_sums_layout_matches_the_engine_series() -> None:
    # accumulate's minute slots are core/store/'s: a field moved there must move here.
    for key, _kinds, slot in SUM_FIELDS:
        assert _SLOT.get(key, -1) == slot


@pytest.mark.parametrize("path", SGLANG_LOGS, ids=[p.name for p in SGLANG_LOGS])
def test_every_real_sglang_log_reads_the_same(path: Path) -> None:
    assert_same(path)
    assert_same(path, chunk_bytes=997)  # chunk ends everywhere


# -- generated logs -----------------------------------------------------------------------

PREFILL = (
    "[{stamp}{ranks}] Prefill batch. #new-seq: {a}, #new-token: {b}, #cached-token: {c}, "
    "token usage: {u}, #running-req: {r}, #queue-req: {q}"
)
DECODE = (
    "[{stamp}{ranks}] Decode batch. #running-req: {r}, #token: {t}, token usage: {u}, "
    "gen throughput (token/s): {g}, #queue-req: {q}"
)
ACCESS = '[{stamp}] INFO:     127.0.0.1:{port} - "{method} {path} HTTP/1.1" {status} {text}'
TRACEBACK = [
    "[{stamp}{ranks}] Scheduler hit an exception: Traceback (most recent call last):",
    '  File "/usr/lib/python3.12/dist-packages/sglang/srt/managers/scheduler.py", line 1, in run',
    "    self.event_loop_normal()",
    "RuntimeError: CUDA error: an illegal memory access was encountered",
]
ODD = [
    "[{stamp}{ranks}] KV cache pool is full. Retract requests. #retracted_reqs: 1",
    "[{stamp}{ranks}] Prefill out of memory. Try to lower your batch size.",
    "[{stamp}] INFO:     Uvicorn running on http://0.0.0.0:30000 (Press CTRL+C to quit)",
    "[12:00:01 TP0] Decode batch. #running-req: 3, #token: 10, token usage: 0.01, "
    "gen throughput (token/s): 1.00, #queue-req: 0",
    "[{stamp}{ranks}] Decode batch. #running-req: 3, #token: 10, token usage: 0.01, "
    "gen throughput (token/s): 1.00, #queue-req: 0, ",
    "[{stamp}{ranks}] Prefill batch. #new-seq: 1, #new-token: 5, #cached-token: 0, "
    "cache hit rate: 0.00%, token usage: 0.00, #running-req: 0, #queue-req: 0",
    "[{stamp}{ranks}] Decode batch. #running-req: 1234567890123456789, #token: 1, "
    "token usage: 0.5, gen throughput (token/s): 2.5, #queue-req: 0",
    "[{stamp}{ranks}] Decode batch. #running-req: 1, #token: 1, token usage: "
    "0.1234567890123456789, gen throughput (token/s): 2.5, #queue-req: 0",
    "[{stamp}{ranks}] Decode batch. #running-req: 1, #token: 1, token usage: 5, "
    "gen throughput (token/s): 2.5, #queue-req: 0",
    "[{stamp}{ranks}] Decode batch. #running-req: 1, #token: 1, token usage: 0.50, "
    "gen throughput (token/s): 2.5, #queue-req: 0 ",
    '[{stamp}] INFO:     127.0.0.1:1 - "POST /generate HTTP/1.1" 500 Internal Server Error',
    '[{stamp}] INFO:     127.0.0.1:1 - "POST /generate HTTP/1.1" 503',
    '[{stamp}] INFO:     127.0.0.1:1 - "POST /generate HTTP/1.1"',
    '[{stamp}] INFO:     127.0.0.1:1 - "POST /generate HTTP/1.1" 200 OK Traceback',
    '[{stamp}] INFO:     127.0.0.1:1 - "POST /Decode batch HTTP/1.1" 200 OK',
    '[{stamp}] INFO:     127.0.0.1:1 - "POST /ünï HTTP/1.1" 200 OK',
    '[{stamp}] INFO:     127.0.0.1:1 - "POST /v1 HTTP/1.1" 200\tOK',
    '[{stamp}] INFO:     127.0.0.1:1 2 - "GET /health HTTP/1.0" 204 No Content',
    '[{stamp}] WARNING:  127.0.0.1:1 - "GET /health HTTP/1.0" 404 Not Found',
    "[{stamp}{ranks}] Prefill batch. #new-seq: 1, #new-token: 5, #cached-token: 0, "
    "token usage: 0.00, #running-req: 0, #queue-req: 0\r",
    "\x1b[32m[{stamp}{ranks}] Decode batch. #running-req: 1, #token: 1, token usage: 0.50, "
    "gen throughput (token/s): 2.5, #queue-req: 0\x1b[0m",
    "[{stamp}{ranks}] Decode batch. #running-req: 1, #token: 1, token usage: 0.50, gen throughput",
    " (token/s): 2.5, #queue-req: 0",
    "[{stamp}{ranks}] Décode batch. naïve ✓",
    "[2026-13-40 25:61:99 TP0] Decode batch. #running-req: 1, #token: 1, token usage: 0.50, "
    "gen throughput (token/s): 2.5, #queue-req: 0",
    "[2026-02-31 12:00:00] Decode batch. #running-req: 1, #token: 1, token usage: 0.50, "
    "gen throughput (token/s): 2.5, #queue-req: 0",
    "[0000-01-01 00:00:00 TP0] Prefill batch. #new-seq: 1, #new-token: 5, #cached-token: 0, "
    "token usage: 0.00, #running-req: 0, #queue-req: 0",
    "[{stamp}.123{ranks}] Decode batch. #running-req: 1, #token: 1, token usage: 0.50, "
    "gen throughput (token/s): 2.5, #queue-req: 0",
    "[{stamp} A1 B2 C3 D4 E5 F6 G7 H8 I9] Decode batch. #running-req: 1, #token: 1, "
    "token usage: 0.50, gen throughput (token/s): 2.5, #queue-req: 0",
    "[{stamp} ABCDEFGHIJKL1] Decode batch. #running-req: 1, #token: 1, "
    "token usage: 0.50, gen throughput (token/s): 2.5, #queue-req: 0",
    "",
    "   ",
    "Traceback (most recent call last):",
    '  File "x.py", line 1, in <module>',
    "ValueError: boom",
    "/usr/lib/python3/warnings.py:1: UserWarning: careful",
    "  warnings.warn(",
    "{stamp}",
    "[{stamp}",
    "[{stamp}{ranks}]",
    "[{stamp}{ranks}] ",
]


def _number(rng: random.Random) -> str:
    whole = str(rng.choice([0, 1, 12, 999, rng.randrange(10**18)]))
    frac = "".join(rng.choice("0123456789") for _ in range(rng.choice([1, 2, 2, 3, 9, 17, 18])))
    return f"{whole}.{frac}"


def generated_log(seed: int, lines: int, odd_rate: float) -> str:
    """An SGLang log with the generator's common lines and, at ``odd_rate``, odd ones:
    several ranks, minutes that go back, numbers at FAST_RE's bounds."""
    rng = random.Random(seed)
    t = 1_796_040_000 + rng.randrange(86400)
    out: list[str] = []
    rank_sets = ["", " TP0", " TP1", " DP0 TP0 EP0", " DP1 TP1 EP1", " PP0"]
    for _ in range(lines):
        t += rng.choice([0, 0, 1, 1, 2, 7, 61, -3, -120])
        y, mo, d, h, mi, s = __import__("time").localtime(t)[:6]
        stamp = f"{y:04d}-{mo:02d}-{d:02d} {h:02d}:{mi:02d}:{s:02d}"
        ranks = rng.choice(rank_sets[:2] if rng.random() < 0.7 else rank_sets)
        fields = {
            "stamp": stamp,
            "ranks": ranks,
            "a": rng.randrange(1, 64),
            "b": rng.choice([rng.randrange(10**5), rng.randrange(10**18)]),
            "c": rng.randrange(10**5),
            "u": rng.choice([f"{rng.random():.2f}", _number(rng)]),
            "r": rng.randrange(300),
            "q": rng.randrange(50),
            "t": rng.randrange(10**7),
            "g": rng.choice([f"{rng.uniform(0, 9000):.2f}", _number(rng)]),
            "port": rng.randrange(65536),
            "method": rng.choice(["GET", "POST"]),
            "path": rng.choice(["/v1/completions", "/generate", "/health", "/metrics"]),
            "status": rng.choice([200, 200, 200, 204, 400, 404, 422]),
            "text": rng.choice(["OK", "Bad Request", "Not Found"]),
        }
        roll = rng.random()
        if roll < odd_rate:
            shape = rng.choice(ODD)
            out.append(shape.format(**fields) if "{" in shape else shape)
        elif roll < odd_rate * 1.3:
            out.extend(line.format(**fields) for line in TRACEBACK)
        else:
            out.append(rng.choice([PREFILL, DECODE, DECODE, ACCESS]).format(**fields))
    return "\n".join(out) + "\n"


@pytest.mark.parametrize(("seed", "odd_rate"), [(1, 0.0), (2, 0.01), (3, 0.1), (4, 0.5), (5, 0.03)])
def test_generated_logs_read_the_same(tmp_path: Path, seed: int, odd_rate: float) -> None:
    path = tmp_path / "gen.log"
    path.write_text(generated_log(seed, 6000, odd_rate), encoding="utf-8")
    native = assert_same(path)
    if odd_rate < 0.2:
        assert native.engine.count > STATS_POINTS  # the points deque was filled from runs
    assert_same(path, chunk_bytes=4093)


def test_line_endings_and_a_last_line_without_newline(tmp_path: Path) -> None:
    text = generated_log(6, 800, 0.05)
    path = tmp_path / "crlf.log"
    path.write_bytes(text.replace("\n", "\r\n").encode())
    assert_same(path, chunk_bytes=1500)
    path.write_bytes(text.rstrip("\n").encode())
    assert_same(path, chunk_bytes=1500)
    mixed = text.encode().replace(b"OK\n", b"OK\r\n")
    path.write_bytes(mixed)
    assert_same(path)


def test_huge_lines_and_bytes_of_every_value(tmp_path: Path) -> None:
    rng = random.Random(7)
    base = generated_log(7, 400, 0.0).encode().splitlines(keepends=True)
    lines: list[bytes] = []
    for line in base:
        roll = rng.random()
        if roll < 0.02:
            lines.append(line[:-1] + b"x" * (MAX_LINE + 10) + b"\n")  # over the line cap
        elif roll < 0.2:
            cut = rng.randrange(len(line))
            lines.append(line[:cut] + bytes([rng.randrange(256)]) + line[cut + 1 :])
        else:
            lines.append(line)
    path = tmp_path / "odd.log"
    path.write_bytes(b"".join(lines))
    assert_same(path)


def test_the_minute_cache_and_rank_names_end_as_the_per_line_path_leaves_them(
    tmp_path: Path,
) -> None:
    path = tmp_path / "gen.log"
    path.write_text(generated_log(8, 3000, 0.05), encoding="utf-8")
    native = read(path, native=True)
    per_line = read(path, native=False)
    a, b = native.files[0].parser, per_line.files[0].parser
    assert a is not None and b is not None
    for name in ("_sec_key", "_sec_entry", "_date", "_last_hour", "_minutes", "_ranks"):
        assert getattr(a, name) == getattr(b, name), name


def test_a_stats_line_between_runs_keeps_the_points_in_line_order(tmp_path: Path) -> None:
    # A batch line the scanner leaves to Python (a cache hit rate) between runs: its point
    # is added one by one between two runs whose points are made lazily.
    lines = []
    for i in range(STATS_POINTS * 2):
        stamp = f"2026-11-30 12:{i // 60 % 60:02d}:{i % 60:02d}"
        if i % 997 == 5:
            lines.append(ODD[5].format(stamp=stamp, ranks=" TP0"))
        else:
            lines.append(
                DECODE.format(stamp=stamp, ranks=" TP0", r=i, t=1, u="0.50", g="1.25", q=0)
            )
    path = tmp_path / "mixed.log"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    assert_same(path)
    assert_same(path, chunk_bytes=2000)


# -- one scan -------------------------------------------------------------------------------


def test_scan_reports_where_it_stopped() -> None:
    data = (
        b"[2026-11-30 12:00:00 TP0] Decode batch. #running-req: 5, #token: 3175, token usage: "
        b"0.01, gen throughput (token/s): 199.40, #queue-req: 1\n"
        b'[2026-11-30 12:00:01] INFO:     127.0.0.1:57479 - "POST /v1/completions HTTP/1.1" 200 OK\n'
        b"[2026-11-30 12:00:02 TP0] something else\n"
        b"[2026-11-30 12:00:03 TP0] Decode batch. #running-req: 5, #token: 3175, token usage: "
        b"0.01, gen throughput (token/s): 199.40, #queue-req: 1"
    )
    got = _sglscan.scan(data, 0, MAX_LINE, 1 << 20)
    lines, end, next_end, access = got[:4]
    assert (lines, access) == (2, 1)
    assert data[end:next_end] == b"[2026-11-30 12:00:02 TP0] something else\n"
    got = _sglscan.scan(data, next_end, MAX_LINE, 1 << 20)
    assert got[:4] == (1, len(data), len(data), 0)  # the last line, without "\n"
    assert got[:3] == (1, len(data), len(data))
    assert _sglscan.scan(data, 0, MAX_LINE, 1)[:2] == (1, data.index(b"\n") + 1)
    assert _sglscan.scan(data, len(data), MAX_LINE, 5)[:3] == (0, len(data), len(data))
    with pytest.raises(ValueError):
        _sglscan.scan(data, len(data) + 1, MAX_LINE, 5)


def test_floats_are_pythons_bit_for_bit() -> None:
    rng = random.Random(9)
    texts = ["0.0", "0.00", "199.40", "0.1", "0.3", "123456789012345678.123456789012345678"]
    texts += [_number(rng) for _ in range(3000)]
    for text in texts:
        line = (
            f"[2026-11-30 12:00:00] Decode batch. #running-req: 1, #token: 1, token usage: "
            f"{text}, gen throughput (token/s): {text}, #queue-req: 0\n"
        ).encode()
        got = _sglscan.scan(line, 0, MAX_LINE, 5)
        assert got[0] == 1, text
        usage, gen = struct.unpack("<2d", got[11])
        assert struct.pack("<d", usage) == struct.pack("<d", float(text)), text
        assert struct.pack("<d", gen) == struct.pack("<d", float(text)), text
