"""Helpers for the app tests (imported by test modules; pytest puts this folder on sys.path)."""

from __future__ import annotations

import asyncio
import functools
import time
from collections.abc import Awaitable, Callable, Coroutine
from pathlib import Path
from typing import Any, TypeVar

from waiting import TIMEOUT_S

from sparseety_tui.ingest.snapshot import LiveOptions
from sparseety_tui.ui.app import AppConfig, SparseetyApp
from sparseety_tui.ui.textual_compat import screen_segments

REPO = Path(__file__).resolve().parents[2]
DATA = Path("tests/app/data")  # relative: paths on screen are the same on every machine

T = TypeVar("T")
#: Between two checks of ``wait_until``: the app's threads (ingest, workers) run meanwhile.
POLL_S = 0.01

MAIN_FILES = ("trace.jsonl", "stream.jsonl", "counts.jsonl", "kv.log", "vllm.log", "broken.jsonl")


def make_app(
    files: tuple[str, ...] = MAIN_FILES,
    *,
    theme: str = "dark",
    request_id: str | None = None,
    start: str = "start",
    paths: tuple[str, ...] | None = None,
) -> SparseetyApp:
    chosen = paths if paths is not None else tuple(str(DATA / name) for name in files)
    config = AppConfig(
        live=LiveOptions(paths=chosen, start=start, track_rate=False),  # type: ignore[arg-type]
        theme=theme,
        request_id=request_id,
    )
    return SparseetyApp(config)


async def settle(pilot: Any) -> None:
    """Wait until the app shows all it has read. Each step waits for a condition, not a time:

    - the messages already posted are handled (a query sent up reaches the worker);
    - the ingest worker has fed and published everything and the UI took that snapshot
      (``SparseetyApp.settle``); the input files are fixed, so no newer one follows;
    - the messages that caused are handled (a pushed screen is mounted, so the thread
      workers it starts exist), and those workers (detail loading, find) are done;
    - the screen stops changing: handle messages, lay out and paint, until two renders in
      a row are the same (a layout can send resize events that change it again).
    """
    app = pilot.app
    # Messages already posted first: a query a screen sent up (QueryChanged) must reach the
    # worker before it is asked to settle, or it settles on the old query.
    await pilot.pause()
    await app.settle()
    await pilot.pause()
    await app.workers.wait_for_complete()
    await pilot.wait_for_scheduled_animations()
    await screen_still(pilot)


def screen_cells(app: Any) -> list[list[tuple[str, Any]]]:
    """Every segment (text and style) of the screen as drawn: what ``export_screenshot``
    prints into an SVG, without the SVG (a twentieth of its cost; settle compares many)."""
    return [[(seg.text, seg.style) for seg in row] for row in screen_segments(app)]


async def screen_still(pilot: Any, passes: int = 20) -> None:
    """Pause until the screen renders the same twice in a row (what a snapshot compares)."""
    before = None
    for _ in range(passes):
        await pilot.pause()
        now = screen_cells(pilot.app)
        if now == before:
            return
        before = now
    raise AssertionError(f"the screen still changed after {passes} passes")


def async_test(fn: Callable[..., Coroutine[Any, Any, None]]) -> Callable[..., None]:
    """Run an async test with asyncio.run (no pytest async plugin needed)."""

    @functools.wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> None:
        asyncio.run(fn(*args, **kwargs))

    return wrapper


async def wait_until(check: Callable[[], Awaitable[T]], what: str, timeout: float = TIMEOUT_S) -> T:
    """``await check()`` until it is truthy; its value. Between checks the event loop and
    the app's threads run for ``POLL_S``. An AssertionError naming ``what`` once
    ``timeout`` seconds have passed (a deadline, never a timing assertion)."""
    deadline = time.monotonic() + timeout
    while True:
        value = await check()
        if value:
            return value
        if time.monotonic() >= deadline:
            raise AssertionError(f"timed out after {timeout:g} s waiting for {what}")
        await asyncio.sleep(POLL_S)
