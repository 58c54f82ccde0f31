"""Records a terminal hard-wrapped or cut short, read whole again.

Lines copied from a terminal come back mangled in two ways:

- **hard-wrapped**: a record longer than the terminal is cut at its width, and the rest
  goes on the next physical line with no log prefix (``...Running: 32 r`` /
  ``eqs, Swapped: 0 reqs, ... GPU KV cache usage: 17.6%, ...``), padded with spaces to the
  width when it was copied as a screen; on a narrow terminal over more than two lines;
- **cut and fused**: a record cut short by a ``$`` truncation marker, with the next
  record glued behind it on the same physical line (``Running: 32 $INFO 07-03 ...``).

A family hands a known record (a stats line) to ``TermWrapLines.record`` with ``Shape``
callbacks. The hot path pays nothing: a family calls it only for lines that already failed
its cheap whole-record test. A record that does not end where a whole one ends is *held*
for one line: its own line is counted as the record's kind, without an event. The next line
completes it when it has no log prefix of its own and the two joined parse as the record;
the continuation line is then counted as the record's kind too, and the joined record's
event is that line's. A full-width row that leaves the record still incomplete is taken as
a middle row (a narrow terminal), up to ``MAX_ROWS``. Any other next line leaves the held
record as it was, a *partial* record (the fields it has, the others unknown), and is
parsed on its own.

Event order: a held record is older than the line that settles it, so its event must be
merged first. The Extractor merges a line's own event, then the parser's ``pending``;
so a partial record becomes the settling line's own event (stats events carry no
location) and that line's event, when it is a stats event too, goes to the front of
``pending``. A request event keeps its place as the line's event (the detail view locates
it by its line) and the partial record follows it on ``pending``: stats and requests are
merged into different tables, so only the order among stats matters.

At the end of a file (``finish``) a held record is reported as partial. A live file that
goes quiet is flushed the same way (ingest.worker); the record stays held, marked
reported, so a continuation that arrives after all is still counted as the record's kind
without giving it a second event (as tracebacks do, formats/_tracebacks.py).

A split read (ingest.parallel) starts a range only at a line with the server's own prefix
after another such line: never at a continuation line, so a head and its continuation are
always read by the same parser, and a head that ends a range is completed by nothing in
one reading either (the next line has a prefix): it is the same partial record.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass

from sparseety_tui.events import Event, ParsedLine
from sparseety_tui.formats._clean import strip_wrappers

#: Rows one record may be wrapped over (a 250-byte stats line on a 40-column terminal is
#: 7), and the most bytes a held record may grow to (stats lines are well under 1 KB):
#: nothing arbitrary is held.
MAX_ROWS = 8
MAX_HELD_BYTES = 8192
#: The truncation marker a terminal pager / copy puts where it cut a line.
MARKER = b"$"
#: Markers of one line tried for a fused head.
MAX_MARKERS = 8


@dataclass(frozen=True)
class Shape:
    """What a family knows about one kind of record, for the line it met it on."""

    #: The line kind of the record (its head, its continuations, a fused line).
    kind: str
    #: The record's text (from its start) -> its parsed result; also given a partial
    #: record's text.
    read: Callable[[bytes], ParsedLine]
    #: Whether a text (trailing whitespace removed) ends where a whole record ends.
    whole: Callable[[bytes], bool]
    #: A partial record's text as ``read`` must get it: without a last field whose value
    #: may have been cut (identity when every value is whole up to its last byte).
    cut: Callable[[bytes], bytes]
    #: A row's text behind any log wrapper's prefix (a shipper may stamp every line it
    #: carries), or None when it starts with the family's own log prefix: no continuation.
    row_text: Callable[[bytes], bytes | None]
    #: Where ``MARKER`` fuses a cut record with the head of a new one in ``text`` (the
    #: marker's index), or -1.
    fused_at: Callable[[bytes], int]


@dataclass
class HeldRecord:
    """A record held for its continuation line."""

    text: bytes
    #: The length of the physical row its head filled: a middle row fills as many.
    width: int
    shape: Shape
    rows: int = 1
    #: Already reported as partial (a quiet live file was flushed).
    reported: bool = False


def row_text(row: bytes, own: re.Pattern[bytes]) -> bytes | None:
    """``row`` without the log wrappers' prefixes (formats/_clean.py), or None when it
    starts with ``own``, a family's log prefix (then it is no continuation)."""
    inner = strip_wrappers(row, own)[0]
    return None if own.match(inner) is not None else inner


def fused_at(text: bytes, starts_head: Callable[[bytes, int], bool]) -> int:
    """The index of the first ``MARKER`` in ``text`` after which a new record's head
    starts (``starts_head(text, i)``: a head at ``i``), or -1."""
    at = text.find(MARKER)
    for _ in range(MAX_MARKERS):  # bounded: a line of many ``$`` stays linear
        if at < 0:
            break
        if starts_head(text, at + 1):
            return at
        at = text.find(MARKER, at + 1)
    return -1


def plausible_prefix(text: bytes) -> bool:
    """Whether every ``, ``-separated field of ``text`` but the first (which may be the
    record's title, ``Decode batch``) and the last (which a wrap may have cut anywhere) is
    ``key: value``: a record cut at a row's end, not a line that merely has no prefix
    glued to one."""
    parts = text.split(b", ")
    for part in parts[1:-1]:
        key, sep, value = part.rpartition(b": ")
        if not sep or not key.strip() or not value.strip():
            return False
    return True


def cut_last_number(text: bytes) -> bytes:
    """``text`` without its last field when the text ends in a number (a value the cut
    may have shortened: ``Running: 3`` of ``Running: 32 reqs``). For records whose every
    value is followed by a unit or ``%``."""
    end = text[-1:]  # a space after the number shows it whole (``Running: 32 $``)
    if not end or not (end.isdigit() or end == b"."):
        return text
    at = text.rfind(b", ")
    return text[:at] if at >= 0 else b""


class TermWrapLines:
    """The hard-wrap joining of a server-log parser (a mixin before ``ServerLogParser``).

    The host tests ``_wrap_held`` on its hot path (``parse``) and calls ``_settle_wrap``
    when it holds a record; it hands known records that failed its whole-record test to
    ``_record``.
    """

    pending: list[Event]
    #: The record held for its continuation, if any.
    _wrap_held: HeldRecord | None = None
    #: The length of the line the general path is reading (a head's row width).
    _row_len = 0

    def parse(self, line: bytes) -> ParsedLine:
        raise NotImplementedError  # the host's

    def _parse(self, line: bytes) -> ParsedLine:
        raise NotImplementedError  # the host's general path

    def finish(self) -> None:
        held = self._wrap_held
        if held is not None and not held.reported:
            held.reported = True
            event = held.shape.read(held.shape.cut(held.text))[1]
            if event is not None:
                self.pending.append(event)
        super().finish()  # type: ignore[misc]  # ServerLogParser's, after this in the MRO

    def _record(self, text: bytes, shape: Shape) -> ParsedLine:
        """A known record that failed the family's cheap whole-record test: read whole,
        held for its continuation, or split at a ``$`` marker."""
        at = shape.fused_at(text)
        if at >= 0:
            return self._fused(text, at, shape)
        if shape.whole(text.rstrip()) or len(text) > MAX_HELD_BYTES:
            return shape.read(text)
        self._wrap_held = HeldRecord(text, self._row_len, shape)
        return shape.kind, None

    def _fused(self, text: bytes, at: int, shape: Shape) -> ParsedLine:
        """A record cut at ``text[at]`` (the marker) with a new line behind it: the cut one
        is this line's event, the new one (read as a line of its own, which may hold it in
        turn) follows it; the physical line counts once, as the cut record's kind."""
        kind, event = shape.read(shape.cut(text[:at]))
        mark = len(self.pending)
        _kind, later = self._parse(text[at + 1 :])
        if later is not None:
            self.pending.insert(mark, later)
        return kind, event

    def _settle_wrap(self, line: bytes) -> ParsedLine:
        """The line after a held record: its continuation, or a line of its own after
        which the held record is reported as partial."""
        held = self._wrap_held
        assert held is not None
        self._wrap_held = None
        shape = held.shape
        # A copied screen pads the last row with spaces; a shipper may have stamped it.
        stripped = line.rstrip()
        row = shape.row_text(stripped)
        if row and len(held.text) + len(row) <= MAX_HELD_BYTES:
            joined = held.text + row
            if shape.whole(joined):
                return (shape.kind, None) if held.reported else shape.read(joined)
            width = len(line) - (len(stripped) - len(row))
            if width == held.width and held.rows < MAX_ROWS and plausible_prefix(joined):
                held.text = joined  # a middle row of a narrow terminal
                held.rows += 1
                self._wrap_held = held
                return shape.kind, None
        mark = len(self.pending)
        kind, event = self.parse(line)
        if held.reported:
            return kind, event
        partial = shape.read(shape.cut(held.text))[1]
        if partial is None:
            return kind, event
        if event is None or event[0] == "stats":
            if event is not None:
                self.pending.insert(mark, event)
            return kind, partial
        self.pending.append(partial)
        return kind, event
