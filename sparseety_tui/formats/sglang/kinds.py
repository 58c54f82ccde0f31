"""The line kinds the SGLang family gives (``ParsedLine[0]``; the package docstring says
which lines get which)."""

from __future__ import annotations

from sparseety_tui.events import LineKind, ParsedLine
from sparseety_tui.formats.serverlog import PROMETHEUS, RESPONSE

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
