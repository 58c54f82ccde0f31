"""`sparseety-tui summary`: totals as a Rich report or as JSON."""

from __future__ import annotations

import argparse
import sys

import orjson

from sparseety_tui.core.report import summary_document
from sparseety_tui.ingest.batch import Options, expand_inputs, make_extractor, make_shape
from sparseety_tui.ingest.parallel import ingest_all


def run(args: argparse.Namespace, options: Options) -> int:
    paths = expand_inputs(args.paths)
    extractor = make_extractor(options)
    ingest_all(extractor, options, paths, jobs=args.jobs)
    document = summary_document(extractor, make_shape(options))
    if args.json:
        sys.stdout.buffer.write(orjson.dumps(document, option=orjson.OPT_INDENT_2) + b"\n")
        sys.stdout.buffer.flush()
    else:
        from rich.console import Console

        from sparseety_tui.cli.summary_view import render_summary

        console = Console()
        console.print(render_summary(document))
    return 0
