"""SVG snapshots of where requests' time went: the table's timing columns at 80x24 and
160x48, the detail's Time tab and the trends' parts plot (``tests/app/data/timing.jsonl``
with its server's SGLang stats lines; see test_timing_screens.py).

Regenerate with ``pytest tests/app/test_timing_snapshots.py --snapshot-update`` and look at
the SVGs (``rsvg-convert`` or cairosvg make PNGs) before committing them.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

import pytest
from apphelpers import make_app, settle

SIZES = [(80, 24), (160, 48)]
FILES = ("timing.jsonl", "timing_sglang.log")


async def _table(pilot: Any) -> None:
    await settle(pilot)


async def _table_sorted(pilot: Any) -> None:
    # The slowest queues first: what an on-call user looks at in a spike.
    await settle(pilot)
    pilot.app.main_screen.set_sort("queue", reverse=True)
    await settle(pilot)
    await pilot.press("home")
    await settle(pilot)


async def _time_tab(pilot: Any) -> None:
    await settle(pilot)
    await pilot.press("g", *"chatcmpl-0035f", "enter")
    await settle(pilot)
    await pilot.press("enter")
    await settle(pilot)


async def _trends(pilot: Any) -> None:
    await settle(pilot)
    await pilot.press("T")
    await settle(pilot)


SCREENS: dict[str, Callable[[Any], Awaitable[None]]] = {
    "table": _table,
    "table_sorted": _table_sorted,
    "time_tab": _time_tab,
    "trends": _trends,
}
#: The table alone on the trace (one file: no file column); the rest with the stats lines.
ONLY_TRACE = ("table", "table_sorted")


@pytest.mark.parametrize("size", SIZES, ids=lambda s: f"{s[0]}x{s[1]}")
@pytest.mark.parametrize("screen", list(SCREENS))
def test_timing_screen(snap_compare: Any, screen: str, size: tuple[int, int]) -> None:
    app = make_app(FILES[:1] if screen in ONLY_TRACE else FILES)
    assert snap_compare(app, terminal_size=size, run_before=SCREENS[screen])
