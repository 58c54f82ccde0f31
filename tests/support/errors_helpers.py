"""Error records of logs read whole, and a file's own lines to check their line numbers
against, shared by the unit and the parallel (integration) halves of the error log tests."""

from __future__ import annotations

from pathlib import Path

from sparseety_tui.core.extraction import Extractor
from sparseety_tui.core.store import ErrorRecord
from sparseety_tui.ingest.batch import ingest_file


def file_lines(path: Path) -> list[str]:
    return path.read_bytes().decode("utf-8", "replace").split("\n")


def records(*paths: Path) -> list[ErrorRecord]:
    ex = Extractor()
    for path in paths:
        ingest_file(ex, str(path))
    return list(ex.error_log.records)
