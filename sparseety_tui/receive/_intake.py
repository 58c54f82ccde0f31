"""What both receivers do with an export once its bytes are in: read its spans into
OTLP/JSON lines (the ``otlp`` format family), offer them to the spool, count, and say
what to answer. Also the answers' bodies, encoded by hand (two tiny messages: no
generated code needed for them).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

import orjson

from sparseety_tui.receive._counters import Counters
from sparseety_tui.receive._spool import Spool, joined

#: Where OTLP/HTTP trace exports are posted.
TRACES_PATH = "/v1/traces"

Encoding = Literal["proto", "json"]
Verdict = Literal["ok", "malformed", "queue_full", "spool_failed", "closed"]

#: google.rpc.Code values used in ``Status`` answers and as gRPC status codes.
INVALID_ARGUMENT = 3
NOT_FOUND = 5
RESOURCE_EXHAUSTED = 8
UNIMPLEMENTED = 12
UNAVAILABLE = 14
UNAUTHENTICATED = 16


@dataclass(frozen=True)
class Outcome:
    verdict: Verdict
    #: Spans written to the spool (ok) and spans the reader rejected (partial success).
    accepted: int = 0
    rejected: int = 0
    message: str = ""


class Intake:
    """Reads, spools and counts exports for any receiver."""

    def __init__(self, spool: Spool, counters: Counters) -> None:
        self.spool = spool
        self.counters = counters

    def take(self, body: bytes, encoding: Encoding) -> Outcome:
        """One export's body (decompressed), read and offered to the spool."""
        from sparseety_tui.formats.otlp import lines_from_json_body, lines_from_proto_body

        read = lines_from_proto_body if encoding == "proto" else lines_from_json_body
        try:
            lines, rejected = read(body)
        except ValueError as exc:
            self.counters.refuse("malformed")
            return Outcome("malformed", message=f"malformed ExportTraceServiceRequest: {exc}")
        if lines:
            refused = self.spool.offer(joined(lines), len(lines))
            if refused is not None:
                self.counters.refuse(refused)
                return Outcome(refused, message=_REFUSALS[refused])
        self.counters.accepted(len(lines), rejected)
        message = (
            f"{rejected} of {len(lines) + rejected} spans rejected as invalid" if rejected else ""
        )
        return Outcome("ok", len(lines), rejected, message)


_REFUSALS = {
    "queue_full": "the spool's queue is full; retry later",
    "spool_failed": "the spool cannot be written; retry later",
    "closed": "the receiver is shutting down",
}


def _varint(value: int) -> bytes:
    out = bytearray()
    while True:
        low = value & 0x7F
        value >>= 7
        if value:
            out.append(low | 0x80)
        else:
            out.append(low)
            return bytes(out)


def _field(number: int, payload: bytes) -> bytes:
    """A length-delimited protobuf field."""
    return _varint(number << 3 | 2) + _varint(len(payload)) + payload


def export_response(outcome: Outcome, encoding: Encoding) -> bytes:
    """An ``ExportTraceServiceResponse``: empty, or ``partial_success`` with the count of
    rejected spans and why."""
    if not outcome.rejected:
        return b"" if encoding == "proto" else b"{}"
    if encoding == "json":
        partial = {"rejectedSpans": str(outcome.rejected), "errorMessage": outcome.message}
        return orjson.dumps({"partialSuccess": partial})
    inner = b"\x08" + _varint(outcome.rejected) + _field(2, outcome.message.encode())
    return _field(1, inner)


def status_body(code: int, message: str, encoding: Encoding) -> bytes:
    """A ``google.rpc.Status`` with ``code`` and ``message``, as OTLP/HTTP answers errors."""
    if encoding == "json":
        return orjson.dumps({"code": code, "message": message})
    return b"\x08" + _varint(code) + _field(2, message.encode())
