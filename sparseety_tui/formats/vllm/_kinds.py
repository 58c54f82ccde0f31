"""The line kinds the vLLM family gives (``ParsedLine[0]``; the package docstring says
which lines get which)."""

from __future__ import annotations

from sparseety_tui.events import LineKind
from sparseety_tui.formats._serverlog import PROMETHEUS, RESPONSE

STATS = "vllm.stats"
REQUEST = "vllm.request"
KINDS = (
    STATS,
    REQUEST,
    RESPONSE,
    LineKind.ACCESS,
    LineKind.TRACEBACK,
    LineKind.ERROR,
    PROMETHEUS,
    LineKind.NOISE,
    LineKind.BLANK,
    LineKind.UNPARSED,
)
