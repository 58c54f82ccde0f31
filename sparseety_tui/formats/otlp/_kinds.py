"""The line kinds the OTLP family gives (``ParsedLine[0]``; the package docstring says
which lines get which)."""

from __future__ import annotations

from sparseety_tui.events import LineKind

#: A line that holds at least one span (read as a request, or counted in ``ignored``).
SPANS = "otlp.spans"
#: Valid OTLP/JSON that holds no span (an empty export, a resource without spans).
EMPTY = "otlp.empty"
KINDS = (SPANS, EMPTY, LineKind.BLANK, LineKind.UNPARSED)
