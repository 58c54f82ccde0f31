"""Fixtures for Pilot and snapshot tests: fixed input files, a deterministic app, a settle hook.

Determinism: inputs are committed files with fixed timestamps; the wall-clock rate
(tok/s) is off; animations and cursor blink are off; tests wait for the ingest worker to
settle (``SparseetyApp.settle``) and for thread workers (detail loading) to finish.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture(autouse=True)
def _repo_cwd(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    monkeypatch.chdir(REPO)
    monkeypatch.setenv("TEXTUAL_ANIMATIONS", "none")
    yield


@pytest.fixture(autouse=True)
def _handoff_stays_in_the_test(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    # A copy key (y, c...) in a test must not fill the developer's tmux buffer nor leave
    # its fall-back file in the repository (ui/handoff.py).
    monkeypatch.delenv("TMUX", raising=False)
    monkeypatch.setenv("SPARSEETY_TUI_OUTPUT_DIR", str(tmp_path))
