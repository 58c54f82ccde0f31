"""``compare --redact=on`` in the TUI: neither the pairs table nor both sides' detail
shows a planted id (the JSON, report and plot are in tests/unit/test_compare_redact.py)."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

from apphelpers import settle
from compare_helpers import sides

from sparseety_tui.cli.compare import compare_app, compare_output
from sparseety_tui.cli.main import build_parser
from sparseety_tui.ingest.batch import Options


def test_compare_tui_shows_no_planted_id(tmp_path: Path) -> None:
    base, cand = sides(tmp_path)
    args = build_parser().parse_args(["compare", "--redact=on", base, cand])
    app = compare_app(args, Options(), compare_output(args, Options()))

    async def shown() -> str:
        async with app.run_test(size=(160, 48)) as pilot:
            await pilot.pause()
            screen_text = app.export_screenshot()
            await pilot.press("tab", "enter")  # the pairs table, then both sides' detail
            await settle(pilot)
            return screen_text + app.export_screenshot()

    text: Any = asyncio.run(shown())
    assert "REDACTED" in text
    assert "ann.lee" not in text and "example.com" not in text
