"""The compiled regexes of the vLLM family, each documented with a line it matches.

Compiled once at import; the line structure (process prefixes, the logging head) first,
then the engine stats lines, then the request lines. Each one runs in time linear in the
line, for ``match`` and ``search`` alike (docs/ARCHITECTURE.md, "How to add a format").
"""

from __future__ import annotations

import re

#: ``(APIServer pid=1) `` (nesting handled by looping). Bounded so a line that merely
#: starts with ``(`` is not scanned to its end; a search only starts at a ``(`` that opens
#: a prefix (after a space, a bracket, ``|`` or ``>``, or at the start), not at each ``(``
#: of a run of them.
_PROC = rb"(?<![^\s)\]|>])\((?P<proc>[^\r\n]{1,200}?) pid=(?P<pid>\d{1,10})\)"
PROC_RE = re.compile(_PROC + rb"\s?")

#: The logging head. ``INFO 02-22 16:52:30 metrics.py:161] `` (<0.8),
#: ``INFO 03-18 09:04:46 [metrics.py:481] `` (>=0.8), ``[v1/engine/async_llm.py:480]``,
#: glitch ``[async_llm.py:485[]``; PR #7606 pasted a leading ``[``.
_HEAD = (
    rb"\[?(?P<level>DEBUG|INFO|WARNING|WARN|ERROR|CRITICAL) "
    rb"(?P<stamp>\d\d-\d\d \d\d:\d\d:\d\d)(?:\.\d+)? "
    rb"\[?(?P<file>[^\s\[\]:]{1,300}):(?P<lineno>\d+)(?:\[\]|\])\]? ?"
)
HEAD_RE = re.compile(_HEAD)
HEAD_SEARCH_RE = re.compile(rb"(?<![A-Za-z])" + _HEAD)
#: The common case in one match: one simple process prefix and the head.
FAST_RE = re.compile(rb"\((?P<proc>[^()\r\n]{1,120}?) pid=(?P<pid>\d{1,10})\) " + _HEAD)
#: The two request lines of every request, up to their bodies, with at most one simple
#: process prefix (the rest go through the general path, which gives the same result):
#:   ``INFO 11-30 12:00:00 [logger.py:43] Received request chatcmpl-b4c9: prompt: '...',``
#:   ``(APIServer pid=1) INFO 02-13 11:33:33 [async_llm.py:382] Added request cmpl-9-a8a65d16.``
FAST_REQUEST_RE = re.compile(
    rb"(?:\([^()\r\n]{1,120}? pid=\d{1,10}\) )?"
    rb"INFO (\d\d-\d\d \d\d:\d\d:\d\d) \[[^\s\[\]:]{1,300}:\d+\] ()"
    rb"(?:Received request (\S+): |Added request ([\w-]+)\.\Z)"
)
#: One simple process prefix before a uvicorn access line (``_fast_access``).
_FAST_PROC_RE = re.compile(rb"\([^()\r\n]{1,120}? pid=\d{1,10}\) (?=INFO:     )")
#: Where wrapper stripping stops: a process prefix or the logging head.
_OWN_PREFIX_RE = re.compile(_PROC + rb"|" + _HEAD)

#: A count and a plain decimal as the stats lines print them, bounded so that every one
#: ``int``/``float`` converts exactly (a longer or odd number sends the line to
#: ``StatsLines._generic_stats``, which leaves that field unknown).
_INT = rb"\d{1,18}"
_NUM = rb"\d{1,18}(?:\.\d{1,18})?"

#: V1: ``Engine 000: Avg prompt throughput: 0.0 tokens/s, Avg generation throughput:
#: 25.0 tokens/s, Running: 0 reqs, Waiting: 0 reqs, GPU KV cache usage: 0.0%, Prefix cache
#: hit rate: 64.4%, MM cache hit rate: 66.7%`` (0.8.x: no ``Engine`` part; newer builds
#: add ``, Deferred: 2 reqs, Preemptions: 3`` after Waiting, and ``Corrupted``, ``External
#: prefix cache hit rate`` and ``MM cache hit rate`` after the match, read by
#: ``StatsLines``). A search tries the engine count only at the start of a run of digits.
V1_STATS_RE = re.compile(
    rb"(?:Engine (?P<engine>" + _INT + rb"): |(?<![0-9])(?P<nagg>\d+) Engines Aggregated: )?"
    rb"Avg prompt throughput: (?P<p>" + _NUM + rb") tokens/s, "
    rb"Avg generation throughput: (?P<g>" + _NUM + rb") tokens/s, "
    rb"Running: (?P<run>" + _INT + rb") reqs, Waiting: (?P<wait>" + _INT + rb") reqs"
    rb"(?:, Deferred: (?P<deferred>"
    + _INT
    + rb") reqs)?(?:, Preemptions: (?P<pre>"
    + _INT
    + rb"))?, "
    rb"GPU KV cache usage: (?P<kv>" + _NUM + rb")%, Prefix cache hit rate: (?P<hit>" + _NUM + rb")%"
)
#: V0: ``Avg prompt throughput: 0.9 tokens/s, Avg generation throughput: 0.0 tokens/s,
#: Running: 1 reqs, Swapped: 0 reqs, Pending: 0 reqs, GPU KV cache usage: 0.0%, CPU KV
#: cache usage: 0.0%[.]``
V0_STATS_RE = re.compile(
    rb"Avg prompt throughput: (?P<p>" + _NUM + rb") tokens/s, "
    rb"Avg generation throughput: (?P<g>" + _NUM + rb") tokens/s, "
    rb"Running: (?P<run>" + _INT + rb") reqs, Swapped: (?P<sw>" + _INT + rb") reqs, "
    rb"Pending: (?P<pend>" + _INT + rb") reqs, GPU KV cache usage: (?P<kv>" + _NUM + rb")%"
)
#: ``Prefix cache hit rate: GPU: 22.16%, CPU: 0.00%`` (V0, 0.5.5+).
V0_HIT_RE = re.compile(
    rb"Prefix cache hit rate: GPU: (?P<gpu>" + _NUM + rb")%, CPU: (?P<cpu>" + _NUM + rb")%"
)

#: Request lines, searched in the message (after the head):
#:   ``Received request chatcmpl-a269fdcb7c6ce890: params: SamplingParams(n=1, ...``
#:   ``Request chatcmpl-b73b details: prompt: '...'`` (DEBUG)
#:   ``Added request chatcmpl-a269fdcb7c6ce890-a8a65d16.``, ``Aborted request(s) x1,x2.``
#:   ``Generated response chatcmpl-b73b: output: 'A joke', output_token_ids: [...], ...``
_RECEIVED_RE = re.compile(rb"Received request (?P<id>\S+): ")
_DETAILS_RE = re.compile(rb"Request (?P<id>\S+) details: ")
_LIFECYCLE_RE = re.compile(rb"(?P<what>Added|Aborted|Finished) request(?:\(s\)|s)? (?=\S)")
_GENERATED_RE = re.compile(
    rb"Generated response (?P<id>\S+?)(?P<stream> \(streaming (?:delta|complete)\))?"
    rb"(?P<details> details)?: "
)
#: The ``-a8a65d16`` a V1 ≈0.15 engine adds to the front-end id (``Added request`` above).
_ID_SUFFIX_RE = re.compile(r"-[0-9a-f]{8}$")
#: Ray's log deduplication at the end of a worker's line: `` [repeated 2x across cluster]``.
#: The whitespace before it is taken from the start of its run only: without the
#: lookbehind, ``sub`` tried every space of a long run and read the rest of the run from
#: each (quadratic: 18.9 s for one 100 KB line, issue #9).
_RAY_REPEAT_RE = re.compile(rb"(?<!\s)\s*\[repeated \d{1,10}x across cluster\]\s*$")
