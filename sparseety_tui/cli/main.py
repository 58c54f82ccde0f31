"""Command line: `extract`, `summary`, `analyze`, `compare`, `plot` (batch), `tail`, `demo`
(the TUI), `serve` (HTTP), `redact` (a shareable copy of a log), `config` (the effective
settings) and `record` (routing capture from a local model; needs the capture extra).

This module assembles the parser from each command's ``*_args`` module and dispatches to
the command; what commands share (errors, warnings, common options and their checks) is in
``cli.errors`` and ``cli.shared_args``, which never import this module.

Imports stay light: Textual, numpy, tokenizers and transformers load only inside the
subcommand that needs them, so `sparseety-tui --help` is instant.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable, Sequence
from typing import NoReturn

from sparseety_tui import __version__
from sparseety_tui.cli.errors import PROG, CliError, warn
from sparseety_tui.cli.shared_args import (
    check_not_negative,
    input_paths,
    read_options,
    subcommands,
    window_arg,
)
from sparseety_tui.core.text import escape

__all__ = ["CliError", "build_parser", "main", "parse", "run"]

#: The commands that honour --redact (every one takes --config).
REDACTING = ("extract", "summary", "analyze", "compare", "plot", "serve", "tail", "demo", "redact")


class _Parser(argparse.ArgumentParser):
    """argparse, with its error messages (which quote the arguments, file names among
    them) shown literally like everything else the CLI prints."""

    def error(self, message: str) -> NoReturn:
        super().error(escape(message))


def build_parser() -> argparse.ArgumentParser:
    from sparseety_tui.cli import (
        batch_args,
        compare_args,
        plot_args,
        record,
        redact_log,
        serve_args,
        tui_args,
        tutorial_args,
    )
    from sparseety_tui.cli.shared_args import add_input_options, add_shared_options

    parser = _Parser(
        prog=PROG,
        description="See what a sparse LLM serving system really computed: follow vLLM, "
        "SGLang and JSONL trace logs.",
    )
    parser.add_argument("--version", action="version", version=f"{PROG} {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    batch_args.add_extract(sub)
    batch_args.add_summary(sub)
    tutorial_args.add_analyze(sub)
    tui_args.add_subcommands(sub)
    serve_args.add_subcommand(sub)
    compare_args.add_subcommand(sub)
    plot_args.add_subcommand(sub)
    record.add_subcommand(sub)
    record.add_import_subcommand(sub)
    batch_args.add_config(sub)
    redact_log.add_subcommand(sub)
    add_input_options(sub.choices["redact"])
    for name, subparser in sub.choices.items():
        add_shared_options(subparser, redaction=name in REDACTING, keep_routing=name != "serve")
    return parser


def parse(argv: Sequence[str] | None = None) -> tuple[argparse.ArgumentParser, argparse.Namespace]:
    """The parsed arguments, with the config files' values as the options' defaults
    (``cli.config``); ``args.config_settings`` holds every key's value and source."""
    from sparseety_tui.cli import config
    from sparseety_tui.cli.shared_args import normalize_redact

    argv = normalize_redact(sys.argv[1:] if argv is None else argv)
    settings = config.load(config.config_arg(argv))
    parser = build_parser()
    for name, subparser in subcommands(parser).items():
        config.apply(name, subparser, settings)
    args = parser.parse_args(argv)
    args.config_settings = settings
    return parser, args


def run(argv: Sequence[str] | None = None) -> int:
    parser, args = parse(argv)
    if args.command is None:
        parser.print_help()
        return 0
    return _HANDLERS[args.command](args)


def _run_extract(args: argparse.Namespace) -> int:
    from sparseety_tui.cli import extract

    input_paths(args)
    check_not_negative(args.limit, "--limit")
    check_not_negative(args.retries, "--retries")
    window_arg(args)
    return extract.run(args, read_options(args))


def _run_summary(args: argparse.Namespace) -> int:
    from sparseety_tui.cli import summary

    input_paths(args)
    check_not_negative(args.jobs, "--jobs")
    window_arg(args)
    return summary.run(args, read_options(args))


def _run_analyze(args: argparse.Namespace) -> int:
    from sparseety_tui.cli import analyze

    input_paths(args)
    window_arg(args)
    return analyze.run(args, read_options(args))


def _run_redact(args: argparse.Namespace) -> int:
    from sparseety_tui.cli import redact_log

    return redact_log.run(args, read_options(args))


def _run_config(args: argparse.Namespace) -> int:
    from sparseety_tui.cli import config_view

    return config_view.run(args, build_parser())


def _run_compare(args: argparse.Namespace) -> int:
    from sparseety_tui.cli import compare

    return compare.run(args, read_options(args))


def _run_plot(args: argparse.Namespace) -> int:
    from sparseety_tui.cli import plot

    check_not_negative(args.jobs, "--jobs")
    window_arg(args)
    return plot.run(args, read_options(args))


def _run_serve(args: argparse.Namespace) -> int:
    from sparseety_tui.cli import serve

    return serve.run(args, read_options(args))


def _run_tui(args: argparse.Namespace) -> int:
    from sparseety_tui.cli import tui

    return tui.run(args.command, args)


def _run_record(args: argparse.Namespace) -> int:
    from sparseety_tui.cli import record

    return record.run(args)


def _run_import(args: argparse.Namespace) -> int:
    from sparseety_tui.cli import record

    return record.run_import(args)


_HANDLERS: dict[str, Callable[[argparse.Namespace], int]] = {
    "extract": _run_extract,
    "summary": _run_summary,
    "serve": _run_serve,
    "record": _run_record,
    "import-routing": _run_import,
    "analyze": _run_analyze,
    "compare": _run_compare,
    "plot": _run_plot,
    "tail": _run_tui,
    "demo": _run_tui,
    "config": _run_config,
    "redact": _run_redact,
}


def main(argv: Sequence[str] | None = None) -> None:
    from sparseety_tui.core.figures import ModelConfigError
    from sparseety_tui.core.tokens import TokenizerError
    from sparseety_tui.formats import UnknownFormatError
    from sparseety_tui.ingest.batch import InputError
    from sparseety_tui.sources import os_reason

    try:
        code = run(argv)
    except (CliError, InputError, ModelConfigError, TokenizerError, UnknownFormatError) as exc:
        warn(f"error: {exc}")
        code = 2
    except BrokenPipeError:
        code = 0  # `| head` closed the pipe: not an error
        sys.stderr.close()
    except OSError as exc:  # the system refused something the commands did not expect to fail
        where = f" ({exc.filename})" if exc.filename else ""
        warn(f"error: {os_reason(exc)}{where}")
        code = 2
    except KeyboardInterrupt:
        warn("interrupted")
        code = 130
    sys.exit(code)
