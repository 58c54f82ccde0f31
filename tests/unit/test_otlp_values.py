"""The attribute reads' fast paths (the usual well-formed value read first) give what the
full reads give, for every value, well-formed or not, and count the same problems."""

from __future__ import annotations

import math
from typing import Any

import pytest

from sparseety_tui.formats.otlp._values import Attributes

VALUES: list[Any] = [
    {"intValue": "812"},
    {"intValue": "007"},
    {"intValue": "0"},
    {"intValue": "+5"},
    {"intValue": "-3"},
    {"intValue": "9" * 19},
    {"intValue": "9" * 20},
    {"intValue": "\u0663"},  # an Arabic-Indic three: a decimal, not ASCII
    {"intValue": ""},
    {"intValue": 12},
    {"intValue": 1.5},
    {"doubleValue": 0.125},
    {"doubleValue": -0.0},
    {"doubleValue": -1.5},
    {"doubleValue": 2.0},
    {"doubleValue": math.inf},
    {"doubleValue": math.nan},
    {"doubleValue": "NaN"},
    {"doubleValue": "Infinity"},
    {"doubleValue": "0.5"},
    {"doubleValue": 3},
    {"doubleValue": True},
    {"stringValue": "1"},
    {"intValue": "4", "doubleValue": 0.5},
    {},
    [],
    "x",
    None,
]


@pytest.mark.parametrize("value", VALUES, ids=repr)
def test_fast_reads_equal_the_full_reads(value: Any) -> None:
    raw = [{"key": "k", "value": value}]
    fast_ignored: dict[str, int] = {}
    full_ignored: dict[str, int] = {}
    fast, full = Attributes(raw, fast_ignored), Attributes(raw, full_ignored)
    for quick, slow in ((fast.count, full._count), (fast.amount, full._amount)):
        got, want = quick("k"), slow("k")
        assert type(got) is type(want) and (got == want or got is want), (got, want)
        assert fast_ignored == full_ignored
    assert fast.count("absent") is None and fast.amount("absent") is None
