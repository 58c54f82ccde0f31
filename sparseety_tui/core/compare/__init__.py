"""Compare two runs: a baseline and a candidate (``sparseety-tui compare``).

Each side is what ``summary`` reads (a log, several, a directory, or one time window of a
log); its figures are taken from that side's ``summary_document`` (``figures.side_figures``)
so a side's numbers equal ``summary --json`` on it by construction. Requests are matched by
id, else by prompt (a hash of the text or token ids, never shown), else not at all (the
workloads are compared as a whole); matched pairs give paired deltas with a seeded
bootstrap interval (``bootstrap``) and the regressions list (``document``).

Pure: no I/O here (the prompts of a side are read by the caller, ``requests.prompt_keys``)."""

from sparseety_tui.core.compare._defaults import (
    DEFAULT_REGRESSIONS,
    DEFAULT_RESAMPLES,
    DEFAULT_SEED,
)
from sparseety_tui.core.compare._document import PairDiff, Side, compare_document, pair_diffs
from sparseety_tui.core.compare._matching import Match, match_requests
from sparseety_tui.core.compare._requests import prompt_keys, side_requests
from sparseety_tui.core.compare._text import (
    before_after,
    figure_cells,
    fmt_rel,
    fmt_value,
    match_text,
)

__all__ = [
    "DEFAULT_REGRESSIONS",
    "DEFAULT_RESAMPLES",
    "DEFAULT_SEED",
    "Match",
    "PairDiff",
    "Side",
    "before_after",
    "compare_document",
    "figure_cells",
    "fmt_rel",
    "fmt_value",
    "match_requests",
    "match_text",
    "pair_diffs",
    "prompt_keys",
    "side_requests",
]
