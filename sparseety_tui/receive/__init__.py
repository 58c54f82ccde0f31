"""Live OTLP receivers (``tail --otlp``, ``serve --otlp-grpc``): OTLP/HTTP and OTLP/gRPC
trace exports appended to a spool file, one OTLP/JSON line per span, which the followers
then read like any other input (the ``otlp`` format family). ``tail`` and ``serve`` run
them in a child process (``ReceiverProcess``), beside the ingest thread. Import-light: grpc and the
protobuf reader load only when a receiver starts."""

from sparseety_tui.receive._counters import Counters
from sparseety_tui.receive._loopback import is_loopback
from sparseety_tui.receive._process import ReceiverProcess
from sparseety_tui.receive._receivers import (
    DEFAULT_MAX_BODY,
    Endpoint,
    ReceiveError,
    Receivers,
    ReceiveSettings,
    missing_extra,
)
from sparseety_tui.receive._spool import DEFAULT_QUEUE_BYTES, Spool

__all__ = [
    "DEFAULT_MAX_BODY",
    "DEFAULT_QUEUE_BYTES",
    "Counters",
    "Endpoint",
    "ReceiveError",
    "ReceiveSettings",
    "ReceiverProcess",
    "Receivers",
    "Spool",
    "is_loopback",
    "missing_extra",
]
