"""The UI never touches the writer's store, and keeps working while the writer grows it.

The ingest worker reads a 300,000-request log (tail first, then the older part in the
background: columns appended in bulk) and follows 700,000 more appended while the test
runs (the id index rehashed many times over), while the test drives the UI: follow, page, jump to the top, go to an id, open a request's detail
and come back. The store records which threads touch it: only the ingest thread may.
"""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any

from apphelpers import async_test, settle, wait_until

from sparseety_tui.core.extraction._extractor import Extractor
from sparseety_tui.core.store._store import RequestStore
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


def log_lines(first: int, last: int) -> bytes:
    return b"".join(
        b'{"request_id":"r%07d","prompt_tokens":%d,"completion_tokens":%d}\n'
        % (i, i % 900 + 10, i % 70 + 1)
        for i in range(first, last)
    )


async def wait_for_rows(pilot: Any, table: RequestTable, more_than: int) -> int:
    """Drive the UI until the table shows more than ``more_than`` rows (a condition, not a
    time: however loaded the machine, each append is seen)."""
    keys = ("pageup", "home", "end", "f", "j", "k")
    steps = iter(range(1 << 62))

    async def step() -> int:
        await pilot.press(keys[next(steps) % len(keys)])
        snap = table.snapshot
        if snap.rows:
            # Every row on screen reads consistently from the snapshot.
            row = snap.row_at(min(table.cursor, snap.visible - 1))
            assert table.request_id(row).startswith("r")
        return snap.rows if snap.rows > more_than else 0

    return await wait_until(step, f"the table to show more than {more_than} rows")


@async_test
async def test_ui_works_while_the_worker_appends_a_million_rows(tmp_path: Path) -> None:
    log = tmp_path / "big.jsonl"
    # A big start (tail first, the older part in bulk in the background), then appends.
    first = 300_000
    log.write_bytes(log_lines(0, first))
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
        seen_rows.append(await wait_for_rows(pilot, table, 0))
        for start in range(first, ROWS, 100_000):
            with log.open("ab") as out:
                out.write(log_lines(start, start + 100_000))
            seen_rows.append(await wait_for_rows(pilot, table, seen_rows[-1]))
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
    assert len(seen_rows) == 8 and seen_rows == sorted(set(seen_rows)), seen_rows
    assert object.__getattribute__(store, "threads") == {WRITER}
