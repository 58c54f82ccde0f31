"""pytest's own lines in a CI log: the test outcome and session lines around a server's
output. A CI tail is tracebacks and these; they carry nothing to
extract, but they are understood (`other`), not `unparsed`. Samples:

- ``FAILED``: the outcome word pytest prints alone after a test's live output (real:
  tests/data/real_logs/vllm_v1_ci_pytorch_apiserver_traceback_only_pytest_failed_*), also
  ``PASSED [ 50%]``;
- ``tests/entrypoints/test_chat.py::test_chat[qwen] FAILED``: ``-v`` result lines, and the
  short summary's ``FAILED tests/test_x.py::test_y - RuntimeError: boom``;
- ``==== short test summary info ====``, ``==== 1 failed, 2 passed in 3.21s ====``:
  session banners; ``collected 12 items``.

A pytest ``ERROR tests/x.py::t - ...`` line is an error line (formats._errorlines) first.
"""

from __future__ import annotations

from sparseety_tui.formats.shapes import CI

#: One of the shapes in the module docstring, one match for all rows of ``shapes.lines.CI``.
PYTEST_LINE_RE = CI.alternation(*(row.shape.name for row in CI))


def is_pytest_line(line: bytes) -> bool:
    """Whether ``line`` is one of pytest's own lines (see the module docstring)."""
    return PYTEST_LINE_RE.match(line) is not None
