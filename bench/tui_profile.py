"""Where the CPU of a running ``sparseety-tui`` goes, per thread: a sampling profiler.

    python bench/tui_profile.py OUT.txt -- tail FILE      # any sparseety-tui arguments

Runs the app in this process with a daemon thread that samples every thread's Python stack
(``sys._current_frames``) every ``--interval-ms`` and, at exit, writes to OUT.txt: each
thread's CPU time (from /proc, so the numbers are the kernel's, not the samples') and its
most frequent stacks. A sampled stack whose innermost frame is a wait (an ``Event.wait``,
a selector, a sleep) is counted as waiting, not as work. ``bench/tail_latency.py
--profile OUT.txt`` runs the tool under it.

The profiler is a tool to find hot spots, not a measurement: it costs a few % of a core
itself, and the samples are taken only when the sampler gets the GIL.
"""

from __future__ import annotations

import atexit
import collections
import os
import signal
import sys
import threading
import time
from pathlib import Path
from types import FrameType

#: The profile is also written this often while the app runs.
DUMP_EVERY_S = 5.0
WAITS = (
    "wait",
    "select",
    "poll",
    "sleep",
    "_wait_for_tstate_lock",
    "acquire",
    "watch",
    "watch_directories",
)


def _stack(frame: FrameType | None, depth: int = 12) -> tuple[str, ...]:
    out: list[str] = []
    while frame is not None and len(out) < depth:
        code = frame.f_code
        out.append(f"{code.co_name} ({Path(code.co_filename).name}:{frame.f_lineno})")
        frame = frame.f_back
    return tuple(out)


def _thread_cpu(native_id: int) -> float:
    try:
        fields = Path(f"/proc/self/task/{native_id}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return 0.0
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


class Sampler:
    def __init__(self, out: str, interval_s: float) -> None:
        self.out = out
        self.interval_s = interval_s
        self.samples: dict[str, collections.Counter[tuple[str, ...]]] = collections.defaultdict(
            collections.Counter
        )
        self.busy: collections.Counter[str] = collections.Counter()
        self.total: collections.Counter[str] = collections.Counter()
        self.ids: dict[str, int] = {}
        self.cpu: dict[str, float] = {}  # the last CPU time read of each thread
        self.started = time.monotonic()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="profiler", daemon=True)

    def start(self) -> None:
        self._thread.start()

    def _run(self) -> None:
        me = threading.get_ident()
        next_cpu = 0.0
        next_dump = time.monotonic() + DUMP_EVERY_S
        while not self._stop.wait(self.interval_s):
            if time.monotonic() >= next_dump:
                # Written as it goes too: a terminal closed under the app (tmux
                # kill-server) may end the process before atexit runs.
                next_dump = time.monotonic() + DUMP_EVERY_S
                self.write()
            if time.monotonic() >= next_cpu:
                # Read while the threads live: at exit the worker's are gone.
                next_cpu = time.monotonic() + 0.5
                for thread in threading.enumerate():
                    if thread.native_id is not None:
                        self.cpu[thread.name] = _thread_cpu(thread.native_id)
            names = {t.ident: t for t in threading.enumerate()}
            for ident, frame in sys._current_frames().items():
                if ident == me:
                    continue
                thread = names.get(ident)
                name = thread.name if thread is not None else str(ident)
                if thread is not None and thread.native_id is not None:
                    self.ids[name] = thread.native_id
                stack = _stack(frame)
                self.total[name] += 1
                if stack and stack[0].split(" ")[0] in WAITS:
                    continue
                self.busy[name] += 1
                self.samples[name][stack] += 1

    def dump(self) -> None:
        self._stop.set()
        self.write()

    def write(self) -> None:
        wall = time.monotonic() - self.started
        lines = [f"wall {wall:.1f} s, process CPU {time.process_time():.1f} s"]
        for name, total in self.total.most_common():
            cpu = self.cpu.get(name, float("nan"))
            lines.append(
                f"\n== {name}: CPU {cpu:.1f} s ({100 * cpu / wall:.0f} % of a core), "
                f"busy in {self.busy[name]}/{total} samples"
            )
            for stack, n in self.samples[name].most_common(25):
                lines.append(f"{n:6d}  " + " <- ".join(stack))
        Path(self.out).write_text("\n".join(lines) + "\n")


def main() -> int:
    args = sys.argv[1:]
    if len(args) < 2 or args[1] != "--":
        sys.exit(__doc__)
    sampler = Sampler(args[0], float(os.environ.get("PROFILE_INTERVAL_MS", "5")) / 1000)
    atexit.register(sampler.dump)
    # tmux kill-server sends SIGHUP: exit normally so the profile is written.
    signal.signal(signal.SIGHUP, lambda *_: sys.exit(0))
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
    sampler.start()
    from sparseety_tui.cli.main import main as app_main

    app_main(args[2:])
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
