"""Fixtures the unit tests share."""

from __future__ import annotations

from typing import Any

import pytest

import sparseety_tui.ingest.parallel as parallel
from sparseety_tui.formats import registry


@pytest.fixture
def split_outcomes(monkeypatch: pytest.MonkeyPatch) -> list[bool | str]:
    """Split every file, and record for each split True when its merge was proved exact,
    else the reason it was refused."""
    monkeypatch.setattr(parallel, "PARALLEL_MIN_BYTES", 1)
    # A family with a native server scanner is read by one process (ingest.parallel): to
    # split its files, these tests read them without it (tests/unit/test_native_sglang.py
    # holds the scanner equal to the per-line path).
    for family in registry.FAMILIES.values():
        if family.scan_server is not None:
            monkeypatch.setattr(type(family), "scan_server", None)
    outcomes: list[bool | str] = []
    check = parallel._check_server_ranges

    def spy(*args: Any) -> Any:
        plan = check(*args)
        outcomes.append(plan.reason if isinstance(plan, parallel.Refusal) else True)
        return plan

    monkeypatch.setattr(parallel, "_check_server_ranges", spy)
    return outcomes
