"""Which request of the candidate is which of the baseline.

By request id when the two sides share any id; else by prompt (a digest of its text or
token ids) when they share any prompt; else not at all: the workloads are then compared
as a whole (``match_by: "workload"``, no pairs). A key seen several times on a side (the
same prompt sent again) pairs in order: the k-th of the baseline with the k-th of the
candidate, so every request is paired at most once.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Sequence
from dataclasses import dataclass
from typing import Any, Literal

MatchBy = Literal["request_id", "prompt", "workload"]


@dataclass(frozen=True)
class Match:
    """Pairs as positions into each side's requests (``SideRequests``), baseline order."""

    by: MatchBy
    baseline: Any  # np.ndarray int64
    candidate: Any  # np.ndarray int64
    baseline_count: int
    candidate_count: int

    @property
    def matched(self) -> int:
        return len(self.baseline)

    @property
    def only_baseline(self) -> int:
        return self.baseline_count - self.matched

    @property
    def only_candidate(self) -> int:
        return self.candidate_count - self.matched


def pair_keys(
    baseline: Sequence[Hashable | None], candidate: Sequence[Hashable | None]
) -> tuple[list[int], list[int]]:
    """Positions of equal keys, the k-th occurrence with the k-th; None never pairs."""
    waiting: dict[Hashable, list[int]] = {}
    for at, key in enumerate(candidate):
        if key is not None:
            waiting.setdefault(key, []).append(at)
    cursor: dict[Hashable, int] = {}
    left: list[int] = []
    right: list[int] = []
    for at, key in enumerate(baseline):
        if key is None:
            continue
        found = waiting.get(key)
        if not found:
            continue
        k = cursor.get(key, 0)
        if k < len(found):
            cursor[key] = k + 1
            left.append(at)
            right.append(found[k])
    return left, right


def match_requests(
    baseline_ids: Sequence[str],
    candidate_ids: Sequence[str],
    prompts: Callable[[], tuple[Sequence[bytes | None], Sequence[bytes | None]]],
) -> Match:
    """Pair the two sides (module docstring); ``prompts`` gives both sides' prompt
    digests, called only when no id is shared (it re-reads every request's lines)."""
    import numpy as np

    def done(by: MatchBy, left: list[int], right: list[int]) -> Match:
        return Match(
            by,
            np.asarray(left, dtype=np.int64),
            np.asarray(right, dtype=np.int64),
            len(baseline_ids),
            len(candidate_ids),
        )

    if not set(baseline_ids).isdisjoint(candidate_ids):
        return done("request_id", *pair_keys(baseline_ids, candidate_ids))
    base_prompts, cand_prompts = prompts()
    left, right = pair_keys(base_prompts, cand_prompts)
    if left:
        return done("prompt", left, right)
    return done("workload", [], [])
