"""vLLM stats lines a terminal hard-wrapped or cut at a ``$`` marker (formats/_termwrap.py):
what a whole one looks like, and where a fused line's second record starts."""

from __future__ import annotations

from sparseety_tui.events import ParsedLine
from sparseety_tui.formats._termwrap import (
    MARKER,
    Shape,
    TermWrapLines,
    cut_last_number,
    fused_at,
    row_text,
)
from sparseety_tui.formats.vllm._kinds import STATS
from sparseety_tui.formats.vllm._patterns import _OWN_PREFIX_RE, V0_STATS_RE, V1_STATS_RE
from sparseety_tui.formats.vllm._stats import StatsLines

#: How far past a ``$`` a fused head is looked for (a process prefix and the logging head
#: are far shorter): a slice, since the process prefix's lookbehind would see the ``$``.
_HEAD_SPAN = 1024


#: Every vLLM stats line ends with a percentage: V1 ``hit rate: 0.0%``, V0 ``CPU KV cache
#: usage: 0.0%.`` (0.3: without the dot).
_WHOLE_ENDS = (b"%", b"%.")


def whole(text: bytes) -> bool:
    """A whole V0 or V1 stats record (from ``Engine NNN:`` / ``Avg prompt throughput``)."""
    return text.endswith(_WHOLE_ENDS) and (
        V1_STATS_RE.match(text) is not None or V0_STATS_RE.match(text) is not None
    )


#: How a stats record starts (after ``Engine NNN``, in V1).
_START = b"Avg prompt throughput: "
_ENGINE_START = b": " + _START
#: The shortest message taken for a stats record's start cut by its row's end.
_MIN_START = 8


def starts_record(msg: bytes) -> bool:
    """Whether ``msg`` is only the start of a stats record, cut by its row's end before
    ``Avg prompt throughput: `` was whole (``Engine 000: Avg pro`` on an 80-column
    terminal behind a process prefix)."""
    if len(msg) < _MIN_START or len(msg) >= len(_START) + 20:
        return False
    if msg[:7] == b"Engine ":
        rest = msg[7:].lstrip(b"0123456789")
        return len(rest) < len(msg) - 7 and _ENGINE_START.startswith(rest)
    return _START.startswith(msg)


def _starts_head(text: bytes, at: int) -> bool:
    return _OWN_PREFIX_RE.match(text[at : at + _HEAD_SPAN]) is not None


def _fused_at(text: bytes) -> int:
    return fused_at(text, _starts_head)


def _row_text(row: bytes) -> bytes | None:
    return row_text(row, _OWN_PREFIX_RE)


class WrappedStatsLines(TermWrapLines, StatsLines):
    """``StatsLines`` of ``VllmParser`` that rejoin a terminal's wraps (a mixin)."""

    def _stats_line(self, msg: bytes, ts: float | None) -> ParsedLine:
        """A stats line's message from its record start: the common whole line takes
        ``_stats`` at once; one that ends elsewhere or holds a ``$`` is a cut record."""
        if msg.endswith(_WHOLE_ENDS) and MARKER not in msg:
            return self._stats(msg, ts)

        def read(text: bytes) -> ParsedLine:
            return self._stats(text, ts)

        return self._record(msg, Shape(STATS, read, whole, cut_last_number, _row_text, _fused_at))
