"""The diagnostics screen of `tail --otlp`: the receivers' counters (spans taken, exports
refused by reason, where they listen) above the files, the spool among them, and a
refusal shown while the screen is open though no file changed."""

from __future__ import annotations

from pathlib import Path

from apphelpers import async_test, settle, wait_until

from sparseety_tui.ingest.snapshot import LiveOptions
from sparseety_tui.receive import Receivers, ReceiveSettings
from sparseety_tui.ui.app import AppConfig, SparseetyApp
from sparseety_tui.ui.screens.diagnostics import DiagnosticsScreen


@async_test
async def test_diagnostics_show_what_the_receivers_took_and_refused(tmp_path: Path) -> None:
    receivers = Receivers(ReceiveSettings(spool=str(tmp_path / "spool.jsonl")))
    try:
        receivers.counters.received(1200)
        receivers.counters.accepted(7, 2)
        receivers.counters.refuse("malformed")
        config = AppConfig(
            live=LiveOptions(paths=(receivers.spool_path,), start="start", track_rate=False),  # type: ignore[arg-type]
            receivers=receivers.status,
        )
        app = SparseetyApp(config)
        async with app.run_test(size=(100, 30)) as pilot:
            await settle(pilot)
            await pilot.press("d")
            await pilot.pause()
            assert isinstance(app.screen, DiagnosticsScreen)

            def text() -> str:
                return str(app.screen.query_one("#diag-text").render())

            async def section_shown() -> str:
                return text() if "OTLP receivers" in text() else ""

            shown = await wait_until(section_shown, "the receivers' section")
            assert "spans accepted" in shown and " 7\n" in shown
            assert "spans rejected" in shown and " 2\n" in shown
            assert "refused: malformed" in shown
            assert "spool.jsonl" in shown  # the spool is listed as an input file
            receivers.counters.refuse("queue_full")  # no file changes

            async def refusal_shown() -> bool:
                return "refused: queue_full" in text()

            await wait_until(refusal_shown, "the refusal on the open screen")
    finally:
        receivers.close()
