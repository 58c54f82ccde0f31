"""Run one request through ``model.generate`` with the routing hooks on, and time it.

Batch of one, so every router call's rows are this request's positions in order: the
prefill call holds the prompt, each decode call the token fed back. The routing of a
request therefore has ``prompt + completion - 1`` rows (the last sampled token is never
fed through the model); any other count stops the capture (``CaptureError``).

Times are wall-clock epoch seconds (``time.time()``): received = just before
``generate`` is called, first token / each token = when ``generate`` hands the token to
its streamer (after it was sampled), finished = when ``generate`` returned.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any

from sparseety_tui.capture.errors import CaptureError
from sparseety_tui.capture.hooks import Routing, RoutingCapture


@dataclass
class Generated:
    """What one request computed and when."""

    prompt_ids: list[int]
    completion_ids: list[int]
    routing: Routing
    finish_reason: str  # "stop" (an end-of-sequence token) or "length"
    received_ts: float
    finished_ts: float
    token_ts: list[float] = field(default_factory=list)  # one per completion token

    @property
    def first_token_ts(self) -> float | None:
        return self.token_ts[0] if self.token_ts else None


def _streamer() -> Any:
    from transformers.generation.streamers import BaseStreamer

    class TokenClock(BaseStreamer):
        """Notes the time of every ``put``: the first holds the prompt, each later one
        the token just sampled."""

        def __init__(self) -> None:
            self.times: list[float] = []
            self.calls = 0

        def put(self, value: Any) -> None:
            now = time.time()
            self.calls += 1
            if self.calls > 1:
                self.times.extend([now] * int(value.numel()))

        def end(self) -> None:
            pass

    return TokenClock()


def eos_ids(model: Any) -> set[int]:
    eos = getattr(model.generation_config, "eos_token_id", None)
    if eos is None:
        return set()
    return {int(e) for e in (eos if isinstance(eos, (list, tuple)) else [eos])}


def generate_one(
    model: Any,
    capture: RoutingCapture,
    prompt_ids: list[int],
    max_new_tokens: int,
    **generate_kwargs: Any,
) -> Generated:
    """Generate for one prompt with ``capture``'s hooks on (the caller holds the ``with``)."""
    import torch

    capture.clear()
    clock = _streamer()
    device = next(model.parameters()).device
    ids = torch.tensor([prompt_ids], device=device)
    received = time.time()
    with torch.no_grad():
        out = model.generate(
            ids,
            attention_mask=torch.ones_like(ids),
            max_new_tokens=max_new_tokens,
            streamer=clock,
            **generate_kwargs,
        )
    finished = time.time()
    completion = [int(t) for t in out[0, len(prompt_ids) :].tolist()]
    routing = capture.rows()
    expected = len(prompt_ids) + len(completion) - 1
    if len(routing.indices) != expected:
        raise CaptureError(
            f"recorded {len(routing.indices)} routing rows for {len(prompt_ids)} prompt + "
            f"{len(completion)} generated tokens, expected {expected}"
        )
    stopped = bool(completion) and completion[-1] in eos_ids(model)
    return Generated(
        prompt_ids,
        completion,
        routing,
        "stop" if stopped else "length",
        received,
        finished,
        clock.times[: len(completion)],
    )
