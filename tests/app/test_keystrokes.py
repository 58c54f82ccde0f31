"""Keys typed in one burst (a paste, a fast typist, a loaded host) reach the prompt that the
first of them opens; the filter prompt edits the old text.

``pilot.press`` waits for the app to go idle after every key, which hides the race: these
tests hand the whole burst to the driver at once, as a terminal read does.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

from apphelpers import async_test, make_app, settle
from textual import events
from textual.command import CommandInput, CommandPalette

from sparseety_tui.ui.screens.detail import DetailScreen
from sparseety_tui.ui.screens.help import HelpScreen
from sparseety_tui.ui.screens.main import MainScreen
from sparseety_tui.ui.textual_compat import send_to_driver
from sparseety_tui.ui.widgets.prompt import Prompt
from sparseety_tui.ui.widgets.request_table import RequestTable

SIZE = (120, 40)
NAMES = {"/": "slash", ">": "greater_than_sign", "-": "minus", "=": "equals_sign", " ": "space"}


def burst(app: Any, *keys: str) -> None:
    """Queue every key on the driver without waiting in between."""
    for key in keys:
        if len(key) == 1:
            event = events.Key(NAMES.get(key, key), key)
        else:
            event = events.Key(key, "\r" if key == "enter" else None)
        event.set_sender(app)
        send_to_driver(app, event)


async def settle_burst(pilot: Any, done: Callable[[], bool], passes: int = 10) -> None:
    """Settle until ``done()``: a burst's last keys may still be on their way (through
    the prompt, its messages, the worker's new view) when the first settle returns."""
    for _ in range(passes):
        await settle(pilot)
        if done() or not pilot.app.is_running:
            return


def query_text(app: Any) -> str:
    return str(app.main_screen.query_one(RequestTable).snapshot.query.text)


def visible_ids(app: Any) -> list[str]:
    snap = app.main_screen.query_one(RequestTable).snapshot
    ids = app.worker.snapshot.state.store.ids
    return [ids[snap.row_at(i)] for i in range(snap.visible)]


def current_id(app: Any) -> str:
    row = app.main_screen.query_one(RequestTable).current_row
    assert row is not None
    return str(app.worker.snapshot.state.store.ids[row])


@async_test
async def test_a_pasted_filter_goes_to_the_prompt_and_q_does_not_quit() -> None:
    app = make_app(("trace.jsonl", "counts.jsonl"))
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        burst(app, *"/qwen")
        await settle_burst(pilot, lambda: query_text(app) == "qwen")
        assert app.is_running
        assert isinstance(app.screen, MainScreen)
        assert app.main_screen.query_one(Prompt).value == "qwen"
        assert app.main_screen.query_one(RequestTable).snapshot.query.text == "qwen"


@async_test
async def test_filter_and_enter_in_one_burst_filter_and_open_no_detail() -> None:
    app = make_app(("trace.jsonl", "counts.jsonl"))
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        total = app.main_screen.query_one(RequestTable).row_count
        burst(app, *"/latency>2", "enter")
        await settle_burst(pilot, lambda: query_text(app) == "latency>2")
        assert isinstance(app.screen, MainScreen)  # enter submitted the prompt, no detail
        snap = app.main_screen.query_one(RequestTable).snapshot
        assert snap.query.text == "latency>2"
        assert 0 < snap.visible < total
        assert app.screen.focused is app.main_screen.query_one(RequestTable)


@async_test
async def test_editing_keys_and_enter_in_one_burst_edit_before_the_prompt_closes() -> None:
    """backspace and ctrl+u are the Input's bindings: they used to run only once the key
    had bubbled up to the app, after the enter behind them had submitted the old text."""
    app = make_app(("trace.jsonl", "counts.jsonl"))
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        burst(app, *"/qwex", "backspace", "n", "enter")
        await settle_burst(pilot, lambda: query_text(app) == "qwen")
        assert query_text(app) == "qwen"
        burst(app, "slash", "ctrl+u", *"moe", "enter")
        await settle_burst(pilot, lambda: query_text(app) == "moe")
        assert query_text(app) == "moe"
        assert isinstance(app.screen, MainScreen) and app.is_running


@async_test
async def test_goto_id_and_enter_in_one_burst() -> None:
    app = make_app(("counts.jsonl",))
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        burst(app, *"greq-0010", "enter")
        await settle_burst(pilot, lambda: current_id(app) == "req-0010")
        assert isinstance(app.screen, MainScreen)
        assert current_id(app) == "req-0010"


@async_test
async def test_keys_after_enter_are_not_eaten_by_the_closed_prompt() -> None:
    app = make_app(("counts.jsonl",))
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        burst(app, *"/req-001", "enter", "question_mark")
        await settle_burst(pilot, lambda: isinstance(app.screen, HelpScreen))
        assert isinstance(app.screen, HelpScreen)  # "?" reached the app, after the filter
        assert app.main_screen.query_one(Prompt).value == "req-001"
        assert app.main_screen.query_one(RequestTable).snapshot.query.text == "req-001"


@async_test
async def test_palette_gets_the_keys_typed_right_after_it_opens() -> None:
    app = make_app(("counts.jsonl",))
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        burst(app, "ctrl+p", *"quit")
        await settle_burst(
            pilot,
            lambda: (
                isinstance(app.screen, CommandPalette)
                and app.screen.query_one(CommandInput).value == "quit"
            ),
        )
        assert app.is_running
        assert isinstance(app.screen, CommandPalette)
        assert app.screen.query_one(CommandInput).value == "quit"


@async_test
async def test_filter_prompt_edits_the_old_filter_and_esc_restores_it() -> None:
    app = make_app(("counts.jsonl",))
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await pilot.press(*"/req-001", "enter")
        await settle(pilot)
        assert len(visible_ids(app)) == 10
        # Reopened: the old text, cursor at its end (not selected: typing appends).
        await pilot.press("slash")
        prompt = app.main_screen.query_one(Prompt)
        assert prompt.value == "req-001"
        assert prompt.cursor_position == len("req-001")
        assert prompt.selection.is_empty
        await pilot.press("backspace", "2", "enter")
        await settle(pilot)
        assert visible_ids(app) == [f"req-002{i}" for i in range(10)]
        # Esc while editing puts back the filter from before the prompt opened.
        await pilot.press("slash", *"9")
        await settle(pilot)
        assert visible_ids(app) == ["req-0029"]
        await pilot.press("escape")
        await settle(pilot)
        assert app.main_screen.query_one(RequestTable).snapshot.query.text == "req-002"
        assert len(visible_ids(app)) == 10


@async_test
async def test_slash_and_g_are_text_inside_the_prompt() -> None:
    app = make_app(("counts.jsonl",))
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        burst(app, *"/model~a/g")
        await settle_burst(pilot, lambda: query_text(app) == "model~a/g")
        assert app.main_screen.query_one(Prompt).value == "model~a/g"


@async_test
async def test_ids_with_a_long_shared_prefix_read_differently_at_80_columns(
    tmp_path: Path,
) -> None:
    log = tmp_path / "ids.jsonl"
    shared = "chatcmpl-0f3c2d1e5b6a7980"  # vLLM-like ids that share 25 characters
    ids = [f"{shared}{n:016x}" for n in range(0, 12 * 7919, 7919)]
    log.write_text("".join(json.dumps({"request_id": i, "prompt_tokens": 3}) + "\n" for i in ids))
    app = make_app(paths=(str(log),))
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        t = app.main_screen.query_one(RequestTable)
        rows = [t.render_line(y).text for y in range(1, 13)]
        cells = [row.split()[1] for row in rows]  # received, then the id
        assert all("…" in cell for cell in cells)  # shortened: the column is narrow
        assert len(set(cells)) == len(ids)


@async_test
async def test_request_option_takes_a_unique_prefix() -> None:
    app = make_app(("counts.jsonl",), request_id="req-006")  # only req-0060 starts so
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        assert isinstance(app.screen, DetailScreen)
        assert app.screen.detail is not None and app.screen.detail.request_id == "req-0060"


@async_test
async def test_request_option_with_an_ambiguous_prefix_lists_candidates() -> None:
    app = make_app(("counts.jsonl",), request_id="req-001")
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        assert isinstance(app.screen, MainScreen)
        status = str(app.main_screen.query_one("#status").render())
        assert "ambiguous" in status and "10 requests start with it" in status
        assert "'req-0010', 'req-0011', 'req-0012', …" in status
