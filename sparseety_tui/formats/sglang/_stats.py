"""SGLang ``Prefill batch`` / ``Decode batch`` lines -> ``("stats", StatsPayload)``: the
leading fields every version since 0.3 prints by one anchored regex, the rest read
generically (``key: value`` split on ``, ``)."""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

from sparseety_tui.events import ParsedLine, StatsPayload
from sparseety_tui.formats._numbers import count, real
from sparseety_tui.formats.sglang._kinds import DECODE, PREFILL
from sparseety_tui.formats.sglang._patterns import (
    _DECODE_HEAD_RE,
    _PREFILL_HEAD_RE,
    BATCH_FIELDS,
)


def _pct(v: bytes) -> float | None:
    percent = real(v.rstrip(b"%"))
    return None if percent is None else round(percent / 100.0, 6)


#: How a batch-line field's value is read, by its type in ``patterns.BATCH_FIELDS``
#: (None for a value that is not a plain number, formats/_numbers.py).
_CONVERT: dict[str, Callable[[bytes], Any]] = {"int": count, "float": real, "percent": _pct}


def _fields(typed: dict[bytes, tuple[str, str]]) -> dict[bytes, tuple[str, Callable[[bytes], Any]]]:
    return {key: (field, _CONVERT[kind]) for key, (field, kind) in typed.items()}


#: Batch-line keys we read -> (payload field, converter). Everything else is ignored.
_PREFILL_FIELDS = _fields(BATCH_FIELDS["Prefill"])
_DECODE_FIELDS = _fields(BATCH_FIELDS["Decode"])


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
