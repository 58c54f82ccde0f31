"""Output records: one request as ``extract`` writes it, and the ``summary --json`` document.

Both are built from the same store and the same figures functions as the TUI.
"""

from __future__ import annotations

import math
from typing import Any

from sparseety_tui.core.costmodel import ModelShape
from sparseety_tui.core.extractor import Extractor
from sparseety_tui.core.figures import row_figures, row_skips
from sparseety_tui.core.store import COUNT_SOURCES, STATES
from sparseety_tui.core.totals import compute_totals

SCHEMA_VERSION = 1


def _float(value: float, digits: int = 6) -> float | None:
    return None if math.isnan(value) else round(value, digits)


def _int(value: int) -> int | None:
    return None if value < 0 else value


def request_record(extractor: Extractor, shape: ModelShape, row: int) -> dict[str, Any]:
    """One request as a JSON-ready dict (the ``extract`` output line)."""
    store = extractor.store
    c = store.columns
    figures = row_figures(store, shape, row)
    file_state = extractor.files[c["file"][row]]
    return {
        "request_id": store.ids[row],
        "model": store.models[c["model"][row]] or None,
        "state": STATES[c["state"][row]],
        "prompt_tokens": _int(c["prompt_tokens"][row]),
        "completion_tokens": _int(c["completion_tokens"][row]),
        "cached_tokens": _int(c["cached_tokens"][row]),
        "logical_tokens": _round_or_none(figures["logical_tokens"], 0),
        "effective_compute_tokens": _round_or_none(figures["effective_compute_tokens"], 2),
        "sparse_skipped_tokens": _round_or_none(figures["sparse_skipped_tokens"], 2),
        "skip_ratio": _round_or_none(figures["skip_ratio"], 6),
        "compute_vs_nominal": _round_or_none(figures["compute_vs_nominal"], 6),
        # float32 columns: 5 decimals is their precision at these magnitudes
        "latency_s": _float(c["latency_s"][row], 5),
        "ttft_s": _float(c["ttft_s"][row], 5),
        "received_ts": _float(c["received_ts"][row], 3),
        "finished_ts": _float(c["finished_ts"][row], 3),
        "experts": {
            "topk": _int(c["topk_experts"][row]),
            "total": _int(c["total_experts"][row]),
        },
        "skipped": row_skips(store, shape, row),
        "token_counts_from": {
            "prompt": COUNT_SOURCES[c["prompt_source"][row]],
            "completion": COUNT_SOURCES[c["completion_source"][row]],
        },
        "tokenizer": extractor.tokens.name,
        "cost_model": shape.name,
        "source": {
            "file": file_state.path,
            "format": file_state.format_name,
            "line": c["line_no"][row],
            "offset": store.offset[row],
            "lines": len(store.lines_of(row)),
        },
    }


def _round_or_none(value: float | None, digits: int) -> float | int | None:
    if value is None:
        return None
    return int(round(value)) if digits == 0 else round(value, digits)


def file_report(extractor: Extractor) -> list[dict[str, Any]]:
    out = []
    for state in extractor.files:
        out.append({
            "path": state.path,
            "format": state.format_name,
            "lines": {"total": state.lines_total, "by_kind": dict(sorted(state.by_kind.items()))},
            "unparsed_samples": [
                {"line": d.line_no, "reason": d.reason, "text": d.preview}
                for d in list(state.diagnostics)[:5]
            ],
            "events": list(state.events),
        })
    return out


def summary_document(extractor: Extractor, shape: ModelShape) -> dict[str, Any]:
    """The ``summary --json`` document."""
    totals = compute_totals(extractor, shape)
    return {
        "schema_version": SCHEMA_VERSION,
        "files": file_report(extractor),
        **totals,
        "tokenizer": extractor.tokens.name,
        "cost_model": shape.name,
    }
