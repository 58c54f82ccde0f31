"""The UI never touches the writer's store, and keeps working while the writer grows it.

The ingest worker reads a 1,000,000-request log (tail first, then the older part in the
background: columns appended in bulk, the id index rehashed many times over) while the
test drives the UI: follow, page, jump to the top, go to an id, open a request's detail
and come back. The store records which threads touch it: only the ingest thread may.
"""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any

from apphelpers import async_test, settle

from sparseety_tui.core.extractor import Extractor
from sparseety_tui.core.store import RequestStore
from sparseety_tui.ingest.snapshot import LiveOptions
from sparseety_tui.ui.app import AppConfig, SparseetyApp
from sparseety_tui.ui.screens.detail import DetailScreen
from sparseety_tui.ui.screens.main import MainScreen
from sparseety_tui.ui.widgets.request_table import RequestTable

ROWS = 1_000_000
WRITER = "sparseety-ingest"


class ThreadRecordingStore(RequestStore):
    """A RequestStore that notes the name of every thread that reads an attribute of it
    once the app runs (``recording`` set by the test)."""

    def __getattribute__(self, name: str) -> Any:
        if object.__getattribute__(self, "recording"):
            object.__getattribute__(self, "threads").add(threading.current_thread().name)
        return object.__getattribute__(self, name)

    def __init__(self) -> None:
        object.__setattr__(self, "recording", False)
        object.__setattr__(self, "threads", set())
        super().__init__()


def write_log(path: Path) -> None:
    with path.open("wb") as out:
        for start in range(0, ROWS, 100_000):
            out.write(
                b"".join(
                    b'{"request_id":"r%07d","prompt_tokens":%d,"completion_tokens":%d}\n'
                    % (i, i % 900 + 10, i % 70 + 1)
                    for i in range(start, start + 100_000)
                )
            )


@async_test
async def test_ui_works_while_the_worker_appends_a_million_rows(tmp_path: Path) -> None:
    log = tmp_path / "big.jsonl"
    write_log(log)
    store = ThreadRecordingStore()
    config = AppConfig(
        live=LiveOptions(
            paths=(str(log),),
            big_file_bytes=1 << 20,
            tail_window_bytes=256 << 10,
            track_rate=False,
        )
    )
    app = SparseetyApp(config, extractor=Extractor(store=store))
    object.__setattr__(store, "recording", True)
    seen_rows: list[int] = []
    async with app.run_test(size=(120, 40)) as pilot:
        main = app.screen
        assert isinstance(main, MainScreen)
        table = main.query_one(RequestTable)
        # Drive the UI while the older part is read in the background.
        for round_no in range(30):
            await pilot.pause(0.05)
            snap = table.snapshot
            seen_rows.append(snap.rows)
            if snap.rows:
                # Every row on screen reads consistently from the snapshot.
                row = snap.row_at(min(table.cursor, snap.visible - 1))
                assert table.request_id(row).startswith("r")
            await pilot.press(("pageup", "home", "end", "f", "j", "k")[round_no % 6])
            if snap.settled:
                break
        await settle(pilot)
        snap = table.snapshot
        assert snap.rows == ROWS and snap.settled and snap.error is None
        assert snap.problem is None
        # Log order on screen (the tail was read first): first and last rows.
        assert table.request_id(snap.row_at(0)) == "r0000000"
        assert table.request_id(snap.row_at(snap.visible - 1)) == f"r{ROWS - 1:07d}"
        # Go to a request from the older part, open it, come back.
        main.go_to_request("r0123456")
        await settle(pilot)
        assert table.request_id(table.current_row or 0) == "r0123456"
        await pilot.press("enter")
        await settle(pilot)
        assert isinstance(app.screen, DetailScreen) and app.screen.detail is not None
        assert app.screen.detail.request_id == "r0123456"
        await pilot.press("escape")
        await settle(pilot)
        assert isinstance(app.screen, MainScreen)
    # The rows grew while the UI was in use, and only the writer thread read the store.
    object.__setattr__(store, "recording", False)
    assert len(set(seen_rows)) > 2, seen_rows
    assert object.__getattribute__(store, "threads") == {WRITER}
