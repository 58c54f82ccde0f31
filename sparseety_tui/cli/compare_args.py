"""Argument parsing for `compare`; the work is in cli.compare (loaded when it runs)."""

from __future__ import annotations

from typing import Any

from sparseety_tui.cli.shared_args import add_input_options, add_jobs_option
from sparseety_tui.core.compare import (
    DEFAULT_REGRESSIONS,
    DEFAULT_RESAMPLES,
    DEFAULT_SEED,
)

DESCRIPTION = (
    "Compare a baseline run with a candidate: each side's summary figures (effective "
    "compute, skips by kind, latency and TTFT quantiles, tokens/s, cache hit rate, expert "
    "imbalance, errors) and their deltas. Requests are matched by id when the sides share "
    "ids, else by prompt (a hash of its text or token ids; prompts are never printed), "
    "else the workloads are compared as a whole. Matched requests give paired deltas with "
    "a seeded bootstrap 95% interval, and the regressions (largest latency or compute "
    "increase first)."
)

EPILOG = (
    "sides: compare BASE CAND (each a log or a directory); several logs a side: "
    "compare BASE1 BASE2 --vs CAND1 CAND2; one log's two time windows: compare LOG "
    "--baseline-window 10:00..10:30 --candidate-window 10:30..11:00 (a window is "
    "SINCE..UNTIL, either side may be empty, read as --since/--until)."
)


def add_subcommand(sub: Any) -> None:
    parser = sub.add_parser(
        "compare",
        help="baseline vs candidate: figures, deltas, paired CIs, regressions",
        description=DESCRIPTION,
        epilog=EPILOG,
    )
    parser.add_argument(
        "paths",
        nargs="+",
        metavar="PATH",
        help="BASELINE CANDIDATE; or the baseline's logs with --vs; or one log with windows",
    )
    parser.add_argument(
        "--vs", nargs="+", metavar="PATH", help="the candidate's logs (PATHs are the baseline's)"
    )
    parser.add_argument("--baseline-window", metavar="A..B", help="the baseline's time window")
    parser.add_argument("--candidate-window", metavar="C..D", help="the candidate's time window")
    parser.add_argument("--json", action="store_true", help="machine-readable JSON")
    parser.add_argument(
        "--tui",
        action="store_true",
        help="the compare screen: figures side by side, per-request changes, both sides "
        "of a request (⏎)",
    )
    parser.add_argument("--theme", metavar="NAME", help="--tui: dark, light or ansi (16 colours)")
    parser.add_argument(
        "--plot", metavar="OUT", help="also write both sides' per-minute plots (.png/.svg/.pdf)"
    )
    parser.add_argument(
        "--resamples",
        type=int,
        default=DEFAULT_RESAMPLES,
        metavar="N",
        help=f"bootstrap resamples for the paired intervals (default {DEFAULT_RESAMPLES})",
    )
    parser.add_argument(
        "--seed",
        type=int,
        default=DEFAULT_SEED,
        metavar="N",
        help=f"bootstrap seed (default {DEFAULT_SEED}: the same interval every run)",
    )
    parser.add_argument(
        "--regressions",
        type=int,
        default=DEFAULT_REGRESSIONS,
        metavar="N",
        help=f"regressions listed (default {DEFAULT_REGRESSIONS})",
    )
    add_jobs_option(parser)
    add_input_options(parser)
