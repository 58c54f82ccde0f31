"""Shared by the benchmarks: time a child process, and where the log generator lives."""

from __future__ import annotations

import os
import subprocess
import time
from pathlib import Path

#: shared/tools/gen_logs.py, beside the repository (the deterministic log generator).
GEN_LOGS = Path(__file__).resolve().parents[2] / "shared" / "tools" / "gen_logs.py"


def timed(cmd: list[str], env: dict[str, str] | None = None) -> tuple[float, float, float]:
    """Wall seconds, CPU seconds (user + system) and peak RSS (MiB) of one child process,
    all from the kernel's accounting of that child (wait4)."""
    start = time.perf_counter()
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, env=env)
    _, status, usage = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - start
    if os.waitstatus_to_exitcode(status) != 0:
        raise SystemExit(f"failed: {' '.join(cmd)}")
    return wall, usage.ru_utime + usage.ru_stime, usage.ru_maxrss / 1024
