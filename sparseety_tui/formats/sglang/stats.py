"""SGLang ``Prefill batch`` / ``Decode batch`` lines -> ``("stats", StatsPayload)``: the
leading fields every version since 0.3 prints by one anchored regex, the rest read
generically (``key: value`` split on ``, ``)."""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

from sparseety_tui.events import ParsedLine, StatsPayload
from sparseety_tui.formats.numbers import count, real
from sparseety_tui.formats.sglang.kinds import DECODE, PREFILL
from sparseety_tui.formats.sglang.patterns import _DECODE_HEAD_RE, _PREFILL_HEAD_RE


def _pct(v: bytes) -> float | None:
    percent = real(v.rstrip(b"%"))
    return None if percent is None else round(percent / 100.0, 6)


#: Batch-line keys we read -> (payload field, converter: None for a value that is not a
#: plain number, formats/numbers.py). Everything else is ignored.
_PREFILL_FIELDS: dict[bytes, tuple[str, Callable[[bytes], Any]]] = {
    b"#new-seq": ("batch_requests", count),
    b"#new-token": ("new_tokens", count),
    b"#cached-token": ("cached_tokens", count),
    b"cache hit rate": ("prefix_cache_hit_rate", _pct),
    b"token usage": ("kv_usage", real),
    b"full token usage": ("kv_usage", real),
    b"#running-req": ("running", count),
    b"#queue-req": ("queued", count),
    b"input throughput (token/s)": ("prompt_throughput", real),
    # PD prefill node (scheduler_metrics_mixin.py): the bootstrap queue was `#prealloc-req`
    # and the inflight (KV being sent) queue `#inflight-req` before ~Oct 2025.
    b"#unbootstrapped-req": ("bootstrap_queue", count),
    b"#prealloc-req": ("bootstrap_queue", count),
    b"#transferring-req": ("transferring", count),
    b"#inflight-req": ("transferring", count),
}
_DECODE_FIELDS: dict[bytes, tuple[str, Callable[[bytes], Any]]] = {
    b"#running-req": ("running", count),
    b"token usage": ("kv_usage", real),
    b"full token usage": ("kv_usage", real),
    b"gen throughput (token/s)": ("generation_throughput", real),
    b"#queue-req": ("queued", count),
    b"accept len": ("spec_accept_length", real),
    b"accept rate": ("spec_accept_rate", real),
    # PD decode node: `pre-allocated usage: 0.00, #prealloc-req: 0, #transfer-req: 1,
    # #retracted-req: 0` (sglang #6017).
    b"pre-allocated usage": ("preallocated_usage", real),
    b"#prealloc-req": ("prealloc_queue", count),
    b"#transfer-req": ("transfer_queue", count),
    b"#retracted-req": ("retracted", count),
}


class BatchLines:
    """The batch line methods of ``SglangParser`` (a mixin; they keep no state)."""

    def _batch(
        self, bm: re.Match[bytes], msg: bytes, ts: float | None, ranks: str = ""
    ) -> ParsedLine:
        prefill = bm.group("kind") == b"Prefill"
        fields = _PREFILL_FIELDS if prefill else _DECODE_FIELDS
        payload: StatsPayload = {"phase": "prefill" if prefill else "decode"}
        if ts is not None:
            payload["ts"] = ts
        if ranks:
            payload["engine"] = ranks
        body = msg[bm.end() :]
        # Fast path: the leading fields every version since 0.3 prints in this order are
        # read by one anchored regex; whatever follows goes through the generic loop.
        if prefill:
            fm = _PREFILL_HEAD_RE.match(body)
            if fm is not None:
                seq, new, cached, hit, usage, running, queued = fm.groups()
                payload["batch_requests"] = int(seq)
                payload["new_tokens"] = int(new)
                payload["cached_tokens"] = int(cached)
                if hit is not None:
                    payload["prefix_cache_hit_rate"] = round(float(hit) / 100.0, 6)
                payload["kv_usage"] = float(usage)
                payload["running"] = int(running)
                payload["queued"] = int(queued)
                body = body[fm.end() :]
        else:
            fm = _DECODE_HEAD_RE.match(body)
            if fm is not None:
                running, usage = fm.groups()
                payload["running"] = int(running)
                payload["kv_usage"] = float(usage)
                body = body[fm.end() :]
        body = body.strip(b", \t")
        if not body:
            return (PREFILL if prefill else DECODE), ("stats", payload)
        get = fields.get
        for part in body.split(b", "):
            cut = part.rfind(b": ")
            if cut < 0:
                continue
            spec = get(part[:cut])
            if spec is None:
                continue  # a field we do not use, or TTY garbage such as `#cached-tounning-req`
            value = spec[1](part[cut + 2 :])
            if value is not None:  # else garbled (TTY overwrite) or absurd: left out
                payload[spec[0]] = value  # type: ignore[literal-required]
        kind = PREFILL if prefill else DECODE
        return kind, ("stats", payload)
