"""Extraction: turning a file's lines into rows of the store.

``Extractor`` is the one writer's entry point: it sniffs each file's format, runs the
per-line parser (the reference) or applies a fast path's batch (``sparseety_tui.batch``,
through the one applier ``_apply.apply_batch``, which names no format), joins lines into
requests (``Merger``, ``lifecycle``) and counts every line in exactly one kind."""

from sparseety_tui.core.extraction._extractor import Extractor
from sparseety_tui.core.extraction._lifecycle import check_parts
from sparseety_tui.core.extraction._parts import ExtractorPart

__all__ = ["Extractor", "ExtractorPart", "check_parts"]
