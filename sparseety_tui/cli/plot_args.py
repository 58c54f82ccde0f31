"""Argument parsing for `plot`; matplotlib loads only when it runs (cli.plot_render)."""

from __future__ import annotations

from typing import Any

from sparseety_tui.cli.shared_args import add_core_options, add_jobs_option


def add_subcommand(sub: Any) -> None:
    parser = sub.add_parser(
        "plot",
        help="per-minute latency, TTFT, tokens/s, requests/s, cache, skips, errors as an image",
        description="Draw the per-minute trends of logs (the TUI's trends screen: latency "
        "and TTFT p50/p95/p99, tokens/s, requests/s, cache hit rate, compute and skips, "
        "errors) to a PNG, SVG or PDF. Needs matplotlib: pip install 'sparseety-tui[plot]'.",
    )
    parser.add_argument("paths", nargs="+", metavar="PATH", help="log files or directories")
    parser.add_argument(
        "-o", "--output", required=True, metavar="OUT", help="report.png, report.svg or report.pdf"
    )
    add_jobs_option(parser)
    add_core_options(parser)
