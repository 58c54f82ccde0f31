"""Engine warnings that matter, whatever their logging level: a retraction and running out
of GPU memory. The line keeps its kind (``other``); the warning is an error event besides.

Samples (SGLang's scheduler, ``python/sglang/srt/managers/scheduler.py``):

- ``[2026-09-13 16:06:07] KV cache pool is full. Retract requests. #retracted_reqs: 1,
  #new_tokens_gained: 646, #new_token_ratio: 0.0980 -> 0.3487`` (SGLang ≥ 0.4);
- ``Decode out of memory happened. #retracted_reqs: 1, #new_token_ratio: 0.5 -> 1.0``
  (SGLang 0.2–0.3, the same retraction under its older name: not a CUDA OOM);
- ``torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB …`` (PyTorch;
  on a line of its own when a traceback's frames were not logged).
"""

from __future__ import annotations

from sparseety_tui.events import ErrorPayload
from sparseety_tui.formats.shapes import ENGINE_WARNING

#: The two warnings, tried in this order (``shapes.lines.ENGINE_WARNING``).
_WARNINGS = tuple(
    (row.shape.kind, ENGINE_WARNING.bytes_regex(row.shape.name)) for row in ENGINE_WARNING
)


def engine_warning(msg: bytes, ts: float | None) -> ErrorPayload | None:
    """The error event of a retraction or out-of-memory line ``msg`` (the message after
    the server's prefix), or None when it is neither. Cheap on other lines: two substring
    tests before anything else."""
    if b"etract" not in msg and b"emory" not in msg:
        return None
    kind = next((kind for kind, regex in _WARNINGS if regex.search(msg)), None)
    if kind is None:
        return None
    payload: ErrorPayload = {
        "kind": kind,
        "message": msg.strip().decode("utf-8", "replace")[:500],
        "lines": 1,
    }
    if ts is not None:
        payload["ts"] = ts
    return payload
