"""What the vLLM and SGLang parsers share: the line kinds of every server log, the state
each per-file parser keeps, and the checks for lines without the server's own prefix.

Each family keeps its own prefixes, fast paths and message parsing (the ``vllm`` and
``sglang`` packages); this is only the common ground, written once.
"""

from __future__ import annotations

from sparseety_tui.events import Event, LineKind, ParsedLine, RequestPayload
from sparseety_tui.formats import _prometheus as prometheus
from sparseety_tui.formats._base import failure_reason
from sparseety_tui.formats._clean import PY_WARNING_RE, LocalClock, is_known_noise

# The kinds every family shares, re-exported for the families.
from sparseety_tui.formats._generic import ACCESS as ACCESS
from sparseety_tui.formats._generic import BLANK as BLANK
from sparseety_tui.formats._generic import ERROR as ERROR
from sparseety_tui.formats._generic import EXC_HEADER as EXC_HEADER
from sparseety_tui.formats._generic import OTHER as OTHER
from sparseety_tui.formats._generic import TRACEBACK as TRACEBACK
from sparseety_tui.formats._generic import AnyLinesParser
from sparseety_tui.formats._routing import RoutingOptions

RESPONSE = "api.response"
PROMETHEUS = "prometheus"

PROM: ParsedLine = (PROMETHEUS, None)


def decode(b: bytes) -> str:
    return b.decode("utf-8", "replace")


def emit_requests(
    pending: list[Event], payloads: list[RequestPayload], kind: str, ts: float | None
) -> ParsedLine:
    """A line's result when it gave request updates: the first is returned, the others
    queued on ``pending``; each gets the line's time ``ts`` unless it has its own."""
    if not payloads:
        return kind, None
    for p in payloads:
        if ts is not None:
            p.setdefault("ts", ts)
    for extra in payloads[1:]:
        pending.append(("request", extra))
    return kind, ("request", payloads[0])


def quotes_traceback(line: bytes) -> bool:
    """Whether a line holds traceback text (a split read never starts a range there)."""
    return b"Traceback" in line or b'File "' in line


class ServerLogParser(AnyLinesParser):
    """The state and the checks both server-log parsers have."""

    def __init__(self, *, num_layers: int | None, top_k: int | None, keep_token_ids: bool) -> None:
        super().__init__()  # tracebacks, error and access lines, as in any file
        #: Also return the id lists (``prompt_token_ids`` ...), not only their counts: for
        #: the detail view's re-parse; off on the bulk path, where counting is ~50x cheaper.
        self.keep_token_ids = keep_token_ids
        self.routing = RoutingOptions(num_layers=num_layers, top_k=top_k)
        self._tb = self._any.tb
        self._tb_open = self._tb.open_by_key
        self._clock = LocalClock()
        #: Inside a Python warning: its indented source line that follows is part of it.
        self._in_warning = False

    def _failed(self, exc: Exception) -> ParsedLine:
        """A parser bug on some input: the line is unparsed, with the reason (never raise)."""
        self.last_reason = failure_reason("parser error", exc)
        return LineKind.UNPARSED, None

    def _continuation(self, rest: bytes, key: str) -> ParsedLine | None:
        """A line without the server's prefix that belongs to what came before: a
        traceback's next line, or the source line under a Python warning."""
        if (self._tb.active or b"Traceback" in rest or b'File "' in rest) and self._tb.feed(
            key, decode(rest), None, None
        ):
            self._in_warning = False
            return TRACEBACK
        if self._in_warning and rest[:1] in (b" ", b"\t"):
            return OTHER
        self._in_warning = False
        return None

    def _known_other(self, rest: bytes, orig: bytes, ts: float | None) -> ParsedLine | None:
        """Prometheus exposition, a Python warning, known noise (checked before the
        wrappers were stripped, too), or a line of the programs around the server (at time
        ``ts``: systemd's failure is an error); None if the line is none of them."""
        if prometheus.is_exposition_line(rest):
            return PROM
        if PY_WARNING_RE.match(rest):
            self._in_warning = True
            return OTHER
        if is_known_noise(rest) or (orig is not rest and is_known_noise(orig)):
            return OTHER
        return self._any.known_line(rest, ts)  # systemd on the server's unit, pytest in CI
