"""Run `serve`: check the settings, bind, follow the logs, serve until interrupted."""

from __future__ import annotations

import argparse
import socket
import sys
from dataclasses import replace
from typing import Any

from sparseety_tui.cli.errors import CliError
from sparseety_tui.cli.otlp_args import announce, open_receivers, receive_settings, start_receivers
from sparseety_tui.cli.redaction import redactor_of
from sparseety_tui.cli.serve_args import settings_of
from sparseety_tui.core.text import escape, quote
from sparseety_tui.ingest.batch import InputError, Options, make_shape
from sparseety_tui.ingest.snapshot import LiveOptions
from sparseety_tui.receive import ReceiverProcess
from sparseety_tui.serve.followed import FollowedLogs
from sparseety_tui.serve.settings import ServeSettings, SettingsError, check, read_token
from sparseety_tui.sources import os_reason


def bind(settings: ServeSettings) -> socket.socket:
    """The listening socket, bound here (not by uvicorn) so that a port in use is a
    one-line error and ``--port 0`` can say which port it got."""
    family = socket.AF_INET6 if ":" in settings.host else socket.AF_INET
    # IPPROTO_TCP named, not 0: asyncio sets TCP_NODELAY only on sockets that say they are
    # TCP, and without it each answer (headers and body: two writes) waited 40 ms for the
    # client's delayed ACK on a keep-alive connection.
    sock = socket.socket(family, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind((settings.host.strip("[]"), settings.port))
        sock.listen(128)
    except OSError as exc:
        sock.close()
        raise CliError(
            f"cannot listen on {quote(settings.host)} port {settings.port}: {os_reason(exc)}"
        ) from None
    except (UnicodeError, OverflowError) as exc:
        sock.close()
        raise CliError(f"--host {quote(settings.host)}: {exc}") from None
    return sock


def run(args: argparse.Namespace, options: Options) -> int:
    settings = replace(settings_of(args), redactor=redactor_of(args))
    try:
        check(settings)
        token = read_token(settings.token_file) if settings.token_file else None
    except SettingsError as exc:
        raise CliError(str(exc)) from None
    from sparseety_tui.cli.tui import tail_inputs

    paths, directories = tail_inputs(args.paths) if args.paths else ((), ())
    otlp = receive_settings(args, paths, directories)
    shape = make_shape(options)
    # Imported now that the arguments are known good: the ASGI stack is the slow part.
    try:
        import uvicorn  # noqa: F401

        from sparseety_tui.serve.app import build_app
    except ImportError as exc:
        raise InputError(
            f"serve needs its extra: pip install 'sparseety-tui[serve]' ({exc.name} missing)"
        ) from None

    receivers = None if otlp is None else open_receivers(otlp)
    try:
        followed_paths = paths if receivers is None else (*paths, receivers.spool_path)
        live = LiveOptions(
            paths=followed_paths,
            directories=directories,
            start="start",
            poll=args.poll,
            track_rate=False,
        )
        followed = FollowedLogs(live, options, shape)
        status = None if receivers is None else receivers.status
        app = build_app(followed, settings, options, token, otlp_status=status)
        sock = bind(settings)
        if receivers is not None:
            start_receivers(receivers)
        _serve(sock, app, followed, len(paths), receivers)
    finally:
        if receivers is not None:
            receivers.close()
    return 0


def _serve(
    sock: socket.socket,
    app: Any,
    followed: FollowedLogs,
    files: int,
    receivers: ReceiverProcess | None,
) -> None:
    """Say where, then serve until interrupted (uvicorn handles Ctrl-C)."""
    import uvicorn

    host, port = sock.getsockname()[:2]
    shown = f"[{host}]" if ":" in host else host
    print(
        escape(f"serving http://{shown}:{port} (following {files} file(s); Ctrl-C stops)"),
        file=sys.stderr,
        flush=True,
    )
    if receivers is not None:
        announce(receivers)
    config = uvicorn.Config(
        app,
        log_level="warning",
        access_log=False,
        server_header=False,
        lifespan="off",
        timeout_graceful_shutdown=2,
    )
    followed.start()
    try:
        uvicorn.Server(config).run(sockets=[sock])
    finally:
        followed.stop()
        sock.close()
