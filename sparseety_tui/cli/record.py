"""`record`: run a local transformers MoE model over prompts and write a routing trace.

The capture package (torch, transformers models) is imported only inside ``run``, so
every other command, and ``--help``, works without the ``capture`` extra.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from sparseety_tui.cli.main import CliError
from sparseety_tui.core.literal import quote

NEEDS_TORCH = (
    "record needs torch (the capture extra): pip install 'sparseety-tui[capture]' "
    "(CPU-only torch: pip install torch --index-url https://download.pytorch.org/whl/cpu)"
)


def add_subcommand(sub: Any) -> None:
    rec = sub.add_parser(
        "record",
        help="run a local Hugging Face MoE model over prompts, write its real routing as a trace",
        description="Generate for each prompt with forward hooks on the model's routers, "
        "and write trace format v1 (docs/trace-format.md): token ids and text, per token and "
        "MoE layer the experts and weights the model used, times (received, first token, "
        "finished), counts. A local model folder only: nothing is downloaded (HF_HUB_OFFLINE=1 "
        "unless you set it). Needs the capture extra (torch).",
    )
    rec.add_argument("--model", required=True, metavar="DIR", help="local model folder")
    rec.add_argument(
        "--prompts",
        required=True,
        metavar="FILE",
        help='JSON Lines: {"prompt": "..."} or {"prompt_token_ids": [...]}, optional '
        '"request_id", "max_new_tokens"',
    )
    rec.add_argument(
        "-o", "--output", required=True, metavar="OUT", help="trace file ('-': stdout)"
    )
    rec.add_argument(
        "--max-new-tokens", type=int, default=32, metavar="N", help="per request (default 32)"
    )
    rec.add_argument("--device", default="cpu", help="cpu (default), cuda, cuda:1, ...")
    rec.add_argument(
        "--dtype", default="auto", help="auto (the folder's), float32, bfloat16, float16"
    )
    rec.add_argument(
        "--temperature",
        type=float,
        default=0.0,
        metavar="T",
        help="0 (default): greedy; above 0: sampling",
    )
    rec.add_argument("--top-p", type=float, default=1.0, metavar="P", help="with sampling")
    rec.add_argument("--seed", type=int, default=0, help="torch seed (default 0)")
    rec.add_argument(
        "--tokenizer",
        metavar="X",
        help="tokenizer.json or folder, if not the model folder's",
    )
    rec.add_argument(
        "--stream",
        action="store_true",
        help='write "type": "token" events between a received and a final record, '
        "instead of one record per request",
    )
    rec.add_argument("--no-progress", action="store_true", help="no progress bar on stderr")


def _check(args: argparse.Namespace) -> None:
    from sparseety_tui.capture.run import DTYPES

    if args.max_new_tokens < 1:
        raise CliError("--max-new-tokens must be >= 1")
    if args.dtype not in DTYPES:
        raise CliError(f"--dtype must be one of {', '.join(DTYPES)}")
    if not args.temperature >= 0:
        raise CliError("--temperature must be >= 0")
    if not 0 < args.top_p <= 1:
        raise CliError("--top-p must be in (0, 1]")
    if not Path(args.model).is_dir():
        raise CliError(f"--model {quote(args.model)}: not a folder")
    if args.output != "-" and Path(args.output).resolve() == Path(args.prompts).resolve():
        raise CliError("-o is the prompts file: refusing to overwrite what is read")


def run(args: argparse.Namespace) -> int:
    _check(args)
    from sparseety_tui.capture.prompts import PromptsError, read_prompts

    try:
        specs = read_prompts(Path(args.prompts))
    except PromptsError as exc:
        raise CliError(str(exc)) from None
    try:
        import torch  # noqa: F401  (the extra's marker: say what to install, once)
    except ImportError:
        raise CliError(NEEDS_TORCH) from None
    from sparseety_tui.capture.errors import CaptureError
    from sparseety_tui.capture.run import RecordOptions
    from sparseety_tui.capture.run import run as record_run

    options = RecordOptions(
        model_dir=Path(args.model),
        tokenizer=Path(args.tokenizer) if args.tokenizer else None,
        max_new_tokens=args.max_new_tokens,
        device=args.device,
        dtype=args.dtype,
        temperature=args.temperature,
        top_p=args.top_p,
        seed=args.seed,
        stream=args.stream,
    )
    progress = not args.no_progress and sys.stderr.isatty()
    try:
        if args.output == "-":
            record_run(options, specs, sys.stdout, progress)
        else:
            with open(args.output, "w", encoding="utf-8") as out:
                lines = record_run(options, specs, out, progress)
            print(f"wrote {lines} lines to {quote(args.output)}", file=sys.stderr)
    except CaptureError as exc:
        raise CliError(str(exc)) from None
    except (OSError, ValueError) as exc:
        if isinstance(exc, OSError) and exc.filename == args.output:
            raise
        raise CliError(f"{type(exc).__name__}: {exc}") from None
    return 0
