"""Helpers for the app tests (imported by test modules; pytest puts this folder on sys.path)."""

from __future__ import annotations

import asyncio
import functools
from collections.abc import Callable, Coroutine
from pathlib import Path
from typing import Any

from sparseety_tui.ingest.snapshot import LiveOptions
from sparseety_tui.ui.app import AppConfig, SparseetyApp

REPO = Path(__file__).resolve().parents[2]
DATA = Path("tests/app/data")  # relative: paths on screen are the same on every machine

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
    """Wait for the ingest worker, then for thread workers (detail), then for a repaint."""
    app = pilot.app
    await app.settle()
    await pilot.pause()
    await app.workers.wait_for_complete()
    # A changed height (totals strip, heatmaps) needs a layout pass and then a repaint;
    # on a loaded machine one pause is not always both.
    for _ in range(3):
        await pilot.pause()
    await pilot.wait_for_scheduled_animations()
    await pilot.pause()


def async_test(fn: Callable[..., Coroutine[Any, Any, None]]) -> Callable[..., None]:
    """Run an async test with asyncio.run (no pytest async plugin needed)."""

    @functools.wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> None:
        asyncio.run(fn(*args, **kwargs))

    return wrapper
