"""Lines understood in any file, and the fallback family for files of no known format.

Whatever a file's format, three kinds of line mean the same thing in it: a Python
traceback (``formats._tracebacks``, grouped into one error), an error
line (``formats._errorlines``: ERROR/CRITICAL level, glog ``E``/``F``) and an HTTP access
line (``formats._access``: uvicorn, common/combined log format). ``AnyLines`` reads them;
every family asks it about the lines its own format does not explain, so their kinds
(``traceback``, ``error``, ``http.access``) stay comparable across families.

A file that no family claims (``registry.detect`` gives None: a CI tail of tracebacks, a
wrapper script's output) is read by ``FALLBACK``, whose format is still called
``unknown``: it reads those three kinds of line, and every other line is ``unparsed``
with the reason that no server format was recognised. It is never detected (its
``sniff`` is 0) and cannot be forced with ``--format``, so no split reader ever reads it
in ranges. The Extractor hands a file over to a real family if one becomes confident
while the file's first lines are still being sniffed (a live file that starts with a
traceback).
"""

from __future__ import annotations

from sparseety_tui.events import Event, LineKind, ParsedLine
from sparseety_tui.formats._access import access_line
from sparseety_tui.formats._base import failure_reason
from sparseety_tui.formats._cilines import is_pytest_line
from sparseety_tui.formats._clean import UVICORN_RE, basic_clean, strip_wrappers, wrapper_time
from sparseety_tui.formats._errorlines import error_message
from sparseety_tui.formats._servicelines import unit_line
from sparseety_tui.formats._tracebacks import HasPending, TracebackTracker
from sparseety_tui.formats._wrappers import unparsed_reason

TRACEBACK: ParsedLine = (LineKind.TRACEBACK, None)
ACCESS: ParsedLine = (LineKind.ACCESS, None)
ERROR: ParsedLine = (LineKind.ERROR, None)
BLANK: ParsedLine = (LineKind.BLANK, None)
OTHER: ParsedLine = (LineKind.NOISE, None)
#: The header line uvicorn logs before an ASGI application's traceback.
EXC_HEADER = b"Exception in ASGI application"
#: Why a line of a file of no known format is unparsed.
NOT_RECOGNISED = (
    "format not recognised (no server format matched this file); "
    "not a traceback, error or access line"
)


class AnyLines:
    """Reads tracebacks, error lines and access lines for a parser (``owner``, whose
    ``pending`` list gets the errors)."""

    __slots__ = ("tb",)

    def __init__(self, owner: HasPending) -> None:
        self.tb = TracebackTracker(owner)

    def parse(
        self, line: bytes, orig: bytes | None = None, ts: float | None = None, key: str = ""
    ) -> ParsedLine | None:
        """The kind of ``line`` (wrappers removed; ``orig`` as read, when different) if it
        is a traceback's line, an error line or an access line; None otherwise."""
        tb = self.tb
        if (tb.open_by_key or b"Traceback" in line or b'File "' in line) and tb.feed(
            key, line.decode("utf-8", "replace"), None, ts
        ):
            return TRACEBACK
        access = access_line(line, ts)
        if access is not None:
            return access
        if EXC_HEADER in line and UVICORN_RE.match(line):
            tb.begin_header(key, EXC_HEADER.decode(), None, ts)
            return TRACEBACK
        return self.error_line(line, orig, ts, key)

    def error_line(
        self, line: bytes, orig: bytes | None = None, ts: float | None = None, key: str = ""
    ) -> ParsedLine | None:
        """``error`` if ``line`` (or ``orig``, as read) is an error line: its error is held
        for one line (``TracebackTracker.note_error``); None otherwise."""
        message = error_message(line)
        if message is None and orig is not None and orig is not line:
            message = error_message(orig)  # the level came right after a stripped stamp
        if message is None:
            return None
        self.tb.note_error(key, message, ts)
        return ERROR

    def known_line(self, line: bytes, ts: float | None = None) -> ParsedLine | None:
        """A line of the programs around a server: ``error`` for systemd's line saying the
        server's unit died, ``other`` for its other lines about the unit
        (``formats._servicelines``) and for pytest's lines (``formats._cilines``); None for
        any other line."""
        unit = unit_line(line)
        if unit is None:
            return OTHER if is_pytest_line(line) else None
        failed, text = unit
        if not failed:
            return OTHER
        self.tb.note_error("", text, ts)
        return ERROR


class AnyLinesParser:
    """The state every line parser keeps (``formats._base.LineParser``), and the reader of
    the lines any file may hold: the base of every family's parser."""

    def __init__(self) -> None:
        self.pending: list[Event] = []
        self.last_reason = ""
        self.ignored: dict[str, int] = {}
        self._any = AnyLines(self)
        #: Error lines held for one line (formats._tracebacks): tested on the hot path.
        self._held = self._any.tb.held

    def parse(self, line: bytes) -> ParsedLine:
        """The line's kind and event (``_parse``); never raises: a failure is the line's
        only (unparsed, with the reason)."""
        try:
            if self._held:  # the line after an error line (formats._tracebacks)
                return self._any.tb.settle_held(self._parse, line)
            return self._parse(line)
        except Exception as exc:  # never raise on input; say why instead
            self.last_reason = failure_reason("parser error", exc)
            return LineKind.UNPARSED, None

    def _parse(self, line: bytes) -> ParsedLine:
        raise NotImplementedError

    @property
    def tracebacks(self) -> TracebackTracker:
        """The parser's traceback grouping (a split read asks it about a range's edges)."""
        return self._any.tb

    def finish(self) -> None:
        """End of the file (or a quiet spell of a live one): report what is still open."""
        self._any.tb.close_all()


class GenericParser(AnyLinesParser):
    """The parser of a file of no known format (see the module docstring)."""

    def __init__(self) -> None:
        super().__init__()
        #: No text line read yet: a file (a CI tail, a pasted excerpt) that begins inside a
        #: traceback starts with the source line of a frame or its ``^^^`` marker, before
        #: any ``File`` line; there, and only there, such a line begins a traceback.
        self._at_start = True

    def _parse(self, line: bytes) -> ParsedLine:
        if b"\r" in line or b"\x1b" in line:
            line = basic_clean(line)
        if not line or line.isspace():
            self._any.tb.blank()
            return BLANK
        rest, wrap_ts = strip_wrappers(line)
        ts = wrapper_time(wrap_ts)[1] if wrap_ts is not None else None
        if self._at_start:
            self._at_start = False
            if rest[:1] in (b" ", b"\t") and not self._any.tb.open_by_key:
                # real: tests/data/real_logs/vllm_0.9dev_ci_buildkite_* (an error only if a
                # frame or an exception line follows: formats._tracebacks)
                self._any.tb.begin_tentative("", ts)
                return TRACEBACK
        parsed = self._any.parse(rest, line, ts) or self._any.known_line(rest, ts)
        if parsed is not None:
            return parsed
        self.last_reason = unparsed_reason(rest, NOT_RECOGNISED)
        return LineKind.UNPARSED, None


class GenericFamily:
    name = "unknown"  # as before: no format was recognised (files[].format)
    description = (
        "no server format recognised: only tracebacks, error lines and HTTP access lines are read"
    )
    scan_requests = None  # no bulk fast paths (formats._base.FormatFamily)
    scan_server = None
    decode_simple_block = None
    #: Never read in ranges: detection never gives it and ``--format`` cannot name it.
    range_start = None

    def sniff(self, lines: list[bytes]) -> float:
        return 0.0  # the fallback, never a detected format

    def new_parser(self, *, reference_time: float | None = None) -> GenericParser:
        return GenericParser()


FALLBACK = GenericFamily()
