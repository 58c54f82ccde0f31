"""A request's lines re-read from their files and re-parsed: its fields, its per-token
events, and the lines themselves as text for display (bounded, whatever their length)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from sparseety_tui.core.store import ExtractorView
from sparseety_tui.formats import ServerLogParser, failure_reason
from sparseety_tui.sources import LineGoneError, read_line_at

#: A source line longer than ``RAW_HEAD_BYTES + RAW_TAIL_BYTES`` is shown as its first and
#: last bytes around an "N bytes elided" marker: a line of many megabytes must not become as
#: much text for the UI thread to lay out.
RAW_HEAD_BYTES = 8 * 1024
RAW_TAIL_BYTES = 2 * 1024
#: Source lines shown per request at most (bytes); further lines are counted, not shown.
RAW_BUDGET_BYTES = 256 * 1024


@dataclass(frozen=True, slots=True)
class SourceText:
    """One source line for display: whole, or its head and tail around an elided middle."""

    path: str
    offset: int
    head: str
    tail: str = ""
    elided: int = 0  # bytes between head and tail that are not shown

    @property
    def whole(self) -> bool:
        return self.elided == 0

    def shown_bytes(self) -> int:
        return len(self.head) + len(self.tail)


def _continuation(byte: int) -> bool:
    return 0x80 <= byte < 0xC0


def source_text(path: str, offset: int, length: int, data: bytes) -> SourceText:
    """The display form of a line whose first bytes are ``data`` and whose true length in
    the file is ``length`` (ending included). The tail of a line longer than ``data`` (cut
    at the line cap) is read again from the file; if it is gone, only the head is shown."""
    if length <= RAW_HEAD_BYTES + RAW_TAIL_BYTES:
        return SourceText(path, offset, data.decode("utf-8", errors="replace"))
    head_end = RAW_HEAD_BYTES
    while head_end > RAW_HEAD_BYTES - 3 and _continuation(data[head_end]):
        head_end -= 1  # never split a UTF-8 sequence
    ending = length - len(data)
    if ending <= 2:  # ``data`` is the whole line but its ending: the tail is in it
        tail = data[len(data) - (RAW_TAIL_BYTES - ending) :]
    else:
        try:
            # Read again: ``data`` stops at the line cap. The line's ending is stripped.
            tail = read_line_at(path, offset + length - RAW_TAIL_BYTES, RAW_TAIL_BYTES)
        except (OSError, ValueError):
            tail = b""
    body_end = length - (RAW_TAIL_BYTES - len(tail)) if tail else length
    skip = 0
    while skip < min(3, len(tail)) and _continuation(tail[skip]):
        skip += 1
    return SourceText(
        path,
        offset,
        data[:head_end].decode("utf-8", errors="replace"),
        tail[skip:].decode("utf-8", errors="replace"),
        elided=body_end - len(tail) + skip - head_end,
    )


#: Per-token lists inside ``sparse`` that accumulate over a request's lines, as the
#: Extractor's counts do (request-level fields: the last value wins).
_ACCUMULATING = ("kv", "dropped")


def _merge(fields: dict[str, Any], payload: dict[str, Any]) -> None:
    for key, value in payload.items():
        if key == "sparse" and isinstance(value, dict):
            sparse = fields.setdefault("sparse", {})
            if not isinstance(sparse, dict):
                sparse = fields["sparse"] = {}
            routing = value.get("routing")
            if isinstance(routing, list):  # each line's rows, at the positions it gives
                start = value.get("routing_start", 0)
                segments = sparse.setdefault("routing_segments", [])
                segments.append(
                    (
                        start if isinstance(start, int) else 0,
                        routing,
                        value.get("routing_weights"),
                        value.get("moe_layers"),
                    )
                )
            for name, item in value.items():
                if name in _ACCUMULATING and isinstance(item, list):
                    sparse.setdefault(name, []).extend(item)
                elif name not in ("routing", "routing_weights", "routing_start"):
                    sparse[name] = item
        else:
            fields[key] = value


@dataclass
class Payloads:
    """What re-reading a request's lines gave."""

    fields: dict[str, Any] = field(default_factory=dict)
    token_events: list[dict[str, Any]] = field(default_factory=list)
    raw_lines: list[SourceText] = field(default_factory=list)
    raw_omitted: int = 0
    problems: list[str] = field(default_factory=list)


def read_payloads(extractor: ExtractorView, row: int, raw: bool = True) -> Payloads:
    """The request's lines re-read and re-parsed; ``raw``: also the lines as text for the
    detail view (``extract --text`` needs the fields only)."""
    out = Payloads()
    shown = 0
    for location in extractor.store.lines_of(row):
        state = extractor.files[location.file]
        if state.superseded is not None:
            out.problems.append(
                f"{state.path} @ {location.offset}: not re-read, the file has "
                f"changed since ({state.superseded})"
            )
            continue
        try:
            data = read_line_at(state.path, location.offset, location.length)
        except (OSError, LineGoneError) as exc:
            out.problems.append(f"{state.path} @ {location.offset}: {exc}")
            continue
        if raw and shown < RAW_BUDGET_BYTES:
            text = source_text(state.path, location.offset, location.length, data)
            out.raw_lines.append(text)
            shown += text.shown_bytes()
        elif raw:
            out.raw_omitted += 1
        if state.family is None:
            continue
        parser = state.family.new_parser(reference_time=state.reference_time)
        _keep_token_ids(parser)
        try:
            _kind, event = parser.parse(data)
        except Exception as exc:  # as when ingesting: the line is lost, the rest is shown
            out.problems.append(
                f"{state.path} @ {location.offset}: {failure_reason('parser error', exc)}"
            )
            continue
        if event is None:
            out.problems.append(f"{state.path} @ {location.offset}: line no longer parses")
            continue
        event_type, payload = event
        if event_type == "request":
            _merge(out.fields, dict(payload))
        elif event_type == "token":
            out.token_events.append(dict(payload))
    return out


def _keep_token_ids(parser: Any) -> None:
    """Ask a server-log parser (bare or inside a wrapper) for the token ids it skips
    when ingesting (``ServerLogParser.keep_token_ids``: counting them is cheaper than
    building them). Without them the detail re-tokenised the logged text with whatever
    tokenizer was at hand, and its trace disagreed with the count in its own header."""
    target = getattr(parser, "inner", parser)
    if isinstance(target, ServerLogParser):
        target.keep_token_ids = True
