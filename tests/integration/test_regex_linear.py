"""Every regex the parsers use, and every family's ``parse``, takes time linear in the line.

One quadratic pattern freezes ``tail`` on a long line a client chose (a vLLM line without a
logging head, a long run of spaces before a ``[repeated 5x across cluster]`` tail, once did).
Here each compiled pattern of ``sparseety_tui.formats`` (found by walking
the modules, so a new one is covered without being listed), for ``match`` and ``search``,
and each family's parser are timed on near-miss lines of about 256 KB, and their time per
byte compared with that of the same near miss at the length of a normal line (1 KB),
timed in the same run. Linear code costs about the same per byte at both lengths; a
quadratic regex costs a few hundred times more per byte at 256 KB.

Near misses (tests/support/hostile.py): every place where a real line that the pattern
matches changes character class is pumped and the line then made to fail, and runs of the
usual suspects (spaces, digits, brackets, ``|``, ``=``, quotes, near prefixes) are tried
too. Each is timed at 1 KB and 8 KB first; one whose cost per byte already grows there is
reported without waiting for it at 256 KB, and the worst of the rest are timed at 256 KB.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from hostile import (
    NearMiss,
    family_lines,
    generic_near_misses,
    near_misses,
    parse_all,
    parse_seconds_per_byte,
    seconds_per_byte,
)
from pattern_walk import as_subject, patterns, witnesses

from sparseety_tui.formats import _registry as registry

#: The length of a normal line (at least), and of the big line. Screening is at 8 times
#: the normal length.
NORMAL_BYTES = 1 << 10
BIG_BYTES = 1 << 18
#: At 256 KB a near miss may cost per byte at most this many times what it costs at 1 KB.
#: Linear code measures about 0.3x-2x; a quadratic regex about 250x.
BOUND = 10.0
#: At 8 KB, a cost per byte this many times that at 1 KB is growth already (a quadratic
#: regex measures about 8x, linear code about 1x): timed again at 64 KB (about 64x for a
#: quadratic regex) and reported from there without going to 256 KB.
SCREEN_BOUND = 4.0
#: Near misses per pattern (and per family) that go on to be timed at 256 KB.
WORST_KEPT = 2


def _growth(
    timed: Callable[[bytes], float], candidates: list[NearMiss]
) -> tuple[float, float, str]:
    """The worst growth, among ``candidates``, of the time per byte from a normal line's
    length to 256 KB, the bound it is held to, and its label. A near miss is at least 3/4 pumped run at every length
    (so the growth is that of the run, not of a changing mix of run and real text).
    Screening times each length once; on a busy machine noise only ever adds time, so a
    growth seen at 8 KB is timed again (both lengths in turn, best of five) and then at
    64 KB before it is believed."""

    def per_byte(candidate: NearMiss, size: int, repeats: int) -> float:
        line = candidate.build(size)
        return min(timed(line) for _ in range(repeats))

    def paired(candidate: NearMiss, base: int, factor: int) -> tuple[float, float]:
        """The growth from ``base`` to ``factor`` times it, the two lengths timed in turn
        five times (so a busy spell slows both), each at its best; and the best at base."""
        small, large = candidate.build(base), candidate.build(factor * base)
        normal = big = float("inf")
        for _ in range(5):
            normal = min(normal, timed(small))
            big = min(big, timed(large))
        return big / normal, normal

    screened = []
    for candidate in candidates:
        base = max(NORMAL_BYTES, 4 * candidate.fixed)
        normal = per_byte(candidate, base, 1)
        growth = per_byte(candidate, 8 * base, 1) / normal
        if growth > SCREEN_BOUND:
            growth, normal = paired(candidate, base, 8)
            if growth > SCREEN_BOUND:
                # Believed only if it goes on growing: a quadratic cost per byte is 8 times
                # larger again at 64 times the base; a busy spell is not.
                growth, _ = paired(candidate, base, 64)
                if growth > BOUND:
                    return growth, BOUND, f"{candidate.label} (at {64 * base:,} bytes)"
        screened.append((growth, normal, base, candidate))
    screened.sort(key=lambda item: -item[0])
    worst = (0.0, "")
    for _, normal, base, candidate in screened[:WORST_KEPT]:
        big = max(BIG_BYTES, 64 * base)
        worst = max(worst, (per_byte(candidate, big, 2) / normal, candidate.label))
    return worst[0], BOUND, worst[1]


@pytest.mark.parametrize("name", sorted(patterns()))
def test_pattern_is_linear_on_near_misses(name: str) -> None:
    pattern = patterns()[name]
    candidates = generic_near_misses()
    for line, start, end in witnesses(pattern):
        candidates.extend(near_misses(line, start, end))
    for op_name in ("match", "search"):
        op = getattr(pattern, op_name)

        def timed(line: bytes, op: Callable[[Any], object] = op) -> float:
            return seconds_per_byte(op, as_subject(pattern, line), 1)

        growth, bound, label = _growth(timed, candidates)
        assert growth <= bound, (
            f"{name}.{op_name} is super-linear: {growth:,.0f}x the time per byte of a normal "
            f"length on {label}"
        )


def _sample_by_kind(family_name: str, per_kind: int = 3) -> list[bytes]:
    """A few lines of each kind the family gives its corpus lines."""
    parser = registry.FAMILIES[family_name].new_parser()
    by_kind: dict[str, list[bytes]] = {}
    for line in family_lines()[family_name]:
        kind, _ = parser.parse(line)
        by_kind.setdefault(kind, []).append(line[:2048])
    picked: list[bytes] = []
    for lines in by_kind.values():
        picked.extend(lines[:: max(1, len(lines) // per_kind)][:per_kind])
    return picked


@pytest.mark.parametrize("family_name", sorted(registry.FAMILIES))
def test_parser_is_linear_on_near_misses(family_name: str) -> None:
    """A whole ``parse`` of a 256 KB near-miss line costs per byte at most ``BOUND`` times
    what the same near miss costs at 1 KB."""
    run = parse_all(family_name)
    candidates = generic_near_misses()
    for line in _sample_by_kind(family_name):
        candidates.extend(near_misses(line))

    def timed(line: bytes) -> float:
        return seconds_per_byte(lambda one: run([one]), line, 1)

    growth, bound, label = _growth(timed, candidates)
    assert growth <= bound, f"{family_name}: {growth:,.0f}x the time per byte of 1 KB on {label}"


def test_the_reported_line_costs_what_a_normal_log_does() -> None:
    """The line of the issue: no logging head, a long run of spaces, a Ray repeat tail.
    At 256 KB it costs per byte no more than ``BOUND`` times what the real vLLM logs of the
    corpus cost per byte (it took 18.9 s at 100 KB)."""
    run = parse_all("vllm")
    normal = parse_seconds_per_byte("vllm", family_lines()["vllm"], 3)
    for size in (8 * NORMAL_BYTES, BIG_BYTES):
        line = b"x" + b" " * size + b"y [repeated 5x across cluster]"
        ratio = seconds_per_byte(lambda one: run([one]), line, 2) / normal
        assert ratio <= BOUND, f"{ratio:,.0f}x a normal log's time per byte at {size:,} bytes"
