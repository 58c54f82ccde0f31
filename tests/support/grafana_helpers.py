"""The Grafana dashboard, and its generator script loaded as a module, shared by the unit
and the promtool (integration) halves of the dashboard tests."""

from __future__ import annotations

import importlib.util
from pathlib import Path
from types import ModuleType

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "scripts" / "make_grafana_dashboard.py"
DASHBOARD = ROOT / "docs" / "grafana" / "sparseety-dashboard.json"


def generator() -> ModuleType:
    spec = importlib.util.spec_from_file_location("make_grafana_dashboard", SCRIPT)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module
