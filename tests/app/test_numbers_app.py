"""``tail`` on a trace with timestamps in ms, us and ns and numbers no float holds: the
rows show their times, the detail opens, the diagnostics say which values were left
unknown (issue #9, items 3 and 10: the view exited with OSError 75)."""

from __future__ import annotations

from pathlib import Path

from apphelpers import async_test, make_app, settle

from sparseety_tui.ui.screens.detail import DetailScreen
from sparseety_tui.ui.screens.diagnostics import DiagnosticsScreen
from sparseety_tui.ui.screens.main import MainScreen
from sparseety_tui.ui.widgets.request_table import RequestTable

LINES = (
    b'{"request_id": "ms", "ts": 1732968001123, "prompt_tokens": 10, "completion_tokens": 2}\n'
    b'{"request_id": "us", "ts": 1732968002123000, "prompt_tokens": 10, "completion_tokens": 3}\n'
    b'{"request_id": "ns", "ts": 1732968003123000000, "prompt_tokens": 10, "completion_tokens": 4,'
    b' "latency_s": 1e400}\n'
    b'{"request_id": "future", "ts": 1e300, "prompt_tokens": 10, "completion_tokens": 5}\n'
)


def row_text(app: MainScreen, y: int) -> str:
    return "".join(s.text for s in app.query_one(RequestTable).render_line(y))


@async_test
async def test_rows_details_and_diagnostics_of_epoch_units(tmp_path: Path) -> None:
    path = tmp_path / "units.jsonl"
    path.write_bytes(LINES)
    app = make_app(paths=(str(path),))
    async with app.run_test(size=(120, 30)) as pilot:
        await settle(pilot)
        assert app.worker.snapshot.error is None
        main = app.main_screen
        rows = [row_text(main, y) for y in range(1, 5)]
        for y, (rid, clock) in enumerate(
            [("ms", "12:00:01"), ("us", "12:00:02"), ("ns", "12:00:03"), ("future", "—")]
        ):
            assert rid in rows[y] and clock in rows[y], rows[y]
        await pilot.press("up")  # the "ns" row, whose latency no float holds
        await pilot.press("enter")
        await settle(pilot)
        assert isinstance(app.screen, DetailScreen) and app.screen.detail is not None
        await pilot.press("escape")
        await pilot.pause()
        await pilot.press("d")
        await pilot.pause()
        assert isinstance(app.screen, DiagnosticsScreen)
        text = str(app.screen.query_one("#diag-text").render())
        assert "values left unknown" in text
        assert "latency_s: number not representable" in text
        assert "ts: timestamp out of range" in text
        await pilot.press("q")
        await pilot.pause()
    assert app.return_code == 0
