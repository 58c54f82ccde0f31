"""Whether this process uses the optional C helpers built from native/*.c.

They are used whenever pip could build them; ``SPARSEETY_TUI_PURE_PYTHON=1`` turns them off
(the pure-Python paths give the same results), to compare the two or to rule them out.
"""

from __future__ import annotations

import os

#: True when the C helpers must not be used, even if built.
PURE_PYTHON = os.environ.get("SPARSEETY_TUI_PURE_PYTHON", "") not in ("", "0")
