"""Pilot tests for every key path of the app (no timings asserted)."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path
from types import SimpleNamespace
from typing import Any, cast

import pytest
from apphelpers import async_test, make_app, settle

from sparseety_tui.ingest.worker import IngestWorker
from sparseety_tui.ui.screens.detail import DetailScreen
from sparseety_tui.ui.screens.diagnostics import DiagnosticsScreen
from sparseety_tui.ui.screens.help import HelpScreen
from sparseety_tui.ui.screens.main import MainScreen
from sparseety_tui.ui.widgets.request_table import RequestTable
from sparseety_tui.ui.widgets.token_trace import TokenTrace

SIZE = (120, 40)


def table(app: Any) -> RequestTable:
    return app.main_screen.query_one(RequestTable)


def current_id(app: Any) -> str:
    row = table(app).current_row
    assert row is not None
    return str(app.worker.snapshot.state.store.ids[row])


@async_test
async def test_main_screen_follows_and_drills_in_and_back() -> None:
    app = make_app(("trace.jsonl", "stream.jsonl"))
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        assert isinstance(app.screen, MainScreen)
        t = table(app)
        assert t.follow and t.cursor == t.row_count - 1  # follows the tail
        await pilot.press("enter")
        await settle(pilot)
        assert isinstance(app.screen, DetailScreen)
        assert app.screen.detail is not None
        await pilot.press("escape")
        await pilot.pause()
        assert isinstance(app.screen, MainScreen)


@async_test
async def test_cursor_keys_stop_following_and_f_resumes() -> None:
    app = make_app(("trace.jsonl",))
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        t = table(app)
        await pilot.press("up", "up")
        assert not t.follow and t.cursor == t.row_count - 3
        await pilot.press("home")
        assert t.cursor == 0
        await pilot.press("pagedown", "k", "j")
        await pilot.press("f")
        assert t.follow and t.cursor == t.row_count - 1
        await pilot.press("home", "G")
        assert t.follow


@async_test
async def test_filter_expression_and_text_and_escape() -> None:
    app = make_app(("trace.jsonl", "counts.jsonl"))
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        total = table(app).row_count
        await pilot.press("slash", *"latency>2", "enter")
        await settle(pilot)
        snap = table(app).snapshot
        assert 0 < snap.visible < total
        lat = app.worker.snapshot.state.store.columns["latency_s"]
        assert all(lat[snap.row_at(i)] > 2 for i in range(snap.visible))
        # Free text: ids containing "moe-1".
        await pilot.press("slash", *["backspace"] * 20, *"moe-1", "enter")
        await settle(pilot)
        snap = table(app).snapshot
        ids = {app.worker.snapshot.state.store.ids[snap.row_at(i)] for i in range(snap.visible)}
        assert ids == {f"moe-1{i}" for i in range(7)}
        # A bad expression says why and keeps the previous filter.
        await pilot.press("slash", *["backspace"] * 20, *"bogus>1", "enter")
        await settle(pilot)
        assert table(app).snapshot.visible == 7
        status = app.main_screen.query_one("#status").render()
        assert "unknown field" in str(status)
        await pilot.press("escape")  # clears the filter
        await settle(pilot)
        assert table(app).snapshot.visible == total


@async_test
async def test_filter_state_and_skip() -> None:
    app = make_app(("trace.jsonl", "counts.jsonl"))
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await pilot.press("slash", *"state=finished skip>0.5", "enter")
        await settle(pilot)
        assert table(app).snapshot.visible > 0
        await pilot.press("slash")
        await pilot.press("escape")  # closes the prompt; the filter stays
        await settle(pilot)
        assert table(app).snapshot.query.text == "state=finished skip>0.5"


@async_test
async def test_sort_cycles_and_reverses() -> None:
    app = make_app(("counts.jsonl",))
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await pilot.press("s")  # time
        await settle(pilot)
        assert table(app).snapshot.query.sort == "time"
        await pilot.press("s")  # id
        await settle(pilot)
        snap = table(app).snapshot
        ids = [app.worker.snapshot.state.store.ids[snap.row_at(i)] for i in range(snap.visible)]
        assert ids == sorted(ids)
        await pilot.press("S")
        await settle(pilot)
        snap = table(app).snapshot
        ids = [app.worker.snapshot.state.store.ids[snap.row_at(i)] for i in range(snap.visible)]
        assert ids == sorted(ids, reverse=True)


@async_test
async def test_goto_and_next_previous_match() -> None:
    app = make_app(("counts.jsonl",))
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await pilot.press("g", *"req-0010", "enter")
        await settle(pilot)
        assert current_id(app) == "req-0010"
        await pilot.press("g", *"req-002", "enter")  # a part of an id: first match
        await settle(pilot)
        assert current_id(app) == "req-0020"
        await pilot.press("n")
        await settle(pilot)
        assert current_id(app) == "req-0021"
        await pilot.press("N", "N")
        await settle(pilot)
        assert current_id(app) == "req-0029"  # wraps around


@async_test
async def test_pause_freezes_the_view(tmp_path: Path) -> None:
    log = tmp_path / "live.jsonl"
    log.write_text(
        "".join(
            json.dumps({"request_id": f"r{i}", "prompt_tokens": 5, "completion_tokens": 2}) + "\n"
            for i in range(5)
        )
    )
    app = make_app(paths=(str(log),))
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await pilot.press("space")
        assert app.main_screen.paused
        with log.open("a") as f:
            for i in range(5, 9):
                f.write(json.dumps({"request_id": f"r{i}", "prompt_tokens": 1}) + "\n")
        await settle(pilot)
        assert app.worker.snapshot.rows == 9
        assert table(app).row_count == 5  # frozen
        assert "+4 new" in str(app.main_screen.query_one("#status").render())
        await pilot.press("space")
        await pilot.pause()
        assert table(app).row_count == 9


@async_test
async def test_help_diagnostics_palette_and_quit() -> None:
    app = make_app(("broken.jsonl",))
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await pilot.press("question_mark")
        await pilot.pause()
        assert isinstance(app.screen, HelpScreen)
        await pilot.press("escape")
        await pilot.press("d")
        await pilot.pause()
        assert isinstance(app.screen, DiagnosticsScreen)
        text = str(app.screen.query_one("#diag-text").render())
        assert "invalid JSON" in text and "this is not json at all" in text
        assert "line        2" in text or "line 2" in text.replace("  ", " ")
        await pilot.press("c")  # copy: must not fail
        await pilot.press("escape")
        await pilot.pause()
        assert isinstance(app.screen, MainScreen)
        await pilot.press("ctrl+p")
        await pilot.pause()
        assert app.screen.__class__.__name__ == "CommandPalette"
        await pilot.press("escape")
        await pilot.pause()
        await pilot.press("q")
        await pilot.pause()
    assert app.return_code == 0


@async_test
async def test_detail_keys_token_cursor_tabs_copy() -> None:
    app = make_app(("trace.jsonl",), request_id="moe-10")  # --request opens the detail
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await settle(pilot)
        screen = app.screen
        assert isinstance(screen, DetailScreen)
        trace = screen.query_one(TokenTrace)
        assert trace.tokens
        await pilot.press("right", "right", "l")
        assert trace.cursor == 3
        await pilot.press("left", "h")
        assert trace.cursor == 1
        await pilot.press("down", "up")
        await pilot.press("n")
        assert trace.tokens[trace.cursor].skips
        first = trace.cursor
        await pilot.press("n", "N")
        assert trace.cursor == first
        info = str(screen.query_one("#token-info-text").render())
        assert "token" in info
        for key, tab in (("2", "experts"), ("3", "heads"), ("4", "raw"), ("1", "trace")):
            await pilot.press(key)
            await pilot.pause()
            assert screen.query_one("#tabs").active == tab  # type: ignore[attr-defined]
        await pilot.press("tab")
        await pilot.pause()
        assert screen.query_one("#tabs").active == "experts"  # type: ignore[attr-defined]
        await pilot.press("c")
        await pilot.press("escape")
        await pilot.pause()
        assert isinstance(app.screen, MainScreen)


@async_test
async def test_counts_only_request_says_what_is_missing() -> None:
    app = make_app(("counts.jsonl",), request_id="req-0002")
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await settle(pilot)
        assert isinstance(app.screen, DetailScreen)
        info = str(app.screen.query_one("#token-info-text").render())
        assert "cached vs computed" in info and "would fill" in info


@pytest.mark.parametrize("theme", ["light", "ansi", "dark"])
@async_test
async def test_themes_load_and_switch(theme: str) -> None:
    app = make_app(("counts.jsonl",), theme=theme)
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        assert app.theme == f"sparseety-{theme}"
        app.theme = "sparseety-light"
        await pilot.pause()


@async_test
async def test_a_snapshot_published_while_the_app_closes_is_not_shown() -> None:
    app = make_app(("counts.jsonl",))
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
    # A growing log is published while the app closes its screens; the tick timer or the
    # worker's wake-up may still call tick() then (it failed with IndexError: no screens).
    # (The app reads only ``worker.snapshot``: a stand-in publishes the newer one.)
    newer = replace(app.worker.snapshot, version=app.worker.snapshot.version + 1)
    app.worker = cast(IngestWorker, SimpleNamespace(snapshot=newer))
    assert not app.screen_stack
    assert app.tick() is False
