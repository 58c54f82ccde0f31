"""The line kinds the SGLang family gives (``ParsedLine[0]``; the package docstring says
which lines get which)."""

from __future__ import annotations

from sparseety_tui.events import ExpertCountPayload, LineKind, ParsedLine
from sparseety_tui.formats._serverlog import PROMETHEUS, RESPONSE

PREFILL = "sglang.prefill"
DECODE = "sglang.decode"
REQUEST = "sglang.request"
EXPERT_DIST = "sglang.expert_dist"
KINDS = (
    PREFILL,
    DECODE,
    REQUEST,
    RESPONSE,
    EXPERT_DIST,
    LineKind.ACCESS,
    LineKind.TRACEBACK,
    LineKind.ERROR,
    PROMETHEUS,
    LineKind.NOISE,
    LineKind.BLANK,
    LineKind.UNPARSED,
)

_EXPERT: ParsedLine = (EXPERT_DIST, None)


def expert_count_row(row: bytes) -> ParsedLine:
    """A dump row ``layer,expert,count`` (``patterns._CSV_ROW_RE`` matched it: three runs
    of ASCII digits) as an ``expert_count`` event: the dump's counts feed the expert heat
    map, labelled as counts (core.figures ``expert_distribution``)."""
    layer, expert, count = (int(part) for part in row.strip().split(b","))
    payload: ExpertCountPayload = {"layer": layer, "expert": expert, "count": count}
    return EXPERT_DIST, ("expert_count", payload)
