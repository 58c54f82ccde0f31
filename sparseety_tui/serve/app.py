"""The Starlette application of ``serve``: routes, bearer token, body cap, JSON errors.

Every answer is computed off the event loop (a thread), from the followed logs' frozen
state, by the functions the CLI prints with: ``/summary`` is ``summary --json``,
``/requests`` is ``extract --filter --limit``, ``POST /extract`` is ``extract`` (see
``serve.extraction``). A client error is a 4xx with one line of JSON
(``{"error": "..."}``), never a stack trace.
"""

from __future__ import annotations

import hmac
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import anyio
import orjson
from prometheus_client.exposition import choose_encoder
from prometheus_client.registry import CollectorRegistry
from starlette.applications import Starlette
from starlette.convertors import PathConvertor, register_url_convertor
from starlette.exceptions import HTTPException
from starlette.requests import ClientDisconnect, Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route
from starlette.types import ASGIApp, Receive, Scope, Send

from sparseety_tui import __version__
from sparseety_tui.core.detail import build_detail
from sparseety_tui.core.query import (
    FilterError,
    Selection,
    WindowError,
    parse_filter,
    window_from_args,
)
from sparseety_tui.core.report import extract_lines, request_records, summary_document
from sparseety_tui.core.text import escape_json, json_bytes
from sparseety_tui.ingest.batch import Options
from sparseety_tui.receive import is_loopback
from sparseety_tui.serve import openapi
from sparseety_tui.serve.detail import detail_document
from sparseety_tui.serve.extraction import (
    NDJSON,
    BodyError,
    Extraction,
    extract_body,
    trace_lines,
)
from sparseety_tui.serve.followed import FollowedLogs
from sparseety_tui.serve.metrics import SparseetyCollector
from sparseety_tui.serve.settings import DEFAULT_REQUESTS_LIMIT, ServeSettings


def error(status: int, message: str) -> JSONResponse:
    """The one error shape: one line of JSON."""
    return JSONResponse({"error": message}, status_code=status)


class _TooLarge(Exception):
    pass


@dataclass
class _Api:
    followed: FollowedLogs
    settings: ServeSettings
    options: Options
    registry: CollectorRegistry
    limiter: anyio.CapacityLimiter
    otlp_status: Callable[[], dict[str, Any]] | None = None

    # -- routes -----------------------------------------------------------------------------

    async def health(self, request: Request) -> Response:
        document: dict[str, Any] = {"status": "ok", "version": __version__}
        if self.otlp_status is None:
            return JSONResponse(document)
        # The live receivers' counters (--otlp, --otlp-grpc); the spool's path is the
        # user's text, escaped as every other answer's.
        document["otlp"] = self.otlp_status()
        body = escape_json(json_bytes(document, orjson.OPT_INDENT_2)) + b"\n"
        return Response(body, media_type="application/json")

    async def extract(self, request: Request) -> Response:
        try:
            body = await self._body(request)
        except _TooLarge:
            return error(413, f"body larger than --max-body ({self.settings.max_body:,} bytes)")
        except ClientDisconnect:  # nobody is left to answer; not the server's error
            return error(400, "the client went away before its body was read")
        how = Extraction.of(
            self.options, self.followed.shape, self.settings.text, self.settings.redacting()
        )
        content_type = request.headers.get("content-type", "application/json")

        def run() -> bytes:
            return extract_body(trace_lines(body, content_type), how)

        try:
            answer = await anyio.to_thread.run_sync(run, limiter=self.limiter)
        except BodyError as exc:
            return error(exc.status, exc.message)
        return Response(answer, media_type=NDJSON)

    async def summary(self, request: Request) -> Response:
        selection = _selection(request)
        state, shape = self.followed.state(), self.followed.shape
        redactor = self.settings.redacting()

        def run() -> bytes:
            document = summary_document(state, shape, selection).to_json()
            if redactor is not None:
                document = redactor.document(document)
                document["redaction"] = redactor.summary()
            return escape_json(json_bytes(document, orjson.OPT_INDENT_2)) + b"\n"

        return Response(await anyio.to_thread.run_sync(run), media_type="application/json")

    async def requests(self, request: Request) -> Response:
        selection = _selection(request)
        limit = _limit(request.query_params.get("limit"))
        state, shape, text = self.followed.state(), self.followed.shape, self.settings.text
        redactor = self.settings.redacting()
        transform = None if redactor is None else redactor.document

        def run() -> bytes:
            lines = extract_lines(state, shape, limit, text, selection, transform)
            return escape_json(b"".join(lines))

        return Response(await anyio.to_thread.run_sync(run), media_type=NDJSON)

    async def request_detail(self, request: Request) -> Response:
        request_id = request.path_params["request_id"]
        state, shape, settings = self.followed.state(), self.followed.shape, self.settings
        row = state.find(request_id)
        if row is None:
            return error(404, "no such request id in the followed logs")

        def run() -> bytes:
            record = next(request_records(state, shape, None, [row]))
            detail = build_detail(state, row)
            document = detail_document(
                state,
                row,
                record,
                detail,
                settings.text,
                settings.keep_routing,
                settings.redacting(),
            )
            return escape_json(json_bytes(document, orjson.OPT_INDENT_2)) + b"\n"

        return Response(await anyio.to_thread.run_sync(run), media_type="application/json")

    async def metrics(self, request: Request) -> Response:
        encoder, content_type = choose_encoder(request.headers.get("accept", ""))
        data = await anyio.to_thread.run_sync(encoder, self.registry)
        return Response(data, headers={"Content-Type": content_type})

    async def openapi(self, request: Request) -> Response:
        return JSONResponse(openapi.description(self.settings.token_file is not None))

    # -- helpers ----------------------------------------------------------------------------

    async def _body(self, request: Request) -> bytes:
        """The body, refused (``_TooLarge``) as soon as it is known to be over the cap:
        from Content-Length before reading, else while it streams in."""
        cap = self.settings.max_body
        declared = request.headers.get("content-length")
        if declared is not None and declared.isdigit() and int(declared) > cap:
            raise _TooLarge
        parts: list[bytes] = []
        size = 0
        async for chunk in request.stream():
            size += len(chunk)
            if size > cap:
                raise _TooLarge
            parts.append(chunk)
        return b"".join(parts)


def _selection(request: Request) -> Selection:
    params = request.query_params
    text = params.get("filter")
    try:
        if text is not None:
            parse_filter(text)
        window = window_from_args(params.get("since"), params.get("until"))
    except FilterError as exc:
        raise HTTPException(400, f"filter: {exc}") from None
    except WindowError as exc:
        raise HTTPException(400, f"since/until: {exc}") from None
    return Selection(text, window)


def _limit(raw: str | None) -> int:
    if raw is None:
        return DEFAULT_REQUESTS_LIMIT
    if not raw.isascii() or not raw.isdigit() or len(raw) > 9:
        raise HTTPException(400, f"limit must be a whole number >= 0, not {raw[:40]!r}")
    return int(raw)


class BearerToken:
    """Every request must carry ``Authorization: Bearer TOKEN``; compared in constant
    time (``hmac.compare_digest``), so the answer's timing tells nothing of the token."""

    def __init__(self, app: ASGIApp, token: bytes) -> None:
        self.app = app
        self.expected = b"Bearer " + token

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http":
            given = b""
            for name, value in scope["headers"]:
                if name == b"authorization":
                    given = value
            if not hmac.compare_digest(given, self.expected):
                response = error(401, "missing or wrong bearer token")
                response.headers["WWW-Authenticate"] = "Bearer"
                await response(scope, receive, send)
                return
        await self.app(scope, receive, send)


class LoopbackHostOnly:
    """On a loopback address, only requests that name it in ``Host`` (or ``localhost``):
    a web page the user opens cannot read the API through a name of its own that it
    re-points at 127.0.0.1 (DNS rebinding). Off loopback the token guards instead."""

    def __init__(self, app: ASGIApp, bound: str) -> None:
        self.app = app
        self.allowed = {bound.strip("[]").lower(), "127.0.0.1", "::1", "localhost"}

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http":
            host = ""
            for name, value in scope["headers"]:
                if name == b"host":
                    host = value.decode("latin-1").lower()
            if host_name(host) not in self.allowed:
                await error(400, "Host is not this loopback server's")(scope, receive, send)
                return
        await self.app(scope, receive, send)


def host_name(header: str) -> str:
    """The host of a ``Host`` header, without its port or IPv6 brackets."""
    if header.startswith("["):
        return header[1:].split("]", 1)[0]
    return header.rsplit(":", 1)[0] if header.count(":") == 1 else header


async def _http_error(request: Request, exc: Exception) -> Response:
    assert isinstance(exc, HTTPException)
    return error(exc.status_code, str(exc.detail))


async def _server_error(request: Request, exc: Exception) -> Response:
    # Not expected: every handler turns what a client can send into a 4xx. Should one
    # slip through, the client still gets one line, and the server's log the trace.
    return error(500, "internal error (see the server's log)")


class _AnyText(PathConvertor):
    """The rest of the path, line breaks included (``path`` stops at one): a span may name
    its request with any text, and that text finds its row."""

    regex = r"[\s\S]*"


register_url_convertor("any_text", _AnyText())


def _converted(path: str) -> str:
    """A request id may hold a ``/`` or a line break: the id takes the rest of the path."""
    return path.replace("{request_id}", "{request_id:any_text}")


def build_app(
    followed: FollowedLogs,
    settings: ServeSettings,
    options: Options,
    token: bytes | None = None,
    otlp_status: Callable[[], dict[str, Any]] | None = None,
) -> Starlette:
    """The application; ``otlp_status`` (the live receivers' counters) goes in ``/health``."""
    registry = CollectorRegistry(auto_describe=False)
    registry.register(
        SparseetyCollector(
            followed,
            followed.shape,
            expert_series=settings.expert_series,
            expert_series_budget=settings.expert_series_budget,
        )
    )
    api = _Api(
        followed,
        settings,
        options,
        registry,
        anyio.CapacityLimiter(settings.workers),
        otlp_status,
    )
    routes: list[tuple[str, str, Callable[[Request], Any]]] = [
        ("/health", "GET", api.health),
        ("/extract", "POST", api.extract),
        ("/summary", "GET", api.summary),
        ("/requests", "GET", api.requests),
        ("/requests/{request_id}", "GET", api.request_detail),
        ("/metrics", "GET", api.metrics),
        ("/openapi.json", "GET", api.openapi),
    ]
    app = Starlette(
        routes=[
            Route(_converted(path), handler, methods=[method]) for path, method, handler in routes
        ],
        exception_handlers={HTTPException: _http_error, 500: _server_error},
    )
    if token is not None:
        app.add_middleware(BearerToken, token=token)
    if is_loopback(settings.host):
        app.add_middleware(LoopbackHostOnly, bound=settings.host)
    return app
