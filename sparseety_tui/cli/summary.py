"""`sparseety-tui summary`: totals as a Rich report or as JSON."""

from __future__ import annotations

import argparse
import sys

import orjson

from sparseety_tui.cli.main import filter_option, warn
from sparseety_tui.core.literal import escape_json, json_bytes, quote
from sparseety_tui.core.report import summary_document
from sparseety_tui.core.subset import SubsetExtractor, filtered_rows
from sparseety_tui.ingest.batch import Options, batch_inputs, make_extractor, make_shape
from sparseety_tui.ingest.parallel import ingest_all


def run(args: argparse.Namespace, options: Options) -> int:
    """0, or 1 when entries of a named directory could not be read (each was reported on
    stderr and the summary covers the rest)."""
    text = filter_option(args)
    inputs = batch_inputs(args.paths)
    extractor = make_extractor(options)
    for item in inputs.skipped:
        warn(f"skipped {quote(item.path)}: {item.reason}")
    ingest_all(extractor, options, inputs.files, jobs=args.jobs)
    shape = make_shape(options)
    if text is None:
        document = summary_document(extractor, shape)
    else:
        rows = filtered_rows(extractor, shape, text)
        document = summary_document(SubsetExtractor(extractor, rows), shape)
        document["filter"] = {
            "expression": text.strip(),
            "requests": len(rows),
            "of": len(extractor.store),
        }
    if args.json:
        sys.stdout.buffer.write(escape_json(json_bytes(document, orjson.OPT_INDENT_2)) + b"\n")
        sys.stdout.buffer.flush()
    else:
        from rich.console import Console

        from sparseety_tui.cli.summary_view import render_summary

        console = Console()
        console.print(render_summary(document))
    return 1 if inputs.skipped else 0
