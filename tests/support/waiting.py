"""Waiting on a condition with a deadline, for tests of threads, processes and servers
(imported by test modules of any tier: pyproject.toml puts tests/support on sys.path).

A test never sleeps for a fixed time and never asserts how long something took: it waits
until what it needs holds, and fails, naming it, only when that has not happened after a
deadline far above the usual wait (so a loaded machine is slower, not red).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import TypeVar

T = TypeVar("T")

#: Long enough for a loaded CI machine; a test that meets it has failed, not been slow.
TIMEOUT_S = 30.0


def wait_for(
    predicate: Callable[[], T],
    timeout: float = TIMEOUT_S,
    what: str = "the condition",
    every: float = 0.01,
) -> T:
    """``predicate()`` once it is truthy, called every ``every`` seconds; an
    AssertionError naming ``what`` if it is still falsy after ``timeout`` seconds."""
    deadline = time.monotonic() + timeout
    while True:
        value = predicate()
        if value:
            return value
        if time.monotonic() >= deadline:
            raise AssertionError(f"timed out after {timeout:g} s waiting for {what}")
        time.sleep(every)
