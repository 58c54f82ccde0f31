"""The request table renders again only the rows that changed or are drawn otherwise."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest
from apphelpers import async_test, settle

from sparseety_tui.ingest.snapshot import LiveOptions
from sparseety_tui.ui.app import AppConfig, SparseetyApp
from sparseety_tui.ui.widgets.request_table import RequestTable


def _record(i: int, **extra: object) -> str:
    data = {"request_id": f"r{i:04d}", "prompt_tokens": 10 + i, "ts": 1_800_000_000 + i}
    return json.dumps({**data, **extra}) + "\n"


@async_test
async def test_a_new_snapshot_renders_only_changed_rows(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    log = tmp_path / "live.jsonl"
    log.write_text("".join(_record(i) for i in range(10)))
    config = AppConfig(live=LiveOptions(paths=(str(log),), track_rate=False), theme="dark")
    app = SparseetyApp(config)
    rendered: list[int] = []
    original = RequestTable._render_row

    def counting(self: RequestTable, position: int, width: int, selected: bool) -> Any:
        rendered.append(self.snapshot.row_at(position))
        return original(self, position, width, selected)

    monkeypatch.setattr(RequestTable, "_render_row", counting)
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
