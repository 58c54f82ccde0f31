"""Argument parsing for `extract`, `summary` and `config`; the work is in cli.extract,
cli.summary and cli.config_view (loaded when the command runs)."""

from __future__ import annotations

from typing import Any

from sparseety_tui.cli import tutorial_args
from sparseety_tui.cli.shared_args import add_core_options, add_filter_option, add_jobs_option


def add_extract(sub: Any) -> None:
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
    add_filter_option(extract, "only the requests it keeps")
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
    add_core_options(extract)
    tutorial_args.add_extract_options(extract)


def add_summary(sub: Any) -> None:
    summary = sub.add_parser("summary", help="totals, skips by kind, latency, throughput")
    summary.add_argument("paths", nargs="*", metavar="PATH", help="log files or directories")
    tutorial_args.add_input_option(summary)
    summary.add_argument("--json", action="store_true", help="machine-readable JSON")
    add_jobs_option(summary)
    add_filter_option(summary, "totals over the requests it keeps")
    add_core_options(summary)


def add_config(sub: Any) -> None:
    sub.add_parser(
        "config",
        help="the effective settings and where each came from",
        description="Print every setting a config file may give, its effective value and "
        "where it came from (built-in, the user file $XDG_CONFIG_HOME/sparseety-tui/"
        "config.toml, or --config FILE). Precedence: command line > --config > user file "
        "> built-in.",
    )
