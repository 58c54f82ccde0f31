"""The ``t`` time window (issue #11 item 2): it drives the table and the totals together,
and ``summary --since/--until`` gives the same totals as the TUI on the same window."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import orjson
import pytest
from apphelpers import REPO, async_test, make_app, settle

from sparseety_tui.cli.main import run
from sparseety_tui.ui.widgets.status_line import StatusLine
from sparseety_tui.ui.widgets.totals_strip import TotalsStrip

LOG = str(REPO / "sample_logs" / "count_only_500.jsonl")
#: Totals the strip and the summary both hold that follow the window (heat maps, files,
#: errors and tokenizer fields cover everything and say so).
WINDOWED_KEYS = (
    "requests",
    "skipped",
    "latency_s",
    "ttft_s",
    "throughput_per_minute",
    "throughput_per_minute_by",
    "models",
)


def summary_over(capsys: pytest.CaptureFixture[str], *args: str) -> dict[str, Any]:
    assert run(["summary", "--json", "--jobs", "1", *args, LOG]) == 0
    document: dict[str, Any] = orjson.loads(capsys.readouterr().out)
    return document


async def type_window(pilot: Any, text: str) -> None:
    await pilot.press("t")
    await pilot.pause()
    await pilot.press(*text)
    await pilot.press("enter")
    await settle(pilot)


@pytest.mark.parametrize(
    ("typed", "args"),
    [
        ("2m", ("--since", "2m")),
        ("12:03..12:06", ("--since", "12:03", "--until", "12:06")),
        ("2026-11-30T12:01:30Z..1m", ("--since", "2026-11-30T12:01:30Z", "--until", "1m")),
    ],
)
def test_summary_since_until_agrees_with_the_tui_window(
    capsys: pytest.CaptureFixture[str], typed: str, args: tuple[str, ...]
) -> None:
    expected = summary_over(capsys, *args)
    whole = summary_over(capsys)
    assert 0 < expected["requests"]["count"] < whole["requests"]["count"]

    @async_test
    async def drive() -> None:
        app = make_app(paths=(LOG,))
        async with app.run_test(size=(160, 48)) as pilot:
            await settle(pilot)
            snap = app.worker.snapshot
            assert snap.totals is not None
            assert snap.totals.requests.count == whole["requests"]["count"]
            await type_window(pilot, typed)
            snap = app.worker.snapshot
            assert snap.totals is not None and snap.totals_query.window is not None
            for key in WINDOWED_KEYS:
                assert snap.totals.to_json()[key] == expected[key], key
            # The table shows the same requests the totals count.
            assert snap.visible == expected["window"]["requests_in"]
            status = str(app.main_screen.query_one(StatusLine).render())
            assert f"({snap.visible:,}/{snap.rows:,})" in status and "window" in status
            strip = str(app.main_screen.query_one(TotalsStrip).render())
            assert "totals of window" in strip
            # Empty text: all time again, and the totals are the whole file's.
            await pilot.press("t")
            await pilot.pause()
            await pilot.press("ctrl+u", "enter")
            await settle(pilot)
            snap = app.worker.snapshot
            assert snap.totals is not None and snap.query.window is None
            assert snap.totals.to_json()["requests"] == whole["requests"]

    drive()


def test_a_bad_window_is_refused_and_the_old_one_kept() -> None:
    @async_test
    async def drive() -> None:
        app = make_app(paths=(LOG,))
        async with app.run_test(size=(120, 30)) as pilot:
            await settle(pilot)
            await type_window(pilot, "5m")
            before = app.worker.snapshot.query.window
            await type_window(pilot, "yesterday")
            assert app.worker.snapshot.query.window == before
            status = str(app.main_screen.query_one(StatusLine).render())
            assert "not a time" in status

    drive()


def test_tail_since_starts_with_the_window(tmp_path: Path) -> None:
    from sparseety_tui.core.query._timewindow import window_from_args
    from sparseety_tui.ingest.snapshot import LiveOptions
    from sparseety_tui.ui.app import AppConfig, SparseetyApp

    config = AppConfig(
        live=LiveOptions(paths=(LOG,), start="start", track_rate=False),
        theme="dark",
        window=window_from_args("2m", None),
    )

    @async_test
    async def drive() -> None:
        app = SparseetyApp(config)
        async with app.run_test(size=(120, 30)) as pilot:
            await settle(pilot)
            snap = app.worker.snapshot
            assert snap.query.window is not None and snap.totals is not None
            assert 0 < snap.visible < snap.rows
            assert snap.totals.requests.count == snap.visible

    drive()


def test_totals_follow_a_filter_too() -> None:
    """Issue #11 item 3: the totals strip counts the rows the table shows."""

    @async_test
    async def drive() -> None:
        app = make_app(paths=(LOG,))
        async with app.run_test(size=(160, 48)) as pilot:
            await settle(pilot)
            await pilot.press("slash")
            await pilot.pause()
            await pilot.press(*"prompt>1000", "enter")
            await settle(pilot)
            snap = app.worker.snapshot
            assert snap.totals is not None and 0 < snap.visible < snap.rows
            assert snap.totals.requests.count == snap.visible
            assert snap.totals_query.clauses == snap.query.clauses
            strip = str(app.main_screen.query_one(TotalsStrip).render())
            assert "totals of filter" in strip
            heat = app.main_screen.query_one("#experts-heatmap")
            assert "all requests" in str(heat.render())

    drive()


@pytest.mark.parametrize(
    ("lines", "shown"),
    [
        (
            '{"request_id": "day-1", "ts": "2026-11-29T23:59:00Z", "prompt_tokens": 5}\n'
            '{"request_id": "day-2", "ts": "2026-11-30T00:01:00Z", "prompt_tokens": 6}\n',
            ["11-29 23:59:00", "11-30 00:01:00"],
        ),
        (
            '{"request_id": "day-1", "ts": "2025-12-31T23:59:00Z", "prompt_tokens": 5}\n'
            '{"request_id": "day-2", "ts": "2026-01-01T00:01:00Z", "prompt_tokens": 6}\n',
            ["2025-12-31 23:59:00", "2026-01-01 00:01:00"],
        ),
        (
            '{"request_id": "day-1", "ts": "2026-11-30T10:59:00Z", "prompt_tokens": 5}\n'
            '{"request_id": "day-2", "ts": "2026-11-30T11:01:00Z", "prompt_tokens": 6}\n',
            ["10:59:00 ", "11:01:00 "],
        ),
    ],
    ids=["two-days", "two-years", "one-day"],
)
def test_received_shows_the_date_when_requests_span_days(
    tmp_path: Path, lines: str, shown: list[str]
) -> None:
    from sparseety_tui.ui.widgets.request_table import RequestTable

    log = tmp_path / "days.jsonl"
    log.write_text(lines)

    @async_test
    async def drive() -> None:
        app = make_app(paths=(str(log),))
        async with app.run_test(size=(120, 20)) as pilot:
            await settle(pilot)
            table = app.main_screen.query_one(RequestTable)
            rows = ["".join(s.text for s in table.render_line(y)) for y in (1, 2)]
            for row, text in zip(rows, shown):
                assert row.startswith(text), rows
            if len(shown[0]) > 9:  # dated: the request ids are still shown whole
                assert "day-1" in rows[0] and "day-2" in rows[1]

    drive()


def test_a_relative_window_moves_with_the_newest_time_while_following(tmp_path: Path) -> None:
    """``t 1m`` on a live log: a newer line moves the anchor, and the rows and totals of
    the old minute leave the window (the anchor is the newest time read, not the clock)."""

    def line(rid: str, ts: str) -> str:
        return f'{{"request_id": "{rid}", "ts": "{ts}", "prompt_tokens": 7}}\n'

    log = tmp_path / "live.jsonl"
    log.write_text(line("old-1", "2026-11-30T12:00:00Z") + line("old-2", "2026-11-30T12:00:30Z"))

    @async_test
    async def drive() -> None:
        app = make_app(paths=(str(log),))
        async with app.run_test(size=(120, 30)) as pilot:
            await settle(pilot)
            await type_window(pilot, "1m")
            snap = app.worker.snapshot
            assert snap.visible == 2 and snap.totals is not None
            assert snap.totals.requests.count == 2
            with log.open("a") as out:
                out.write(line("new-1", "2026-11-30T12:05:00Z"))
            await settle(pilot)
            snap = app.worker.snapshot
            assert snap.rows == 3 and snap.visible == 1
            assert snap.state is not None and snap.state.store.ids[snap.row_at(0)] == "new-1"
            assert snap.totals is not None and snap.totals.requests.count == 1
            assert snap.totals.requests.prompt_tokens == 7

    drive()


def test_go_to_a_request_outside_the_window_clears_it() -> None:
    @async_test
    async def drive() -> None:
        app = make_app(paths=(LOG,))
        async with app.run_test(size=(120, 30)) as pilot:
            await settle(pilot)
            await type_window(pilot, "1m")
            assert app.worker.snapshot.query.window is not None
            await pilot.press("g")
            await pilot.pause()
            await pilot.press(*"req-0001", "enter")
            await settle(pilot)
            snap = app.worker.snapshot
            assert snap.query.window is None
            table = app.main_screen.table
            assert table.current_row is not None
            assert table.request_id(table.current_row) == "req-0001"

    drive()


def test_the_engine_panel_draws_only_the_windows_stats() -> None:
    """vLLM stats every 10 s: ``t 1m`` leaves the lines of the last minute (counted here
    from the log's own stamps), and the panel draws those only."""
    import re
    from datetime import datetime, timedelta

    from sparseety_tui.ui.widgets.engine_panel import EnginePanel

    log = REPO / "tests" / "app" / "data" / "vllm.log"
    stamps = [
        datetime.strptime(m.group(1), "%m-%d %H:%M:%S")
        for m in re.finditer(r"INFO (\d\d-\d\d \d\d:\d\d:\d\d) .*Avg prompt", log.read_text())
    ]
    newest = max(stamps)
    inside = sum(1 for s in stamps if s >= newest - timedelta(minutes=1))
    assert 0 < inside < len(stamps)

    @async_test
    async def drive() -> None:
        app = make_app(paths=(str(log),))
        async with app.run_test(size=(160, 48)) as pilot:
            await settle(pilot)
            assert len(app.worker.snapshot.engine_points) == len(stamps)
            await type_window(pilot, "1m")
            snap = app.worker.snapshot
            assert len(snap.engine_points) == inside
            assert snap.window is not None
            assert all(snap.window.contains(p.get("ts")) for p in snap.engine_points)
            assert snap.totals is not None and snap.totals.engine is not None
            assert snap.totals.engine.stats_lines == inside
            panel = app.main_screen.query_one(EnginePanel)
            assert f"{inside} stats lines" in str(panel.render())

    drive()


def test_summary_and_extract_with_filter_and_window_agree_with_the_tui(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """A filter and a window together: ``summary --filter --since --until`` totals and
    ``extract --filter --since --until`` records are the TUI's table and totals."""
    window = ("--since", "12:01", "--until", "12:04")
    expression = "latency>1 prompt>200"
    expected = summary_over(capsys, "--filter", expression, *window)
    assert run(["extract", "--filter", expression, *window, LOG]) == 0
    out = capsys.readouterr().out
    extracted = [orjson.loads(line)["request_id"] for line in out.splitlines()]
    assert 0 < expected["requests"]["count"] < expected["window"]["requests_in"]
    assert expected["filter"]["requests"] == expected["requests"]["count"] == len(extracted)

    @async_test
    async def drive() -> None:
        app = make_app(paths=(LOG,))
        async with app.run_test(size=(160, 48)) as pilot:
            await settle(pilot)
            await type_window(pilot, "12:01..12:04")
            await pilot.press("slash", *expression, "enter")
            await settle(pilot)
            snap = app.worker.snapshot
            assert snap.totals is not None and snap.totals_query.narrows
            for key in WINDOWED_KEYS:
                assert snap.totals.to_json()[key] == expected[key], key
            state = snap.state
            assert state is not None
            shown = [state.store.ids[snap.row_at(i)] for i in range(snap.visible)]
            assert sorted(shown) == sorted(extracted)

    drive()
