"""Output records: one request as ``extract`` writes it, and the ``summary --json`` document.

Both are built from the same store and the same figures functions as the TUI.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterator, Sequence
from dataclasses import replace
from typing import Any

import orjson

from sparseety_tui.core.detail import request_text
from sparseety_tui.core.figures import (
    ErrorTotals,
    ModelShape,
    WhyTable,
    column_figures,
    column_inputs,
    column_skips,
    compute_totals,
    error_record,
    timing_records,
    timing_totals,
    whole_number,
)
from sparseety_tui.core.query import (
    Selection,
    records_in,
    select_rows,
    window_rows,
    window_series,
)
from sparseety_tui.core.report._document import SummaryDocument, SummaryFilter, SummaryWindow
from sparseety_tui.core.store import COUNT_SOURCES, STATES, ExtractorView
from sparseety_tui.core.text import json_bytes, json_text
from sparseety_tui.formats import wrapper_name


def _float(value: float, digits: int) -> float | int | None:
    """None for NaN (unknown); a whole number for ``digits=0`` (None beyond what float64
    holds exactly, see ``figures.whole_number``)."""
    if math.isnan(value):
        return None
    return whole_number(value) if digits == 0 else round(value, digits)


def _int(value: int) -> int | None:
    return None if value < 0 else value


#: Rows whose figures are computed together (numpy over columns, not one row at a time).
RECORD_CHUNK_ROWS = 1 << 16


def request_records(
    extractor: ExtractorView,
    shape: ModelShape,
    stop: int | None = None,
    rows: Sequence[int] | None = None,
) -> Iterator[dict[str, Any]]:
    """Requests ``0 .. stop`` as JSON-ready dicts (the ``extract`` output lines); with
    ``rows`` (ascending store rows: a time window's), only those, at most ``stop``."""
    why = WhyTable(extractor)  # peers are every request's, whichever rows are given
    if rows is not None:
        picked = list(rows[:stop] if stop is not None else rows)
        at = 0
        while at < len(picked):
            first = picked[at] - picked[at] % RECORD_CHUNK_ROWS
            end = at
            while end < len(picked) and picked[end] < first + RECORD_CHUNK_ROWS:
                end += 1
            last = picked[end - 1] + 1
            yield from _records(extractor, shape, why, first, last, set(picked[at:end]))
            at = end
        return
    store = extractor.store
    stop = len(store) if stop is None else min(stop, len(store))
    for first in range(0, stop, RECORD_CHUNK_ROWS):
        yield from _records(extractor, shape, why, first, min(stop, first + RECORD_CHUNK_ROWS))


def _records(
    extractor: ExtractorView,
    shape: ModelShape,
    why: WhyTable,
    first: int,
    last: int,
    only: set[int] | None = None,
) -> Iterator[dict[str, Any]]:
    """Rows ``first .. last`` (those in ``only``, when given) as ``extract`` records."""
    store = extractor.store
    c = store.columns
    cols = store.numeric_view(first, last)
    inputs = column_inputs(store, shape, cols, first)
    figures = {k: v.tolist() for k, v in column_figures(store, shape, cols, first, inputs).items()}
    skips = {k: v.tolist() for k, v in column_skips(store, shape, cols, first, inputs).items()}
    ids = store.ids[first:last]
    timing = timing_records(extractor, why, cols, first, last)
    for i, (row, times) in enumerate(zip(range(first, last), timing)):
        if only is not None and row not in only:
            continue
        file_index = c["file"][row]
        file_state = extractor.files[file_index]
        tokens = extractor.tokens_for(file_index)
        yield {
            "request_id": ids[i],
            "model": store.models[c["model"][row]] or None,
            "state": STATES[c["state"][row]],
            "prompt_tokens": _int(c["prompt_tokens"][row]),
            "completion_tokens": _int(c["completion_tokens"][row]),
            "cached_tokens": _int(c["cached_tokens"][row]),
            "logical_tokens": _float(figures["logical_tokens"][i], 0),
            "effective_compute_tokens": _float(figures["effective_compute_tokens"][i], 2),
            "sparse_skipped_tokens": _float(figures["sparse_skipped_tokens"][i], 2),
            "skip_ratio": _float(figures["skip_ratio"][i], 6),
            "compute_vs_nominal": _float(figures["compute_vs_nominal"][i], 6),
            # float32 columns: 5 decimals is their precision at these magnitudes
            "latency_s": _float(c["latency_s"][row], 5),
            "ttft_s": _float(c["ttft_s"][row], 5),
            "received_ts": _float(c["received_ts"][row], 3),
            "finished_ts": _float(c["finished_ts"][row], 3),
            # end_unlogged: the end was not logged; it came at the latest here
            "ended_by_ts": _float(c["ended_by_ts"][row], 3),
            "sampling": {
                "max_tokens": _int(c["max_tokens"][row]),
                # float32 columns: 6 decimals give back what the log printed
                "temperature": _float(c["temperature"][row], 6),
                "top_p": _float(c["top_p"][row], 6),
                "n": _int(c["sampling_n"][row]),
            },
            "experts": {
                "topk": _int(c["topk_experts"][row]),
                "total": _int(c["total_experts"][row]),
            },
            "skipped": {name: _float(values[i], 0) for name, values in skips.items()},
            "token_counts_from": {
                "prompt": COUNT_SOURCES[c["prompt_source"][row]],
                "completion": COUNT_SOURCES[c["completion_source"][row]],
            },
            "tokenizer": tokens.name,
            "tokenizer_source": tokens.source,
            "cost_model": shape.name,
            "source": {
                "file": json_text(file_state.path),
                "format": file_state.format_name,
                "line": c["line_no"][row],
                "offset": store.offset[row],
                "lines": len(store.lines_of(row)),
            },
            # Where its time went (core.figures): after the keys above, which stay as
            # they were for consumers that read them.
            **times,
        }


def file_report(extractor: ExtractorView) -> list[dict[str, Any]]:
    out = []
    for index, state in enumerate(extractor.files):
        tokens = extractor.tokens_for(index)
        out.append(
            {
                "path": json_text(state.path),
                "format": state.format_name,
                # The log shipper or wrapper every line was inside (docker-json,
                # cloudwatch, journald...), None for a bare log (formats/_wrappers.py).
                "wrapper": wrapper_name(state.family),
                "lines": {
                    "total": state.lines_total,
                    "by_kind": dict(sorted(state.by_kind.items())),
                },
                "unparsed_samples": [
                    {"line": d.line_no, "reason": d.reason, "text": d.preview}
                    for d in list(state.diagnostics)[:5]
                ],
                # Lines read as records with one field left unknown, and why.
                "ignored_values": dict(sorted(state.ignored.items())),
                "events": list(state.events),
                "tokenizer": json_text(tokens.name),
                "tokenizer_source": tokens.source,
            }
        )
    return out


def tokenizer_used(extractor: ExtractorView) -> tuple[str, str]:
    """The name and source of the tokenizer of every file, or ``per file`` when files
    differ (each file names its own: ``files[].tokenizer``)."""
    used = {(t.name, t.source) for t in map(extractor.tokens_for, range(len(extractor.files)))}
    if len(used) > 1:
        return "per file (see files[].tokenizer)", "per_file"
    name, source = used.pop() if used else (extractor.tokens.name, extractor.tokens.source)
    return json_text(name), source


#: Errors listed in ``summary --json`` ``errors.records``: the first and the last this many.
LISTED_ERRORS = 1000


def error_listing(extractor: ExtractorView, errors: ErrorTotals) -> ErrorTotals:
    """``errors`` with ``records`` (the first and the last ``LISTED_ERRORS`` errors kept,
    in the order read), ``listed`` (how many that is) and ``kept`` (how many records the
    error log holds: all but the oldest beyond ``core.store.ERROR_RECORDS``)."""
    records = extractor.error_log.records
    n = len(records)
    chosen = [*range(min(n, LISTED_ERRORS)), *range(max(LISTED_ERRORS, n - LISTED_ERRORS), n)]
    listed = tuple(error_record(extractor, records[i]) for i in chosen)
    return replace(errors, records=listed, listed=len(listed), kept=n)


def summary_document(
    extractor: ExtractorView, shape: ModelShape, selection: Selection | None = None
) -> SummaryDocument:
    """The ``summary --json`` document (``SummaryDocument.to_json`` gives its JSON). With
    a ``selection`` (``--filter``, ``--since``/``--until``) the request figures cover the
    rows it keeps, the engine figures the window's stats lines, and ``filter``/``window``
    say what was kept; the lines by kind still count every line of every file, and the
    heat maps every request (they are counted per layer as lines come, not kept per
    request)."""
    window_part: SummaryWindow | None = None
    filter_part: SummaryFilter | None = None
    picked = None
    if selection is None or not selection.narrows:
        totals = compute_totals(extractor, shape)
    else:
        selected = select_rows(extractor, shape, selection)
        window = selected.window
        engine = None
        if window is not None:
            engine, complete = window_series(extractor.engine, window)
            errors_in = len(records_in(extractor.error_log.records, window))
            rows = window_rows(extractor.store, window)
            window_part = SummaryWindow.of(window, rows, complete, errors_in)
        picked = selected.rows
        totals = compute_totals(extractor, shape, rows=picked, engine=engine)
        if selection.filter_text is not None:
            filter_part = SummaryFilter(
                expression=selection.filter_text.strip(),
                requests=int(len(selected.rows)),
                of=len(extractor.store),
            )
    # Every error (the window counts its own in ``window.errors_in``).
    totals = replace(totals, errors=error_listing(extractor, totals.errors))
    tokenizer, source = tokenizer_used(extractor)
    timing, slow = timing_totals(extractor, picked)
    return SummaryDocument(
        files=tuple(file_report(extractor)),
        totals=totals,
        window=window_part,
        filter=filter_part,
        tokenizer=tokenizer,
        tokenizer_source=source,
        cost_model=shape.name,
        timing=timing,
        slow=slow,
    )


#: What an output does to each ``extract`` record before it is written: redaction
#: (``core.redact.Redactor.document``), the tutorial's options; None leaves a record out.
RecordTransform = Callable[[dict[str, Any]], "dict[str, Any] | None"]


def extract_lines(
    extractor: ExtractorView,
    shape: ModelShape,
    limit: int | None,
    with_text: bool,
    selection: Selection | None = None,
    transform: RecordTransform | None = None,
) -> Iterator[bytes]:
    """The ``extract`` output lines (JSON, one per request, newline-ended; the caller
    escapes them with ``literal.escape_json``, as the CLI and ``serve`` both do). With a
    ``selection`` (``--filter``, ``--since``/``--until``), only the requests it keeps: the rows the TUI's table shows for the same filter and
    window (``core.query``), in log order. ``transform`` (redaction) sees each record,
    text included, before it is encoded."""
    rows: Sequence[int] | None = None
    if selection is not None and selection.narrows:
        rows = select_rows(extractor, shape, selection).rows.tolist()
    numbered = rows if rows is not None else range(len(extractor.store))
    for row, record in zip(numbered, request_records(extractor, shape, limit, rows)):
        if with_text:
            record.update(request_text(extractor, row))
        if transform is not None:
            kept = transform(record)
            if kept is None:
                continue
            record = kept
        yield json_bytes(record, orjson.OPT_APPEND_NEWLINE)
