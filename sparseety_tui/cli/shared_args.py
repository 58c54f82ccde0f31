"""Options every command has: ``--config`` and redaction (``--redact``, its key file,
``--keep-routing``)."""

from __future__ import annotations

import argparse
from collections.abc import Sequence

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
