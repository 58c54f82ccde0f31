"""The interface every format family implements, and small helpers they share.

A *format family* (one module: trace, kvline, vllm, sglang) knows how to say how likely a
file is in its format (``sniff``) and how to make a per-file ``LineParser``. Parsers are
stateful per file (tracebacks span lines, vLLM timestamps need a year carried forward), so
the Extractor makes one per followed file.
"""

from __future__ import annotations

from typing import Protocol

from sparseety_tui.events import Event, ParsedLine


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

    def parse(self, line: bytes) -> ParsedLine: ...

    def finish(self) -> None:
        """End of input (or of a rotated file): move anything still open to ``pending``."""
        ...


class FormatFamily(Protocol):
    name: str  # as shown in `files[].format`
    description: str

    def sniff(self, lines: list[bytes]) -> float:
        """Confidence 0..1 that a file whose first lines are ``lines`` is in this format."""
        ...

    def new_parser(self, *, reference_time: float | None = None) -> LineParser:
        """A parser for one file. ``reference_time`` is the file's mtime: a format whose
        timestamps lack the year (vLLM) dates the file's lines against it."""
        ...


def decode_text(line: bytes) -> str:
    """Decode a log line for display or regex work; invalid UTF-8 never raises.

    Undecodable bytes become U+FFFD so the text stays literal and measurable.
    """
    return line.decode("utf-8", errors="replace")
