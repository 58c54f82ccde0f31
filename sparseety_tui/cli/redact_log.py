"""`sparseety-tui redact IN... -o OUT`: a redacted copy of each log, in its own format
(``core.redact.logcopy``), to attach to a public issue. One input: OUT is the copy; more:
OUT is a directory, one copy per input under its own name. Never writes over an input.

The argument parser is built for every command (``--help`` included): the reading and
writing code is imported when the command runs, not here.
"""

from __future__ import annotations

import argparse
import os
from collections.abc import Iterator
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from sparseety_tui.core.redact import Counter, Redactor, TokenRouting
    from sparseety_tui.ingest.batch import Options


def add_subcommand(sub: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    redact = sub.add_parser(
        "redact",
        help="a redacted copy of logs, in their own formats, to share",
        description="Write a redacted copy of each log in its own format (a vLLM log stays "
        "a vLLM log, a trace a trace), so that anyone can run this tool on it: every count, "
        "token figure, timing and engine statistic of summary --json stays the same (counts "
        "made from text or token ids are written in as numbers first). The rules of --redact "
        "apply (always on here); '--redact text' drops the prompts and completions of JSON "
        "records; per-token routing and token ids go unless --keep-routing (the copy's "
        "expert and head heat maps are then empty).",
    )
    redact.add_argument("paths", nargs="+", metavar="IN", help="log files")
    redact.add_argument(
        "-o",
        "--output",
        required=True,
        metavar="OUT",
        help="the copy (one input) or a directory of copies (several)",
    )


def _targets(paths: list[str], output: str) -> list[tuple[str, str]]:
    from sparseety_tui.cli.extract import check_output_file
    from sparseety_tui.core.text import quote
    from sparseety_tui.ingest.batch import InputError

    if len(paths) == 1 and not os.path.isdir(output):
        check_output_file(output)
        return [(paths[0], output)]
    if not os.path.isdir(output):
        raise InputError(f"{quote(output)}: several inputs need -o DIRECTORY (it must exist)")
    names = [os.path.basename(p) for p in paths]
    if len(set(names)) < len(names):
        raise InputError("two inputs have the same name: their copies would overwrite each other")
    return [(p, os.path.join(output, name)) for p, name in zip(paths, names)]


def _token_routing(path: str) -> TokenRouting:
    """The first pass: the experts of the file's token lines."""
    import orjson

    from sparseety_tui.core.redact import TokenRouting

    tokens = TokenRouting()
    with open(path, "rb") as handle:
        for raw in handle:
            if b'"token"' in raw and b'"experts"' in raw:
                try:
                    document = orjson.loads(raw)
                except orjson.JSONDecodeError:
                    continue
                if isinstance(document, dict) and document.get("type") == "token":
                    tokens.collect(document)
    tokens.finish()
    return tokens


def _lines(path: str, redactor: Redactor, count: Counter) -> Iterator[bytes]:
    from sparseety_tui.core.redact import redact_line

    tokens = None if redactor.keep_routing else _token_routing(path)
    with open(path, "rb") as handle:
        for raw in handle:
            ending = b"\r\n" if raw.endswith(b"\r\n") else b"\n" if raw.endswith(b"\n") else b""
            body = raw[: len(raw) - len(ending)].decode("utf-8", "surrogateescape")
            out = redact_line(body, redactor, count, tokens)
            yield out.encode("utf-8", "surrogateescape") + ending


def run(args: argparse.Namespace, options: Options) -> int:
    from sparseety_tui.cli.errors import warn
    from sparseety_tui.cli.extract import refuse_input_as_output, write_atomic
    from sparseety_tui.cli.redaction import redact_settings, redactor_of
    from sparseety_tui.cli.redaction import report as report_redaction
    from sparseety_tui.core.redact import TEXT_KEPT, TOKEN_ROUTING
    from sparseety_tui.ingest.batch import InputError, batch_inputs, ingest_file, make_extractor

    if redact_settings(args).mode == "off":
        args.redact = "on"  # the command is redaction: --redact is implied
    redactor = redactor_of(args)
    assert redactor is not None  # the mode is on
    files = batch_inputs(args.paths).files
    if len(files) != len(args.paths):
        raise InputError("redact takes log files, not directories")
    for path, target in _targets(files, args.output):
        refuse_input_as_output(target, files)
        extractor = make_extractor(options)
        ingest_file(extractor, path)  # the tokenizer this file's text is counted with
        count = extractor.tokens_for(0).count
        write_atomic(target, _lines(path, redactor, count))
    report_redaction(redactor)
    if redactor.counts[TEXT_KEPT]:
        warn(
            f"--redact text: {redactor.counts[TEXT_KEPT]:,} server-log lines keep their "
            "prompt text, redacted by the rules (their format has no place for a count, "
            "which may be made from that text)"
        )
    if redactor.counts[TOKEN_ROUTING]:
        warn(
            f"{redactor.counts[TOKEN_ROUTING]:,} token lines lost their experts: the copy's "
            "expert heat map and routed-slot figures differ from the original's "
            "(--keep-routing keeps them)"
        )
    return 0
