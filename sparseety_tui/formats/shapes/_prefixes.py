"""What stands in front of a line or inside it before a family reads it (formats/_clean.py):
the wrappers a line may carry one by one, and terminal escape codes. Whole-file wrappers
(journald, syslog, Docker's json-file driver, kubectl, stern, CloudWatch) are their own
table of samples and unwrappers in formats/_wrappers.py.
"""

from __future__ import annotations

from sparseety_tui.formats.shapes._loader import LineShape, table

#: One wrapper in front of a line (``clean.strip_wrappers``, which takes them off one by
#: one). The names start only where a name can, so a search does not retry inside one. A
#: stamp followed by `` - `` is Python ``logging``'s own format (known noise), not a
#: wrapper: taking it as one left ``- INFO - ...`` unrecognised whenever a real wrapper
#: stood in front of it. A stamp takes exactly one separator (docker, kubectl and CI print
#: one): the indentation after it is the line's own (a Python warning's source line is
#: told by it). Samples are real (tests/data/real_logs/MANIFEST.md).
WRAPPER = table(
    "wrapper",
    "exclusive",
    (
        LineShape(
            "stamp",
            rb"(?P<ts>\[\d{4}-\d{2}-\d{2}[T ]\d{2}:\d{2}:\d{2}(?:[.,]\d{1,9})?(?:Z|[+-]\d{2}:?\d{2})?\]"
            rb"|\d{4}-\d{2}-\d{2}[T ]\d{2}:\d{2}:\d{2}(?:[.,]\d{1,9})?(?:Z|[+-]\d{2}:?\d{2})?)[ \t](?!- )",
            "wrapper",
            (
                # docker --timestamps
                b"2026-05-12T08:01:39.331095044Z (APIServer pid=1) INFO 02-13 11:33:33 x",
                b"[2026-08-21T19:42:37Z] INFO 02-13 11:33:33 x",  # CI, bracketed RFC3339
                b"[2024-07-08 15:17:34] INFO 07-08 07:17:34 metrics.py:334] x",  # a collector
                b"2025-05-14 17:45:10.901 1647689 kserve.trace Received x",  # KServe
            ),
            {"ts": "text"},
        ),
        LineShape("quote", rb">[ \t]?", "wrapper", (b"> INFO 02-22 16:52:30 metrics.py:161] x",)),
        LineShape(
            "compose",
            rb"(?<![\w.-])[A-Za-z0-9][\w.-]{0,80}[ \t]*\|[ \t]",
            "wrapper",
            (b"qwen3-vl-32b  | (APIServer pid=104) ERROR 02-13 11:33:33 x",),
        ),
        LineShape(
            "pod",
            rb"(?<![a-z0-9-])[a-z0-9][a-z0-9-]{0,80}-[a-z0-9]{5,10}-[a-z0-9]{5} [\w.-]{1,80} "
            rb"(?=\(|\[|INFO|WARNING|ERROR|DEBUG|CRITICAL)",
            "wrapper",
            (b"vllm-7d9f8c6b5-x2k9p vllm (APIServer pid=1) INFO 02-13 11:33:33 x",),
        ),
    ),
)

#: Terminal escape codes, taken out of a line anywhere (``clean.basic_clean``): CSI
#: sequences (colours, cursor moves) and the character-set selections ``tput sgr0`` ends
#: with.
ANSI = table(
    "ansi",
    "exclusive",
    (
        LineShape(
            "csi",
            rb"\x1b\[[0-9;?]*[ -/]*[@-~]",
            "ansi",
            (b"\x1b[1;36m(APIServer pid=1)\x1b[0;0m INFO",),
            op="search",
        ),
        LineShape("charset", rb"\x1b[()][0-9A-B]", "ansi", (b"INFO\x1b(B",), op="search"),
    ),
)
