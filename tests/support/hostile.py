"""Hostile lines for the robustness tests (issue #9): the real corpus, near-miss lines made
by pumping one spot of a real line, and random lines built from fragments of real ones.

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
import random
import re
import time
import warnings
from collections.abc import Callable
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

from sparseety_tui.formats import _registry as registry
from sparseety_tui.formats import shapes

ROOT = Path(__file__).resolve().parents[2]
#: The real logs, the demo's sample logs, and spans the OpenTelemetry SDK made (the otlp
#: family's lines: tests/support/otlp_spans.py).
CORPUS_DIRS = (
    ROOT / "tests" / "data" / "real_logs",
    ROOT / "sample_logs",
    ROOT / "tests" / "data" / "otlp",
)
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
def family_lines() -> dict[str, list[bytes]]:
    """Family name -> the corpus lines of the files detection gives it ("" for files that
    no family claims)."""
    by_family: dict[str, list[bytes]] = {name: [] for name in registry.FAMILIES}
    for name, lines in corpus_files().items():
        family = registry.detect(lines[: registry.SNIFF_LINES], path=name)
        by_family.setdefault(family.name if family is not None else "", []).extend(lines)
    return by_family


def parse_all(family_name: str) -> Callable[[list[bytes]], None]:
    """Parse a list of lines with a fresh parser of the family, as a file is read."""
    family = registry.FAMILIES[family_name]

    def run(lines: list[bytes]) -> None:
        parser = family.new_parser()
        for line in lines:
            parser.parse(line)
        parser.finish()

    return run


def parse_seconds_per_byte(family_name: str, lines: list[bytes], repeats: int) -> float:
    """The best of ``repeats`` parses of ``lines`` (one fresh parser), per byte of them."""
    best = seconds_per_byte(parse_all(family_name), lines, repeats) * len(lines)
    return best / max(sum(map(len, lines)), 1)


@cache
def documented_samples() -> tuple[bytes, ...]:
    """The sample lines of every line shape table (``formats.shapes.TABLES``), and those
    written beside the code (````...```` spans in ``formats/``), as written and with
    backslash escapes decoded (``\\x1b[31m`` is an ANSI code there)."""
    samples: set[bytes] = {
        sample if isinstance(sample, bytes) else sample.encode("utf-8")
        for table in shapes.TABLES.values()
        for row in table
        for sample in row.shape.samples
    }
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
    the collector is paused so that its passes are not charged to one call. The time is
    this thread's CPU time: a call the scheduler set aside for other work (a busy CI
    machine, tests in parallel) is not charged for the wait."""
    best = math.inf
    enabled = gc.isenabled()
    gc.disable()
    try:
        for _ in range(repeats):
            t0 = time.thread_time()
            fn(data)
            best = min(best, time.thread_time() - t0)
    finally:
        if enabled:
            gc.enable()
    return best / max(len(data), 1)


# -- random lines from fragments of real ones ------------------------------------------

#: Where real lines are cut into fragments.
_FRAGMENT_CUT = re.compile(rb"(?<=[ |=,\[\](){}])")
#: Digits of every Unicode category that ``str.isdigit`` or ``\d`` accept, or that look
#: like digits: superscripts, subscripts, circled, Arabic-Indic, Devanagari, fullwidth,
#: Roman numerals, vulgar fractions, mathematical bold.
ODD_DIGITS = "¹²³⁴⁰₀₉①⑳٠١٢٣٩۰۹०९０９Ⅻ½¼𝟎𝟗"


@cache
def fragments() -> tuple[bytes, ...]:
    pieces: set[bytes] = set()
    for line in corpus_lines():
        for piece in _FRAGMENT_CUT.split(line[:4096]):
            if piece:
                pieces.add(piece[:200])
    return tuple(sorted(pieces))


def _odd_number(rng: random.Random) -> bytes:
    choice = rng.randrange(6)
    if choice == 0:
        return "".join(rng.choice(ODD_DIGITS) for _ in range(rng.randint(1, 4))).encode()
    if choice == 1:
        return b"9" * rng.choice((19, 20, 40, 309, 400, 4301, 5000))
    if choice == 2:
        return rng.choice(
            (b"1e400", b"-1e400", b"1e-400", b"nan", b"inf", b"-inf", b"NaN", b"1e309")
        )
    if choice == 3:
        return str(rng.choice((2**31, 2**32, 2**63, 2**64, -(2**63) - 1, -1, 0))).encode()
    if choice == 4:
        return b"0x1F" if rng.random() < 0.5 else b"1_000"
    return str(rng.randrange(10**6)).encode()


def _odd_piece(rng: random.Random) -> bytes:
    choice = rng.randrange(8)
    if choice == 0:
        return rng.choice((b" ", b"\t")) * rng.choice((1, 2, 50, 3000))
    if choice == 1:
        return rng.choice((b"[", b"]", b"(", b")", b"{", b"}", b"[[", b"]]")) * rng.randint(1, 50)
    if choice == 2:
        return rng.choice((b"|", b" | ", b"=", b"==", b":", b",", b'"', b"'", b"\\"))
    if choice == 3:
        return b"\x00" * rng.randint(1, 3)
    if choice == 4:
        return rng.choice((b"\xff", b"\xc3", b"\xed\xa0\x80", b"\xf0\x9f", b"\x80\x80"))
    if choice == 5:
        return rng.choice((b"\r", b"\x1b[31m", b"\x1b]0;t\x07", "\u202e".encode(), b"\x7f"))
    if choice == 6:
        return _odd_number(rng)
    return rng.choice(
        (b"[repeated 5x across cluster]", b"Traceback (most recent call last):", b"req_id=")
    )


@cache
def lines_by_family() -> tuple[tuple[bytes, ...], ...]:
    """The corpus's non-blank lines (cut to 4 KB), one group per format family (and one
    of files no family claims), so a random base line comes from each equally often."""
    groups = (family_lines().get(name, ()) for name in (*family_lines(), ""))
    return tuple(tuple(line[:4096] for line in g if line.strip()) for g in groups if g)


_DIGIT_RUN = re.compile(rb"[0-9]+")


def _mutate(rng: random.Random, parts: list[bytes]) -> None:
    """One change to a real line cut into fragments: a number made odd, an odd piece
    inserted, a fragment repeated, dropped, or taken from another line."""
    at = rng.randrange(len(parts))
    choice = rng.randrange(5)
    if choice == 0:
        with_digits = [i for i, part in enumerate(parts) if _DIGIT_RUN.search(part)]
        if with_digits:
            i = rng.choice(with_digits)
            runs = list(_DIGIT_RUN.finditer(parts[i]))
            run = rng.choice(runs)
            parts[i] = parts[i][: run.start()] + _odd_number(rng) + parts[i][run.end() :]
            return
    if choice <= 1:
        parts.insert(at, _odd_piece(rng))
    elif choice == 2:
        parts[at] = parts[at] * rng.choice((2, 3, 50))
    elif choice == 3 and len(parts) > 1:
        del parts[at]
    else:
        parts.insert(at, rng.choice(fragments()))


def random_line(rng: random.Random, max_pieces: int = 12) -> bytes:
    """A hostile line that is never ``\n``: mostly a real line of a random family, cut
    into fragments and changed a few times (``_mutate``); sometimes a soup of fragments of
    real lines, odd numbers and hostile bytes."""
    if rng.random() < 0.2:
        soup = [
            rng.choice(fragments()) if rng.random() < 0.6 else _odd_piece(rng)
            for _ in range(rng.randint(1, max_pieces))
        ]
        return b"".join(soup).replace(b"\n", b" ")
    base = rng.choice(rng.choice(lines_by_family()))
    parts = [part for part in _FRAGMENT_CUT.split(base) if part] or [base]
    for _ in range(rng.randint(1, 4)):
        _mutate(rng, parts)
    return b"".join(parts).replace(b"\n", b" ")


def long_random_line(rng: random.Random, size: int) -> bytes:
    """A random line with one of its pieces repeated until it is about ``size`` bytes."""
    head, tail = random_line(rng, 4), random_line(rng, 4)
    piece = rng.choice(fragments()) if rng.random() < 0.5 else _odd_piece(rng)
    piece = piece.replace(b"\n", b" ") or b" "
    return head + piece * max(1, size // len(piece)) + tail
