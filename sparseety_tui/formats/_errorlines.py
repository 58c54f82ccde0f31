"""Error lines in the shapes any Python (or C++) program prints, whatever the file's format.

A line logged at ERROR or CRITICAL level is an error of its own: a CI
tail, a wrapper script's log or a server log all count it. Samples (each real or the
default of its logging library):

- ``ERROR 07-08 10:00:00 [engine.py:12] msg``: vLLM's logging head;
- ``2025-01-01 10:00:00,123 - ERROR - name: msg``: ``%(asctime)s - %(levelname)s - ...``,
  also with the logger's name first (``2025-01-01 10:00:00,123 - vllm.x - ERROR - msg``);
- ``ERROR:root:msg``: ``logging.basicConfig``'s default;
- ``[2025-01-01 10:00:00] ERROR msg``, ``[2026-01-20 21:24:54,336] LMCache ERROR: msg``;
- ``ERROR:    Exception in ASGI application``: uvicorn;
- ``2026-02-26 13:55:38  ERROR smg::server: msg``: Rust ``tracing`` (sglang-router);
- ``E0414 03:56:41.856248 77969 transfer_metadata_plugin.cpp:173] msg``: glog (C++: Mooncake,
  PyTorch), ``E`` for error and ``F`` for fatal.

The level must come first, after at most a timestamp and a logger name: a word ``ERROR``
further into a message does not make the line an error.
"""

from __future__ import annotations

from sparseety_tui.formats.shapes import ERROR

#: See the module docstring: the rows of ``shapes.lines.ERROR`` in one match.
ERROR_LINE_RE = ERROR.alternation("level", "glog")

#: The first bytes an error line can start with (``ERROR_LINE_RE``'s alternatives: ``[``,
#: a date's digit, ``E``/``C``/``F`` of a level or glog's letter): a cheap test before the
#: regex on the paths of lines that are not the server's own records.
ERROR_HEADS = b"[0123456789ECF"

#: What is left off the front of an error's message after the level.
_SEPARATORS = b" :-]\t"


def error_message(line: bytes) -> str | None:
    """The message of an error line (the text after its level), or None when ``line`` is
    not one. A line with nothing after its level gives the line itself."""
    m = ERROR_LINE_RE.match(line)
    if m is None:
        return None
    text = line[m.end() :].lstrip(_SEPARATORS).rstrip() or line.strip()
    return text.decode("utf-8", "replace")
