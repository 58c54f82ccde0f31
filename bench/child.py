"""Shared by the benchmarks: time and measure child processes, read a tool's screen in
tmux, and where the log generator lives."""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

#: shared/tools/gen_logs.py, beside the repository (the deterministic log generator).
GEN_LOGS = Path(__file__).resolve().parents[2] / "shared" / "tools" / "gen_logs.py"


def compile_package(python: str = sys.executable) -> None:
    """Byte-compile the sparseety_tui that ``python`` imports, once, as installing it from
    a wheel does. Where its .pyc files are missing and cannot be written (an editable
    install run with PYTHONDONTWRITEBYTECODE=1, as this machine's environment sets it),
    every start compiles its ~200 modules again: 0.2 s of each ``summary`` that no
    installed copy pays, and not what a user waits for."""
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    code = (
        "import compileall, os, sparseety_tui; "
        "compileall.compile_dir(os.path.dirname(sparseety_tui.__file__), quiet=1)"
    )
    subprocess.run([python, "-c", code], env=env, check=True)


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


def peak_rss(cmd: list[str], env: dict[str, str] | None = None) -> tuple[int, bytes]:
    """Peak RSS in bytes of one child, as ``/usr/bin/time -f %M`` reports it (the kernel's
    maxrss; the same number wait4 gives when GNU time is not installed), and its stdout."""
    gnu_time = Path("/usr/bin/time")
    if gnu_time.exists():
        with tempfile.NamedTemporaryFile("r", suffix=".time") as out:
            proc = subprocess.run(
                [str(gnu_time), "-f", "%M", "-o", out.name, *cmd],
                env=env,
                capture_output=True,
                check=True,
            )
            return int(out.read().split()[-1]) * 1024, proc.stdout
    proc = subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE)
    assert proc.stdout is not None
    stdout = proc.stdout.read()
    _, status, usage = os.wait4(proc.pid, 0)
    proc.returncode = os.waitstatus_to_exitcode(status)
    if proc.returncode != 0:
        raise subprocess.CalledProcessError(proc.returncode, cmd)
    return usage.ru_maxrss * 1024, stdout


def process_tree(pid: int) -> list[int]:
    """``pid`` and its descendants (a tool may read in helper processes)."""
    children: dict[int, list[int]] = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                stat = (entry / "stat").read_text()
            except OSError:
                continue
            parent = int(stat.rsplit(")", 1)[1].split()[1])
            children.setdefault(parent, []).append(int(entry.name))
    tree, todo = [], [pid]
    while todo:
        p = todo.pop()
        tree.append(p)
        todo.extend(children.get(p, []))
    return tree


def tree_cpu_seconds(pid: int) -> float:
    """User + system CPU seconds of ``pid`` and its descendants alive now."""
    ticks = os.sysconf("SC_CLK_TCK")
    total = 0.0
    for p in process_tree(pid):
        try:
            fields = Path(f"/proc/{p}/stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        total += (int(fields[11]) + int(fields[12])) / ticks
    return total


def tree_rss_bytes(pid: int, field: str = "VmRSS") -> int:
    """Sum of a /proc status field (VmRSS now, VmHWM the peak) over the process tree."""
    total = 0
    for p in process_tree(pid):
        try:
            for line in Path(f"/proc/{p}/status").read_text().splitlines():
                if line.startswith(field + ":"):
                    total += int(line.split()[1]) * 1024
        except OSError:
            continue
    return total


class Pane:
    """A command in a detached tmux pane of its own server (WIDTH x HEIGHT), to read what
    it draws as a terminal user sees it."""

    def __init__(self, command: list[str], env: dict[str, str], width: int = 160, height: int = 48):
        self.socket = f"sparseety-bench-{os.getpid()}-{time.monotonic_ns()}"
        pairs = [x for k, v in env.items() for x in ("-e", f"{k}={v}")]
        self.tmux(
            "new-session", "-d", "-s", "b", "-x", str(width), "-y", str(height), *pairs, *command
        )
        self.pid = int(self.tmux("display-message", "-p", "-t", "b", "#{pane_pid}").strip())

    def tmux(self, *args: str) -> str:
        return subprocess.run(
            ["tmux", "-L", self.socket, *args], capture_output=True, text=True, check=False
        ).stdout

    def text(self) -> str:
        return self.tmux("capture-pane", "-p", "-t", "b")

    def close(self) -> None:
        self.tmux("kill-server")
        # tmux 3.3 leaves the killed server's socket file behind: one per measurement.
        folder = Path(os.environ.get("TMUX_TMPDIR", "/tmp")) / f"tmux-{os.getuid()}"
        (folder / self.socket).unlink(missing_ok=True)


def marker_delays(
    markers: int,
    marker: Any,
    t0s: Any,
    writer: Any,
    screen: Callable[[], str],
) -> tuple[list[float], int]:
    """Write→screen delays (ms) of ``markers`` markers and how many never showed: marker
    ``k`` is set, ``screen()`` polled until ``mk{k:02d}-`` is on it (5 s at most), and the
    delay taken from when the ``writer`` process noted sending it (``t0s[k]``)."""
    delays: list[float] = []
    missed = 0
    for k in range(1, markers + 1):
        marker.value = k
        needle = f"mk{k:02d}-"
        end = time.monotonic() + 5
        seen_at = None
        while time.monotonic() < end:
            if needle in screen():
                seen_at = time.monotonic()
                break
            time.sleep(0.01)
        while t0s[k] == 0 and writer.is_alive():
            time.sleep(0.001)
        if seen_at is None:
            missed += 1
        else:
            delays.append((seen_at - t0s[k]) * 1000)
        time.sleep(0.3)
    return delays, missed
