"""The trends screen (T): opens from the table, shows the per-minute plots, follows new data
and the table's filter, and goes back with esc."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from apphelpers import async_test, make_app, settle, wait_until

from sparseety_tui.ui.screens.main import MainScreen
from sparseety_tui.ui.screens.trends import TrendsScreen
from sparseety_tui.ui.widgets.plot import Plot

SIZE = (120, 40)
DEADLINE_S = 20.0


def record(rid: str, ts: str, latency: float) -> str:
    return (
        json.dumps(
            {
                "request_id": rid,
                "model": "m",
                "prompt_tokens": 10,
                "completion_tokens": 4,
                "latency_s": latency,
                "ttft_s": 0.05,
                "ts": ts,
            }
        )
        + "\n"
    )


def screen_text(app: Any) -> str:
    screen = app.screen
    parts = [str(screen.query_one("#trends-title").render())]
    parts += [str(plot.render()) for plot in screen.query(Plot)]
    return "\n".join(parts)


async def wait_for_text(pilot: Any, wanted: str) -> str:
    """Poll the screen until ``wanted`` shows (the trends are recomputed at most once a
    second, on a worker thread)."""
    shown = ""

    async def showing() -> bool:
        nonlocal shown
        await pilot.app.settle()
        await pilot.pause()
        await pilot.app.workers.wait_for_complete()
        shown = screen_text(pilot.app)
        return wanted in shown

    try:
        await wait_until(showing, repr(wanted), DEADLINE_S)
    except AssertionError as exc:
        raise AssertionError(f"{exc}; the screen said:\n{shown}") from None
    return shown


@async_test
async def test_trends_opens_shows_plots_and_goes_back() -> None:
    app = make_app(("counts.jsonl",))
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await pilot.press("T")
        await settle(pilot)
        assert isinstance(app.screen, TrendsScreen)
        text = screen_text(app)
        assert "Trends per minute (UTC)" in text
        for title in ("latency (s)", "TTFT (s)", "requests (req/s)", "cache hit rate"):
            assert title in text
        assert "━ p99" in text and "┄ p95" in text and "· p50" in text
        assert any(0x2800 < ord(ch) < 0x2900 for ch in text)  # braille drawn
        # no engine stats in a trace: said, not drawn at 0
        kv = str(app.screen.query_one("#plot-kv", Plot).render())
        assert "no data in these minutes" in kv
        await pilot.press("T")  # a second T does not stack another screen
        await pilot.pause()
        assert len(app.screen_stack) == 2
        await pilot.press("escape")
        await pilot.pause()
        assert isinstance(app.screen, MainScreen)


@async_test
async def test_trends_follow_new_lines(tmp_path: Path) -> None:
    log = tmp_path / "live.jsonl"
    log.write_text(
        record("a1", "2026-11-30T12:00:10Z", 0.5) + record("a2", "2026-11-30T12:00:20Z", 1.5)
    )
    app = make_app(paths=(str(log),))
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await pilot.press("T")
        await settle(pilot)
        assert "1 min" in screen_text(app)
        with log.open("a") as f:
            f.write(record("b1", "2026-11-30T12:03:00Z", 9.0))
        text = await wait_for_text(pilot, "4 min")
        assert "12:00 – 12:03" in text
        assert "p99 9.00s" in text  # the new minute's latency is the last value


@async_test
async def test_trends_follow_the_table_filter() -> None:
    app = make_app(("counts.jsonl",))
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await pilot.press("slash", *"latency>5", "enter")
        await settle(pilot)
        await pilot.press("T")
        await settle(pilot)
        text = screen_text(app)
        assert "requests: filter latency>5" in text
        latency = app.screen.query_one("#plot-latency", Plot)
        values = [v for _, line in latency._lines for v in line if v is not None]
        assert values and min(values) > 5


def test_trends_follow_a_time_window_on_the_query() -> None:
    """A query with a time window (``t``): the trends keep to the window as it resolved."""
    from sparseety_tui.core.query._query import ViewQuery
    from sparseety_tui.core.query._timewindow import parse_window
    from sparseety_tui.formats import utc_text
    from sparseety_tui.ingest.batch import Options, ingest_paths
    from sparseety_tui.ingest.snapshot import Snapshot
    from sparseety_tui.ui.screens.trends import heading, trends_of

    state = ingest_paths(Options(), ["sample_logs/count_only_500.jsonl"]).freeze()
    whole = trends_of(Snapshot(state=state))
    assert whole is not None and len(whole.minutes) == 5

    def iso(ts: float) -> str:
        text = utc_text(ts, "%Y-%m-%dT%H:%M:%SZ")
        assert text is not None
        return text

    spec = parse_window(f"{iso(whole.minutes[1] + 30)}..{iso(whole.minutes[3] + 59)}")
    assert spec is not None
    snap = Snapshot(state=state, query=ViewQuery(window=spec), window=spec.resolve(None))
    windowed = trends_of(snap)
    assert windowed is not None and windowed.minutes == whole.minutes[1:4]
    assert "window of the table" in heading(snap, windowed).plain
