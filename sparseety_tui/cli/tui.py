"""Start the UI for ``tail`` and ``demo`` (called by cli.tui_args once arguments are parsed)."""

from __future__ import annotations

import argparse
import os

from sparseety_tui.ingest.batch import InputError, Options, check_readable, log_files_in
from sparseety_tui.ingest.snapshot import LiveOptions, StartMode


def tail_paths(paths: list[str]) -> tuple[str, ...]:
    files: list[str] = []
    for path in paths:
        check_readable(path)
        files.extend(log_files_in(path) if os.path.isdir(path) else [path])
    if not files:
        raise InputError("no log files to follow")
    return tuple(files)


def live_options(args: argparse.Namespace, paths: tuple[str, ...]) -> LiveOptions:
    start: StartMode = "default"
    last = getattr(args, "last", None)
    if getattr(args, "from_start", False):
        start = "start"
    elif last is not None:
        if last < 0:
            raise InputError("--last must be >= 0")
        start = "last"
    return LiveOptions(paths=paths, start=start, last_lines=last, poll=bool(args.poll))


def run(command: str, args: argparse.Namespace) -> int:
    from sparseety_tui.ui.app import AppConfig, SparseetyApp
    from sparseety_tui.ui.themes import ThemeError, load_themes

    themes = load_themes()
    if args.theme:
        try:
            themes.resolve(args.theme)
        except ThemeError as exc:
            raise InputError(str(exc)) from exc
    if command == "tail":
        options = Options(
            format=args.format, tokenizer=args.tokenizer, model_config=args.model_config
        )
        paths = tail_paths(args.paths)
        config = AppConfig(
            live=live_options(args, paths),
            options=options,
            theme=args.theme,
            request_id=args.request,
        )
        app = SparseetyApp(config, themes=themes)
        app.run()
        return app.return_code or 0
    if command == "demo":
        return run_demo(args, themes)
    raise InputError(f"unknown command {command}")


def run_demo(args: argparse.Namespace, themes: object) -> int:
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
        )
        app = SparseetyApp(config, themes=themes)
        app.run()
        return app.return_code or 0
    finally:
        replayer.stop()
        replay.cleanup(plan)
