"""Hostile lines for the robustness tests (issue #9): the real corpus, and near-miss lines
made by pumping one spot of a real line.

A regex is super-linear when some spot of an almost-matching line can be repeated ("pumped")
so that each extra copy costs more than the one before; this is how ReDoS detectors search
for it. ``near_misses`` pumps every place where a real line changes character class, and
ends the line so that the match fails (the expensive case: every way to split the pumped run
is tried before giving up).
"""

from __future__ import annotations

import codecs
import contextlib
import gc
import math
import re
import time
import warnings
from collections.abc import Callable
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
CORPUS_DIRS = (ROOT / "tests" / "data" / "real_logs", ROOT / "sample_logs")
FORMATS_DIR = ROOT / "sparseety_tui" / "formats"


def split_lines(data: bytes) -> list[bytes]:
    lines = data.split(b"\n")
    if lines and lines[-1] == b"":
        lines.pop()
    return lines


@cache
def corpus_files() -> dict[str, list[bytes]]:
    """File name -> its lines, for every log of the real and sample corpus."""
    files: dict[str, list[bytes]] = {}
    for folder in CORPUS_DIRS:
        for path in sorted(folder.iterdir()):
            if path.is_file() and path.suffix in (".log", ".jsonl"):
                files[path.name] = split_lines(path.read_bytes())
    return files


@cache
def corpus_lines() -> tuple[bytes, ...]:
    return tuple(line for lines in corpus_files().values() for line in lines)


@cache
def documented_samples() -> tuple[bytes, ...]:
    """The sample lines written beside the code (````...```` spans in ``formats/``), as
    written and with backslash escapes decoded (``\\x1b[31m`` is an ANSI code there)."""
    samples: set[bytes] = set()
    for path in FORMATS_DIR.rglob("*.py"):
        for text in re.findall(r"``(.+?)``", path.read_text(encoding="utf-8")):
            raw = text.encode("utf-8")
            samples.add(raw)
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", DeprecationWarning)  # ``\\d`` in a sample
                with contextlib.suppress(ValueError):  # a lone backslash at the end
                    samples.add(codecs.escape_decode(raw)[0])
    return tuple(sorted(samples))


@dataclass(frozen=True)
class NearMiss:
    """``head + unit * k + tail``, long enough to be ``size`` bytes."""

    label: str
    head: bytes
    unit: bytes
    tail: bytes

    @property
    def fixed(self) -> int:
        """The bytes around the pumped run."""
        return len(self.head) + len(self.tail)

    def build(self, size: int) -> bytes:
        k = max(1, (size - self.fixed) // len(self.unit))
        return self.head + self.unit * k + self.tail


#: What breaks a match at the end of a near-miss line: a NUL, after a carriage return that
#: patterns ending in ``\s*$`` take and patterns reading ``[^\r\n]*`` stop at.
FAIL = b"\r\x00"
#: Runs that are the usual suspects whatever the pattern: whitespace, digits, brackets,
#: separators, quotes and escapes, and prefixes that nearly start a known line.
FILLERS = (
    b" ",
    b"\t",
    b"0",
    b"a",
    b"[",
    b"]",
    b"(",
    b"{",
    b"|",
    b"=",
    b"-",
    b":",
    b".",
    b",",
    b'"',
    b"'",
    b"\\",
    b"#",
    b"\x1b",
    b"\x1b[",
    b"\xff",
    b"a ",
    b"0 ",
    b"0,",
    b"0.",
    b"1e",
    b"a.",
    b"a:",
    b"a=",
    b'a="',
    b"[0",
    b'\\"',
    b" | ",
    b"k=v | ",
    b"(x pid=1",
    b"(x pid=1) ",
    b"rid=",
    b"request ",
    b"Received request ",
    b"cmpl-",
    b'File "',
    b"Traceback ",
    b"INFO 02-22 16:52:30 ",
    b"INFO:     ",
    b"[2024-10-31 21:55:11 TP0",
    b"2025-04-04T10:00:00.123Z ",
    b"Prefill batch ",
    b"#new-seq: 1, ",
    b"Avg prompt throughput: ",
    b'{"request_id": ',
    b"[1, ",
)
#: Line ends after a run of filler: a failing byte, and the tail of the line that froze the
#: tool (a Ray repeat marker after a long run of spaces, issue #9).
FILLER_TAILS = (FAIL, b"y [repeated 5x across cluster]")


def generic_near_misses() -> list[NearMiss]:
    return [
        NearMiss(f"x + {unit!r}* + {tail!r}", b"x", unit, tail)
        for unit in FILLERS
        for tail in FILLER_TAILS
    ]


def _class_of(byte: int) -> int:
    if 0x30 <= byte <= 0x39:
        return 0
    if 0x41 <= byte <= 0x5A or 0x61 <= byte <= 0x7A or byte == 0x5F:
        return 1
    if byte in (0x20, 0x09):
        return 2
    return 3 + byte  # every other byte is its own class


def pump_points(text: bytes, limit: int) -> list[int]:
    """Where ``text`` changes character class (plus its ends), at most ``limit`` of them,
    evenly spread."""
    points = [0]
    points.extend(i for i in range(1, len(text)) if _class_of(text[i]) != _class_of(text[i - 1]))
    if len(text) > 1:
        points.append(len(text) - 1)
    points = sorted(set(points))
    if len(points) > limit:
        step = len(points) / limit
        points = [points[int(i * step)] for i in range(limit)]
    return points


def near_misses(
    line: bytes, start: int = 0, end: int | None = None, limit: int = 12
) -> list[NearMiss]:
    """Near misses of ``line[start:end]``: one spot (a byte or two) pumped, followed by the
    rest of the line or by nothing, then a failing byte; and the whole but its last byte
    repeated (repeated prefixes that almost match)."""
    end = len(line) if end is None else end
    text = line[start:end]
    out: list[NearMiss] = []
    for i in pump_points(text, limit):
        for unit in {text[i : i + 1], text[i : i + 2]}:
            if not unit:
                continue
            out.append(
                NearMiss(f"{text[:40]!r}: pump {unit!r} at {i}", text[:i], unit, text[i:] + FAIL)
            )
            out.append(NearMiss(f"{text[:40]!r}: pump {unit!r} at {i}, cut", text[:i], unit, FAIL))
    if len(text) > 1:
        out.append(NearMiss(f"{text[:40]!r}: repeated prefix", b"", text[:-1], FAIL))
    return out


def seconds_per_byte(fn: Callable[[Any], object], data: Any, repeats: int) -> float:
    """The best of ``repeats`` timed calls of ``fn(data)``, per byte (or character) of data;
    the collector is paused so that its passes are not charged to one call."""
    best = math.inf
    enabled = gc.isenabled()
    gc.disable()
    try:
        for _ in range(repeats):
            t0 = time.perf_counter()
            fn(data)
            best = min(best, time.perf_counter() - t0)
    finally:
        if enabled:
            gc.enable()
    return best / max(len(data), 1)
