"""The line shapes of the vLLM family as data: rows of (name, pattern, kind, typed fields,
sample lines), loaded once at import by ``formats.shapes.table``.

Three tables: the line structure (process prefixes, the logging head, the whole-line fast
paths), the engine stats lines and the request lines. Each pattern runs in time linear in
the line, for ``match`` and ``search`` alike (docs/ARCHITECTURE.md, "How to add a
format"). The request state machine that reads them is code (``vllm/parser.py``).
"""

from __future__ import annotations

from sparseety_tui.formats.shapes import FieldType, LineShape, table

#: ``(APIServer pid=1) `` (nesting handled by looping). Bounded so a line that merely
#: starts with ``(`` is not scanned to its end; a search only starts at a ``(`` that opens
#: a prefix (after a space, a bracket, ``|`` or ``>``, or at the start), not at each ``(``
#: of a run of them.
_PROC = rb"(?<![^\s)\]|>])\((?P<proc>[^\r\n]{1,200}?) pid=(?P<pid>\d{1,10})\)"
_PROC_FIELDS: dict[str, FieldType] = {"proc": "text", "pid": "int"}

#: The logging head. ``INFO 02-22 16:52:30 metrics.py:161] `` (<0.8),
#: ``INFO 03-18 09:04:46 [metrics.py:481] `` (>=0.8), ``[v1/engine/async_llm.py:480]``,
#: glitch ``[async_llm.py:485[]``; PR #7606 pasted a leading ``[``.
_HEAD = (
    rb"\[?(?P<level>DEBUG|INFO|WARNING|WARN|ERROR|CRITICAL) "
    rb"(?P<stamp>\d\d-\d\d \d\d:\d\d:\d\d)(?:\.\d+)? "
    rb"\[?(?P<file>[^\s\[\]:]{1,300}):(?P<lineno>\d+)(?:\[\]|\])\]? ?"
)
_HEAD_FIELDS: dict[str, FieldType] = {
    "level": "text",
    "stamp": "text",
    "file": "text",
    "lineno": "int",
}
_HEAD_SAMPLES = (
    b"INFO 02-22 16:52:30 metrics.py:161] Avg prompt throughput: 0.0 tokens/s",
    b"INFO 03-18 09:04:46 [metrics.py:481] Avg prompt throughput: 0.0 tokens/s",
    b"INFO 03-18 09:04:46 [v1/engine/async_llm.py:480] Added request x.",
    b"INFO 03-18 09:04:46 [async_llm.py:485[] Added request x.",
)

#: The line structure: rows that read parts of one line in turn (a process prefix, then
#: the logging head), and the fast paths that read the common lines in one match.
LINE = table(
    "vllm.line",
    "parts",
    (
        LineShape(
            "proc",
            _PROC + rb"\s?",
            "prefix",
            (b"(APIServer pid=1) INFO 02-13 11:33:33 [async_llm.py:382] Added request x.",),
            _PROC_FIELDS,
            op="search",
        ),
        LineShape("head", _HEAD, "head", _HEAD_SAMPLES, _HEAD_FIELDS),
        LineShape(
            "head_search",
            rb"(?<![A-Za-z])" + _HEAD,
            "head",
            (b"[2024-07-08 15:17:34] INFO 07-08 07:17:34 metrics.py:334] Avg prompt",),
            _HEAD_FIELDS,
            op="search",
        ),
        # The common case in one match: one simple process prefix and the head.
        LineShape(
            "fast",
            rb"\((?P<proc>[^()\r\n]{1,120}?) pid=(?P<pid>\d{1,10})\) " + _HEAD,
            "prefix",
            (b"(APIServer pid=1) INFO 03-18 09:04:46 [loggers.py:123] Engine 000: Avg",),
            {**_PROC_FIELDS, **_HEAD_FIELDS},
        ),
        # The two request lines of every request, up to their bodies, with at most one
        # simple process prefix (the rest go through the general path, which gives the
        # same result).
        LineShape(
            "fast_request",
            rb"(?:\([^()\r\n]{1,120}? pid=\d{1,10}\) )?"
            rb"INFO (\d\d-\d\d \d\d:\d\d:\d\d) \[[^\s\[\]:]{1,300}:\d+\] ()"
            rb"(?:Received request (\S+): |Added request ([\w-]+)\.\Z)",
            "request",
            (
                b"INFO 11-30 12:00:00 [logger.py:43] Received request chatcmpl-b4c9: prompt: 'x',",
                b"(APIServer pid=1) INFO 02-13 11:33:33 [async_llm.py:382] Added request"
                b" cmpl-9-a8a65d16.",
            ),
            {"1": "text", "2": "text", "3": "text", "4": "text"},
        ),
        # One simple process prefix before a uvicorn access line.
        LineShape(
            "fast_proc",
            rb"\([^()\r\n]{1,120}? pid=\d{1,10}\) (?=INFO:     )",
            "prefix",
            (b'(APIServer pid=1) INFO:     127.0.0.1:57479 - "GET /metrics HTTP/1.1" 200 OK',),
        ),
        # Where wrapper stripping stops: a process prefix or the logging head.
        LineShape(
            "own_prefix",
            _PROC + rb"|" + _HEAD,
            "prefix",
            (b"(APIServer pid=1) INFO:     Started server process [1]", *_HEAD_SAMPLES[:1]),
            {**_PROC_FIELDS, **_HEAD_FIELDS},
        ),
        # Ray's log deduplication at the end of a worker's line. The whitespace before it
        # is taken from the start of its run only: without the lookbehind, ``sub`` tried
        # every space of a long run and read the rest of the run from each (quadratic).
        LineShape(
            "ray_repeat",
            rb"(?<!\s)\s*\[repeated \d{1,10}x across cluster\]\s*$",
            "suffix",
            (
                b"(RayWorkerWrapper pid=1234) INFO 07-08 07:17:34 worker.py:1] hi [repeated 2x across cluster]",
            ),
            op="search",
        ),
    ),
)

#: A count and a plain decimal as the stats lines print them, bounded so that every one
#: ``int``/``float`` converts exactly (a longer or odd number sends the line to
#: ``StatsLines._generic_stats``, which leaves that field unknown).
_INT = rb"\d{1,18}"
_NUM = rb"\d{1,18}(?:\.\d{1,18})?"

#: The engine stats lines, matched on the message after the head: V1 (0.8.x has no
#: ``Engine`` part; newer builds add ``, Deferred: 2 reqs, Preemptions: 3`` after Waiting,
#: and ``Corrupted``, ``External prefix cache hit rate`` and ``MM cache hit rate`` after
#: the match, read by ``StatsLines``), V0, and V0's prefix cache line (0.5.5+). A search
#: tries the V1 engine count only at the start of a run of digits.
STATS = table(
    "vllm.stats",
    "exclusive",
    (
        LineShape(
            "v1",
            rb"(?:Engine (?P<engine>"
            + _INT
            + rb"): |(?<![0-9])(?P<nagg>\d+) Engines Aggregated: )?"
            rb"Avg prompt throughput: (?P<p>" + _NUM + rb") tokens/s, "
            rb"Avg generation throughput: (?P<g>" + _NUM + rb") tokens/s, "
            rb"Running: (?P<run>" + _INT + rb") reqs, Waiting: (?P<wait>" + _INT + rb") reqs"
            rb"(?:, Deferred: (?P<deferred>"
            + _INT
            + rb") reqs)?(?:, Preemptions: (?P<pre>"
            + _INT
            + rb"))?, "
            rb"GPU KV cache usage: (?P<kv>"
            + _NUM
            + rb")%, Prefix cache hit rate: (?P<hit>"
            + _NUM
            + rb")%",
            "vllm.stats",
            (
                b"Engine 000: Avg prompt throughput: 0.0 tokens/s, Avg generation throughput:"
                b" 25.0 tokens/s, Running: 0 reqs, Waiting: 0 reqs, GPU KV cache usage: 0.0%,"
                b" Prefix cache hit rate: 64.4%, MM cache hit rate: 66.7%",
                b"2 Engines Aggregated: Avg prompt throughput: 0.0 tokens/s, Avg generation"
                b" throughput: 25.0 tokens/s, Running: 0 reqs, Waiting: 0 reqs, Deferred: 2 reqs,"
                b" Preemptions: 3, GPU KV cache usage: 0.0%, Prefix cache hit rate: 64.4%",
            ),
            {
                "engine": "int",
                "nagg": "int",
                "p": "float",
                "g": "float",
                "run": "int",
                "wait": "int",
                "deferred": "int",
                "pre": "int",
                "kv": "float",
                "hit": "float",
            },
        ),
        LineShape(
            "v0",
            rb"Avg prompt throughput: (?P<p>" + _NUM + rb") tokens/s, "
            rb"Avg generation throughput: (?P<g>" + _NUM + rb") tokens/s, "
            rb"Running: (?P<run>" + _INT + rb") reqs, Swapped: (?P<sw>" + _INT + rb") reqs, "
            rb"Pending: (?P<pend>" + _INT + rb") reqs, GPU KV cache usage: (?P<kv>" + _NUM + rb")%",
            "vllm.stats",
            (
                b"Avg prompt throughput: 0.0 tokens/s, Avg generation throughput: 41.7 tokens/s,"
                b" Running: 1 reqs, Swapped: 0 reqs, Pending: 0 reqs, GPU KV cache usage: 2.0%,"
                b" CPU KV cache usage: 0.0%.",
            ),
            {"p": "float", "g": "float", "run": "int", "sw": "int", "pend": "int", "kv": "float"},
        ),
        LineShape(
            "v0_hit",
            rb"Prefix cache hit rate: GPU: (?P<gpu>" + _NUM + rb")%, CPU: (?P<cpu>" + _NUM + rb")%",
            "vllm.stats",
            (b"Prefix cache hit rate: GPU: 22.16%, CPU: 0.00%",),
            {"gpu": "float", "cpu": "float"},
            op="search",
        ),
    ),
)

#: The request lines, searched in the message after the head (``DEBUG`` for details).
REQUEST = table(
    "vllm.request",
    "exclusive",
    (
        LineShape(
            "received",
            rb"Received request (?P<id>\S+): ",
            "vllm.request",
            (b"Received request chatcmpl-a269fdcb7c6ce890: params: SamplingParams(n=1, ",),
            {"id": "text"},
            op="search",
        ),
        LineShape(
            "details",
            rb"Request (?P<id>\S+) details: ",
            "vllm.request",
            (b"Request chatcmpl-b73b details: prompt: 'x'",),
            {"id": "text"},
            op="search",
        ),
        LineShape(
            "lifecycle",
            rb"(?P<what>Added|Aborted|Finished) request(?:\(s\)|s)? (?=\S)",
            "vllm.request",
            (
                b"Added request chatcmpl-a269fdcb7c6ce890-a8a65d16.",
                b"Aborted request(s) x1,x2.",
                b"Finished request chatcmpl-a269fdcb7c6ce890.",
            ),
            {"what": "text"},
            op="search",
        ),
        LineShape(
            "generated",
            rb"Generated response (?P<id>\S+?)(?P<stream> \(streaming (?:delta|complete)\))?"
            rb"(?P<details> details)?: ",
            "vllm.request",
            (
                b"Generated response chatcmpl-b73b: output: 'A joke', output_token_ids: [1]",
                b"Generated response chatcmpl-b73b (streaming delta): output: 'A'",
            ),
            {"id": "text", "stream": "text", "details": "text"},
            op="search",
        ),
    ),
)

#: The ``-a8a65d16`` a V1 engine adds to the front-end id (``Added request`` above),
#: searched in the decoded id.
REQUEST_ID = table(
    "vllm.request_id",
    "exclusive",
    (
        LineShape(
            "suffix", r"-[0-9a-f]{8}$", "id", ("chatcmpl-a269fdcb7c6ce890-a8a65d16",), op="search"
        ),
    ),
)

PROC_RE = LINE.bytes_regex("proc")
HEAD_RE = LINE.bytes_regex("head")
HEAD_SEARCH_RE = LINE.bytes_regex("head_search")
FAST_RE = LINE.bytes_regex("fast")
FAST_REQUEST_RE = LINE.bytes_regex("fast_request")
_FAST_PROC_RE = LINE.bytes_regex("fast_proc")
_OWN_PREFIX_RE = LINE.bytes_regex("own_prefix")
_RAY_REPEAT_RE = LINE.bytes_regex("ray_repeat")
V1_STATS_RE = STATS.bytes_regex("v1")
V0_STATS_RE = STATS.bytes_regex("v0")
V0_HIT_RE = STATS.bytes_regex("v0_hit")
_RECEIVED_RE = REQUEST.bytes_regex("received")
_DETAILS_RE = REQUEST.bytes_regex("details")
_LIFECYCLE_RE = REQUEST.bytes_regex("lifecycle")
_GENERATED_RE = REQUEST.bytes_regex("generated")
_ID_SUFFIX_RE = REQUEST_ID.str_regex("suffix")
