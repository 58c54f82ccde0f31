"""`sparseety-tui config`: every setting, its effective value and where it came from."""

from __future__ import annotations

import argparse
import sys
from typing import Any

import orjson

from sparseety_tui.cli.config import BUILT_IN, user_file
from sparseety_tui.cli.config_keys import KEYS
from sparseety_tui.cli.shared_args import subcommands
from sparseety_tui.core.text import escape


def _builtin(parser: argparse.ArgumentParser, dest: str | None) -> Any:
    """The option's own default (the one place it is written), from any subcommand."""
    for subparser in subcommands(parser).values():
        for action in subparser._actions:
            if action.dest == dest:
                return action.default
    return None


def run(args: argparse.Namespace, parser: argparse.ArgumentParser) -> int:
    settings = args.config_settings
    print(escape(f"# user file: {user_file()}"))
    for key in KEYS:
        setting = settings[key.path]
        value = setting.value
        if setting.source == BUILT_IN and key.dest is not None:
            value = _builtin(parser, key.dest)
        shown = orjson.dumps(value).decode()
        print(escape(f"{key.path} = {shown}    # {setting.source}"))
    sys.stdout.flush()
    return 0
