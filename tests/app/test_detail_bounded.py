"""The detail screen does bounded work on the UI thread whatever a request's lines hold,
and a detail that cannot be built is said on screen, never a crash."""

from __future__ import annotations

from pathlib import Path

import pytest
from apphelpers import REPO, async_test, make_app, settle

from sparseety_tui.core.detail._detail import DetailCache
from sparseety_tui.core.detail._reread import RAW_BUDGET_BYTES
from sparseety_tui.ui.screens.detail import DetailScreen

SIZE = (120, 40)
REAL_LINE = (
    (REPO / "tests/data/real_logs/vllm_0.2_received_request_ray_worker_2177.log")
    .read_text()
    .splitlines()[1]
)
REQUEST = "cmpl-45f72b62419d4d7f8338cd486c33a6c6"


@async_test
async def test_a_50_mb_line_shows_head_and_tail_in_the_raw_tab(tmp_path: Path) -> None:
    log = tmp_path / "server.log"
    log.write_text(REAL_LINE.replace("ping", "ping " * 10_000_000, 1) + "\n")
    app = make_app(paths=(str(log),), request_id=REQUEST)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await settle(pilot)
        screen = app.screen
        assert isinstance(screen, DetailScreen)
        await pilot.press("4")
        await settle(pilot)
        raw = str(screen.query_one("#raw-text").render())
        assert "bytes elided" in raw
        assert raw.rstrip().endswith("29901, 13].")  # the line's true end, past the cap
        assert len(raw) < RAW_BUDGET_BYTES


@async_test
async def test_a_detail_that_fails_to_build_is_said_on_screen(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    def broken(self: DetailCache, state: object, row: int) -> None:
        raise ValueError("a hostile line")

    monkeypatch.setattr(DetailCache, "get", broken)
    app = make_app(("trace.jsonl",), request_id="moe-10")
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await settle(pilot)
        assert isinstance(app.screen, DetailScreen)
        head = str(app.screen.query_one("#detail-head").render())
        assert "detail could not be built: ValueError: a hostile line" in head
        await pilot.press("escape")
        await pilot.pause()
        assert not isinstance(app.screen, DetailScreen)
