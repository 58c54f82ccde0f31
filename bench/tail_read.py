"""Opening a big log in a terminal: first useful screen, whole file read, RSS then.

    python bench/tail_read.py FILE [--tool sparseety|lnav] [--timeout 900]

The tool runs in a 160x48 tmux pane (bench/child.py Pane) with HOME in a temporary folder.
First useful screen = seconds from launch until the screen shows the file: for
sparseety-tui's `tail`, its status bar with the totals of the tail window ("requests N
..."; before that it says "reading…"); for lnav, three of the file's last lines. Read all =
seconds until the tool's CPU (its process tree) stays under 5 % of a core for two 1-second
windows in a row, the start of the first counted. RSS is then summed over the tree (VmRSS,
and VmHWM for the peak). bench/run_all.py runs it for both tools on each format.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass
from pathlib import Path

from child import Pane, tree_cpu_seconds, tree_rss_bytes  # run as a script, or imported

IDLE_SHARE = 0.05  # of a core: below it for IDLE_WINDOWS seconds, the tool is done reading
IDLE_WINDOWS = 2


@dataclass
class TailRead:
    first_screen_s: float | None  # None: the screen never showed the file in time
    loaded_s: float | None  # None: still busy at the timeout
    rss: int  # bytes, when loaded (or at the timeout)
    peak: int


def file_lines_shown(path: Path) -> Callable[[str], bool]:
    """lnav's screen shows the file once it holds a few of the file's last lines (behind
    the gutter mark lnav draws before a line of a known log format)."""
    with path.open("rb") as f:
        f.seek(max(0, path.stat().st_size - (64 << 10)))
        tail = f.read().decode("utf-8", "replace").splitlines()[1:]
    prefixes = {line[:40] for line in tail if len(line) >= 40}

    def ready(text: str) -> bool:
        shown = sum(
            any(line[i : i + 40] in prefixes for i in range(3)) for line in text.splitlines()
        )
        return shown >= 3

    return ready


def sparseety_ready(text: str) -> bool:
    """The status bar shows totals of the tail window ("requests N ..."): its first
    snapshot is on screen (before it, "reading…")."""
    return re.search(r"^ requests ", text, re.MULTILINE) is not None


def watch(
    command: list[str], env: dict[str, str], ready: Callable[[str], bool], timeout_s: float
) -> TailRead:
    """Start ``command`` in a pane; time its first screen (``ready``) and its whole read."""
    start = time.monotonic()
    pane = Pane(command, env)
    first = loaded = None
    try:
        deadline = start + timeout_s
        while first is None and time.monotonic() < deadline:
            if ready(pane.text()):
                first = time.monotonic() - start
            else:
                time.sleep(0.02)
        idle_windows, window_start = 0, time.monotonic()
        cpu = tree_cpu_seconds(pane.pid)
        while first is not None and time.monotonic() < deadline:
            time.sleep(1.0)
            now, cpu_now = time.monotonic(), tree_cpu_seconds(pane.pid)
            if (cpu_now - cpu) / (now - window_start) < IDLE_SHARE:
                idle_windows += 1
                if idle_windows == IDLE_WINDOWS:
                    loaded = window_start - (IDLE_WINDOWS - 1) - start
                    break
            else:
                idle_windows = 0
            window_start, cpu = now, cpu_now
        rss = tree_rss_bytes(pane.pid)
        peak = tree_rss_bytes(pane.pid, "VmHWM")
    finally:
        pane.close()
    return TailRead(first, loaded, rss, peak)


def measure(path: Path, tool: str, timeout_s: float, env: dict[str, str]) -> TailRead:
    """``tail`` (this interpreter's sparseety_tui) or lnav on ``path``; ``env`` is the
    pane's environment on top of HOME (a fresh temporary folder) and TERM."""
    home = tempfile.mkdtemp(prefix="bench-home-")
    pane_env = {"TERM": "xterm-256color", **env, "HOME": home}
    try:
        if tool == "lnav":
            lnav = shutil.which("lnav")
            if lnav is None:
                raise FileNotFoundError("lnav not found")
            return watch([lnav, str(path)], pane_env, file_lines_shown(path), timeout_s)
        command = [sys.executable, "-m", "sparseety_tui", "tail", str(path)]
        return watch(command, pane_env, sparseety_ready, timeout_s)
    finally:
        shutil.rmtree(home, ignore_errors=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("file", type=Path)
    parser.add_argument("--tool", choices=("sparseety", "lnav"), default="sparseety")
    parser.add_argument("--timeout", type=float, default=900)
    args = parser.parse_args()
    if shutil.which("tmux") is None:
        raise SystemExit("tmux is needed")
    env = {k: v for k, v in os.environ.items() if k == "PYTHONPATH"}
    print(
        json.dumps({"tool": args.tool, **asdict(measure(args.file, args.tool, args.timeout, env))})
    )


if __name__ == "__main__":
    main()
