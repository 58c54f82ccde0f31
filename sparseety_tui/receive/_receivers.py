"""The live receivers ``tail`` and ``serve`` run: the spool, and the HTTP and gRPC
endpoints that append to it, started and stopped together."""

from __future__ import annotations

import importlib
import threading
from dataclasses import dataclass
from typing import Any

from sparseety_tui.core.text import quote
from sparseety_tui.receive._counters import Counters
from sparseety_tui.receive._intake import TRACES_PATH, Intake
from sparseety_tui.receive._spool import DEFAULT_QUEUE_BYTES, Spool, SpoolError
from sparseety_tui.sources import os_reason

#: The largest export body taken (``--otlp-max-body``), compressed or inflated.
DEFAULT_MAX_BODY = 16 << 20
#: What the ``otlp`` extra brings, by what needs it.
_EXTRA_MODULES = {"http": ("google.protobuf", "opentelemetry.proto"), "grpc": ("grpc",)}


class ReceiveError(Exception):
    """A receiver cannot start; the message is one line."""


@dataclass(frozen=True)
class Endpoint:
    host: str
    port: int

    def shown(self) -> str:
        return (
            f"[{self.host.strip('[]')}]:{self.port}"
            if ":" in self.host
            else f"{self.host}:{self.port}"
        )


@dataclass(frozen=True)
class ReceiveSettings:
    http: Endpoint | None = None
    grpc: Endpoint | None = None
    #: Required as ``Authorization: Bearer TOKEN`` (gRPC metadata ``authorization``).
    token: bytes | None = None
    max_body: int = DEFAULT_MAX_BODY
    #: ``--otlp-spool``: kept there; None: a private temporary directory.
    spool: str | None = None
    queue_bytes: int = DEFAULT_QUEUE_BYTES


def missing_extra(settings: ReceiveSettings) -> str | None:
    """The first module of the ``otlp`` extra these receivers need that cannot be
    imported, or None."""
    needed = [*_EXTRA_MODULES["http"], *(_EXTRA_MODULES["grpc"] if settings.grpc else ())]
    for name in needed:
        try:
            importlib.import_module(name)
        except ImportError:
            return name
    return None


class Receivers:
    """The spool (opened now: its path is known before the followers start) and the
    receivers (bound by ``start``); ``close`` stops them and then the spool."""

    def __init__(self, settings: ReceiveSettings, spool_started: bool = True) -> None:
        self.settings = settings
        self.counters = Counters()
        try:
            self.spool = Spool(settings.spool, settings.queue_bytes, start=spool_started)
        except SpoolError as exc:
            raise ReceiveError(str(exc)) from None
        self.intake = Intake(self.spool, self.counters)
        self._http: Any = None
        self._http_thread: threading.Thread | None = None
        self._grpc: Any = None
        #: Where each receiver listens, once started ("http", "grpc").
        self.bound: dict[str, Endpoint] = {}

    @property
    def spool_path(self) -> str:
        return self.spool.path

    def start(self) -> None:
        try:
            if self.settings.http is not None:
                self._start_http(self.settings.http)
            if self.settings.grpc is not None:
                self._start_grpc(self.settings.grpc)
        except ReceiveError:
            self.close()
            raise

    def _start_http(self, where: Endpoint) -> None:
        from sparseety_tui.receive._http import HttpReceiver

        try:
            server = HttpReceiver(
                where.host, where.port, self.intake, self.settings.max_body, self.settings.token
            )
        except OSError as exc:
            raise ReceiveError(
                f"--otlp: cannot listen on {quote(where.host)} port {where.port}: {os_reason(exc)}"
            ) from None
        except (UnicodeError, OverflowError) as exc:
            raise ReceiveError(f"--otlp {quote(where.host)}: {exc}") from None
        self._http = server
        self.bound["http"] = Endpoint(where.host, server.server_address[1])
        self._http_thread = threading.Thread(
            target=server.serve_forever,
            kwargs={"poll_interval": 0.2},
            name="sparseety-otlp-http",
            daemon=True,
        )
        self._http_thread.start()

    def _start_grpc(self, where: Endpoint) -> None:
        from sparseety_tui.receive._grpc import BindError, GrpcReceiver

        try:
            server = GrpcReceiver(
                where.host, where.port, self.intake, self.settings.max_body, self.settings.token
            )
        except BindError as exc:
            raise ReceiveError(
                f"--otlp-grpc: cannot listen on {quote(where.host)} port {where.port}: {exc}"
            ) from None
        server.start()
        self._grpc = server
        self.bound["grpc"] = Endpoint(where.host, server.port)

    def describe(self) -> list[str]:
        """One line per receiver: where to point an exporter."""
        lines = []
        if "http" in self.bound:
            lines.append(f"OTLP/HTTP on http://{self.bound['http'].shown()}{TRACES_PATH}")
        if "grpc" in self.bound:
            lines.append(f"OTLP/gRPC on {self.bound['grpc'].shown()}")
        return lines

    def status(self) -> dict[str, Any]:
        """The counters, the spool and where the receivers listen (serve's ``/health``)."""
        return {
            **self.counters.as_json(),
            "lost_spans": self.spool.lost_spans,
            "spool": {
                "path": self.spool.path,
                "written_bytes": self.spool.written_bytes,
                "pending_bytes": self.spool.pending_bytes(),
                "failure": self.spool.failure,
            },
            "listening": {kind: where.shown() for kind, where in self.bound.items()},
        }

    def close(self) -> None:
        """Stop taking exports, then write what was taken and close the spool."""
        if self._http is not None:
            self._http.shutdown()
            self._http.server_close()
            self._http = None
        if self._grpc is not None:
            self._grpc.stop()
            self._grpc = None
        self.spool.close()
