"""The request table renders again only the rows that changed or are drawn otherwise."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest
from apphelpers import async_test, settle
from textual.scrollbar import ScrollBar

from sparseety_tui.ingest.snapshot import LiveOptions
from sparseety_tui.ui.app import AppConfig, SparseetyApp
from sparseety_tui.ui.textual_compat import layout_pending, repaint_pending
from sparseety_tui.ui.widgets.request_table import RequestTable
from sparseety_tui.ui.widgets.steady_scrollbar import SteadyScrollBar


def _record(i: int, **extra: object) -> str:
    data = {"request_id": f"r{i:04d}", "prompt_tokens": 10 + i, "ts": 1_800_000_000 + i}
    return json.dumps({**data, **extra}) + "\n"


def _live_app(tmp_path: Path, rows: int) -> tuple[SparseetyApp, Path]:
    log = tmp_path / "live.jsonl"
    log.write_text("".join(_record(i) for i in range(rows)))
    config = AppConfig(live=LiveOptions(paths=(str(log),), track_rate=False), theme="dark")
    return SparseetyApp(config), log


@async_test
async def test_a_new_snapshot_renders_only_changed_rows(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    app, log = _live_app(tmp_path, 10)
    rendered: list[int] = []
    original = RequestTable._render_rows

    def counting(self: RequestTable, positions: list[int], width: int, height: int) -> Any:
        rendered.extend(self.snapshot.row_at(p) for p in positions)
        return original(self, positions, width, height)

    monkeypatch.setattr(RequestTable, "_render_rows", counting)
    async with app.run_test(size=(160, 48)) as pilot:
        await settle(pilot)
        table = app.main_screen.query_one(RequestTable)
        assert table.row_count == 10 and table.cursor == 9  # following
        # From here the test hands the table its snapshots and draws the lines itself, in
        # one go: a repaint of the app in between (a style update clears the cache, as a
        # theme change must) would make the count depend on timing.
        monkeypatch.setattr(app, "tick", lambda: False)
        lines = [table.render_line(y) for y in range(1, 12)]
        assert "r0009" in lines[9].text
        with log.open("a") as f:  # r0003 changes in place, r0010 is new
            f.write(_record(3, completion_tokens=9) + _record(10))
        for _ in range(50):
            assert await asyncio.to_thread(app.worker.drain, 10)
            if app.worker.snapshot.rows == 11:
                break
        rendered.clear()
        table.set_snapshot(app.worker.snapshot)
        lines = [table.render_line(y) for y in range(1, 13)]
        assert table.row_count == 11 and table.cursor == 10
        # r0003 (changed), r0009 (the cursor left it), r0010 (new) are drawn again; rows
        # below the first change are kept. (The worker's changes say "from row 3 on":
        # rows 4..8 are drawn again too, never fewer.)
        assert {3, 9, 10} <= set(rendered)
        assert not set(rendered) & {0, 1, 2}
        assert "r0010" in lines[10].text and "r0003" in lines[3].text


async def _grow(app: SparseetyApp, log: Path, start: int, count: int) -> None:
    with log.open("a") as f:
        f.write("".join(_record(i) for i in range(start, start + count)))
    for _ in range(50):
        assert await asyncio.to_thread(app.worker.drain, 10)
        if app.worker.snapshot.rows == start + count:
            return
    raise AssertionError("the new rows did not come")


@async_test
async def test_rows_growing_under_a_scrollbar_take_no_layout(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A snapshot that only adds rows below a scrollbar already shown sets the scroll range
    # without asking for a layout of the screen (a third of a frame while a log streams),
    # and the scrollbar and the view follow all the same; the scrollbar's appearing takes
    # the layout.
    app, log = _live_app(tmp_path, 5)
    async with app.run_test(size=(160, 48)) as pilot:
        await settle(pilot)
        table = app.main_screen.query_one(RequestTable)
        screen = app.main_screen
        assert not table.show_vertical_scrollbar  # 5 rows fit
        await _grow(app, log, 5, 200)
        table.set_snapshot(app.worker.snapshot)
        # The scrollbar appears, which takes a layout (when it is asked for depends on
        # whether the app's own tick showed the snapshot first: not asserted).
        await settle(pilot)
        assert table.show_vertical_scrollbar and table.cursor == 204
        assert not layout_pending(screen)
        # From here the test hands the table its snapshot (the app's own would lay out
        # the status line's new text too).
        monkeypatch.setattr(app, "tick", lambda: False)
        await _grow(app, log, 205, 300)
        table.set_snapshot(app.worker.snapshot)
        assert not layout_pending(screen)
        assert table.virtual_size.height == 506  # the rows and the header
        assert table.vertical_scrollbar.window_virtual_size == 506
        assert table.cursor == 504 and round(table.scroll_y) == table.max_scroll_y
        last = table.scrollable_content_region.height - 1
        assert "r0504" in table.render_line(last).text


@async_test
async def test_the_scrollbar_repaints_only_when_its_thumb_moves(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Rows streaming in below a long table move the bar's range and position at every
    # snapshot; over thousands of rows its thumb stays put at the bottom, and repainting
    # it each time was a third of a frame. It repaints when what it shows changes.
    app, log = _live_app(tmp_path, 3000)
    async with app.run_test(size=(160, 48)) as pilot:
        await settle(pilot)
        table = app.main_screen.query_one(RequestTable)
        bar = table.vertical_scrollbar
        assert isinstance(bar, SteadyScrollBar) and table.show_vertical_scrollbar
        monkeypatch.setattr(app, "tick", lambda: False)
        await pilot.pause()
        before = bar._drawn
        assert before is not None and not repaint_pending(bar)
        await _grow(app, log, 3000, 5)
        table.set_snapshot(app.worker.snapshot)
        assert table.cursor == 3004 and bar.window_virtual_size == 3006
        # Same thumb cells (ScrollBar.render: SteadyScrollBar's would note them as drawn).
        assert bar._drawing(ScrollBar.render(bar)) == before
        assert not repaint_pending(bar)
        table.action_first()  # the thumb goes to the top: drawn again
        await pilot.pause()
        assert bar._drawn != before and bar._drawn is not None
        await pilot.press("end")
        await pilot.pause()
        assert bar._drawn == before
