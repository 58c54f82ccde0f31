"""`sparseety-tui extract`: one JSON object per request, for files or directory batches."""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
from collections.abc import Iterator
from typing import IO

from sparseety_tui.cli.errors import warn
from sparseety_tui.cli.extract_records import RecordOptions
from sparseety_tui.cli.redaction import redactor_of
from sparseety_tui.cli.redaction import report as report_redaction
from sparseety_tui.cli.shared_args import selection_args
from sparseety_tui.core.figures import ModelShape
from sparseety_tui.core.query import Selection
from sparseety_tui.core.report import extract_lines
from sparseety_tui.core.text import escape, escape_json, quote
from sparseety_tui.core.tokens import TokenCounter
from sparseety_tui.ingest.batch import (
    InputError,
    Options,
    batch_inputs,
    ingest_file,
    load_tokens,
    make_extractor,
    make_shape,
)
from sparseety_tui.sources import os_reason

#: Output lines gathered before one write: ``escape_json`` then scans a block, not a line.
WRITE_BLOCK_BYTES = 1 << 20


def _write_all(out: IO[bytes], lines: Iterator[bytes]) -> None:
    block: list[bytes] = []
    size = 0
    for line in lines:
        block.append(line)
        size += len(line)
        if size >= WRITE_BLOCK_BYTES:
            out.write(escape_json(b"".join(block)))
            block.clear()
            size = 0
    out.write(escape_json(b"".join(block)))


def write_atomic(path: str, lines: Iterator[bytes]) -> None:
    """Write to a temporary file beside ``path`` and rename: readers never see half a file."""
    directory = os.path.dirname(os.path.abspath(path))
    fd, tmp = tempfile.mkstemp(prefix=".", suffix=".tmp", dir=directory)
    try:
        with os.fdopen(fd, "wb") as out:
            _write_all(out, lines)
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise


def _write_output(output: str, lines: Iterator[bytes]) -> None:
    """``-o OUTPUT``: a regular file (new or not) is written atomically; a symlink's
    target is; a device or a FIFO (``/dev/null``) is written to as it is, never replaced."""
    target = os.path.realpath(output)
    try:
        if os.path.exists(target) and not os.path.isfile(target):
            with open(target, "wb") as out:
                _write_all(out, lines)
        else:
            write_atomic(target, lines)
    except OSError as exc:
        raise InputError(f"cannot write {quote(output)}: {os_reason(exc)}") from exc


def refuse_input_as_output(output: str, inputs: list[str]) -> None:
    """The tool never writes to the logs it reads: ``-o`` naming an input is an error."""
    if output == "-" or not os.path.exists(output):
        return
    for path in inputs:
        if os.path.exists(path) and os.path.samefile(output, path):
            raise InputError(
                f"-o {quote(output)} is one of the inputs: refusing to overwrite a log it reads"
            )


def check_output_file(output: str) -> None:
    """Refuse, before reading anything, an ``-o`` file that cannot be written: a directory,
    or a file in a directory that does not exist. An existing regular file is replaced
    (atomically), as ``> file`` would."""
    if output == "-":
        return
    if os.path.isdir(output):
        raise InputError(
            f"cannot write {quote(output)}: it is a directory (a directory output is for "
            "directory inputs)"
        )
    parent = os.path.dirname(os.path.realpath(output))
    if not os.path.isdir(parent):
        raise InputError(f"cannot write {quote(output)}: no such directory {quote(parent)}")


def run(args: argparse.Namespace, options: Options) -> int:
    selection = selection_args(args)  # a bad filter or time: exit 2 before any read
    records = RecordOptions.of(args, redactor_of(args))  # a bad rule or key: exit 2 too
    if any(os.path.isdir(p) for p in args.paths):
        code = _run_directories(args, options, records)
    else:
        code = _run_files(args, options, selection, records)
    records.report()
    report_redaction(records.redactor)
    return code


def _run_files(
    args: argparse.Namespace, options: Options, selection: Selection, records: RecordOptions
) -> int:
    files = batch_inputs(args.paths).files  # named files only: any that cannot be read stops
    refuse_input_as_output(args.output, args.paths)
    check_output_file(args.output)
    extractor = make_extractor(options)
    for path in files:
        ingest_file(extractor, path)
    lines = extract_lines(
        extractor, make_shape(options), args.limit, args.text, selection, records.transform()
    )
    if args.output == "-":
        _write_all(sys.stdout.buffer, lines)
        sys.stdout.buffer.flush()
    else:
        _write_output(args.output, lines)
    return 0


def _prepare_out_dir(out_dir: str) -> None:
    if os.path.exists(out_dir) and not os.path.isdir(out_dir):
        raise InputError(
            f"cannot write into {quote(out_dir)}: not a directory (a directory input needs "
            "-o OUTDIR, one output file per input)"
        )
    try:
        os.makedirs(out_dir, exist_ok=True)
    except OSError as exc:
        raise InputError(f"cannot create {quote(out_dir)}: {os_reason(exc)}") from exc


def _run_directories(args: argparse.Namespace, options: Options, records: RecordOptions) -> int:
    """Batch mode: one output per input file, `.done` markers, `failed.log`, retries."""
    out_dir = args.output
    if out_dir == "-":
        raise InputError("a directory input needs -o OUTDIR (one output file per input)")
    inputs = batch_inputs(args.paths)
    refuse_input_as_output(out_dir, args.paths)
    _prepare_out_dir(out_dir)
    shape = make_shape(options)
    tokens = load_tokens(options)
    failed_log = os.path.join(out_dir, "failed.log")
    failed = done = skipped = 0
    for item in inputs.items:
        name = os.path.basename(item.path)
        marker = os.path.join(out_dir, name + ".done")
        if os.path.exists(marker):
            skipped += 1
            continue
        error = item.reason
        if item.kind == "file":
            target = os.path.join(out_dir, name + ".requests.jsonl")
            error = _extract_one(args, options, records, tokens, shape, item.path, target, marker)
        if error:
            failed += 1
            warn(f"failed {quote(item.path)}: {error}")
            _log_failure(failed_log, item.path, error)
        else:
            done += 1
    summary = f"{done} done, {skipped} already done, {failed} failed"
    print(escape(summary + (f" (see {failed_log})" if failed else "")), file=sys.stderr)
    return 1 if failed else 0


def _extract_one(
    args: argparse.Namespace,
    options: Options,
    records: RecordOptions,
    tokens: TokenCounter,
    shape: ModelShape,
    path: str,
    target: str,
    marker: str,
) -> str:
    """Extract one file of a directory batch, with retries; "" or why it failed."""
    error = ""
    for _attempt in range(max(args.retries, 1)):
        try:
            extractor = make_extractor(options, tokens)
            ingest_file(extractor, path)
            selection = selection_args(args)
            lines = extract_lines(
                extractor, shape, args.limit, args.text, selection, records.transform()
            )
            write_atomic(target, lines)
            with open(marker, "wb"):
                pass
            return ""
        except InputError as exc:
            error = str(exc)
        except OSError as exc:
            error = f"cannot write {quote(target)}: {os_reason(exc)}"
    return error


def _log_failure(failed_log: str, path: str, error: str) -> None:
    """One line per failure in ``failed.log``: the path and the reason, tab-separated
    (escaped, so a name with a newline or a tab cannot break the line apart)."""
    with open(failed_log, "a", encoding="utf-8") as log:
        log.write(f"{escape(path)}\t{escape(error)}\n")
