"""OTLP/HTTP: ``POST /v1/traces`` with a protobuf or JSON body, gzip or not.

A small threaded server from the standard library (no dependency beyond the ``otlp``
extra's protobuf): one thread per connection, at most ``max_connections`` of them, each
request's body bounded in size (``Content-Length`` required, checked before reading;
gzip inflated only up to the same bound) and in time (``READ_TIMEOUT_S`` for the whole
body). Answers follow the OTLP specification: 200 with an ``ExportTraceServiceResponse``
in the request's encoding (with ``partial_success`` when spans were rejected), 400 with a
``google.rpc.Status`` for a malformed body, 413 over the size bound, 415 for another
content type or encoding, 503 with ``Retry-After`` when the spool's queue is full, 401
without the bearer token when one is required, 404 and 405 for other paths and methods.
"""

from __future__ import annotations

import hmac
import socket
import threading
import time
import zlib
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from sparseety_tui.receive._intake import (
    INVALID_ARGUMENT,
    NOT_FOUND,
    RESOURCE_EXHAUSTED,
    TRACES_PATH,
    UNAUTHENTICATED,
    UNAVAILABLE,
    UNIMPLEMENTED,
    Encoding,
    Intake,
    export_response,
    status_body,
)
from sparseety_tui.receive._loopback import is_loopback

#: Seconds a client has to send a request's whole body (and between requests on a
#: kept-alive connection) before the connection is closed.
READ_TIMEOUT_S = 10.0
#: Connections served at once; one more is answered 503 and closed.
MAX_CONNECTIONS = 64
#: A refused request's body up to this size is read and dropped, so that the client gets
#: the answer (closing on unread data would reset the connection under it).
DRAIN_BYTES = 64 << 20
#: Seconds a refused client is asked to wait before it retries.
RETRY_AFTER_S = 1

#: The google.rpc.Code an error answer's Status carries, by HTTP status.
_CODES = {
    400: INVALID_ARGUMENT,
    401: UNAUTHENTICATED,
    404: NOT_FOUND,
    405: UNIMPLEMENTED,
    411: INVALID_ARGUMENT,
    413: RESOURCE_EXHAUSTED,
    415: INVALID_ARGUMENT,
    503: UNAVAILABLE,
}
_MEDIA = {"application/x-protobuf": "proto", "application/json": "json"}
_LOOPBACK_NAMES = {"127.0.0.1", "::1", "localhost"}


class _TooLarge(Exception):
    pass


class HttpReceiver(ThreadingHTTPServer):
    """The server; ``serve_forever`` on a thread of its own (``Receivers`` starts it)."""

    daemon_threads = True
    allow_reuse_address = True
    request_queue_size = 128

    def __init__(
        self,
        host: str,
        port: int,
        intake: Intake,
        max_body: int,
        token: bytes | None = None,
        max_connections: int = MAX_CONNECTIONS,
    ) -> None:
        self.address_family = socket.AF_INET6 if ":" in host else socket.AF_INET
        self.intake = intake
        self.max_body = max_body
        self.expected = None if token is None else b"Bearer " + token
        self.loopback_names = {*_LOOPBACK_NAMES, host.strip("[]").lower()}
        self.check_host = is_loopback(host)
        self._slots = threading.BoundedSemaphore(max_connections)
        super().__init__((host.strip("[]"), port), _Handler)

    def process_request(self, request: Any, client_address: Any) -> None:
        if not self._slots.acquire(blocking=False):
            self.intake.counters.received(0)
            self.intake.counters.refuse("connections")
            _refuse_connection(request)
            self.shutdown_request(request)
            return
        super().process_request(request, client_address)

    def process_request_thread(self, request: Any, client_address: Any) -> None:
        try:
            super().process_request_thread(request, client_address)
        finally:
            self._slots.release()

    def handle_error(self, request: Any, client_address: Any) -> None:
        """A connection that broke mid-request is that client's problem: nothing printed
        (the terminal belongs to the UI)."""


def _refuse_connection(sock: socket.socket) -> None:
    body = b'{"code": 14, "message": "too many connections; retry later"}'
    head = (
        "HTTP/1.1 503 Service Unavailable\r\nContent-Type: application/json\r\n"
        f"Retry-After: {RETRY_AFTER_S}\r\nConnection: close\r\n"
        f"Content-Length: {len(body)}\r\n\r\n"
    )
    try:
        sock.settimeout(1.0)
        sock.sendall(head.encode() + body)
    except OSError:
        pass


class _Handler(BaseHTTPRequestHandler):
    server: HttpReceiver
    protocol_version = "HTTP/1.1"
    server_version = "sparseety-otlp"
    sys_version = ""
    timeout = READ_TIMEOUT_S
    # Headers and body go out in two writes; without this each answer on a kept-alive
    # connection would wait for the client's delayed ACK.
    disable_nagle_algorithm = True

    def log_message(self, format: str, *args: Any) -> None:
        """Silent: the terminal belongs to the UI; what happened is in the counters."""

    def do_POST(self) -> None:
        self._answer_post()

    def do_GET(self) -> None:
        self._not_post()

    do_PUT = do_DELETE = do_PATCH = do_OPTIONS = do_HEAD = do_GET

    # -- answers ---------------------------------------------------------------------------

    def _not_post(self) -> None:
        counters = self.server.intake.counters
        counters.received(0)
        self.close_connection = True  # a body, if any, was not read
        if self.path.split("?", 1)[0] != TRACES_PATH:
            counters.refuse("not_found")
            self._fail(404, f"no such path; OTLP traces go to POST {TRACES_PATH}", "json")
            return
        counters.refuse("method")
        self._fail(405, "only POST", "json", {"Allow": "POST"})

    def _answer_post(self) -> None:
        counters = self.server.intake.counters
        refusal = self._refusal_before_body()
        if refusal is not None:
            status, reason, message, answer_in, extra = refusal
            counters.received(0)
            counters.refuse(reason)
            declared = self._declared_length()
            # The unread body is read and dropped (up to DRAIN_BYTES) so that the client,
            # still sending it, gets this answer rather than a reset connection.
            self.close_connection = declared is None or declared > DRAIN_BYTES
            self._fail(status, message, answer_in, extra)
            if not self.close_connection and declared:
                try:
                    self._read_body(declared, keep=False)
                except TimeoutError:
                    self.close_connection = True
            return
        encoding = self._encoding()
        assert encoding is not None
        length = int(self.headers["Content-Length"])
        try:
            body = self._read_body(length)
        except TimeoutError:
            counters.received(0)
            counters.refuse("timeout")
            self.close_connection = True
            return
        counters.received(len(body))
        try:
            body = self._decoded(body)
        except _TooLarge:
            counters.refuse("too_large")
            message = f"inflated body larger than {self.server.max_body:,} bytes"
            self._fail(413, message, encoding)
            return
        except (ValueError, zlib.error) as exc:
            counters.refuse("malformed")
            self._fail(400, f"bad gzip body: {exc}", encoding)
            return
        self._answer_export(body, encoding)

    def _answer_export(self, body: bytes, encoding: Encoding) -> None:
        outcome = self.server.intake.take(body, encoding)
        if outcome.verdict == "ok":
            self._send(200, export_response(outcome, encoding), encoding)
        elif outcome.verdict == "malformed":
            self._fail(400, outcome.message, encoding)
        else:
            self._fail(503, outcome.message, encoding, {"Retry-After": str(RETRY_AFTER_S)})

    def _refusal_before_body(
        self,
    ) -> tuple[int, str, str, Encoding, dict[str, str]] | None:
        """(status, counted reason, message, answer encoding, extra headers) of a request
        refused on its line and headers alone, or None."""
        server = self.server
        encoding = self._encoding() or "json"
        if self.path.split("?", 1)[0] != TRACES_PATH:
            return (
                404,
                "not_found",
                f"no such path; OTLP traces go to POST {TRACES_PATH}",
                encoding,
                {},
            )
        if (
            server.check_host
            and _host_name(self.headers.get("Host", "")) not in server.loopback_names
        ):
            return 400, "host", "Host is not this loopback receiver's", encoding, {}
        if server.expected is not None:
            given = (self.headers.get("Authorization") or "").encode("latin-1", "replace")
            if not hmac.compare_digest(given, server.expected):
                auth = {"WWW-Authenticate": "Bearer"}
                return 401, "unauthorized", "missing or wrong bearer token", encoding, auth
        if self._encoding() is None:
            kinds = " or ".join(_MEDIA)
            return 415, "content_type", f"Content-Type must be {kinds}", "json", {}
        coding = (self.headers.get("Content-Encoding") or "identity").strip().lower()
        if coding not in ("identity", "gzip"):
            return 415, "content_encoding", "Content-Encoding must be gzip or none", encoding, {}
        declared = self._declared_length()
        if declared is None:
            return 411, "length_required", "Content-Length is required", encoding, {}
        if declared > server.max_body:
            message = f"body larger than {server.max_body:,} bytes"
            return 413, "too_large", message, encoding, {}
        return None

    def _encoding(self) -> Encoding | None:
        media = (self.headers.get("Content-Type") or "").split(";", 1)[0].strip().lower()
        kind = _MEDIA.get(media)
        return None if kind is None else ("proto" if kind == "proto" else "json")

    def _declared_length(self) -> int | None:
        declared = (self.headers.get("Content-Length") or "").strip()
        if self.headers.get("Transfer-Encoding") or not declared.isdigit() or len(declared) > 18:
            return None
        return int(declared)

    def _read_body(self, length: int, keep: bool = True) -> bytes:
        """``length`` bytes (kept, or read and dropped), all within ``READ_TIMEOUT_S``
        (TimeoutError otherwise, or when the client goes away mid-body)."""
        deadline = time.monotonic() + READ_TIMEOUT_S
        parts: list[bytes] = []
        left = length
        while left:
            if time.monotonic() > deadline:
                raise TimeoutError
            try:
                chunk = self.rfile.read1(min(left, 1 << 20))
            except OSError:
                raise TimeoutError from None
            if not chunk:
                raise TimeoutError
            if keep:
                parts.append(chunk)
            left -= len(chunk)
        return b"".join(parts)

    def _decoded(self, body: bytes) -> bytes:
        coding = (self.headers.get("Content-Encoding") or "identity").strip().lower()
        return gunzip(body, self.server.max_body) if coding == "gzip" else body

    def _fail(
        self, status: int, message: str, encoding: Encoding, extra: dict[str, str] | None = None
    ) -> None:
        self._send(status, status_body(_CODES[status], message, encoding), encoding, extra)

    def _send(
        self, status: int, body: bytes, encoding: Encoding, extra: dict[str, str] | None = None
    ) -> None:
        self.send_response(status)
        media = "application/x-protobuf" if encoding == "proto" else "application/json"
        self.send_header("Content-Type", media)
        self.send_header("Content-Length", str(len(body)))
        for name, value in (extra or {}).items():
            self.send_header(name, value)
        if self.close_connection:
            self.send_header("Connection", "close")
        self.end_headers()
        self.wfile.write(body)


def gunzip(data: bytes, limit: int) -> bytes:
    """``data`` inflated (every gzip member), ``_TooLarge`` past ``limit`` bytes: a small
    body that inflates to gigabytes costs at most ``limit`` bytes of memory."""
    out: list[bytes] = []
    size = 0
    while data:
        inflater = zlib.decompressobj(16 + zlib.MAX_WBITS)
        chunk = inflater.decompress(data, limit - size + 1)
        size += len(chunk)
        if size > limit or inflater.unconsumed_tail:
            raise _TooLarge
        if not inflater.eof:
            raise ValueError("truncated gzip stream")
        out.append(chunk)
        data = inflater.unused_data
    return b"".join(out)


def _host_name(header: str) -> str:
    """The host of a ``Host`` header, without its port or IPv6 brackets."""
    header = header.strip().lower()
    if header.startswith("["):
        return header[1:].split("]", 1)[0]
    return header.rsplit(":", 1)[0] if header.count(":") == 1 else header
