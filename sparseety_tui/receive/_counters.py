"""What the receivers took and refused, counted across their threads."""

from __future__ import annotations

import threading
from typing import Any


class Counters:
    """Spans accepted and rejected, requests refused by reason, body bytes received.

    Every export a receiver answers is counted once: accepted (its spans, and those of its
    spans the reader rejected, which the answer's ``partial_success`` reports), or refused
    with one reason (``malformed``, ``too_large``, ``queue_full``, ``unauthorized`` ...).
    Written by the receivers' threads under one lock; read whole by ``as_json``.
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.requests = 0
        self.accepted_spans = 0
        self.rejected_spans = 0
        self.body_bytes = 0
        self.refused: dict[str, int] = {}

    def received(self, body_bytes: int) -> None:
        """A request arrived with ``body_bytes`` bytes of body (as sent, before gunzip)."""
        with self._lock:
            self.requests += 1
            self.body_bytes += body_bytes

    def accepted(self, spans: int, rejected: int) -> None:
        with self._lock:
            self.accepted_spans += spans
            self.rejected_spans += rejected

    def refuse(self, reason: str) -> None:
        with self._lock:
            self.refused[reason] = self.refused.get(reason, 0) + 1

    def as_json(self) -> dict[str, Any]:
        with self._lock:
            return {
                "requests": self.requests,
                "accepted_spans": self.accepted_spans,
                "rejected_spans": self.rejected_spans,
                "body_bytes": self.body_bytes,
                "refused": dict(sorted(self.refused.items())),
            }
