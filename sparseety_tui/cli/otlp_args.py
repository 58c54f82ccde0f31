"""The live OTLP receivers' options, shared by ``tail`` and ``serve``, and their checks:
loopback unless ``--allow-remote`` with a token, the ``otlp`` extra installed, a spool
that is none of the logs read. The receivers themselves are ``sparseety_tui.receive``."""

from __future__ import annotations

import argparse
import os
import sys
from typing import Any

from sparseety_tui.cli.errors import CliError
from sparseety_tui.core.text import escape, quote
from sparseety_tui.receive import (
    DEFAULT_MAX_BODY,
    DEFAULT_QUEUE_BYTES,
    Endpoint,
    ReceiveError,
    ReceiverProcess,
    ReceiveSettings,
    is_loopback,
    missing_extra,
)
from sparseety_tui.serve.settings import SettingsError, read_token

LOOPBACK = "127.0.0.1"


def add_otlp_options(parser: Any, remote_options: bool) -> None:
    """``--otlp`` and friends; ``remote_options`` adds ``--allow-remote`` and
    ``--token-file`` too (``serve`` has them already, for its own address)."""
    parser.add_argument(
        "--otlp",
        metavar="[HOST:]PORT",
        help="receive OTLP/HTTP traces (POST /v1/traces, protobuf or JSON) on PORT of "
        f"HOST (default {LOOPBACK}), e.g. vllm serve --otlp-traces-endpoint "
        "http://127.0.0.1:PORT/v1/traces with OTEL_EXPORTER_OTLP_TRACES_PROTOCOL=http/protobuf",
    )
    parser.add_argument(
        "--otlp-grpc",
        metavar="[HOST:]PORT",
        help="receive OTLP/gRPC traces (TraceService/Export) on PORT of HOST (default "
        f"{LOOPBACK}), e.g. vllm serve --otlp-traces-endpoint http://127.0.0.1:PORT",
    )
    parser.add_argument(
        "--otlp-spool",
        metavar="FILE",
        help="append the received spans to FILE (OTLP/JSON, one span a line, as the "
        "Collector's file exporter writes) and keep it; default: a private temporary file "
        "removed at exit",
    )
    parser.add_argument(
        "--otlp-max-body",
        type=int,
        default=DEFAULT_MAX_BODY,
        metavar="BYTES",
        help=f"largest export taken, compressed or inflated (default {DEFAULT_MAX_BODY:,}); "
        "bigger is 413 (gRPC: RESOURCE_EXHAUSTED)",
    )
    parser.add_argument(
        "--otlp-queue-bytes",
        type=int,
        default=DEFAULT_QUEUE_BYTES,
        metavar="BYTES",
        help="received spans waiting to be written to the spool at most (default "
        f"{DEFAULT_QUEUE_BYTES:,}); past it exports are refused with 503 and Retry-After "
        "(gRPC: UNAVAILABLE), to be sent again, never dropped",
    )
    if remote_options:
        parser.add_argument(
            "--allow-remote",
            action="store_true",
            help="allow an --otlp or --otlp-grpc HOST other than loopback (needs --token-file)",
        )
        parser.add_argument(
            "--token-file",
            metavar="FILE",
            help="require 'Authorization: Bearer TOKEN' (gRPC metadata authorization) with "
            "the token in FILE (mode 600, at least 16 characters) from OTLP exporters",
        )


def parse_endpoint(option: str, text: str) -> Endpoint:
    """``PORT``, ``HOST:PORT`` or ``[V6]:PORT``; a bare port is on loopback."""
    host, sep, port = text.rpartition(":")
    if not sep:
        host = LOOPBACK
    elif host.count(":") and not host.startswith("["):
        raise CliError(f"{option} {quote(text)}: write an IPv6 address in brackets, [::1]:PORT")
    if not port.isascii() or not port.isdigit() or int(port) > 65535 or not host.strip("[]"):
        raise CliError(f"{option} {quote(text)}: not [HOST:]PORT (PORT 0-65535; 0: a free one)")
    return Endpoint(host.strip("[]"), int(port))


def receive_settings(
    args: argparse.Namespace, paths: tuple[str, ...], directories: tuple[str, ...]
) -> ReceiveSettings | None:
    """What ``--otlp``/``--otlp-grpc`` ask for, checked; None without them."""
    http = None if args.otlp is None else parse_endpoint("--otlp", args.otlp)
    grpc = None if args.otlp_grpc is None else parse_endpoint("--otlp-grpc", args.otlp_grpc)
    if http is None and grpc is None:
        if args.otlp_spool is not None:
            raise CliError("--otlp-spool goes with --otlp or --otlp-grpc")
        return None
    if args.otlp_max_body < 1:
        raise CliError("--otlp-max-body must be at least 1 byte")
    if args.otlp_queue_bytes < 1:
        raise CliError("--otlp-queue-bytes must be at least 1 byte")
    for option, where in (("--otlp", http), ("--otlp-grpc", grpc)):
        if where is not None and not is_loopback(where.host):
            _check_remote(args, option, where)
    try:
        token = read_token(args.token_file) if args.token_file else None
    except SettingsError as exc:
        raise CliError(str(exc)) from None
    if args.otlp_spool is not None:
        _check_spool(args.otlp_spool, paths, directories)
    return ReceiveSettings(
        http=http,
        grpc=grpc,
        token=token,
        max_body=args.otlp_max_body,
        spool=args.otlp_spool,
        queue_bytes=args.otlp_queue_bytes,
    )


def _check_remote(args: argparse.Namespace, option: str, where: Endpoint) -> None:
    if not args.allow_remote:
        raise CliError(
            f"{option} {quote(where.host)} is not a loopback address: other machines could "
            "send spans; add --allow-remote and --token-file to receive from them"
        )
    if args.token_file is None:
        raise CliError(
            f"{option} {quote(where.host)} with --allow-remote needs --token-file "
            "(exporters then send Authorization: Bearer TOKEN)"
        )


def _check_spool(spool: str, paths: tuple[str, ...], directories: tuple[str, ...]) -> None:
    """The spool is written: it must be none of the logs read, nor in a followed directory."""
    real = os.path.realpath(spool)
    for path in paths:
        if os.path.realpath(path) == real:
            raise CliError(f"--otlp-spool {quote(spool)} is one of the logs being read")
    for directory in directories:
        if os.path.dirname(real) == os.path.realpath(directory):
            raise CliError(
                f"--otlp-spool {quote(spool)} is in {quote(directory)}, whose files are "
                "read as logs; put it elsewhere"
            )


def open_receivers(settings: ReceiveSettings) -> ReceiverProcess:
    """The spool opened (its path known for the followers), the receivers not yet bound."""
    missing = missing_extra(settings)
    if missing is not None:
        raise CliError(
            f"--otlp needs its extra: pip install 'sparseety-tui[otlp]' ({missing} missing)"
        )
    try:
        return ReceiverProcess(settings)
    except ReceiveError as exc:
        raise CliError(str(exc)) from None


def start_receivers(receivers: ReceiverProcess) -> None:
    """Bind and start (a port in use is a one-line error)."""
    try:
        receivers.start()
    except ReceiveError as exc:
        raise CliError(str(exc)) from None


def announce(receivers: ReceiverProcess) -> None:
    """Where the receivers listen, on stderr (``--otlp 0`` picks a free port)."""
    for line in receivers.describe():
        print(escape(f"receiving {line}"), file=sys.stderr, flush=True)


def farewell(receivers: ReceiverProcess) -> str:
    """One line of what the receivers took, for the end of ``tail``."""
    status = receivers.status()
    refused = sum(status["refused"].values())
    parts = [
        f"OTLP: {status['accepted_spans']:,} spans received",
        f"{status['rejected_spans']:,} rejected",
        f"{refused:,} requests refused",
    ]
    if status["lost_spans"]:
        parts.append(f"{status['lost_spans']:,} lost ({status['spool']['failure']})")
    return ", ".join(parts)
