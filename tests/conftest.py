"""Fixtures every test shares, and the tiers.

Each folder under tests/ is a tier and a pytest marker of the same name (registered in
pyproject.toml), given here to every test it holds, so ``pytest -m unit`` runs tests/unit:

- unit: pure tests: no subprocess, fork, sleep or socket (tests/unit/conftest.py refuses
  them) and no thread that waits on the clock;
- app: the Textual app driven by Pilot, and its SVG snapshots;
- terminal: the app in a real terminal (tmux);
- integration: subprocess CLI runs, forked range workers, the live worker's threads, file
  watchers, HTTP servers, a real Prometheus;
- capture: the transformers hooks on tiny models (torch).

Helpers shared by several tiers are modules of tests/support (on sys.path, pyproject.toml).
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, settings

import sparseety_tui.ingest.parallel as parallel
from sparseety_tui.formats import _registry as registry

TESTS = Path(__file__).resolve().parent
TIERS = ("unit", "app", "terminal", "integration", "capture")

# No wall-clock limit on one example (Hypothesis's default is 200 ms) nor on generating
# them (the too_slow health check): on a loaded machine a slow example is not a failing
# one. Tests that set their own settings keep theirs for what they set.
settings.register_profile("sparseety", deadline=None, suppress_health_check=[HealthCheck.too_slow])
settings.load_profile("sparseety")


def pytest_ignore_collect(collection_path: Path, config: pytest.Config) -> bool | None:
    """With ``-m`` naming tiers only, the folders of the other tiers are not even imported
    (collecting tests/capture imports torch): ``-m unit`` reads tests/unit alone."""
    expression = config.getoption("markexpr", "")
    if not expression or collection_path.parent != TESTS or collection_path.name not in TIERS:
        return None
    names = set(re.findall(r"[A-Za-z_]\w*", expression)) - {"and", "or", "not"}
    if not names <= set(TIERS):
        return None  # other markers: every tier may hold tests it selects
    try:  # and, or, not and parentheses read as in Python
        selected = eval(
            expression, {"__builtins__": {}}, {t: t == collection_path.name for t in TIERS}
        )
    except SyntaxError:
        return None  # pytest says what is wrong with it
    return None if selected else True


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Mark every test with the tier of its folder; a test outside a tier is an error (no
    ``-m`` would select it)."""
    for item in items:
        try:
            tier = item.path.resolve().relative_to(TESTS).parts[0]
        except ValueError:  # a test file outside tests/, named on the command line
            continue
        if tier not in TIERS:
            folders = ", ".join(f"tests/{name}" for name in TIERS)
            raise pytest.UsageError(f"{item.nodeid}: a test belongs in one of {folders}")
        item.add_marker(getattr(pytest.mark, tier))


@pytest.fixture(autouse=True)
def _own_config_home(
    tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A user's ~/.config/sparseety-tui (config file, redaction key) never changes what a
    test sees, nor does a test write there."""
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path_factory.mktemp("xdg-config")))


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


@pytest.fixture
def token_file(tmp_path: Path) -> Path:
    """A token file of 32 hex digits, readable by its owner only (what `serve` accepts)."""
    path = tmp_path / "token"
    path.write_text("0123456789abcdef0123456789abcdef\n")
    path.chmod(0o600)
    return path
