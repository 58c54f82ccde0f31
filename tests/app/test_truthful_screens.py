"""Issue #11 item 8, "truthful screens": the diagnostics screen follows a growing file, the
sort arrow shows on numeric headers, the status line says the filter once, the palette's
sort commands say what `s` does, and the KV detail never guesses what it was not told."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from apphelpers import async_test, make_app, settle

from sparseety_tui.ui.screens.detail_text import kv_rest_text
from sparseety_tui.ui.screens.diagnostics import DiagnosticsScreen
from sparseety_tui.ui.sorting import sort_words
from sparseety_tui.ui.widgets.request_table import RequestTable

SIZE = (120, 40)


def header(app: Any) -> str:
    strip = app.main_screen.query_one(RequestTable).render_line(0)
    return "".join(segment.text for segment in strip)


def status(app: Any) -> str:
    return str(app.main_screen.query_one("#status").render())


@async_test
async def test_sort_arrow_shows_on_every_numeric_header() -> None:
    app = make_app(("counts.jsonl",))
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        table = app.main_screen.query_one(RequestTable)
        for column, _ in table._columns(table.size.width):
            for reverse in (False, True):
                app.main_screen.set_sort(column.key, reverse)
                await settle(pilot)
                # Before: "prompt↑" cut to "promp…" in a 6-cell column, the arrow lost.
                arrow = "↓" if reverse else "↑"
                assert header(app).count(arrow) == 1, (column.key, header(app))


@async_test
async def test_status_line_says_the_filter_once() -> None:
    app = make_app(("trace.jsonl", "counts.jsonl"))
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await pilot.press("slash", *"moe-1", "enter")
        await settle(pilot)
        line = status(app)
        assert "filter moe-1 (7/" in line
        assert line.count("moe-1") == 1, line  # was "· filter moe-1 (7/…) · filter moe-1"


@async_test
async def test_palette_sort_commands_say_what_s_does() -> None:
    app = make_app(("counts.jsonl",))
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        commands = {
            c.title: c
            for c in app.get_system_commands(app.main_screen)
            if c.title.startswith("Sort")
        }
        # `s` from arrival order goes to the first column, keeping the direction; the
        # status line then says the order in the words a palette command has.
        await pilot.press("s")
        await settle(pilot)
        query = app.worker.snapshot.query
        words = sort_words(query.sort, query.reverse)
        assert f"sort {words}" in status(app)
        assert f"Sort: {words}" in commands  # was "Sort by time" (and it sorted descending)
        # Every palette command does what its label says.
        for title, command in commands.items():
            command.callback()
            await settle(pilot)
            query = app.worker.snapshot.query
            assert title == f"Sort: {sort_words(query.sort, query.reverse)}"


@async_test
async def test_diagnostics_screen_follows_a_growing_file(tmp_path: Path) -> None:
    log = tmp_path / "grow.jsonl"
    log.write_text(json.dumps({"request_id": "r1", "prompt_tokens": 5}) + "\nnot json one\n")
    app = make_app(paths=(str(log),))
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await pilot.press("d")
        await settle(pilot)
        assert isinstance(app.screen, DiagnosticsScreen)
        before = str(app.screen.query_one("#diag-text").render())
        assert "not json one" in before and "not json two" not in before
        with log.open("a") as f:
            f.write("not json two\n")
        await settle(pilot)
        assert isinstance(app.screen, DiagnosticsScreen)
        after = str(app.screen.query_one("#diag-text").render())
        # Before: the screen kept the snapshot it was opened with until `d` was pressed.
        assert "not json two" in after and "3 lines" in after


def test_kv_detail_says_only_what_the_record_says() -> None:
    assert kv_rest_text(None, 10) == " (10 left out; evicted or masked not logged)"
    assert kv_rest_text("masked", 3) == " (masked the rest: 3)"
    assert kv_rest_text("evicted", 0) == " (none left out)"  # was "(evicted the rest)"
