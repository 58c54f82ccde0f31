"""The interface every format family implements, and small helpers they share.

A *format family* (a module or package: trace, kvline, vllm, sglang, otlp) knows how to say how
likely a file is in its format (``sniff``) and how to make a per-file ``LineParser``.
Parsers are stateful per file (tracebacks span lines, vLLM timestamps need a year carried
forward), so the Extractor makes one per followed file.

A parser that can also read one byte range of a file cut at record starts, and then say
what it carried across the range's edges, is ``RangeAware``: that is all a split reader
(``sparseety_tui.ingest.parallel``) may ask of a parser.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Literal, Protocol, runtime_checkable

from sparseety_tui.batch import Batch
from sparseety_tui.events import Event, ParsedLine

#: The pure-Python block path: a block of lines that are all simple request records as one
#: ``Batch`` (offsets not set), or None when any line needs the per-line path.
BlockDecoder = Callable[[list[bytes]], Batch | None]

#: ``scanner(data, start, max_line_bytes)``: the run of simple request records of ``data``
#: (whole lines) from ``start``, as a ``Batch``; it stops at the first line it does not
#: fully understand (``Batch.end``). Never raises on input.
RecordScanner = Callable[[bytes, int, int], Batch]

#: ``scanner(parser, data, start, max_line_bytes)``: reads the lines of ``data`` (whole
#: lines) from ``start`` that it is sure of, exactly as ``parser.parse`` would, updating the
#: parser's state as those lines would have, and gives them as a ``Batch``; stops at the
#: first line it is unsure about. ``Batch.next_end`` is the end (line ending included) of
#: the line at ``end``, which it did not read, or of more lines from there it would not
#: read either (a traceback: the parser reads them in one go); ``end`` when the data ends
#: there. Never raises on input.
ServerScanner = Callable[["LineParser", bytes, int, int], Batch]


class LineParser(Protocol):
    """Turns one physical line into its kind and, maybe, an event.

    ``line`` is the raw bytes of one physical line without its ``\\n`` / ``\\r\\n`` ending;
    it may be invalid UTF-8, huge or garbage: a parser never raises on input, it returns
    ``(LineKind.UNPARSED, None)`` and sets ``last_reason``.
    """

    #: Events completed as a side effect of a later line (a traceback that ended when the
    #: next ordinary line arrived). The Extractor drains this list after each ``parse``.
    pending: list[Event]
    #: Why the last line came back ``unparsed`` (short, human readable).
    last_reason: str
    #: Values the parser left unknown though a line had them (a timestamp out of range, a
    #: number no float holds): ``"field: reason"`` -> how many. The line itself was read.
    ignored: dict[str, int]

    def parse(self, line: bytes) -> ParsedLine: ...

    def finish(self) -> None:
        """End of input (or of a rotated file): move anything still open to ``pending``."""
        ...


class FormatFamily(Protocol):
    """A format family; the Extractor finds its optional fast paths here too (a family
    without one says None)."""

    name: str  # as shown in `files[].format`
    description: str

    def sniff(self, lines: list[bytes]) -> float:
        """Confidence 0..1 that a file whose first lines are ``lines`` is in this format."""
        ...

    def new_parser(self, *, reference_time: float | None = None) -> LineParser:
        """A parser for one file. ``reference_time`` is the file's mtime: a format whose
        timestamps lack the year (vLLM) dates the file's lines against it."""
        ...

    @property
    def scan_requests(self) -> RecordScanner | None:
        """The batch commands' chunk scanner of request records (a C scanner, or Python):
        it gives runs of simple request records in a chunk of whole lines as batches of
        rows, and stops at each line it does not fully understand (that line takes the
        per-line path). Its parser carries no state across records: a refused batch's
        lines are read again by ``LineParser.parse``.

        Returns: RecordScanner | None. None: this family has no such fast path, or the
            scanner was not built; chunks are split into lines.
        """
        ...

    @property
    def scan_server(self) -> ServerScanner | None:
        """The scanner of a server log's common lines (stats, batch, request and access
        lines; C or Python), used on chunks of whole lines (batch commands, and the live
        path). It moves the parser's state on as parsing the lines would.

        Returns: ServerScanner | None. None: this family has none, or it was not built
            (``SPARSEETY_TUI_PURE_PYTHON=1``); every line takes ``LineParser.parse``.
        """
        ...

    @property
    def range_start(self) -> Callable[[bytes], bool] | None:
        """For a reader that splits a big file into byte ranges parsed by separate
        processes (``ingest.parallel``): whether a range may start at this line (its bytes,
        without the line ending), because the family's parser state there is what
        ``RangeAware`` notes and checks.

        Returns: Callable[[bytes], bool] | None. None: the family's parser carries no
            state from one line to the next, so a range may start at any line.
        """
        ...

    @property
    def decode_simple_block(self) -> BlockDecoder | None:
        """The pure-Python block path: columns of a block of same-shaped simple request
        records, decoded at once instead of one ``parse`` call a line.

        Returns: BlockDecoder | None, called with the block's lines (see
            ``BlockDecoder``); its batch is taken only when the store allows. None: this family has no such fast path; every line goes
            through ``LineParser.parse``.
        """
        ...


# -- reading a file in ranges -------------------------------------------------------------

#: What vLLM's year inference carries from one line to the next: (year, month of the last
#: stamp). The year is None until a stamp (or a wrapper's dated timestamp) set it.
YearState = tuple[int | None, int]

#: The call that first set the year, as ``RangeAware.replay_year_probe`` repeats it: a vLLM
#: stamp ``b"MM-DD HH:MM:SS"`` with the wrapper timestamp of its line (None without one),
#: or a wrapper timestamp alone (a line whose only timestamp is a wrapper's).
YearProbe = tuple[Literal["stamp"], bytes, bytes | None] | tuple[Literal["wrap"], bytes]


@dataclass
class BoundaryNotes:
    """What a parser that started mid-file (one range of a split read, see
    ``sparseety_tui.ingest.parallel``) assumed about the state a parser reading from the top
    would have carried in, so the merge can check it or correct for it."""

    #: The first call after which the year was known and (year, last month) right after it.
    year_probe: YearProbe | None = None
    year_after_probe: YearState = (None, 0)
    #: Received ids as first remembered, oldest first (at most the window's size).
    first_inserted: list[str] = field(default_factory=list)
    #: Engine-side ids left as they were, with the base id and how many ids had been
    #: remembered then: a parser with the previous range's ids might have mapped them.
    unmapped: list[tuple[str, str, int]] = field(default_factory=list)


class TracebackEdges(Protocol):
    """What a parser's traceback grouping (``formats._tracebacks.TracebackTracker``) says
    about the edges of the lines it was fed: whether a tracker started fresh mid-file said
    what one started at the top of the file would have said."""

    @property
    def active(self) -> bool:
        """True while a traceback is open: a line after the last one fed may still be part
        of it (so a range must not end here)."""
        ...

    @property
    def stale_risk(self) -> bool:
        """True if a traceback stayed idle longer than its stale limit: whether it was
        closed then depends on absolute line counts, which differ between a range's
        tracker and one reading from the top."""
        ...

    @property
    def context_first_pops(self) -> set[str]:
        """Keys (process prefixes, ``""`` for none) whose remembered ERROR-line context a
        traceback took before this tracker had set one: a tracker reading from the top may
        have held one from before the range."""
        ...

    @property
    def context_touched(self) -> set[str]:
        """Keys whose ERROR-line context this tracker set or took."""
        ...

    @property
    def context_cleared(self) -> bool:
        """True if the remembered ERROR-line contexts were ever all dropped (too many keys):
        then what survives depends on what came before."""
        ...

    def context_items(self) -> dict[str, str]:
        """The ERROR-line contexts remembered now, by key.

        Returns: dict[str, str], a copy: key -> the ERROR line's text that a traceback of
            that key would take as its message.
        """
        ...


@runtime_checkable
class RangeAware(LineParser, Protocol):
    """A ``LineParser`` that can read one byte range of a file and say what it assumed and
    carried across the range's edges.

    A split reader (``sparseety_tui.ingest.parallel``) cuts a big server log at record starts
    and gives each range a fresh parser in its own process. A parser carries state from
    line to line (open tracebacks, vLLM's year, vLLM's recent request ids); to prove that
    every range was parsed as one parser reading from the top would have parsed it, the
    split reader asks each range's parser these questions, and nothing else. A family
    whose parser carries no such state across a record start answers None.

    Use: ``begin_range`` before the range's first line; ``parse`` and ``finish`` as usual;
    then ``tracebacks``, ``year_state`` and ``recent_ids`` at the range's end. A separate
    parser of the same family checks a range's start with ``replay_year_probe``.
    """

    @property
    def tracebacks(self) -> TracebackEdges:
        """The traceback grouping of this parser, for its edge notes.

        Returns: TracebackEdges, the same live object for the parser's lifetime.
        """
        ...

    def begin_range(self, year: YearState | None) -> BoundaryNotes | None:
        """Start reading a range that begins mid-file, at a record start.

        Args:
            year (YearState | None): the year state to start from, a split reader's guess
                of what one parser reading from the top would carry here (checked later
                with ``replay_year_probe``). None: infer the year as at the top of a file
                (the first range, or no guess). A family that infers no year ignores it.

        Returns: BoundaryNotes | None, the notes this parser fills in while it parses the
            range (the same object, live; read it after ``finish``). None when the family
            carries nothing across a record start but its tracebacks (SGLang: every dated
            prefix sets the date again).
        """
        ...

    def year_state(self) -> YearState | None:
        """The year state carried to the next line now.

        Returns: YearState | None, (year, month of the last stamp), the year None while no
            stamp has set it. None when the family infers no year (its timestamps carry
            one).
        """
        ...

    def replay_year_probe(self, probe: YearProbe, state: YearState) -> YearState | None:
        """Repeat the call that first set the year in a range (``BoundaryNotes.year_probe``
        of a parser of the same family) on this parser, started from ``state``. For checking
        a split read; it changes this parser's year state.

        Args:
            probe (YearProbe): the recorded call.
            state (YearState): the year state one reader would have carried to that line
                (what the ranges before it ended with).

        Returns: YearState | None, the year state right after the call: equal to the range's
            ``BoundaryNotes.year_after_probe`` when the range inferred the year as one reader
            would have. None when the family infers no year.
        """
        ...

    def recent_ids(self) -> tuple[list[str], int] | None:
        """The window of received request ids that engine-side ids (``<id>-<8hex>``) are
        mapped back against.

        Returns: tuple[list[str], int] | None, (the ids in the window now, oldest first;
            how many ids were ever remembered, evicted ones included). None when the family
            maps no ids.
        """
        ...


def note_ignored(ignored: dict[str, int], field: str, reason: str) -> None:
    """Count one value of ``field`` that a parser left unknown (``LineParser.ignored``)."""
    key = f"{field}: {reason}"
    ignored[key] = ignored.get(key, 0) + 1


def failure_reason(what: str, exc: BaseException) -> str:
    """The reason shown for a line that code failed on: ``what`` failed, with which
    exception (kept short: an exception's text may quote the whole line)."""
    return f"{what}: {type(exc).__name__}: {exc}"[:200]


def share_of_lines(lines: list[bytes], matches: Callable[[bytes], bool]) -> float:
    """The share of the non-blank ``lines`` that ``matches`` (0 when all are blank): what
    a family whose every line looks alike says from ``sniff``, scaled by its confidence."""
    nonblank = hits = 0
    for line in lines:
        if not line.strip():
            continue
        nonblank += 1
        if matches(line):
            hits += 1
    return hits / nonblank if nonblank else 0.0
