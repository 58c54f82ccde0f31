"""Start the UI for ``tail`` and ``demo`` (called by cli.tui_args once arguments are parsed)."""

from __future__ import annotations

import argparse
import os
import sys
from dataclasses import replace
from typing import Any

from sparseety_tui.cli.otlp_args import (
    announce,
    farewell,
    open_receivers,
    receive_settings,
    start_receivers,
)
from sparseety_tui.core.redact import Redactor
from sparseety_tui.core.text import escape, quote
from sparseety_tui.ingest.batch import InputError, Options, cannot_read
from sparseety_tui.ingest.snapshot import LiveOptions, StartMode
from sparseety_tui.sources import expand


def tail_inputs(paths: list[str]) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """The files ``tail`` follows, and the directories whose new files it follows too
    (``sources._inputs.expand``, as every command).

    A named path that does not exist yet is awaited ("waiting for … to appear") if its
    directory exists and can be read (like ``tail -F``); a named path that exists but cannot
    be read is a one-line error. Every entry of a named directory is followed, and those
    that appear in it later: the follower never blocks on one, and shows on screen (status
    line, diagnostics) why it cannot read a FIFO or an unreadable file.
    """
    files: list[str] = []
    for item in expand(paths):
        if item.named and item.kind == "missing":
            check_can_appear(item.path)
        elif item.named and item.kind != "file":
            raise InputError(cannot_read(item))
        files.append(item.path)
    return tuple(files), tuple(path for path in paths if os.path.isdir(path))


def check_can_appear(path: str) -> None:
    """A file that does not exist yet can be followed once it appears: its directory must
    exist and be readable (to be watched and listed)."""
    parent = os.path.dirname(os.path.abspath(path))
    if not os.path.exists(parent):
        raise InputError(f"cannot follow {quote(path)}: no such directory {quote(parent)}")
    if not os.path.isdir(parent):
        raise InputError(f"cannot follow {quote(path)}: {quote(parent)} is not a directory")
    if not os.access(parent, os.R_OK | os.X_OK):
        raise InputError(f"cannot follow {quote(path)}: cannot read directory {quote(parent)}")


def live_options(
    args: argparse.Namespace, paths: tuple[str, ...], directories: tuple[str, ...] = ()
) -> LiveOptions:
    start: StartMode = "default"
    last = getattr(args, "last", None)
    if getattr(args, "from_start", False):
        start = "start"
    elif last is not None:
        if last < 0:
            raise InputError("--last must be >= 0")
        start = "last"
    return LiveOptions(
        paths=paths,
        directories=directories,
        start=start,
        last_lines=last,
        poll=bool(args.poll),
    )


def output_dir(args: argparse.Namespace) -> str | None:
    """``--output-dir``, which must be a directory that exists (checked now, not when a
    copy has to fall back to a file in the middle of an incident)."""
    path: str | None = getattr(args, "output_dir", None)
    if path is not None and not os.path.isdir(path):
        raise InputError(f"--output-dir {quote(path)} is not a directory")
    return path


def replay_source(args: argparse.Namespace, paths: tuple[str, ...]) -> Any:
    """``--replay``'s source over ``paths`` (files that exist: a replay plays what was
    written), from ``--from``; a bad option is an ``InputError``."""
    from sparseety_tui.core.query import WindowError, parse_bound
    from sparseety_tui.ingest.replay import ReplayError, open_replay

    for path in paths:
        if not os.path.isfile(path):
            raise InputError(f"--replay: {quote(path)} is not a finished file")
    try:
        bound = parse_bound(args.replay_from) if args.replay_from else None
        source = open_replay(paths, speed=args.speed)
    except (WindowError, ReplayError) as exc:
        raise InputError(f"--replay: {exc}") from exc
    if bound is not None:
        start = bound.resolve(source.end)
        if start is None:
            raise InputError(f"--from {args.replay_from}: no time in the logs to count from")
        source.seek(start)
    return source


def run(command: str, args: argparse.Namespace) -> int:
    from sparseety_tui.cli.redaction import redactor_of
    from sparseety_tui.ui.app import AppConfig, SparseetyApp
    from sparseety_tui.ui.themes import ThemeError, load_themes

    redactor = redactor_of(args)  # a bad rule or key: exit 2 before the UI starts
    themes = load_themes()
    if args.theme:
        try:
            themes.resolve(args.theme)
        except ThemeError as exc:
            raise InputError(str(exc)) from exc
    if command == "tail":
        from sparseety_tui.cli.shared_args import window_arg

        options = Options(
            format=args.format, tokenizer=args.tokenizer, model_config=args.model_config
        )
        paths, directories = tail_inputs(args.paths) if args.paths else ((), ())
        otlp = receive_settings(args, paths, directories)
        if not args.paths and otlp is None:
            raise InputError("tail needs a PATH to follow, or --otlp / --otlp-grpc to receive")
        if otlp is not None and args.replay:
            raise InputError("--otlp and --otlp-grpc go with live tail, not --replay")
        replay = replay_source(args, paths) if args.replay else None
        if not args.replay and (args.replay_from or args.speed != 1.0):
            raise InputError("--speed and --from go with --replay")
        receivers = None if otlp is None else open_receivers(otlp)
        try:
            if receivers is not None:
                paths = (*paths, receivers.spool_path)
            live = live_options(args, paths, directories)
            config = AppConfig(
                live=replace(live, start="start", directories=()) if replay else live,
                options=options,
                theme=args.theme,
                request_id=args.request,
                window=window_arg(args),
                output_dir=output_dir(args),
                redactor=redactor,
                replay=replay,
                receivers=None if receivers is None else receivers.status,
            )
            # Builds the Extractor with ingest.batch.make_extractor, which loads a named
            # --tokenizer now: a bad one is a one-line error here, not a failure in the UI.
            app = SparseetyApp(config, themes=themes)
            if receivers is not None:
                start_receivers(receivers)
                announce(receivers)  # seen again once the UI gives the screen back
                exit_on_hangup(app)
            app.run()
        finally:
            if receivers is not None:
                receivers.close()
                print(escape(farewell(receivers)), file=sys.stderr)
        return app.return_code or 0
    if command == "demo":
        return run_demo(args, themes, redactor)
    raise InputError(f"unknown command {command}")


def exit_on_hangup(app: Any) -> None:
    """A closed terminal (SIGHUP) or a SIGTERM ends the app as ``q`` does, so that the
    receivers close and their private spool (spans held in a temporary directory) is
    removed; by default either signal killed the process and left it behind."""
    import signal

    def stop(signum: int, frame: object) -> None:
        app.exit()

    for signum in (signal.SIGHUP, signal.SIGTERM):
        signal.signal(signum, stop)


def run_demo(args: argparse.Namespace, themes: object, redactor: Redactor | None = None) -> int:
    """``tail --replay`` of the logs directly in ``sample_logs/``, each from its start."""
    from sparseety_tui.ingest.replay import ReplayError, open_replay, sample_paths
    from sparseety_tui.ui.app import AppConfig, SparseetyApp
    from sparseety_tui.ui.themes import ThemeSet

    assert isinstance(themes, ThemeSet)
    try:
        paths = tuple(sample_paths())
        source = open_replay(paths, speed=args.speed, align="each")
    except ReplayError as exc:
        raise InputError(str(exc)) from exc
    config = AppConfig(
        live=LiveOptions(paths=paths, start="start"),
        theme=args.theme,
        title="sparseety-tui demo",
        redactor=redactor,
        replay=source,
    )
    app = SparseetyApp(config, themes=themes)
    app.run()
    return app.return_code or 0
