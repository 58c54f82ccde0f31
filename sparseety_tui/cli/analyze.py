"""`sparseety-tui analyze --type sparse_skipped`: the tutorial's five lines.

From logs, or from an ``extract`` output: its records are read back as what they are,
requests with their counts and their ``sparse_skipped_tokens``, and the figures are the
ones ``summary --json`` gives for the same requests.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Iterator
from typing import Any

import orjson

from sparseety_tui.cli.errors import CliError
from sparseety_tui.cli.redaction import redactor_of
from sparseety_tui.cli.shared_args import selection_args
from sparseety_tui.core.report import summary_document
from sparseety_tui.core.text import escape
from sparseety_tui.ingest.batch import Options, batch_inputs, make_extractor, make_shape
from sparseety_tui.ingest.parallel import ingest_all


def _shown(value: Any, digits: int = 0) -> str:
    if value is None:
        return "unknown"
    if digits:
        return f"{value:.{digits}f}"
    return f"{round(value):,}" if isinstance(value, float) else f"{value:,}"


def sparse_skipped_lines(requests: dict[str, Any]) -> list[str]:
    """The tutorial's lines from ``summary --json``'s ``requests``."""
    return [
        f"Total requests: {_shown(requests['count'])}",
        f"Total prompt tokens: {_shown(requests['prompt_tokens'])}",
        f"Total completion tokens: {_shown(requests['completion_tokens'])}",
        f"Total skipped tokens: {_shown(requests['sparse_skipped_tokens'])}",
        f"Skip ratio: {_shown(requests['skip_ratio'], 4)}",
    ]


#: Keys every ``extract`` record has and no log record does: how an output is told apart.
EXTRACT_KEYS = frozenset({"request_id", "logical_tokens", "token_counts_from", "source"})


def _records(path: str) -> Iterator[dict[str, Any]] | None:
    """The records of an ``extract`` output, None when ``path`` is not one (a log)."""
    with open(path, "rb") as handle:
        first = handle.readline()
        try:
            record = orjson.loads(first)
        except orjson.JSONDecodeError:
            return None
        if not isinstance(record, dict) or not record.keys() >= EXTRACT_KEYS:
            return None
        lines = [first, *handle]
    return (orjson.loads(line) for line in lines if line.strip())


def _known_sum(records: list[dict[str, Any]], key: str) -> float | None:
    values = [r[key] for r in records if r.get(key) is not None]
    return sum(values) if values else None


def extract_requests(records: list[dict[str, Any]]) -> dict[str, Any]:
    """``summary --json``'s request figures from ``extract`` records: the same sums (the
    skip ratio over the requests whose effective compute is known, as summary's)."""
    with_effective = [r for r in records if r.get("effective_compute_tokens") is not None]
    skipped = _known_sum(with_effective, "sparse_skipped_tokens")
    logical = _known_sum(with_effective, "logical_tokens")
    return {
        "count": len(records),
        "prompt_tokens": _known_sum(records, "prompt_tokens"),
        "completion_tokens": _known_sum(records, "completion_tokens"),
        "sparse_skipped_tokens": skipped,
        "skip_ratio": skipped / logical if skipped is not None and logical else None,
    }


def run(args: argparse.Namespace, options: Options) -> int:
    selection = selection_args(args)
    redactor_of(args)  # a bad redaction setting is an error here too; the lines hold no text
    inputs = batch_inputs(args.paths)
    outputs = [_records(path) for path in inputs.files]
    if all(o is not None for o in outputs) and outputs:
        if selection.narrows:
            raise CliError("analyze: --filter/--since/--until read logs, not extract outputs")
        requests = extract_requests([r for o in outputs if o is not None for r in o])
    elif any(o is not None for o in outputs):
        raise CliError("analyze: give either logs or extract outputs, not both")
    else:
        extractor = make_extractor(options)
        ingest_all(extractor, options, inputs.files, jobs=1)
        totals = summary_document(extractor, make_shape(options), selection).totals
        requests = {
            "count": totals.requests.count,
            "prompt_tokens": totals.requests.prompt_tokens,
            "completion_tokens": totals.requests.completion_tokens,
            "sparse_skipped_tokens": totals.requests.sparse_skipped_tokens,
            "skip_ratio": totals.requests.skip_ratio,
        }
    for line in sparse_skipped_lines(requests):
        print(escape(line))
    sys.stdout.flush()
    return 0
