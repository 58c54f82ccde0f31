"""Start the UI for ``tail`` and ``demo`` (called by cli.tui_args once arguments are parsed)."""

from __future__ import annotations

import argparse
import os

from sparseety_tui.core.literal import quote
from sparseety_tui.core.redact import Redactor
from sparseety_tui.ingest.batch import InputError, Options, cannot_read
from sparseety_tui.ingest.snapshot import LiveOptions, StartMode
from sparseety_tui.sources.inputs import expand


def tail_inputs(paths: list[str]) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """The files ``tail`` follows, and the directories whose new files it follows too
    (``sources.inputs.expand``, as every command).

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
        from sparseety_tui.cli.main import window_arg

        options = Options(
            format=args.format, tokenizer=args.tokenizer, model_config=args.model_config
        )
        paths, directories = tail_inputs(args.paths)
        config = AppConfig(
            live=live_options(args, paths, directories),
            options=options,
            theme=args.theme,
            request_id=args.request,
            window=window_arg(args),
            output_dir=output_dir(args),
            redactor=redactor,
        )
        # Builds the Extractor with ingest.batch.make_extractor, which loads a named
        # --tokenizer now: a bad one is a one-line error here, not a failure in the UI.
        app = SparseetyApp(config, themes=themes)
        app.run()
        return app.return_code or 0
    if command == "demo":
        return run_demo(args, themes, redactor)
    raise InputError(f"unknown command {command}")


def run_demo(args: argparse.Namespace, themes: object, redactor: Redactor | None = None) -> int:
    from sparseety_tui.ingest import replay
    from sparseety_tui.ui.app import AppConfig, SparseetyApp
    from sparseety_tui.ui.themes import ThemeSet

    assert isinstance(themes, ThemeSet)
    try:
        plan = replay.plan()
    except replay.DemoError as exc:
        raise InputError(str(exc)) from exc
    replayer = replay.Replayer(plan, rate=args.rate)
    replayer.start()
    try:
        paths = tuple(str(p) for p in plan.outputs.values())
        config = AppConfig(
            live=LiveOptions(paths=paths, start="start"),
            theme=args.theme,
            title="sparseety-tui demo",
            redactor=redactor,
        )
        app = SparseetyApp(config, themes=themes)
        app.run()
        return app.return_code or 0
    finally:
        replayer.stop()
        replay.cleanup(plan)
