"""``SPARSEETY_TUI_PURE_PYTHON=1`` turns every native helper off: checked in a fresh
interpreter, since the choice is made once, at import."""

from __future__ import annotations

import os
import subprocess
import sys


def _pure_python(code: str) -> list[str]:
    """What ``code`` prints, run by a new interpreter with the native helpers turned off."""
    env = {**os.environ, "SPARSEETY_TUI_PURE_PYTHON": "1"}
    return subprocess.run(
        [sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True
    ).stdout.split()


def test_the_environment_can_turn_the_native_helpers_off() -> None:
    code = (
        "from sparseety_tui.formats import _trace as trace; from sparseety_tui.core.store import _idindex as idindex; "
        "from sparseety_tui.formats.vllm import _recent as recent; "
        "print(trace.FAMILY.scan_requests is None, idindex._idtable is None, "
        "type(recent.RecentIds(4)._serials).__name__)"
    )
    assert _pure_python(code) == ["True", "True", "_Dicts"]


def test_the_environment_can_turn_the_sglang_scanner_off() -> None:
    code = "from sparseety_tui.formats import sglang; print(sglang.FAMILY.scan_server is None)"
    assert _pure_python(code) == ["True"]
