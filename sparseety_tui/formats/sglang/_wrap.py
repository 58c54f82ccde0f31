"""SGLang batch lines a terminal hard-wrapped or cut at a ``$`` marker (formats/_termwrap.py):
what a whole one looks like, and where a fused line's second record starts."""

from __future__ import annotations

import re

from sparseety_tui.events import ParsedLine
from sparseety_tui.formats._termwrap import (
    MARKER,
    Shape,
    TermWrapLines,
    cut_last_number,
    fused_at,
    row_text,
)
from sparseety_tui.formats.sglang._kinds import DECODE, PREFILL
from sparseety_tui.formats.sglang._patterns import BATCH_RE, GPU_PREFIX_RE, PREFIX_RE
from sparseety_tui.formats.sglang._stats import BatchLines

#: The fields a batch line ends with, in every version and role we have seen (with a
#: trailing ``, `` in some): decode and prefill lines end with the queue, newer prefill
#: lines with the input throughput, hybrid-model decode lines with ``#cache_miss``. (Not
#: ``cuda graph: False``, which ends one prefill variant: the most common decode line has
#: it in its middle, where a row often ends; that variant is held for one line instead.)
_LAST_KEYS = (b"#queue-req", b"input throughput (token/s)", b"#cache_miss")
_LAST_FIELDS = tuple(key + b": " for key in _LAST_KEYS)


def whole(text: bytes) -> bool:
    """A batch line that ends as the known ones do: a ``_LAST_KEYS`` field with its value.
    A line of another shape is held for one line, then read as it was; only a cut inside
    that last value cannot be told from a whole line."""
    if text[-1:] == b",":
        text = text[:-1]
    at = text.rfind(b", ")
    if at < 0:
        return False
    key, sep, value = text[at + 2 :].partition(b": ")
    return bool(sep) and key in _LAST_KEYS and bool(value.strip())


def _starts_head(text: bytes, at: int) -> bool:
    """A dated SGLang prefix at ``at`` (a time alone is too weak inside a line)."""
    if text[at : at + 1] != b"[":
        return False
    m = PREFIX_RE.match(text, at)
    return m is not None and m.group("y") is not None


def _fused_at(text: bytes) -> int:
    return fused_at(text, _starts_head)


def _row_text(row: bytes) -> bytes | None:
    text = row_text(row, PREFIX_RE)
    return None if text is None or GPU_PREFIX_RE.match(text) is not None else text


class WrappedBatchLines(TermWrapLines, BatchLines):
    """``BatchLines`` of ``SglangParser`` that rejoin a terminal's wraps (a mixin)."""

    def _batch_line(
        self, bm: re.Match[bytes], msg: bytes, ts: float | None, ranks: str = ""
    ) -> ParsedLine:
        """A batch line (``bm``: its ``Prefill batch`` / ``Decode batch`` start in
        ``msg``): read at once when whole, else a cut record."""
        # The common line in three C calls: its last field is a known one, with a value.
        at = msg.rfind(b", ")
        if (
            msg.startswith(_LAST_FIELDS, at + 2)
            and msg[-2:] != b": "
            and at >= 0
            and MARKER not in msg
        ) or (MARKER not in msg and whole(msg.rstrip())):
            return self._batch(bm, msg, ts, ranks)
        kind = PREFILL if bm.group("kind") == b"Prefill" else DECODE

        def read(text: bytes) -> ParsedLine:
            again = BATCH_RE.match(text)
            if again is None:  # its only field was cut off: the line's time and ranks
                return self._batch(bm, msg[: bm.end()], ts, ranks)
            return self._batch(again, text, ts, ranks)

        return self._record(
            msg[bm.start() :], Shape(kind, read, whole, cut_last_number, _row_text, _fused_at)
        )
