"""A mark for tests of the native helpers themselves (imported by test modules of any tier:
pyproject.toml puts tests/support on sys.path)."""

from __future__ import annotations

import pytest

from sparseety_tui.native import PURE_PYTHON

#: The test checks that a native helper is built or used: not so on the pure-Python path
#: (``SPARSEETY_TUI_PURE_PYTHON=1``, on which .ci/run runs the unit and integration tiers
#: again), where every other test holds the Python code to the same results.
needs_native = pytest.mark.skipif(
    PURE_PYTHON, reason="SPARSEETY_TUI_PURE_PYTHON=1 turns the native helpers off"
)
