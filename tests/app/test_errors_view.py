"""The errors view (``e``): listing, stepping with e/E, the text re-read from the file, the
lines in context, the request an error names, and errors that arrive while it is open."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

from apphelpers import REPO, async_test, make_app, settle

from sparseety_tui.ui.screens.detail import DetailScreen
from sparseety_tui.ui.screens.error_context import ErrorContextScreen
from sparseety_tui.ui.screens.errors import ErrorsScreen
from sparseety_tui.ui.screens.main import MainScreen
from sparseety_tui.ui.widgets.totals_strip import TotalsStrip

REAL = "tests/data/real_logs/"
SGLANG_500 = REAL + "sglang_0.5.8_pd_prefill_decode_transfer_failed_mooncake_tp16_2node_slurmv4.log"
SGLANG_TB = REAL + "sglang_docsci_20251031_native_api_asgi_traceback_expert_record.log"
SIZE = (120, 40)


def text_of(screen: Any, selector: str) -> str:
    return str(screen.query_one(selector).render())


@async_test
async def test_e_lists_every_error_and_e_shift_e_step_through_them() -> None:
    app = make_app(paths=(SGLANG_500, SGLANG_TB))
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await pilot.press("e")
        await settle(pilot)
        screen = app.screen
        assert isinstance(screen, ErrorsScreen)
        listed = [(r.kind, r.line) for r in screen._records]
        assert listed == [
            ("kv_transfer", 1),
            ("kv_transfer", 12),
            ("http_5xx", 15),
            ("traceback", 162),
            ("traceback", 210),
            ("traceback", 257),
        ]
        assert "Errors 6: traceback 3 · 5xx 1 · kv xfer 2" in text_of(screen, "#errors-title")
        # The newest is selected; its whole text is read from the file, to its last line.
        assert screen.selected is not None and screen.selected.line == 257
        body = text_of(screen, "#error-text").splitlines()
        assert body[0] == "[2025-10-31 21:12:28] ERROR:    Exception in ASGI application"
        assert (
            body[-1] == "TypeError: BaseReq.__init__() got an unexpected keyword argument 'action'"
        )
        assert len(body) == 47
        await pilot.press("E", "E", "E")
        await settle(pilot)
        assert screen.selected is not None and screen.selected.kind == "http_5xx"
        assert "HTTP 500" in text_of(screen, "#error-header")
        assert text_of(screen, "#error-text") == (
            '[2026-02-27 15:01:51] INFO:     10.99.91.39:38178 - "POST /generate HTTP/1.1" '
            "500 Internal Server Error"
        )
        await pilot.press("e")
        await settle(pilot)
        assert screen.selected is not None and screen.selected.line == 162
        await pilot.press("E", "E", "E", "E", "E", "E")  # stops at the first
        assert screen.error_list.cursor == 0
        await pilot.press("escape")
        await pilot.pause()
        assert isinstance(app.screen, MainScreen)


@async_test
async def test_enter_shows_the_lines_in_context_with_the_error_marked() -> None:
    app = make_app(paths=(SGLANG_500,))
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await pilot.press("e")
        await settle(pilot)
        await pilot.press("enter")  # the newest: the HTTP 500 at line 15
        await settle(pilot)
        assert isinstance(app.screen, ErrorContextScreen)
        lines = text_of(app.screen, "#context-text").splitlines()
        marked = [line for line in lines if "▌" in line]
        assert len(marked) == 1 and marked[0].startswith("15 ▌[2026-02-27 15:01:51] INFO:")
        assert lines[0].startswith(" 1  [2026-02-27 15:01:51 TP3] Decode transfer failed")
        assert len(lines) == 21  # the whole file: 20 lines either side of line 15
        await pilot.press("escape")
        await pilot.pause()
        assert isinstance(app.screen, ErrorsScreen)
        await pilot.press("o")
        await settle(pilot)
        assert isinstance(app.screen, ErrorContextScreen)


@async_test
async def test_r_opens_the_request_an_error_names() -> None:
    app = make_app(paths=(SGLANG_500,))
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await pilot.press("e")
        await settle(pilot)
        await pilot.press("r")  # the HTTP 500 names no request: nothing opens
        await settle(pilot)
        assert isinstance(app.screen, ErrorsScreen)
        await pilot.press("E", "r")  # the prefill transfer failure of request ca27…
        await settle(pilot)
        assert isinstance(app.screen, DetailScreen)
        state = app.worker.snapshot.state
        assert state.store.ids[app.screen.row] == "ca271fb6eab2421f98ac61976e6f0f34"


@async_test
async def test_errors_that_arrive_are_listed_and_counted_in_the_totals(tmp_path: Path) -> None:
    log = tmp_path / "sglang.log"
    shutil.copy(REPO / SGLANG_500, log)
    app = make_app(paths=(str(log),))
    async with app.run_test(size=(160, 48)) as pilot:
        await settle(pilot)
        strip = app.main_screen.query_one(TotalsStrip).render().plain
        assert "errors 2 · 5xx 1" in strip
        await pilot.press("e")
        await settle(pilot)
        screen = app.screen
        assert isinstance(screen, ErrorsScreen) and len(screen._records) == 3
        with log.open("a") as f:
            f.write(
                '[2026-02-27 15:02:00] INFO:     10.99.91.39:38180 - "POST /generate HTTP/1.1" '
                "503 Service Unavailable\n"
                "[2026-02-27 15:02:01 TP0] KV cache pool is full. Retract requests. "
                "#retracted_reqs: 1, #new_token_ratio: 0.9998 -> 1.0000\n"
            )
        await settle(pilot)
        assert [(r.kind, r.line, r.status) for r in screen._records[3:]] == [
            ("http_5xx", 22, 503),
            ("retraction", 23, None),
        ]
        assert screen.selected is not None and screen.selected.kind == "retraction"  # newest
        assert "Retract requests" in text_of(screen, "#error-text")
        await pilot.press("escape")
        await settle(pilot)
        strip = app.main_screen.query_one(TotalsStrip).render().plain
        assert "errors 3 · 5xx 2" in strip and "retract 1" in strip
