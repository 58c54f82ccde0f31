"""The per-line parsers are the reference: on every sample log and every real log, what
the Extractor makes through every family's fast paths (native scanners, the Python
block path) is what it makes with every fast path off, document for document."""

from __future__ import annotations

import json
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from sparseety_tui.core.extraction import Extractor
from sparseety_tui.core.figures import DEFAULT_SHAPE
from sparseety_tui.core.report import request_records, summary_document
from sparseety_tui.core.tokens import TokenCounter
from sparseety_tui.formats import _registry as registry
from sparseety_tui.ingest.batch import ingest_file

ROOT = Path(__file__).resolve().parents[2]
LOGS = sorted(
    [
        *(ROOT / "sample_logs").glob("*.jsonl"),
        *(ROOT / "sample_logs").glob("*.log"),
        *(ROOT / "tests" / "data" / "real_logs").glob("*.log"),
    ]
)
#: One tokenizer for every read (loading it is the slow part of an Extractor).
_TOKENS = TokenCounter()
SCANNERS = ("scan_requests", "scan_server")


@contextmanager
def fast_paths_off(hooks: tuple[str, ...]) -> Iterator[None]:
    """Every registered family without the fast-path ``hooks`` (None: no such path)."""
    with pytest.MonkeyPatch.context() as patch:
        for family in registry.FAMILIES.values():
            for hook in hooks:
                patch.setattr(type(family), hook, None)
        yield


def documents(path: Path) -> tuple[str, list[str], dict[str, int]]:
    extractor = Extractor(tokens=_TOKENS)
    ingest_file(extractor, str(path))
    frozen = extractor.freeze()
    summary = json.dumps(summary_document(frozen, DEFAULT_SHAPE).to_json(), sort_keys=True)
    records = [json.dumps(r, sort_keys=True) for r in request_records(frozen, DEFAULT_SHAPE)]
    return summary, records, dict(extractor.files[0].by_kind)


def test_the_logs_are_there() -> None:
    assert len(LOGS) > 50


@pytest.mark.parametrize("path", LOGS, ids=lambda p: p.name)
def test_every_fast_path_equals_the_per_line_parser(path: Path) -> None:
    fast = documents(path)
    with fast_paths_off(SCANNERS):  # the pure-Python block path only
        blocks = documents(path)
    with fast_paths_off((*SCANNERS, "decode_simple_block")):
        per_line = documents(path)
    assert fast == per_line
    assert blocks == per_line
    summary = json.loads(per_line[0])
    for file in summary["files"]:  # every line counted once
        assert sum(file["lines"]["by_kind"].values()) == file["lines"]["total"]
