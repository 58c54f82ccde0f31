"""`sparseety-tui extract`: one JSON object per request, for files or directory batches."""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
from collections.abc import Iterator
from typing import IO

import orjson

from sparseety_tui.core.costmodel import ModelShape
from sparseety_tui.core.detail import request_text
from sparseety_tui.core.extractor import Extractor
from sparseety_tui.core.report import request_records
from sparseety_tui.ingest.batch import (
    InputError,
    Options,
    check_readable,
    ingest_file,
    ingest_paths,
    log_files_in,
    make_extractor,
    make_shape,
)


def records(
    extractor: Extractor, shape: ModelShape, limit: int | None, with_text: bool
) -> Iterator[bytes]:
    for row, record in enumerate(request_records(extractor, shape, limit)):
        if with_text:
            record.update(request_text(extractor, row))
        yield orjson.dumps(record) + b"\n"


def _write_all(out: IO[bytes], lines: Iterator[bytes]) -> None:
    for line in lines:
        out.write(line)


def _write_atomic(path: str, lines: Iterator[bytes]) -> None:
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


def _refuse_input_as_output(output: str, inputs: list[str]) -> None:
    """The tool never writes to the logs it reads: ``-o`` naming an input is an error."""
    if output == "-" or not os.path.exists(output):
        return
    for path in inputs:
        if os.path.exists(path) and os.path.samefile(output, path):
            raise InputError(
                f"-o {output!r} is one of the inputs: refusing to overwrite a log it reads"
            )


def run(args: argparse.Namespace, options: Options) -> int:
    for path in args.paths:
        check_readable(path)
    _refuse_input_as_output(args.output, args.paths)
    if any(os.path.isdir(p) for p in args.paths):
        return _run_directories(args, options)
    extractor = ingest_paths(options, args.paths)
    shape = make_shape(options)
    lines = records(extractor, shape, args.limit, args.text)
    if args.output == "-":
        _write_all(sys.stdout.buffer, lines)
        sys.stdout.buffer.flush()
    else:
        _write_atomic(args.output, lines)
    return 0


def _run_directories(args: argparse.Namespace, options: Options) -> int:
    """Batch mode: one output per input file, `.done` markers, `failed.log`, retries."""
    if args.output == "-":
        raise InputError("a directory input needs -o OUTDIR (one output file per input)")
    out_dir = args.output
    os.makedirs(out_dir, exist_ok=True)
    shape = make_shape(options)
    inputs: list[str] = []
    for path in args.paths:
        inputs.extend(log_files_in(path) if os.path.isdir(path) else [path])
    failed = 0
    done = skipped = 0
    for path in inputs:
        name = os.path.basename(path)
        marker = os.path.join(out_dir, name + ".done")
        if os.path.exists(marker):
            skipped += 1
            continue
        error = ""
        for _attempt in range(max(args.retries, 1)):
            try:
                check_readable(path)
                extractor = make_extractor(options)
                ingest_file(extractor, path)
                target = os.path.join(out_dir, name + ".requests.jsonl")
                _write_atomic(target, records(extractor, shape, args.limit, args.text))
                with open(marker, "wb"):
                    pass
                error = ""
                break
            except (OSError, InputError) as exc:
                error = str(exc)
        if error:
            failed += 1
            with open(os.path.join(out_dir, "failed.log"), "a", encoding="utf-8") as log:
                log.write(f"{path}\t{error}\n")
        else:
            done += 1
    print(
        f"{done} done, {skipped} already done, {failed} failed"
        + (f" (see {os.path.join(out_dir, 'failed.log')})" if failed else ""),
        file=sys.stderr,
    )
    return 1 if failed else 0
