"""Random lines made of fragments of real lines (tests/support/hostile.py) cost per byte at
most ``BOUND`` times what the family's real lines cost, both timed in the same run: a ratio
of two timings, so the bound holds on a slow machine as on a fast one. The same lines are
checked for what they produce in tests/unit/test_hostile_lines.py."""

from __future__ import annotations

import random
from typing import Any

from hostile import family_lines, long_random_line, parse_seconds_per_byte, random_line

from sparseety_tui.formats import _registry as registry

#: Random lines may cost per byte at most this many times the family's real lines.
#: Measured: 0.1x-1.0x for the random lines, 0.02x-0.9x for the long ones.
BOUND = 10.0


def test_time_per_byte_of_random_lines_is_bounded() -> None:
    rng = random.Random(20261130)
    random_batch = [random_line(rng) for _ in range(400)]
    long_batch = [long_random_line(rng, rng.choice((16, 32, 64)) << 10) for _ in range(24)]
    ratios: dict[str, Any] = {}
    for name in registry.FAMILIES:
        normal = parse_seconds_per_byte(name, family_lines()[name], 3)
        ratios[name] = (
            parse_seconds_per_byte(name, random_batch, 3) / normal,
            parse_seconds_per_byte(name, long_batch, 2) / normal,
        )
    over = {name: r for name, r in ratios.items() if max(r) > BOUND}
    assert not over, f"time per byte over {BOUND}x the real lines': {over}"
