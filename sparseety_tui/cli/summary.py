"""`sparseety-tui summary`: totals as a Rich report or as JSON."""

from __future__ import annotations

import argparse
import sys

import orjson

from sparseety_tui.cli.errors import warn
from sparseety_tui.cli.redaction import redactor_of
from sparseety_tui.cli.redaction import report as report_redaction
from sparseety_tui.cli.shared_args import selection_args
from sparseety_tui.core.extraction import Extractor
from sparseety_tui.core.query import Selection, WindowedEngineSeries
from sparseety_tui.core.report import SummaryDocument, summary_document
from sparseety_tui.core.text import escape_json, json_bytes, quote
from sparseety_tui.ingest.batch import Options, batch_inputs, make_extractor, make_shape
from sparseety_tui.ingest.parallel import ingest_all


def run(args: argparse.Namespace, options: Options) -> int:
    """0, or 1 when entries of a named directory could not be read (each was reported on
    stderr and the summary covers the rest)."""
    selection = selection_args(args)
    redactor = redactor_of(args)
    _extractor, skipped, summary = summarise(args.paths, options, selection, args.jobs)
    document = summary.to_json()
    if redactor is not None:
        document = redactor.document(document)
        document["redaction"] = redactor.summary()
    if args.json:
        sys.stdout.buffer.write(escape_json(json_bytes(document, orjson.OPT_INDENT_2)) + b"\n")
        sys.stdout.buffer.flush()
    else:
        from rich.console import Console

        from sparseety_tui.cli.summary_view import render_summary

        console = Console()
        console.print(render_summary(document))
        report_redaction(redactor)  # the JSON says it in its ``redaction`` key
    return 1 if skipped else 0


def summarise(
    paths: list[str], options: Options, selection: Selection, jobs: int
) -> tuple[Extractor, int, SummaryDocument]:
    """Read ``paths`` and build their ``summary --json`` document for ``selection``: the
    extractor, how many directory entries were skipped (each reported on stderr), and the
    document. ``compare`` reads each of its sides through this, so a side's figures are
    ``summary``'s."""
    window = selection.window
    inputs = batch_inputs(paths)
    # A window keeps the stats lines that may be in it (core.query); range workers
    # hand back only sums, so a windowed summary reads each file in one process.
    engine = WindowedEngineSeries(window) if window is not None else None
    extractor = make_extractor(options, engine=engine)
    for item in inputs.skipped:
        warn(f"skipped {quote(item.path)}: {item.reason}")
    ingest_all(extractor, options, inputs.files, jobs=1 if window is not None else jobs)
    document = summary_document(extractor, make_shape(options), selection)
    return extractor, len(inputs.skipped), document
