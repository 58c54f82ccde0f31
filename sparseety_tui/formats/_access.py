"""HTTP access lines, whoever wrote them: uvicorn's (``clean.ACCESS_RE``) and the common /
combined log format of a proxy in front of the server (nginx, aiohttp).

Samples of the common / combined format (``%h %l %u %t "%r" %>s %b``, aiohttp's
``%a %t "%r" %s %b``):

- ``10.0.0.7 - - [10/Oct/2025:13:55:36 +0000] "POST /v1/chat/completions HTTP/1.1" 200 2326 "-" "curl/8.5.0"``
- ``10.6.131.6 [14/Apr/2025:03:55:53 +0000] "PUT /metadata?key=mooncake HTTP/1.1" 200 176 "-" "-"``
  (SGLang's Mooncake metadata server, behind SGLang's ``[ts] `` prefix)
"""

from __future__ import annotations

import re

from sparseety_tui.events import ErrorPayload, LineKind, ParsedLine
from sparseety_tui.formats._clean import ACCESS_RE
from sparseety_tui.formats.shapes import ACCESS

#: The common / combined log format, up to the status (``shapes.lines.ACCESS``).
CLF_RE = ACCESS.bytes_regex("clf")


def is_access_line(line: bytes) -> bool:
    """Whether ``line`` (wrappers and the family's prefix removed) is an HTTP access line
    of uvicorn or in the common / combined log format."""
    if b"HTTP/" not in line or b'"' not in line:
        return False  # the cheap test first: most lines are neither
    return ACCESS_RE.search(line) is not None or CLF_RE.match(line) is not None


_ACCESS: ParsedLine = (LineKind.ACCESS, None)


def access_result(m: re.Match[bytes], line: bytes, ts: float | None = None) -> ParsedLine:
    """An access line ``m`` matched (``ACCESS_RE`` or ``CLF_RE``): kind ``http.access``,
    and for a 5xx status an error event as well (class ``http_5xx``, the request line as
    its message; ``ts`` when the line's prefix gave one)."""
    status = m.group("status")
    if status is None or status[:1] != b"5":
        return _ACCESS
    payload: ErrorPayload = {
        "kind": "http_5xx",
        "status": int(status),
        "message": line[m.start("client") :].strip().decode("utf-8", "replace")[:500],
        "lines": 1,
    }
    if ts is not None:
        payload["ts"] = ts
    return LineKind.ACCESS, ("error", payload)


def access_line(line: bytes, ts: float | None = None) -> ParsedLine | None:
    """``is_access_line`` with its result: the parsed line (``access_result``) when
    ``line`` is an access line, else None."""
    if b"HTTP/" not in line or b'"' not in line:
        return None
    m = ACCESS_RE.search(line) or CLF_RE.match(line)
    return None if m is None else access_result(m, line, ts)
