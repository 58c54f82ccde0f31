"""Time to the first useful screen of ``sparseety-tui tail FILE`` on a big log, in tmux.

    python bench/tui_first_screen.py FILE [FILE ...] [--runs 2]

Starts ``tail FILE`` in a 160x48 tmux pane and polls ``capture-pane`` every 20 ms until
the screen is useful: the request table shows a row received in the newest minute of the
file (the last timestamp in its last 256 KiB; a table row shows it as ``HH:MM:``) and the
totals line counts requests. Prints one JSON line per file and run: seconds from launch to
that screen (Python start-up and imports included), and the same for ``tail -n 40`` of the
file in the same pane as the anchor (the cost of starting a program and drawing 40 lines).
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import time
from pathlib import Path

SOCKET = f"sparseety-first-{os.getpid()}"
WIDTH, HEIGHT = 160, 48
TIMES = (
    re.compile(rb"\d{4}-\d\d-\d\d[T ](\d\d:\d\d):\d\d"),  # ISO, SGLang's [2027-01-03 08:32:01]
    re.compile(rb"\d\d-\d\d (\d\d:\d\d):\d\d"),  # vLLM's INFO 12-01 06:58:56
)


def tmux(*args: str) -> str:
    return subprocess.run(
        ["tmux", "-L", SOCKET, *args], capture_output=True, text=True, check=False
    ).stdout


def newest_minute(path: Path) -> str:
    with path.open("rb") as f:
        f.seek(max(0, path.stat().st_size - 256 * 1024))
        tail = f.read()
    for pattern in TIMES:
        found = pattern.findall(tail)
        if found:
            return found[-1].decode() + ":"
    sys.exit(f"{path}: no timestamp in its last 256 KiB")


def time_to(command: list[str], useful: object, timeout: float = 60.0) -> float | None:
    env = ["-e", "TERM=xterm-256color"]
    started = time.monotonic()
    tmux("new-session", "-d", "-s", "f", "-x", str(WIDTH), "-y", str(HEIGHT), *env, *command)
    try:
        while time.monotonic() - started < timeout:
            screen = tmux("capture-pane", "-p", "-t", "f")
            if useful(screen):  # type: ignore[operator]
                return time.monotonic() - started
            time.sleep(0.02)
        return None
    finally:
        tmux("kill-server")


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("files", nargs="+", type=Path)
    parser.add_argument("--runs", type=int, default=2)
    args = parser.parse_args()
    for path in args.files:
        minute = newest_minute(path)

        def useful(screen: str, minute: str = minute) -> bool:
            lines = screen.splitlines()
            rows = [line for line in lines[3:] if minute in line]
            counted = re.search(r"requests [\d,]*[1-9]", screen) is not None
            return bool(rows) and counted

        for run in range(args.runs):
            ours = time_to(
                [sys.executable, "-m", "sparseety_tui", "tail", str(path)],
                useful,
            )
            anchor = time_to(
                ["sh", "-c", f"tail -n 40 {path}; sleep 60"],
                lambda screen, minute=minute: minute in screen,
            )
            print(
                json.dumps(
                    {
                        "file": str(path),
                        "size_mb": round(path.stat().st_size / 1e6),
                        "run": run + 1,
                        "newest_minute": minute,
                        "first_useful_screen_s": None if ours is None else round(ours, 2),
                        "tail_n40_s": None if anchor is None else round(anchor, 3),
                    }
                ),
                flush=True,
            )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
