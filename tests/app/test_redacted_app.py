"""The TUI with ``--redact``: a visible REDACTED badge, and none of the planted values on
any screen, in a screenshot, or in what is copied; snapshots of the badge."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from apphelpers import DATA, async_test, settle

from sparseety_tui.core.redact._policy import RedactSettings, make_redactor
from sparseety_tui.ingest.snapshot import LiveOptions
from sparseety_tui.ui.app import AppConfig, SparseetyApp
from sparseety_tui.ui.screens.detail import DetailScreen
from sparseety_tui.ui.textual_compat import screen_strips

SECRETS = str(DATA / "secrets.jsonl")
PLANTED = (
    "ann.lee@example.com",
    "555-0132",
    "13800138000",
    "10.20.30.40",
    "sk-proj-Abcdefghijklmnop123456",
    "4111 1111 1111 1111",
    "alice-77",
)
KEY = b"a fixed key, so that snapshots are the same everywhere"


def redacted_app(output_dir: str | None = None, redact: bool = True) -> SparseetyApp:
    redactor = make_redactor(RedactSettings(mode="on"), KEY) if redact else None
    config = AppConfig(
        live=LiveOptions(paths=(SECRETS,), start="start", track_rate=False),
        theme="dark",
        output_dir=output_dir,
        redactor=redactor,
    )
    return SparseetyApp(config)


def screen_text(app: SparseetyApp) -> str:
    strips = screen_strips(app.screen)
    return "\n".join("".join(s.text for s in strip) for strip in strips)


async def _open_detail(pilot: Any, raw: bool = False) -> None:
    """The detail of the first request (the one with the email in its id and prompt)."""
    await settle(pilot)
    await pilot.press("home", "enter")
    await settle(pilot)
    if raw:
        await pilot.press("4")
        await settle(pilot)


@async_test
async def test_nothing_planted_is_shown_screenshot_or_copied(tmp_path: Path) -> None:
    app = redacted_app(str(tmp_path))
    async with app.run_test(size=(160, 48)) as pilot:
        await settle(pilot)
        main = screen_text(app)
        assert "REDACTED" in main
        for view in ("main", "detail", "raw"):
            if view != "main":
                await _open_detail(pilot, raw=view == "raw")
                assert isinstance(app.screen, DetailScreen)
            shown = screen_text(app)
            svg = app.export_screenshot()
            for value in PLANTED:
                assert value not in shown, (view, value)
                assert value not in svg, (view, value)
            if view != "main":
                await pilot.press("escape")
                await settle(pilot)
        assert "[ema" in main  # the id is there, as its token (cut to the column)
        app.main_screen.action_copy_row()
        await settle(pilot)
        await app.workers.wait_for_complete()
    copied = "".join(p.read_text() for p in tmp_path.iterdir())
    assert "request_id=[email:" in copied
    assert not any(value in copied for value in PLANTED)


@async_test
async def test_without_redact_the_values_are_shown(tmp_path: Path) -> None:
    """The test above can fail: the same screens show the values unredacted."""
    app = redacted_app(str(tmp_path), redact=False)
    async with app.run_test(size=(160, 48)) as pilot:
        await _open_detail(pilot, raw=True)
        assert "REDACTED" not in screen_text(app)
        assert "ann.lee@example.com" in screen_text(app)


async def _badge_main(pilot: Any) -> None:
    await settle(pilot)


async def _badge_detail(pilot: Any) -> None:
    await _open_detail(pilot)


@pytest.mark.parametrize("size", [(80, 24), (160, 48)], ids=lambda s: f"{s[0]}x{s[1]}")
@pytest.mark.parametrize("screen", ["main", "detail"])
def test_redacted_screens(snap_compare: Any, screen: str, size: tuple[int, int]) -> None:
    run_before = _badge_main if screen == "main" else _badge_detail
    assert snap_compare(redacted_app(), terminal_size=size, run_before=run_before)
