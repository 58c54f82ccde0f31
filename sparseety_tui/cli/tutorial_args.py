"""The tutorial's spellings: ``--input``/``--output`` beside the positional form,
``--sparse-metrics true``, the ``extract.*`` keys as options, and ``analyze --type``."""

from __future__ import annotations

import argparse
from typing import Any

from sparseety_tui.cli.shared_args import add_core_options


def boolean(text: str) -> bool:
    """``true``/``false`` (also yes/no, on/off, 1/0), as the tutorial writes them."""
    lowered = text.strip().lower()
    if lowered in ("true", "yes", "on", "1"):
        return True
    if lowered in ("false", "no", "off", "0"):
        return False
    raise argparse.ArgumentTypeError(f"expected true or false, got {text!r}")


def add_input_option(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--input",
        action="append",
        metavar="PATH",
        help="a log file or directory (as a PATH argument; may be repeated)",
    )


def add_extract_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--sparse-metrics",
        type=boolean,
        default=True,
        metavar="BOOL",
        help="the sparse figures of each request (effective compute, skips, experts; default true)",
    )
    parser.add_argument(
        "--include-skipped",
        type=boolean,
        default=True,
        metavar="BOOL",
        help="the skipped-tokens-by-kind counts of each request (default true)",
    )
    parser.add_argument(
        "--include-attention-weights",
        type=boolean,
        default=False,
        metavar="BOOL",
        help="attention weights: no supported log format has them, so true only says so",
    )
    parser.add_argument(
        "--max-tokens-per-request",
        type=int,
        metavar="N",
        help="leave out requests of more than N tokens (prompt + completion; counted on stderr)",
    )


#: ``analyze --type`` values.
ANALYSES = ("sparse_skipped",)


def add_analyze(sub: Any) -> None:
    analyze = sub.add_parser(
        "analyze",
        help="the tutorial's report: requests, prompt/completion/skipped tokens, skip ratio",
        description="Print the tutorial's lines (Total requests, Total prompt tokens, Total "
        "completion tokens, Total skipped tokens, Skip ratio) for logs or for an extract "
        "output (which is read back as the JSONL trace format). The figures are summary "
        "--json's: an unknown one prints as 'unknown'.",
    )
    analyze.add_argument("paths", nargs="*", metavar="PATH", help="log files or extract outputs")
    add_input_option(analyze)
    analyze.add_argument("--type", choices=ANALYSES, default="sparse_skipped", help="the report")
    add_core_options(analyze)
