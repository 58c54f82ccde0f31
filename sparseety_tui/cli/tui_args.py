"""Argument parsing for the interactive subcommands, `tail` and `demo`; the UI (cli.tui,
Textual) loads only when one of them runs, so the batch commands never import it."""

from __future__ import annotations

from typing import Any

from sparseety_tui.cli.otlp_args import add_otlp_options
from sparseety_tui.cli.shared_args import add_core_options


def add_subcommands(sub: Any) -> None:
    tail = sub.add_parser(
        "tail",
        help="follow logs live in the terminal UI",
        description="Follow one or more logs live (like tail -F: rotation and truncation are "
        "followed, and a file that does not exist yet is awaited). A directory: its files, "
        "and those that appear in it later. Start position: by default the existing content is shown; a file of up "
        "to 64 MB is read whole at start, a bigger one shows its last 8 MB first and reads "
        "the older part in the background (progress bar in the status line) while the UI "
        "stays usable. --last N starts N lines before the end; --from-start reads whole "
        "files in order, however big (the newest requests show up last). With --otlp or "
        "--otlp-grpc it also receives OpenTelemetry traces live (from vllm serve "
        "--otlp-traces-endpoint), with or without a PATH.",
    )
    tail.add_argument("paths", nargs="*", metavar="PATH", help="log files or directories to follow")
    add_core_options(tail)
    tail.add_argument("--theme", metavar="NAME", help="dark, light or ansi (16 colours)")
    tail.add_argument(
        "--request",
        metavar="ID",
        help="open straight on this request (its id, or a prefix only one id starts with)",
    )
    start = tail.add_mutually_exclusive_group()
    start.add_argument(
        "--from-start", action="store_true", help="read whole files in order, however big"
    )
    start.add_argument("--last", type=int, metavar="N", help="start N lines before the end")
    tail.add_argument("--poll", action="store_true", help="poll instead of file events (NFS)")
    tail.add_argument(
        "--replay",
        action="store_true",
        help="play finished logs as if live, by their own times (keys: P pause, . step, "
        "[ ] -/+1 min, { } -/+10 min, J seek to a time, < > speed); the logs are read in place, "
        "never written",
    )
    tail.add_argument(
        "--speed",
        type=float,
        default=1.0,
        metavar="X",
        help="--replay: log seconds per second (default 1: real time; 10: ten times faster)",
    )
    tail.add_argument(
        "--from",
        dest="replay_from",
        metavar="T",
        help="--replay: start at log time T (what comes before is shown at once); "
        "2026-11-30T10:00, 10:00, or 10m (before the logs' end)",
    )
    add_otlp_options(tail, remote_options=True)
    tail.add_argument(
        "--output-dir",
        metavar="DIR",
        help="where screenshots and text that could not be copied go (default: "
        "$SPARSEETY_TUI_OUTPUT_DIR, else the current directory)",
    )

    demo = sub.add_parser(
        "demo",
        help="replay the bundled sample logs in the UI (tail --replay of sample_logs/)",
        description="tail --replay of the logs directly in sample_logs/ (each file from the "
        "start, side by side), read in place.",
    )
    demo.add_argument("--theme", metavar="NAME", help="dark, light or ansi (16 colours)")
    demo.add_argument(
        "--speed",
        type=float,
        default=10.0,
        metavar="X",
        help="log seconds per second (default 10)",
    )
