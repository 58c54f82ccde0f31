"""Widgets whose height follows their content keep the right height whatever the timing.

Under CPU load the snapshot of the main screen once showed the totals strip one line high
with three lines of items (two cut off): Textual caches a widget's box model under a counter
that ``refresh(layout=True)`` bumps only when no layout request of the widget is pending;
a screen layout while one is pending cached the old height, and the new items' request was
then not counted (see ``sparseety_tui/ui/widgets/fit.py``). This test forces that order
instead of waiting for a loaded machine to produce it.
"""

from __future__ import annotations

from typing import Any

from apphelpers import async_test, make_app, settle

from sparseety_tui.ui.textual_compat import lay_out_now
from sparseety_tui.ui.widgets.engine_panel import EnginePanel
from sparseety_tui.ui.widgets.heatmap import Heatmap
from sparseety_tui.ui.widgets.totals_strip import TotalsStrip, totals_items


async def change_while_a_layout_request_is_pending(pilot: Any, widget: Any, change: Any) -> None:
    """Widget asks for a layout; the screen lays out (for another widget) before the widget
    handles the ask; then the content changes: the order a loaded machine produced by chance.
    Textual internals stand in for the other widget: they make the screen lay out now."""
    widget.refresh(layout=True)
    lay_out_now(widget)  # what a sibling's layout request brings, synchronously
    change()
    await settle(pilot)


@async_test
async def test_totals_strip_grows_with_its_items() -> None:
    app = make_app(("counts.jsonl",))
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        strip = app.main_screen.query_one(TotalsStrip)
        items = strip._items
        wrapped = len(strip._lines(strip.size.width))
        assert wrapped > 1 and strip.size.height == wrapped  # 80 columns: several lines
        await pilot.press("space")  # paused: new snapshots no longer reach the strip
        strip.set_items(totals_items(None, (), 0))
        await settle(pilot)
        assert strip.size.height == 1
        await change_while_a_layout_request_is_pending(pilot, strip, lambda: strip.set_items(items))
        assert strip.size.height == wrapped


@async_test
async def test_heatmap_grows_with_its_data() -> None:
    app = make_app(("trace.jsonl",))
    async with app.run_test(size=(160, 48)) as pilot:
        await settle(pilot)
        heatmap = app.main_screen.query_one("#experts-heatmap", Heatmap)
        data, note, full = heatmap._data, heatmap._note, heatmap.size.height
        assert data is not None
        await pilot.press("space")
        heatmap.set_data(None)
        await settle(pilot)
        assert heatmap.size.height < full
        await change_while_a_layout_request_is_pending(
            pilot, heatmap, lambda: heatmap.set_data(data, note)
        )
        assert heatmap.size.height == full


@async_test
async def test_engine_panel_grows_with_its_points() -> None:
    app = make_app(("vllm.log",))
    async with app.run_test(size=(160, 48)) as pilot:
        await settle(pilot)
        engine = app.main_screen.query_one(EnginePanel)
        points, full = engine._points, engine.size.height
        assert points
        await pilot.press("space")
        engine.set_points(())
        await settle(pilot)
        assert engine.size.height < full
        await change_while_a_layout_request_is_pending(
            pilot, engine, lambda: engine.set_points(points)
        )
        assert engine.size.height == full


@async_test
async def test_engine_panel_shows_the_fleet_and_expands_per_engine() -> None:
    # Two data-parallel vLLM engines (tests/app/data/vllm_dp2.log, real line shapes).
    app = make_app(("vllm_dp2.log",))
    async with app.run_test(size=(160, 48)) as pilot:
        await settle(pilot)
        engine = app.main_screen.query_one(EnginePanel)
        text = engine.render().plain
        assert "fleet of 2, p: per engine" in text
        running = next(line for line in text.splitlines() if line.startswith("running"))
        assert running.endswith(" 92")  # 46 + 46 at the last interval, not their mean
        kv = next(line for line in text.splitlines() if line.startswith("KV usage"))
        assert kv.endswith(" 45%")  # (45% + 45%) / 2
        folded = engine.size.height
        await pilot.press("p")
        await settle(pilot)
        text = engine.render().plain
        rows = [line for line in text.splitlines() if line[:1] in "01"]
        # Whole `label value` pairs, as many as the panel's width (64 here) holds: the
        # prefix hit rate would be cut, so it is left out rather than shown as `prefix 1`.
        assert engine.size.width == 64
        assert rows == [
            "0 prompt 100  gen 988  running 46  waiting 112  KV 45%",
            "1 prompt 200  gen 988  running 46  waiting 113  KV 45%",
        ]
        assert engine.size.height == folded + 2
        await pilot.click(EnginePanel)
        await settle(pilot)
        assert engine.size.height == folded
