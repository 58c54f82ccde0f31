"""The app freezes what is alive once its first read settled (full collections then skip
those objects while a log streams) and hands them back to the collector when it exits."""

from __future__ import annotations

import gc
import json
from pathlib import Path

from apphelpers import async_test, settle

from sparseety_tui.ingest.snapshot import LiveOptions
from sparseety_tui.ui.app import AppConfig, SparseetyApp


@async_test
async def test_objects_frozen_while_running_and_unfrozen_after(tmp_path: Path) -> None:
    log = tmp_path / "live.jsonl"
    log.write_text(json.dumps({"request_id": "r1", "prompt_tokens": 3}) + "\n")
    gc.unfreeze()  # (whatever an earlier test in this process left)
    app = SparseetyApp(AppConfig(live=LiveOptions(paths=(str(log),), track_rate=False)))
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        await pilot.pause()
        assert gc.get_freeze_count() > 0
    assert gc.get_freeze_count() == 0
