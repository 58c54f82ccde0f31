"""`record`: run a local transformers MoE model over prompts and write a routing trace.

The capture package (torch, transformers models) is imported only inside ``run``, so
every other command, and ``--help``, works without the ``capture`` extra.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from sparseety_tui.cli.errors import CliError, warn
from sparseety_tui.core.text import quote

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


def add_import_subcommand(sub: Any) -> None:
    imp = sub.add_parser(
        "import-routing",
        help="saved vLLM/SGLang responses with routed experts or timing (or SGLang expert "
        "dumps) -> trace",
        description="Turn what a server returned about routing into what the tool reads: "
        "vLLM responses (prompt_routed_experts, choices[].routed_experts: nested lists or "
        "base64 .npy; vllm serve --enable-return-routed-experts) and SGLang responses "
        "(meta_info.routed_experts or choices[].sgl_ext.routed_experts: base64 int32; "
        "--enable-return-routed-experts and return_routed_experts in the request), saved as "
        'JSON / JSON Lines (a response, a list, or {"request": ..., "response": ...}), into '
        "trace records, with the timing the responses carry (SGLang meta_info; vLLM's metrics "
        "object, --enable-per-request-metrics), a response with timing and no routing as a "
        "record without routing; SGLang expert_distribution_recorder_*.pt dumps: stat mode into a "
        "layer_id,expert_id,count CSV, per_token mode into token events joined to --requests "
        "(.pt needs the capture extra).",
    )
    imp.add_argument("paths", nargs="+", metavar="FILE", help="response files or .pt dumps")
    imp.add_argument(
        "-o", "--output", required=True, metavar="OUT", help="output file ('-': stdout)"
    )
    imp.add_argument(
        "--moe-layers",
        metavar="L,L,...",
        help="the model layer of each routing column (or, for an array sized by all layers, "
        "the columns to keep); default: columns stay unnamed",
    )
    imp.add_argument("--top-k", type=int, metavar="K", help="to shape SGLang's flat arrays")
    imp.add_argument("--layers", type=int, metavar="N", help="likewise: layer columns a row")
    imp.add_argument("--total-experts", type=int, metavar="E", help="routed experts a layer")
    imp.add_argument(
        "--requests",
        metavar="TRACE",
        help="per_token dumps: a trace with the requests' prompt/completion token ids",
    )


def _layer_list(text: str | None) -> list[int] | None:
    if text is None:
        return None
    try:
        layers = [int(part) for part in text.split(",")]
    except ValueError:
        raise CliError(f"--moe-layers {quote(text)}: comma-separated layer numbers") from None
    if not layers or min(layers) < 0 or len(set(layers)) != len(layers):
        raise CliError(f"--moe-layers {quote(text)}: distinct layer numbers >= 0")
    return layers


def run_import(args: argparse.Namespace) -> int:
    import json

    from sparseety_tui.capture.responses import (
        ConvertOptions,
        ResponseError,
        convert_value,
        read_values,
    )

    for name in ("top_k", "layers", "total_experts"):
        value = getattr(args, name)
        if value is not None and value < 1:
            raise CliError(f"--{name.replace('_', '-')} must be >= 1")
    options = ConvertOptions(
        _layer_list(args.moe_layers), args.top_k, args.layers, args.total_experts
    )
    paths = [Path(p) for p in args.paths]
    for path in paths:
        if not path.is_file():
            raise CliError(f"{quote(str(path))}: not a file")
        if args.output != "-" and Path(args.output).resolve() == path.resolve():
            raise CliError("-o is an input: refusing to overwrite what is read")
    dumps = [p for p in paths if p.suffix == ".pt"]
    lines: list[str] = []
    failed: list[str] = []
    ignored: dict[str, int] = {}
    if dumps:
        lines = _dump_lines(dumps, paths, args)
    else:
        total = 0
        for path in paths:
            for where, value in read_values(path):
                total += 1
                try:
                    if isinstance(value, ResponseError):
                        raise value
                    lines.extend(json.dumps(rec) for rec in convert_value(value, options, ignored))
                except ResponseError as exc:
                    failed.append(f"{where}: {exc}")
        if failed:
            for message in failed[:20]:
                warn(f"not converted: {message}")
        for what, n in sorted(ignored.items()):
            warn(f"left unknown: {what} ({n})")
    _write(args.output, lines)
    if failed:
        raise CliError(f"{len(failed)} of {total} responses not converted (see above)")
    return 0


def _dump_lines(dumps: list[Path], paths: list[Path], args: argparse.Namespace) -> list[str]:
    import json

    if len(dumps) != len(paths):
        raise CliError("give .pt dumps alone, not with response files")
    try:
        import torch  # noqa: F401
    except ImportError:
        raise CliError(NEEDS_TORCH.replace("record needs", ".pt dumps need")) from None
    from sparseety_tui.capture.sglang_dump import (
        DumpError,
        JoinStats,
        is_stat,
        load,
        per_token_events,
        read_requests,
        stat_csv,
    )

    try:
        loaded = [load(p) for p in dumps]
    except DumpError as exc:
        raise CliError(str(exc)) from None
    stat = [is_stat(d) for d in loaded]
    if all(stat):
        if len(loaded) != 1:
            raise CliError("stat dumps are all-reduced counts: convert one at a time")
        return stat_csv(loaded[0])
    if any(stat):
        raise CliError("stat and per_token dumps mixed: convert them apart")
    if args.requests is None:
        raise CliError(
            "per_token dumps name no request: give --requests TRACE with their token ids"
        )
    requests = read_requests(Path(args.requests))
    if not requests:
        raise CliError(
            f"--requests {quote(args.requests)}: no request record with prompt_token_ids"
        )
    stats = JoinStats()
    head: dict[str, Any] = {"type": "meta"}
    layers = _layer_list(args.moe_layers)
    if layers is not None:
        head["moe_layers"] = layers
    lines = [json.dumps(e) for e in per_token_events(loaded, requests, stats)]
    head["x_sglang_per_token"] = {
        "tokens": stats.tokens,
        "joined": stats.joined,
        "ambiguous": stats.ambiguous,
        "unmatched": stats.unmatched,
        "repeated": stats.repeated,
    }
    warn(
        f"{stats.joined} of {stats.tokens} dumped tokens joined to {len(stats.by_request)} "
        f"requests ({stats.ambiguous} ambiguous, {stats.unmatched} unmatched, "
        f"{stats.repeated} repeated)"
    )
    return [json.dumps(head), *lines]


def _write(output: str, lines: list[str]) -> None:
    text = "".join(line + "\n" for line in lines)
    if output == "-":
        sys.stdout.write(text)
    else:
        Path(output).write_text(text, encoding="utf-8")
