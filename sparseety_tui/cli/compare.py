"""`sparseety-tui compare`: a baseline and a candidate side by side, as a Rich report or JSON.

``compare_output`` builds the whole JSON-ready document before anything is printed: the
one boundary where the output can be changed as a whole (redaction) before it is shown.
"""

from __future__ import annotations

import argparse
import sys
from dataclasses import dataclass
from typing import Any

import orjson

from sparseety_tui.cli.errors import CliError
from sparseety_tui.cli.redaction import redactor_of
from sparseety_tui.cli.redaction import report as report_redaction
from sparseety_tui.cli.summary import summarise
from sparseety_tui.core.compare import (
    Match,
    Side,
    compare_document,
    match_requests,
    prompt_keys,
    side_requests,
)
from sparseety_tui.core.extraction import Extractor
from sparseety_tui.core.query import Selection, WindowError, WindowSpec, parse_window, select_rows
from sparseety_tui.core.redact import Redactor
from sparseety_tui.core.text import escape_json, json_bytes, json_text
from sparseety_tui.ingest.batch import Options, make_shape


@dataclass(frozen=True)
class SideSpec:
    """What one side reads: its paths and its time window (None: all of it)."""

    paths: tuple[str, ...]
    window: WindowSpec | None
    window_text: str | None


def _window(text: str | None, flag: str) -> WindowSpec | None:
    if text is None:
        return None
    try:
        spec = parse_window(text)
    except WindowError as exc:
        raise CliError(f"{flag}: {exc}") from None
    if spec is None:
        raise CliError(f"{flag}: {text!r} is no window (write SINCE..UNTIL, e.g. 10:00..10:30)")
    return spec


def side_specs(args: argparse.Namespace) -> tuple[SideSpec, SideSpec]:
    """The two sides the arguments name (``compare_args.EPILOG``); a bad combination or
    window is a ``CliError`` before anything is read."""
    base_window = _window(args.baseline_window, "--baseline-window")
    cand_window = _window(args.candidate_window, "--candidate-window")
    paths = tuple(args.paths)
    if args.vs:
        base_paths, cand_paths = paths, tuple(args.vs)
    elif len(paths) == 2 and base_window is None and cand_window is None:
        base_paths, cand_paths = paths[:1], paths[1:]
    elif base_window is not None or cand_window is not None:
        # One run, two windows: each side reads it as `summary --since/--until` would
        # (equal by construction, at the cost of reading the run twice).
        base_paths = cand_paths = paths
    else:
        raise CliError(
            "compare needs two sides: BASELINE CANDIDATE, PATH... --vs PATH..., or "
            "--baseline-window/--candidate-window over one run"
        )
    return (
        SideSpec(base_paths, base_window, args.baseline_window),
        SideSpec(cand_paths, cand_window, args.candidate_window),
    )


@dataclass(frozen=True)
class ReadSide:
    side: Side
    extractor: Extractor
    skipped: int
    window: WindowSpec | None


def read_side(spec: SideSpec, options: Options, jobs: int) -> ReadSide:
    """One side through ``summary``'s own reading (``cli.summary.summarise``) and its
    requests (the rows its window keeps, as ``summary`` counts them)."""
    selection = Selection(None, spec.window)
    extractor, skipped, document = summarise(list(spec.paths), options, selection, jobs)
    shape = make_shape(options)
    rows = select_rows(extractor, shape, selection).rows if selection.narrows else None
    requests = side_requests(extractor, shape, rows)
    paths = tuple(json_text(p) for p in spec.paths)
    return ReadSide(
        Side(paths, spec.window_text, document.to_json(), requests),
        extractor,
        skipped,
        spec.window,
    )


@dataclass(frozen=True)
class Compared:
    """``compare``'s result: the document (what is printed) and what it was made from."""

    document: dict[str, Any]
    baseline: ReadSide
    candidate: ReadSide
    match: Match
    redactor: Redactor | None = None


def compare_output(args: argparse.Namespace, options: Options) -> Compared:
    """The ``compare --json`` document of the arguments, and both sides as read."""
    base_spec, cand_spec = side_specs(args)
    redactor = redactor_of(args)  # a bad rule or key: exit 2 before anything is read
    if args.plot:
        from sparseety_tui.cli.plot import check_output

        check_output(args.plot)
    for name in ("resamples", "regressions", "jobs"):
        if getattr(args, name) < 0:
            raise CliError(f"--{name} must be >= 0")
    base = read_side(base_spec, options, args.jobs)
    cand = read_side(cand_spec, options, args.jobs)

    def prompts() -> tuple[list[bytes | None], list[bytes | None]]:
        return (
            prompt_keys(base.extractor, base.side.requests.rows.tolist()),
            prompt_keys(cand.extractor, cand.side.requests.rows.tolist()),
        )

    match = match_requests(base.side.requests.ids, cand.side.requests.ids, prompts)
    document = compare_document(
        base.side,
        cand.side,
        match,
        resamples=args.resamples,
        seed=args.seed,
        regressions_limit=args.regressions,
    )
    if redactor is not None:
        # Ids and paths are the document's text; what it says of each side is summary's.
        document = redactor.document(document)
        document["redaction"] = redactor.summary()
    return Compared(document, base, cand, match, redactor)


def run(args: argparse.Namespace, options: Options) -> int:
    """0, or 1 when entries of a named directory could not be read (reported on stderr)."""
    compared = compare_output(args, options)
    document, base, cand = compared.document, compared.baseline, compared.candidate
    if args.plot:  # before the report or the screen: --tui --plot writes it too
        write_compare_plot(args.plot, options, compared)
    if args.tui:
        return run_tui(args, options, compared)
    if args.json:
        sys.stdout.buffer.write(escape_json(json_bytes(document, orjson.OPT_INDENT_2)) + b"\n")
        sys.stdout.buffer.flush()
    else:
        from rich.console import Console

        from sparseety_tui.cli.compare_view import render_compare

        Console().print(render_compare(document))
        report_redaction(compared.redactor)  # the JSON says it in its ``redaction`` key
    return 1 if base.skipped or cand.skipped else 0


def write_compare_plot(out: str, options: Options, compared: Compared) -> None:
    """``--plot``: both sides' per-minute panels, after the matched requests' own."""
    from sparseety_tui.cli.plot import PlotSide, write_plot

    base, cand, match = compared.baseline, compared.candidate, compared.match
    shape = make_shape(options)
    pairs = {
        name: (
            base.side.requests.values[name][match.baseline],
            cand.side.requests.values[name][match.candidate],
        )
        for name in ("latency_s", "effective_compute_tokens")
    }
    write_plot(
        out,
        [
            PlotSide(label, read.side.paths, read.extractor, shape, Selection(None, spec))
            for label, read, spec in (
                ("baseline", base, base.window),
                ("candidate", cand, cand.window),
            )
        ],
        pairs if match.matched else None,
        compared.redactor,
    )


#: Matched pairs the TUI's per-request table lists (the largest increase first).
TUI_PAIRS = 2000


def compare_app(args: argparse.Namespace, options: Options, compared: Compared) -> Any:
    """The compare screen's app over both sides (``ui.compare_app.CompareApp``)."""
    from sparseety_tui.core.compare import pair_diffs
    from sparseety_tui.ui.compare_app import CompareApp
    from sparseety_tui.ui.screens.compare import CompareData
    from sparseety_tui.ui.themes import ThemeError, load_themes

    themes = load_themes()
    theme = getattr(args, "theme", None)
    if theme:
        try:
            themes.resolve(theme)
        except ThemeError as exc:
            raise CliError(str(exc)) from exc
    base, cand = compared.baseline, compared.candidate
    pairs, total = pair_diffs(
        base.side.requests, cand.side.requests, compared.match, TUI_PAIRS, only_up=False
    )
    data = CompareData(
        compared.document,
        pairs,
        total,
        (base.extractor.freeze(), cand.extractor.freeze()),
        (base.side.requests.rows, cand.side.requests.rows),
        make_shape(options),
        compared.redactor,
    )
    return CompareApp(data, theme=theme, themes=themes)


def run_tui(args: argparse.Namespace, options: Options, compared: Compared) -> int:
    app = compare_app(args, options, compared)
    app.run()
    return int(app.return_code or 0)
