"""OTLP/gRPC: ``opentelemetry.proto.collector.trace.v1.TraceService/Export`` via grpcio.

The method is registered with no (de)serializers: the request arrives as the protobuf
bytes the ``otlp`` family reads (no second parse), and the answer leaves as bytes of an
``ExportTraceServiceResponse``. Status codes as the OTLP specification says: OK (with
``partial_success`` when spans were rejected), INVALID_ARGUMENT for a malformed export,
UNAVAILABLE (retryable) when the spool's queue is full, UNAUTHENTICATED without the
bearer token when one is required. A message over ``max_body`` is refused by grpc itself
(RESOURCE_EXHAUSTED) before it reaches the receiver, so it is not in the counters.
"""

from __future__ import annotations

import hmac
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import grpc

from sparseety_tui.receive._intake import Intake, export_response

SERVICE = "opentelemetry.proto.collector.trace.v1.TraceService"
#: Exports read at once; more wait in grpc's queue, up to ``MAX_WAITING`` each.
WORKERS = 2
MAX_WAITING = 32


class BindError(Exception):
    pass


class GrpcReceiver:
    """A grpc server with the one method; ``start`` binds, ``stop`` ends it."""

    def __init__(
        self,
        host: str,
        port: int,
        intake: Intake,
        max_body: int,
        token: bytes | None = None,
    ) -> None:
        self.intake = intake
        self.expected = None if token is None else b"Bearer " + token
        self._server = grpc.server(
            ThreadPoolExecutor(max_workers=WORKERS, thread_name_prefix="sparseety-otlp-grpc"),
            options=[
                ("grpc.max_receive_message_length", max_body),
                ("grpc.max_send_message_length", 1 << 20),
                # Another process on the same port is an error, not a silent share.
                ("grpc.so_reuseport", 0),
            ],
            maximum_concurrent_rpcs=WORKERS * MAX_WAITING,
        )
        handler = grpc.method_handlers_generic_handler(
            SERVICE, {"Export": grpc.unary_unary_rpc_method_handler(self._export)}
        )
        self._server.add_generic_rpc_handlers((handler,))
        target = f"[{host.strip('[]')}]:{port}" if ":" in host else f"{host}:{port}"
        try:
            self.port = self._server.add_insecure_port(target)
        except RuntimeError as exc:
            raise BindError(str(exc)) from None
        if self.port == 0:
            raise BindError("grpc could not bind it")

    def start(self) -> None:
        self._server.start()

    def stop(self) -> None:
        self._server.stop(grace=1.0).wait()

    def _export(self, request: bytes, context: Any) -> bytes:
        counters = self.intake.counters
        counters.received(len(request))
        if self.expected is not None and not self._authorized(context):
            counters.refuse("unauthorized")
            context.abort(grpc.StatusCode.UNAUTHENTICATED, "missing or wrong bearer token")
        outcome = self.intake.take(request, "proto")
        if outcome.verdict == "malformed":
            context.abort(grpc.StatusCode.INVALID_ARGUMENT, outcome.message)
        if outcome.verdict != "ok":
            context.abort(grpc.StatusCode.UNAVAILABLE, outcome.message)
        return export_response(outcome, "proto")

    def _authorized(self, context: Any) -> bool:
        given = b""
        for key, value in context.invocation_metadata():
            if key == "authorization":
                given = value.encode("latin-1", "replace") if isinstance(value, str) else value
        assert self.expected is not None
        return hmac.compare_digest(given, self.expected)
