"""The unit tier is pure: a unit test that starts a process (subprocess or fork), sleeps,
or opens a socket fails at once, with the reason, instead of making the tier slow or
flaky. Such a test belongs in tests/integration."""

from __future__ import annotations

import os
import socket
import subprocess
import time
from collections.abc import Callable
from typing import Any, NoReturn

import pytest


@pytest.fixture(autouse=True)
def _pure(monkeypatch: pytest.MonkeyPatch) -> None:
    def refuse(what: str) -> Callable[..., NoReturn]:
        def call(*args: Any, **kwargs: Any) -> NoReturn:
            pytest.fail(f"a unit test may not {what}: move it to tests/integration")

        return call

    monkeypatch.setattr(time, "sleep", refuse("sleep (wait on a condition instead)"))
    monkeypatch.setattr(subprocess.Popen, "__init__", refuse("start a process"))
    monkeypatch.setattr(os, "fork", refuse("fork"))
    monkeypatch.setattr(socket.socket, "bind", refuse("open a socket"))
    monkeypatch.setattr(socket.socket, "connect", refuse("open a socket"))
