"""Fixtures every test shares."""

from __future__ import annotations

import pytest


@pytest.fixture(autouse=True)
def _own_config_home(
    tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A user's ~/.config/sparseety-tui (config file, redaction key) never changes what a
    test sees, nor does a test write there."""
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path_factory.mktemp("xdg-config")))
