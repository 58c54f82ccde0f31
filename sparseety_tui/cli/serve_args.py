"""Argument parsing for `serve`; the ASGI stack loads only when it runs (cli.serve)."""

from __future__ import annotations

import argparse
from typing import Any

from sparseety_tui.cli.otlp_args import add_otlp_options
from sparseety_tui.cli.shared_args import add_input_options
from sparseety_tui.serve import settings as defaults
from sparseety_tui.serve.openapi import curl_examples

DESCRIPTION = (
    "Follow logs headless (the ingest of tail: rotation, backfill, every line counted) and "
    "serve what was read over HTTP on 127.0.0.1: /summary (= summary --json), /requests "
    "(= extract --filter --limit), /requests/ID (the detail), POST /extract (= extract for "
    "the records sent), /metrics (Prometheus) and /openapi.json. Read-only on the logs. "
    "Without PATH only POST /extract has anything to say. With --redact every answer is "
    "redacted (and says what was, in counts per rule). With --otlp or --otlp-grpc it also "
    "receives OpenTelemetry traces live (vllm serve --otlp-traces-endpoint); /health then "
    "counts what they took and refused."
)


def add_subcommand(sub: Any) -> None:
    serve = sub.add_parser(
        "serve",
        help="HTTP API and Prometheus exporter over followed logs (127.0.0.1)",
        description=DESCRIPTION,
        epilog="examples, one per route:\n" + curl_examples(),
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    serve.add_argument("paths", nargs="*", metavar="PATH", help="log files or directories")
    add_input_options(serve)
    serve.add_argument(
        "--host",
        default=defaults.DEFAULT_HOST,
        help=f"address to bind (default {defaults.DEFAULT_HOST}; any other needs "
        "--allow-remote and --token-file)",
    )
    serve.add_argument(
        "--port",
        type=int,
        default=defaults.DEFAULT_PORT,
        help=f"port (default {defaults.DEFAULT_PORT}; 0: a free one, printed at start)",
    )
    serve.add_argument(
        "--workers",
        "--worker",
        type=int,
        default=defaults.DEFAULT_WORKERS,
        metavar="N",
        help="POST /extract extractions run at once, in threads of this one process "
        f"(default {defaults.DEFAULT_WORKERS}); more wait. Not server processes: those "
        "could not share the followed logs' state",
    )
    serve.add_argument(
        "--allow-remote",
        action="store_true",
        help="allow a --host other than loopback (needs --token-file)",
    )
    serve.add_argument(
        "--token-file",
        metavar="FILE",
        help="require 'Authorization: Bearer TOKEN' with the token in FILE (mode 600, "
        "at least 16 characters; e.g. openssl rand -hex 32 > FILE)",
    )
    serve.add_argument(
        "--max-body",
        type=int,
        default=defaults.DEFAULT_MAX_BODY,
        metavar="BYTES",
        help=f"largest request body; bigger is 413 (default {defaults.DEFAULT_MAX_BODY:,})",
    )
    serve.add_argument(
        "--text",
        action="store_true",
        help="serve prompts and completions (sensitive; as extract --text)",
    )
    serve.add_argument(
        "--keep-routing",
        action="store_true",
        help="serve per-token routing in request details (it reveals the text as much as "
        "the text does)",
    )
    serve.add_argument(
        "--expert-series",
        action="store_true",
        help="export tokens per (model, layer, expert) as sparseety_expert_load_total",
    )
    serve.add_argument(
        "--expert-series-budget",
        type=int,
        default=defaults.DEFAULT_EXPERT_SERIES_BUDGET,
        metavar="N",
        help="at most N such series (default "
        f"{defaults.DEFAULT_EXPERT_SERIES_BUDGET:,}); those left out are counted in "
        "sparseety_expert_series_omitted",
    )
    serve.add_argument("--poll", action="store_true", help="poll instead of file events (NFS)")
    # --allow-remote and --token-file (above) cover the receivers too: one token for all.
    add_otlp_options(serve, remote_options=False)


def settings_of(args: argparse.Namespace) -> defaults.ServeSettings:
    return defaults.ServeSettings(
        host=args.host,
        port=args.port,
        allow_remote=args.allow_remote,
        token_file=args.token_file,
        max_body=args.max_body,
        workers=args.workers,
        text=args.text,
        keep_routing=args.keep_routing,
        expert_series=args.expert_series,
        expert_series_budget=args.expert_series_budget,
    )
