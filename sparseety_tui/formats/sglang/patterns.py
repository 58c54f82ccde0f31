"""The compiled regexes of the SGLang family, each documented with a line it matches.

Compiled once at import: the ``[date time ranks]`` prefix and the whole-line fast path
first, then batch lines, expert-distribution dumps and request logging.
"""

from __future__ import annotations

import re

#: ``[2024-10-31 21:55:11 TP0] ``, ``[2025-08-22 13:47:04 DP0 TP0 EP0] ``,
#: ``[2026-01-31 15:05:33] ``, ``[2025-01-01 10:00:00.123 TP0] ``, ``[16:43:29 TP0] ``.
_PREFIX = (
    rb"\[(?P<stamp>(?:(?P<y>\d{4})-(?P<mo>\d\d)-(?P<d>\d\d) )?(?P<h>\d\d):(?P<mi>\d\d):(?P<s>\d\d)"
    rb"(?P<frac>[.,]\d{1,6})?)(?P<ranks>(?: [A-Z][A-Z_]{0,10}\d{1,5}){0,8})\] ?"
)
PREFIX_RE = re.compile(_PREFIX)
PREFIX_SEARCH_RE = re.compile(_PREFIX)
#: A count and a plain decimal as batch lines print them, bounded so that every one
#: ``int``/``float`` converts exactly (a longer or odd number sends the line to the general
#: path, whose generic field loop leaves that field unknown).
_INT = rb"(\d{1,18})"
_NUM = rb"(\d{1,18}\.\d{1,18})"
_DEC = rb"(\d{1,18}(?:\.\d{1,18})?)"
#: The common lines of a current SGLang log, whole, in one anchored match (the rest go
#: through the general path below, which gives the same result for these):
#:   ``[2026-11-30 12:00:00 TP0] Prefill batch. #new-seq: 3, #new-token: 3105, #cached-token:
#:   2784, token usage: 0.01, #running-req: 0, #queue-req: 0``
#:   ``[2026-11-30 12:00:00 TP0] Decode batch. #running-req: 5, #token: 3175, token usage:
#:   0.01, gen throughput (token/s): 199.40, #queue-req: 1``
#:   ``[2026-11-30 12:00:00] INFO:     127.0.0.1:57479 - "POST /v1/completions HTTP/1.1" 200 OK``
#: (the access alternative only matches its start; ``ACCESS_RE`` checks the rest).
FAST_RE = re.compile(
    rb"\[(\d{4}-\d\d-\d\d \d\d:\d\d:\d\d)((?: [A-Z][A-Z_]{0,10}\d{1,5}){0,8})\] (?:"
    rb"Prefill batch\. #new-seq: "
    + _INT
    + rb", #new-token: "
    + _INT
    + rb", #cached-token: "
    + _INT
    + rb", token usage: "
    + _NUM
    + rb", #running-req: "
    + _INT
    + rb", #queue-req: "
    + _INT
    + rb"\Z"
    rb"|Decode batch\. #running-req: "
    + _INT
    + rb", #token: \d+, token usage: "
    + _NUM
    + rb", gen throughput \(token/s\): "
    + _NUM
    + rb", #queue-req: "
    + _INT
    + rb"\Z"
    rb"|(?=INFO:     ))"
)
#: ~0.2: ``[gpu=0] Prefill batch. #new-seq: 2, ...`` (no time at all).
GPU_PREFIX_RE = re.compile(rb"\[gpu(?:_id)?=\d+\] ")
#: A vLLM-style line from vendored code (``INFO 10-31 ... weight_utils.py:243] ...``).
_VLLM_STYLE_RE = re.compile(rb"(?:DEBUG|INFO|WARNING|ERROR|CRITICAL) \d\d-\d\d \d\d:\d\d:\d\d ")

#: ``Prefill batch. `` / ``Decode batch, `` / ``Prefill batch [123], ``.
BATCH_RE = re.compile(rb"(?P<kind>Prefill|Decode) batch(?: \[\d+\])?[.,]? ?")
#: ``#new-seq: 1, #new-token: 48, #cached-token: 1, [cache hit rate: 1.79%, ]token usage:
#: 0.00, #running-req: 0, #queue-req: 0`` (0.3 .. 2026 builds without SWA/PD variants).
_PREFILL_HEAD_RE = re.compile(
    rb"#new-seq: " + _INT + rb", #new-token: " + _INT + rb", #cached-token: " + _INT + rb", "
    rb"(?:cache hit rate: " + _DEC + rb"%, )?token usage: " + _DEC + rb", "
    rb"#running-req: " + _INT + rb", #queue-req: " + _INT + rb"(?:,|$)"
)
#: ``#running-req: 1, #token: 82, token usage: 0.00, ``
_DECODE_HEAD_RE = re.compile(
    rb"#running-req: " + _INT + rb", #token: \d+, token usage: " + _DEC + rb"(?:,|$)"
)
#: An expert-distribution CSV dump: the header ``layer_id,expert_id,count``, rows ``0,5,7``.
_CSV_ROW_RE = re.compile(rb"\d{1,6},\d{1,6},\d{1,12}\s*$")
_CSV_HEADER = b"layer_id,expert_id,count"
#: The request id in a ``Receive:`` / ``Finish:`` line: ``rid='ced00776101841e180bf04c8dbdc4ec2'``.
_RID_RE = re.compile(r"\brid=(?P<q>['\"])(?P<rid>[^'\"]{1,512})(?P=q)")
