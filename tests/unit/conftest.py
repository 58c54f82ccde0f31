"""Fixtures the unit tests share."""

from __future__ import annotations

from typing import Any

import pytest

import sparseety_tui.ingest.parallel as parallel
from sparseety_tui.formats import registry


@pytest.fixture
def split_attempts(monkeypatch: pytest.MonkeyPatch) -> list[bool | str]:
    """Make every file big enough to split, and record for each split tried True when its
    merge was proved exact, else the reason it was refused."""
    monkeypatch.setattr(parallel, "PARALLEL_MIN_BYTES", 1)
    outcomes: list[bool | str] = []
    check = parallel._check_server_ranges

    def spy(*args: Any) -> Any:
        plan = check(*args)
        outcomes.append(plan.reason if isinstance(plan, parallel.Refusal) else True)
        return plan

    monkeypatch.setattr(parallel, "_check_server_ranges", spy)
    return outcomes


@pytest.fixture
def split_outcomes(
    monkeypatch: pytest.MonkeyPatch, split_attempts: list[bool | str]
) -> list[bool | str]:
    """``split_attempts`` with every family's native server scanner off: a family with
    one is read by one process (ingest.parallel), so to split its files these tests read
    them without it (tests/unit/test_native_*.py hold the scanners equal to the per-line
    path)."""
    for family in registry.FAMILIES.values():
        if family.scan_server is not None:
            monkeypatch.setattr(type(family), "scan_server", None)
    return split_attempts
