"""The line shapes of the SGLang family as data: rows of (name, pattern, kind, typed fields,
sample lines), loaded once at import by ``formats.shapes.table``.

Tables: the line structure (the ``[date time ranks]`` prefix and the whole-line fast path),
batch lines, expert-distribution dumps, request ids and prefill/decode transfer failures.
Each pattern runs in time linear in the line, for ``match`` and ``search`` alike. The
request state machine that reads them is code (``sglang/parser.py``).
"""

from __future__ import annotations

from sparseety_tui.formats.shapes import FieldType, LineShape, table

#: ``[2024-10-31 21:55:11 TP0] ``, ``[2025-08-22 13:47:04 DP0 TP0 EP0] ``,
#: ``[2026-01-31 15:05:33] ``, ``[2025-01-01 10:00:00.123 TP0] ``, ``[16:43:29 TP0] ``.
_PREFIX = (
    rb"\[(?P<stamp>(?:(?P<y>\d{4})-(?P<mo>\d\d)-(?P<d>\d\d) )?(?P<h>\d\d):(?P<mi>\d\d):(?P<s>\d\d)"
    rb"(?P<frac>[.,]\d{1,6})?)(?P<ranks>(?: [A-Z][A-Z_]{0,10}\d{1,5}){0,8})\] ?"
)
_PREFIX_FIELDS: dict[str, FieldType] = {
    "stamp": "text",
    "y": "int",
    "mo": "int",
    "d": "int",
    "h": "int",
    "mi": "int",
    "s": "int",
    "frac": "text",
    "ranks": "text",
}
#: A count and a plain decimal as batch lines print them, bounded so that every one
#: ``int``/``float`` converts exactly (a longer or odd number sends the line to the general
#: path, whose generic field loop leaves that field unknown).
_INT = rb"(\d{1,18})"
_NUM = rb"(\d{1,18}\.\d{1,18})"
_DEC = rb"(\d{1,18}(?:\.\d{1,18})?)"
_PREFILL = (
    b"[2026-11-30 12:00:00 TP0] Prefill batch. #new-seq: 3, #new-token: 3105, #cached-token:"
    b" 2784, token usage: 0.01, #running-req: 0, #queue-req: 0"
)
_DECODE = (
    b"[2026-11-30 12:00:00 TP0] Decode batch. #running-req: 5, #token: 3175, token usage:"
    b" 0.01, gen throughput (token/s): 199.40, #queue-req: 1"
)

#: The line structure: rows that read parts of one line in turn.
LINE = table(
    "sglang.line",
    "parts",
    (
        LineShape(
            "prefix",
            _PREFIX,
            "prefix",
            (
                _PREFILL,
                b"[2025-08-22 13:47:04 DP0 TP0 EP0] Load weight end.",
                b"[2026-01-31 15:05:33] Receive: obj=GenerateReqInput(rid='a')",
                b"[2025-01-01 10:00:00.123 TP0] Load weight end.",
                b"[16:43:29 TP0] Load weight end.",
            ),
            _PREFIX_FIELDS,
        ),
        LineShape(
            "prefix_search",
            _PREFIX,
            "prefix",
            (b"sglang-1  | [2026-01-31 15:05:33] Receive: obj=GenerateReqInput(rid='a')",),
            _PREFIX_FIELDS,
            op="search",
        ),
        # The common lines of a current SGLang log, whole, in one anchored match (the rest
        # go through the general path, which gives the same result for these); the access
        # alternative only matches its start (``ACCESS_RE`` checks the rest).
        LineShape(
            "fast",
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
            rb"|(?=INFO:     ))",
            "sglang.batch",
            (
                _PREFILL,
                _DECODE,
                b'[2026-11-30 12:00:00] INFO:     127.0.0.1:57479 - "POST /v1/completions HTTP/1.1"'
                b" 200 OK",
            ),
            {
                "1": "text",
                "2": "text",
                **{str(n): "int" for n in (3, 4, 5, 7, 8, 9, 12)},
                **{str(n): "float" for n in (6, 10, 11)},
            },
        ),
        # ~0.2: no time at all.
        LineShape(
            "gpu_prefix",
            rb"\[gpu(?:_id)?=\d+\] ",
            "prefix",
            (b"[gpu=0] Prefill batch. #new-seq: 2, #new-token: 48",),
        ),
        # A vLLM-style line from vendored code.
        LineShape(
            "vllm_style",
            rb"(?:DEBUG|INFO|WARNING|ERROR|CRITICAL) \d\d-\d\d \d\d:\d\d:\d\d ",
            "other",
            (b"INFO 10-31 21:55:11 weight_utils.py:243] Using model weights format",),
        ),
    ),
)

#: Batch lines, after the prefix: ``Prefill batch. `` / ``Decode batch, `` / ``Prefill
#: batch [123], ``, then the head of its fields (0.3 .. 2026 builds without SWA/PD
#: variants).
BATCH = table(
    "sglang.batch",
    "exclusive",
    (
        LineShape(
            "batch",
            rb"(?P<kind>Prefill|Decode) batch(?: \[\d+\])?[.,]? ?",
            "sglang.batch",
            (
                b"Prefill batch. #new-seq: 1, #new-token: 48",
                b"Decode batch, #running-req: 1, #token: 82",
                b"Prefill batch [123], #new-seq: 1, #new-token: 48",
            ),
            {"kind": "text"},
            op="search",
        ),
        LineShape(
            "prefill_head",
            rb"#new-seq: "
            + _INT
            + rb", #new-token: "
            + _INT
            + rb", #cached-token: "
            + _INT
            + rb", "
            rb"(?:cache hit rate: " + _DEC + rb"%, )?token usage: " + _DEC + rb", "
            rb"#running-req: " + _INT + rb", #queue-req: " + _INT + rb"(?:,|$)",
            "sglang.batch",
            (
                b"#new-seq: 1, #new-token: 48, #cached-token: 1, token usage: 0.00,"
                b" #running-req: 0, #queue-req: 0",
                b"#new-seq: 1, #new-token: 48, #cached-token: 1, cache hit rate: 1.79%,"
                b" token usage: 0.00, #running-req: 0, #queue-req: 0",
            ),
            {
                "1": "int",
                "2": "int",
                "3": "int",
                "4": "float",
                "5": "float",
                "6": "int",
                "7": "int",
            },
        ),
        LineShape(
            "decode_head",
            rb"#running-req: " + _INT + rb", #token: \d+, token usage: " + _DEC + rb"(?:,|$)",
            "sglang.batch",
            (b"#running-req: 1, #token: 82, token usage: 0.00, gen throughput (token/s): 10.00",),
            {"1": "int", "2": "float"},
        ),
    ),
)

#: The ``key: value`` fields after a batch line's head that are read, by batch kind:
#: key -> (the stats field, its type: ``int`` a count, ``float`` a decimal, ``percent`` a
#: percentage as a fraction). Every other key is ignored.
_BATCH_COMMON: dict[bytes, tuple[str, str]] = {
    b"token usage": ("kv_usage", "float"),
    b"full token usage": ("kv_usage", "float"),
    b"#running-req": ("running", "int"),
    b"#queue-req": ("queued", "int"),
}
BATCH_FIELDS: dict[str, dict[bytes, tuple[str, str]]] = {
    "Prefill": {
        **_BATCH_COMMON,
        b"#new-seq": ("batch_requests", "int"),
        b"#new-token": ("new_tokens", "int"),
        b"#cached-token": ("cached_tokens", "int"),
        b"cache hit rate": ("prefix_cache_hit_rate", "percent"),
        b"input throughput (token/s)": ("prompt_throughput", "float"),
        # PD prefill node (scheduler_metrics_mixin.py): the bootstrap queue was
        # ``#prealloc-req`` and the inflight (KV being sent) queue ``#inflight-req``
        # before ~Oct 2025.
        b"#unbootstrapped-req": ("bootstrap_queue", "int"),
        b"#prealloc-req": ("bootstrap_queue", "int"),
        b"#transferring-req": ("transferring", "int"),
        b"#inflight-req": ("transferring", "int"),
    },
    "Decode": {
        **_BATCH_COMMON,
        b"gen throughput (token/s)": ("generation_throughput", "float"),
        b"accept len": ("spec_accept_length", "float"),
        b"accept rate": ("spec_accept_rate", "float"),
        # PD decode node (sglang #6017): ``pre-allocated usage: 0.00, #prealloc-req: 0,
        # #transfer-req: 1, #retracted-req: 0``.
        b"pre-allocated usage": ("preallocated_usage", "float"),
        b"#prealloc-req": ("prealloc_queue", "int"),
        b"#transfer-req": ("transfer_queue", "int"),
        b"#retracted-req": ("retracted", "int"),
    },
}

#: A row of an expert-distribution CSV dump (after its header ``layer_id,expert_id,count``).
EXPERT = table(
    "sglang.expert",
    "exclusive",
    (LineShape("csv_row", rb"\d{1,6},\d{1,6},\d{1,12}\s*$", "sglang.expert", (b"0,5,7",)),),
)
_CSV_HEADER = b"layer_id,expert_id,count"

#: The request id in a ``Receive:`` / ``Finish:`` line, searched in the decoded message.
REQUEST_ID = table(
    "sglang.request_id",
    "exclusive",
    (
        LineShape(
            "rid",
            r"\brid=(?P<q>['\"])(?P<rid>[^'\"]{1,512})(?P=q)",
            "id",
            ("Finish: obj=GenerateReqInput(rid='bf890d9ca8ce4008bef7ef25d97f8fba', x=None",),
            {"q": "text", "rid": "text"},
            op="search",
        ),
    ),
)

#: A prefill/decode disaggregation failure (``sglang/failures.py``; real lines from
#: sgl-project/sglang issues #9266, #12688): the stage and the request id (the ``rid``
#: attribute of the object ``!r``-printed), then the exception's class when it is printed
#: (``with exception KVTransferError(``). Two parts of one line.
FAILURE = table(
    "sglang.failure",
    "parts",
    (
        LineShape(
            "pd_failure",
            rb"(?<![A-Za-z])(?P<stage>[A-Za-z]{1,40} (?:transfer|bootstrap)) failed for request "
            rb"rank=\d{1,9} (?:[a-z_]{1,40}\.){0,4}rid=(?P<q>['\"])(?P<rid>[^'\"]{1,512})(?P=q)",
            "error",
            (
                b"Prefill bootstrap failed for request rank=0 req.rid='ba0acf7c4647442f8fe9e38c0c0a7021'"
                b" req.bootstrap_room=4618074507212012089 with exception"
                b" KVTransferError(bootstrap_room=4618074507212012089): Aborted by AbortReq.",
                b"Decode transfer failed for request rank=0"
                b" decode_req.req.rid='78fde411d57a4d7791b63963eac74968'"
                b" decode_req.req.bootstrap_room=4793981895866140836 with exception"
                b" NIXL_ERR_REMOTE_DISCONNECT",
            ),
            {"stage": "text", "q": "text", "rid": "text"},
            op="search",
        ),
        LineShape(
            "exception",
            rb" with exception (?P<exc>[A-Za-z_][\w.]{0,200})\(",
            "error",
            (b" with exception KVTransferError(bootstrap_room=4618074507212012089): Aborted",),
            {"exc": "text"},
            op="search",
        ),
    ),
)

PREFIX_RE = LINE.bytes_regex("prefix")
PREFIX_SEARCH_RE = LINE.bytes_regex("prefix_search")
FAST_RE = LINE.bytes_regex("fast")
GPU_PREFIX_RE = LINE.bytes_regex("gpu_prefix")
_VLLM_STYLE_RE = LINE.bytes_regex("vllm_style")
BATCH_RE = BATCH.bytes_regex("batch")
_PREFILL_HEAD_RE = BATCH.bytes_regex("prefill_head")
_DECODE_HEAD_RE = BATCH.bytes_regex("decode_head")
_CSV_ROW_RE = EXPERT.bytes_regex("csv_row")
_RID_RE = REQUEST_ID.str_regex("rid")
