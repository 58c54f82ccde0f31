"""SGLang prefill/decode disaggregation (PD) failures: errors tied to their request.

When the KV transfer between a prefill and a decode server fails, every TP rank of the
scheduler logs the failure of the same request (sglang ``disaggregation/prefill.py`` and
``decode.py``; real lines from sgl-project/sglang issues #9266, #12688):

- ``Prefill bootstrap failed for request rank=0 req.rid='ba0acf7c4647442f8fe9e38c0c0a7021' req.bootstrap_room=4618074507212012089 with exception KVTransferError(bootstrap_room=4618074507212012089): Aborted by AbortReq.``
- ``Prefill transfer failed for request rank=4 req.rid='af2f3f99db344fab9f0598c637f163fe' req.bootstrap_room=6989861766352545488 with exception KVTransferError(bootstrap_room=6989861766352545488): Decode instance could be dead``
- ``Decode transfer failed for request rank=0 decode_req.req.rid='78fde411d57a4d7791b63963eac74968' decode_req.req.bootstrap_room=4793981895866140836 with exception KVTransferError(bootstrap_room=4793981895866140836): Aborted by AbortReq.``

(There is no ``Decode bootstrap failed`` in SGLang; other stages, such as ``Encode
transfer failed``, have the same shape and are read alike.) The exception is named only
when its class is printed (``KVTransferError(...)``); NIXL prints a bare code
(``with exception NIXL_ERR_REMOTE_DISCONNECT``), which stays in the message.

Each failure is one error and one request update (``state: failed``); the same failure
logged again by the next rank, on the very next line, adds no second error (replicated
ranks report one failure).
"""

from __future__ import annotations

from sparseety_tui.events import ErrorPayload, RequestPayload
from sparseety_tui.formats.sglang._patterns import FAILURE

#: The substring every such line has: a cheap test before the regex.
MARKER = b" failed for request rank="
#: The stage and the request id, and the exception's class (``patterns.FAILURE``).
PD_FAILURE_RE = FAILURE.bytes_regex("pd_failure")
_EXCEPTION_RE = FAILURE.bytes_regex("exception")


def pd_failure(
    msg: bytes, ts: float | None
) -> tuple[tuple[str, str], RequestPayload, ErrorPayload] | None:
    """(the failure's key (stage, request id), the request update, the error) for a PD
    failure line's message ``msg``, or None when it is not one."""
    m = PD_FAILURE_RE.search(msg)
    if m is None:
        return None
    stage = m.group("stage").decode("ascii")
    rid = m.group("rid").decode("utf-8", "replace")
    text = msg[m.start() :].rstrip().decode("utf-8", "replace")[:500]
    error: ErrorPayload = {"message": text, "request_id": rid, "lines": 1, "kind": "kv_transfer"}
    em = _EXCEPTION_RE.search(msg, m.end())
    if em is not None:
        error["exception"] = em.group("exc").decode("ascii")
    request: RequestPayload = {"request_id": rid, "state": "failed", "error": text}
    if ts is not None:
        error["ts"] = ts
        request["ts"] = ts
        request["finished_ts"] = ts
    return (stage, rid), request, error
