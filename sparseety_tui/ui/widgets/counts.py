"""A request's token count as the table and the detail header show it."""

from __future__ import annotations

from sparseety_tui.core.store import LOWER_BOUND_SOURCES
from sparseety_tui.ui.fmt import fmt_count


def count_text(value: int, source: int) -> str:
    """``fmt_count``, with "≥" for a count of text or ids the log cut (vLLM's
    ``--max-log-len``: a lower bound, ``core.store.LOWER_BOUND_SOURCES``)."""
    text = fmt_count(value)
    return "≥" + text if source in LOWER_BOUND_SOURCES and value >= 0 else text
