"""A format family inside a wrapper (formats/_wrappers.py): the family's own parser, fed
the lines the server wrote.

``WrappedFamily`` is what detection gives for a wrapped file: it keeps the inner family's
name (``files[].format`` stays ``vllm``) and names the wrapper (``files[].wrapper``). Its
parser unwraps a physical line and parses the inner line *as the bare line*: for the
server-log families the wrapper's timestamp goes in front as RFC3339 text, exactly as
``docker logs --timestamps`` would have printed it, so the family's existing wrapper code
(``clean.strip_wrappers``, vLLM's year inference from a wrapper stamp) decides what it
means, and a line with its own stamp keeps reading it. The Extractor unwraps lines itself
on the batch and live paths (``unwrapped``), joining the entries Docker split; ``parse``
takes a physical line, or the span of physical lines one joined record occupies (as the
detail view re-reads it).
"""

from __future__ import annotations

from collections.abc import Callable

from sparseety_tui.events import Event, ParsedLine
from sparseety_tui.formats._base import BlockDecoder, FormatFamily, LineParser
from sparseety_tui.formats._wrappers import Unwrapped, WrapperKind

#: Families whose parsers read a leading RFC3339 wrapper stamp (``clean.strip_wrappers``);
#: the others (trace, kvline) get the inner line alone.
STAMPED_FAMILIES = frozenset({"vllm", "sglang", "unknown"})  # unknown: formats._generic


def reform(piece: Unwrapped, stamped: bool) -> bytes:
    """The line the family parses: the inner line, behind the wrapper's stamp when the
    family reads one and the line has text (a blank line stays blank, as bare)."""
    if stamped and piece.stamp is not None and piece.inner.strip():
        return piece.stamp + b" " + piece.inner
    return piece.inner


class WrappedParser:
    """A family's parser behind a wrapper (``formats._base.LineParser``). Its state
    (``pending``, ``last_reason``, ``ignored``) is the inner parser's."""

    def __init__(self, inner: LineParser, kind: WrapperKind, stamped: bool) -> None:
        self.inner = inner
        self.kind = kind
        self.stamped = stamped

    @property
    def pending(self) -> list[Event]:
        return self.inner.pending

    @pending.setter
    def pending(self, value: list[Event]) -> None:
        self.inner.pending = value

    @property
    def last_reason(self) -> str:
        return self.inner.last_reason

    @last_reason.setter
    def last_reason(self, value: str) -> None:
        self.inner.last_reason = value

    @property
    def ignored(self) -> dict[str, int]:
        return self.inner.ignored

    @ignored.setter
    def ignored(self, value: dict[str, int]) -> None:
        self.inner.ignored = value

    def unwrapped(self, data: bytes) -> tuple[bytes, bool, Unwrapped | None]:
        """The line the inner parser reads for one physical line, whether it is complete
        (False: the wrapper split it, the next physical line goes on), and the piece taken
        apart (for ``joined``). A line not in the wrapper's shape is read as it is."""
        piece = self.kind.unwrap(data)
        if piece is None:
            return data, True, None
        return reform(piece, self.stamped), piece.complete, piece

    def joined(self, pieces: list[tuple[bytes, Unwrapped | None]]) -> bytes:
        """The line the inner parser reads for the physical lines of one split record,
        each with its piece as ``unwrapped`` gave it (None: a line read as it is)."""
        first = pieces[0][1]
        inner = b"".join(data if piece is None else piece.inner for data, piece in pieces)
        return reform(Unwrapped(inner, first.stamp if first else None), self.stamped)

    def parse(self, line: bytes) -> ParsedLine:
        if b"\n" in line:  # a split record's span, re-read whole
            pieces = [(data, self.kind.unwrap(data)) for data in line.split(b"\n")]
            return self.inner.parse(self.joined(pieces))
        return self.inner.parse(self.unwrapped(line)[0])

    def finish(self) -> None:
        self.inner.finish()


class WrappedFamily:
    """A family detected inside a wrapper (``formats._base.FormatFamily``)."""

    scan_requests = None  # the fast paths read bare records

    scan_server = None
    decode_simple_block: BlockDecoder | None = None
    #: Read by one process: a byte range could start inside a record Docker split, and
    #: ``ingest.parallel`` checks server-log ranges against the bare family's prefixes.
    range_start: Callable[[bytes], bool] | None = None

    def __init__(self, family: FormatFamily, kind: WrapperKind) -> None:
        self.family = family
        self.wrapper = kind
        self.name = family.name
        self.description = f"{family.description}, inside {kind.description}"

    def sniff(self, lines: list[bytes]) -> float:
        unwrapped = [p.inner for p in map(self.wrapper.unwrap, lines) if p is not None]
        return self.family.sniff(unwrapped)

    def new_parser(self, *, reference_time: float | None = None) -> WrappedParser:
        return WrappedParser(
            self.family.new_parser(reference_time=reference_time),
            self.wrapper,
            self.family.name in STAMPED_FAMILIES,
        )


def wrapper_name(family: FormatFamily | None) -> str | None:
    """The wrapper of a detected family (``files[].wrapper``), None for a bare file."""
    return family.wrapper.name if isinstance(family, WrappedFamily) else None
