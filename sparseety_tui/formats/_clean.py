"""Shared line cleaning for the server-log families (vLLM, SGLang).

A physical line reaches a parser as raw bytes. Before a family looks for its own prefix it
may need to remove, in this order (see /work/shared/reference/log-formats.md §0):

1. carriage returns: a trailing ``\\r`` (vLLM joins multi-line messages with ``\\r\\n``),
   and tqdm progress bars that rewrite the line with bare ``\\r``: the text after the last
   ``\\r`` is what a terminal shows, so that is what we keep (``last_cr_segment``);
2. ANSI colour codes (``\\x1b[1;36m(APIServer pid=1)\\x1b[0;0m``, coloured levels);
3. wrapper prefixes added by the environment, in any nesting (``strip_wrappers``):
   ``docker logs --timestamps`` RFC3339Nano (``2025-04-04T10:00:00.123456789Z ``),
   CI-style ``[2026-08-21T19:42:37Z] ``, docker-compose ``service-1  | ``, Kubernetes
   ``<pod> <container> ``, external collectors (``2024-06-25 12:27:28.331 ``,
   ``[2024-07-08 15:17:34] ``) and a markdown quote ``> ``.

Families try their own anchored prefix first (the common, fast path) and only call
``strip_wrappers`` when that fails, so clean logs pay nothing for wrapper support.

This module also knows a few third-party line shapes that show up in server output
(tqdm bars, Python ``logging`` default format, Python warnings, Gloo/NCCL/PyTorch lines):
``is_known_noise`` lets a parser call them ``other`` rather than ``unparsed``.
"""

from __future__ import annotations

import calendar
import re
import time

from sparseety_tui.formats.shapes import ACCESS, ANSI, NOISE, PY_WARNING, WRAPPER

#: Terminal escape codes (``shapes.prefixes.ANSI``), one ``sub`` for both rows.
ANSI_RE = ANSI.alternation("csi", "charset")
#: One wrapper in front of a line (``shapes.prefixes.WRAPPER``), one match for all rows.
WRAPPER_RE = WRAPPER.alternation(*(row.shape.name for row in WRAPPER))

#: Pieces of a wrapper timestamp, for year inference and RFC3339 instants.
_WRAP_TS_RE = re.compile(
    rb"(\d{4})-(\d{2})-(\d{2})[T ](\d{2}):(\d{2}):(\d{2})(?:[.,](\d{1,9}))?(Z|[+-]\d{2}:?\d{2})?"
)

#: Known third-party noise (``shapes.lines.NOISE``), one match for all its rows.
NOISE_RE = NOISE.alternation(*(row.shape.name for row in NOISE))
#: A Python warnings line; the indented source lines after it belong to it.
PY_WARNING_RE = PY_WARNING.bytes_regex("warning")
#: Uvicorn access line, as in vLLM (no timestamp) and SGLang (``[ts] `` prefix stripped
#: before); and uvicorn's other lines (``shapes.lines.ACCESS``).
ACCESS_RE = ACCESS.bytes_regex("uvicorn_access")
UVICORN_RE = ACCESS.bytes_regex("uvicorn")


def last_cr_segment(line: bytes) -> bytes:
    """The text a terminal would show: after the last bare ``\\r`` that has content."""
    if b"\r" not in line:
        return line
    for segment in reversed(line.split(b"\r")):
        if segment.strip():
            return segment
    return b""


def basic_clean(line: bytes) -> bytes:
    """Carriage returns and ANSI codes removed (wrappers stay)."""
    if b"\r" in line:
        line = last_cr_segment(line)
    if b"\x1b" in line:
        line = ANSI_RE.sub(b"", line)
    return line


def strip_wrappers(
    line: bytes, stop: re.Pattern[bytes] | None = None, max_layers: int = 4
) -> tuple[bytes, bytes | None]:
    """Remove up to ``max_layers`` wrapper prefixes; return the rest and the first wrapper
    timestamp seen (raw bytes, may be None). Stripping stops where ``stop`` (the family's
    own prefix) matches, so a server prefix that looks like a wrapper is kept."""
    wrap_ts: bytes | None = None
    for _ in range(max_layers):
        if stop is not None and stop.match(line):
            break
        m = WRAPPER_RE.match(line)
        if m is None or m.end() == 0:
            break
        if wrap_ts is None and m.group("ts") is not None:
            wrap_ts = m.group("ts")
        line = line[m.end() :]
    return line, wrap_ts


def wrapper_time(wrap_ts: bytes) -> tuple[int, float | None]:
    """(year, unix seconds if the stamp carries a zone else None) of a wrapper timestamp."""
    m = _WRAP_TS_RE.search(wrap_ts)
    if m is None:
        return 0, None
    year = int(m.group(1))
    tz = m.group(8)
    if tz is None:
        return year, None
    try:
        secs = calendar.timegm(
            (
                year,
                int(m.group(2)),
                int(m.group(3)),
                int(m.group(4)),
                int(m.group(5)),
                int(m.group(6)),
                0,
                0,
                0,
            )
        )
    except (ValueError, OverflowError):
        return year, None
    frac = m.group(7)
    value = float(secs) + (int(frac) / 10 ** len(frac) if frac else 0.0)
    if tz != b"Z":
        sign = -1 if tz[:1] == b"-" else 1
        digits = tz[1:].replace(b":", b"")
        value -= sign * (int(digits[:2]) * 3600 + int(digits[2:4]) * 60)
    return year, value


class LocalClock:
    """Converts naive local wall-clock stamps to unix seconds, cached per hour.

    Server logs print local time without a zone; the tool runs on the inference host
    (DESIGN.md), so the host's zone is the right one. ``time.mktime`` is ~1 µs, a dict hit
    ~50 ns: one mktime per (date, hour) keeps the hot path cheap and DST-correct per hour.
    """

    __slots__ = ("_cache",)

    def __init__(self) -> None:
        self._cache: dict[tuple[int, int, int, int], float] = {}

    def to_unix(self, year: int, month: int, day: int, hour: int, minute: int, sec: float) -> float:
        key = (year, month, day, hour)
        base = self._cache.get(key)
        if base is None:
            try:
                base = time.mktime((year, month, day, hour, 0, 0, 0, 0, -1))
            except (OverflowError, ValueError):
                base = float("nan")
            if len(self._cache) > 4096:
                self._cache.clear()
            self._cache[key] = base
        return base + minute * 60 + sec


def is_known_noise(line: bytes) -> bool:
    """A third-party line shape we recognise (tqdm, logging default format, warnings...)."""
    if b"it/s]" in line or b"s/it]" in line or b"%|" in line:
        return True  # tqdm progress bar
    return NOISE_RE.match(line) is not None
