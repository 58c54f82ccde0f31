"""Hand-off from a headless host: copy an id, a row or a ready-to-run command somewhere the
user can paste it from, and say where it went.

An on-call user is in tmux over SSH. The routes, all tried: OSC 52 (the terminal's
clipboard, through SSH; Textual's ``App.copy_to_clipboard`` writes it), and inside tmux its
paste buffer (``tmux load-buffer -w -``: ``-w`` also hands it to the outer terminal's
clipboard where tmux allows it; tmux drops an application's OSC 52 by default). When
neither can work (no terminal, no tmux), the text goes to a file whose path is shown.
Files (those, screenshots) go to ``--output-dir``, else $SPARSEETY_TUI_OUTPUT_DIR, else
the current directory, never a ``~/Downloads`` that may not exist.

Everything here but ``deliver`` is pure; ``deliver`` takes its subprocess runner as an
argument so tests can see what it would run. No Textual here.
"""

from __future__ import annotations

import os
import shlex
import subprocess
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from sparseety_tui.core.text import escape
from sparseety_tui.formats import utc_text

OUTPUT_DIR_ENV = "SPARSEETY_TUI_OUTPUT_DIR"
PROG = "sparseety-tui"
#: tmux answers in milliseconds; a wedged server must not hang the app.
TMUX_TIMEOUT_S = 2.0

Runner = Callable[..., "subprocess.CompletedProcess[bytes]"]


def output_dir(configured: str | None, environ: Mapping[str, str] | None = None) -> str:
    """Where files go: ``--output-dir``, else $SPARSEETY_TUI_OUTPUT_DIR, else the cwd."""
    env = os.environ if environ is None else environ
    return configured or env.get(OUTPUT_DIR_ENV) or os.getcwd()


def _window_arg(value: Any) -> str | None:
    """A ``since``/``until`` as the command line takes it: text as given, a number of
    epoch seconds as a UTC time (``2026-11-30T12:00:00Z``)."""
    if value is None:
        return None
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return utc_text(float(value), "%Y-%m-%dT%H:%M:%SZ")
    return str(value)


def summary_command(
    expression: str, paths: Sequence[str], since: Any = None, until: Any = None
) -> str:
    """The ``summary`` command that totals what the table shows, quoted for a POSIX shell."""
    argv = [PROG, "summary"]
    if expression.strip():
        argv += ["--filter", expression.strip()]
    for flag, value in (("--since", since), ("--until", until)):
        text = _window_arg(value)
        if text is not None:
            argv += [flag, text]
    return shlex.join([*argv, *paths])


def row_text(cells: Sequence[tuple[str, str]]) -> str:
    """One table row as ``title=value`` pairs (values whole, not cut to the column)."""
    return "  ".join(f"{title}={value}" if title else value for title, value in cells)


def dump_path(directory: str, stem: str, now: float, suffix: str = ".txt") -> str:
    """A new file name in ``directory`` (never an existing one): the stem and the time."""
    stamp = time.strftime("%Y%m%d-%H%M%S", time.gmtime(now))
    base = os.path.join(directory, f"{PROG}-{stem}-{stamp}")
    path = base + suffix
    n = 1
    while os.path.exists(path):
        n += 1
        path = f"{base}-{n}{suffix}"
    return path


@dataclass(frozen=True)
class Delivery:
    osc52: bool = False  # written to the terminal (whether it keeps it is the terminal's)
    tmux: bool = False  # loaded into the tmux paste buffer
    path: str | None = None  # written to this file
    problem: str = ""  # why a route that was tried failed

    def message(self, what: str) -> str:
        routes = [
            name for name, done in (("clipboard (OSC 52)", self.osc52), ("tmux buffer", self.tmux))
            if done
        ]  # fmt: skip
        if self.path is not None:
            why = self.problem or "no terminal clipboard and not in tmux"
            return f"{what}: {why}; written to {escape(self.path)}"
        if not routes:
            return f"{what}: not copied ({self.problem or 'no route'})"
        return f"copied {what} to the " + " and the ".join(routes)


def deliver(
    text: str,
    *,
    osc52: bool,
    in_tmux: bool,
    directory: str,
    stem: str,
    run: Runner = subprocess.run,
    now: float | None = None,
) -> Delivery:
    """Load ``text`` into tmux's buffer when in tmux; write it to a file when neither tmux
    nor OSC 52 (``osc52``: the caller wrote it to a terminal) could take it."""
    problem = ""
    loaded = False
    if in_tmux:
        loaded, problem = _tmux_load(text, run)
    if osc52 or loaded:
        return Delivery(osc52=osc52, tmux=loaded, problem=problem)
    if not problem:
        problem = "not a terminal and not in tmux"
    try:
        path = dump_path(directory, stem, time.time() if now is None else now)
        with open(path, "x", encoding="utf-8") as out:
            out.write(text + "\n")
    except OSError as exc:
        return Delivery(problem=f"{problem}; cannot write into {escape(directory)}: {exc.strerror}")
    return Delivery(path=path, problem=problem)


def _tmux_load(text: str, run: Runner) -> tuple[bool, str]:
    data = text.encode("utf-8", "surrogateescape")
    # -w (tmux >= 3.2) also sets the outer terminal's clipboard; older tmux refuses it.
    for argv in (["tmux", "load-buffer", "-w", "-"], ["tmux", "load-buffer", "-"]):
        try:
            done = run(argv, input=data, capture_output=True, timeout=TMUX_TIMEOUT_S, check=False)
        except (OSError, subprocess.SubprocessError) as exc:
            return False, f"tmux load-buffer failed: {exc}"
        if done.returncode == 0:
            return True, ""
    reason = done.stderr.decode("utf-8", "replace").strip()
    return False, f"tmux load-buffer failed: {reason or f'exit {done.returncode}'}"
