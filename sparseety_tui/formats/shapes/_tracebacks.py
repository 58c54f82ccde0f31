"""The lines of a Python traceback (formats/_tracebacks.py, which groups them: that is
state, and stays code). Each pattern starts with a lookbehind for its first repeated
class, so a search reads a run from its start only."""

from __future__ import annotations

from sparseety_tui.formats.shapes._loader import LineShape, table

TRACEBACK = table(
    "traceback",
    "parts",
    (
        LineShape(
            "frame",
            r'(?<!\s)\s+File "[^"]*", line [0-9]+',
            "traceback",
            (
                '  File "/usr/lib/python3.12/site-packages/vllm/engine/llm_engine.py", line 12, in f',
            ),
        ),
        # The exception line ends a traceback: its class, and its message when it has one.
        LineShape(
            "exception",
            r"(?<![\w.])(?P<exc>[A-Za-z_][\w.]*)(?::\s?(?P<msg>.*))?$",
            "traceback",
            ("ValueError: bad value", "KeyboardInterrupt"),
            {"exc": "text", "msg": "text"},
        ),
        # A request id named in a traceback's lines, which ties the error to its request.
        LineShape(
            "request_id",
            r"(?:request[_ ]?id|rid|request)[=: ]+['\"]?(?P<a>[\w.:-]{6,})"
            r"|\b(?P<b>(?:chat)?cmpl-[0-9a-zA-Z-]{8,})",
            "traceback",
            (
                "RuntimeError: request_id=req-7f3a9c failed",
                "    raise EngineDeadError(chatcmpl-3d2f1a9e8b7c)",
            ),
            {"a": "text", "b": "text"},
            op="search",
        ),
    ),
)
