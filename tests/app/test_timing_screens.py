"""Where each request's time went, on screen: the table's timing columns (``w``), the
``why=`` filter typed in the prompt, the detail's Time tab and the trends' parts plot.

Input: ``tests/app/data/timing.jsonl``, sixty requests of a server through a queueing spike
(12:05-12:07 UTC) with the times vLLM's spans give (a few parts left unknown, preemptions,
one id with markup and an escape), and ``timing_sglang.log``, the same server's SGLang
stats lines (the engine state at each arrival). Every figure checked is read back from
``extract``'s records of the same files (``core.report.request_records``).
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np
from apphelpers import async_test, make_app, settle

from sparseety_tui.core.report import request_records
from sparseety_tui.ingest.batch import Options, ingest_file, make_shape
from sparseety_tui.ui.fmt import fmt_seconds
from sparseety_tui.ui.screens.detail import DetailScreen
from sparseety_tui.ui.screens.trends import TrendsScreen
from sparseety_tui.ui.widgets.plot import Plot
from sparseety_tui.ui.widgets.request_table import RequestTable

TIMING = ("timing.jsonl",)
WITH_ENGINE = ("timing.jsonl", "timing_sglang.log")


def records(*names: str) -> dict[str, dict[str, Any]]:
    """``extract``'s records of ``tests/app/data/NAMES``, by request id."""
    from sparseety_tui.core.extraction import Extractor

    extractor = Extractor()
    for name in names:
        ingest_file(extractor, f"tests/app/data/{name}")
    frozen = extractor.freeze()
    shape = make_shape(Options())
    return {r["request_id"]: r for r in request_records(frozen, shape)}


def table_rows(table: RequestTable) -> list[dict[str, str]]:
    """Every row of the table's view, as the table draws its cells (title -> text)."""
    snap = table.snapshot
    return [dict(table.row_cells(snap.row_at(p))) for p in range(snap.visible)]


def header(table: RequestTable) -> list[str]:
    return table.render_line(0).text.split()


@async_test
async def test_timing_columns_show_by_themselves_and_w_toggles_them() -> None:
    expected = records(*TIMING)
    app = make_app(TIMING)
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        table = app.main_screen.query_one(RequestTable)
        # Timing in the data: the columns show, at 80 columns the time figures first.
        assert table.timing
        assert header(table) == [
            "received", "request", "id", "state", "queue", "prefill", "decode", "ttft",
            "latency", "why",
        ]  # fmt: skip
        rows = {row["request_id"]: row for row in table_rows(table)}
        assert len(rows) == len(expected) == 60
        for rid, record in expected.items():
            row = rows[rid.replace("\x1b", "\\x1b")]
            for column in ("queue", "prefill", "decode"):
                value = record["timing"][f"{column}_s"]
                # Unknown is the table's "—", never 0 (the store holds float32 seconds).
                shown = "—" if value is None else fmt_seconds(float(np.float32(value)))
                assert row[column] == shown, rid
            why = record["why"]
            assert row["why"] == (why["component"] if why else "—"), rid
        assert rows["chatcmpl-0020c"]["why"] == "—"  # its server gave its latency alone
        await pilot.press("w")
        await settle(pilot)
        assert not table.timing and "queue" not in header(table)
        assert "why" not in table_rows(table)[0]
        await pilot.press("w")
        await settle(pilot)
        assert table.timing and "why" in header(table)


@async_test
async def test_logs_without_timing_keep_their_columns() -> None:
    app = make_app(("counts.jsonl",))
    async with app.run_test(size=(160, 48)) as pilot:
        await settle(pilot)
        table = app.main_screen.query_one(RequestTable)
        assert not table.timing and "why" not in header(table)
        await pilot.press("w")  # asked for: shown, unknown everywhere
        await settle(pilot)
        assert table.timing
        assert {row["why"] for row in table_rows(table)} == {"—"}


@async_test
async def test_why_filter_from_the_prompt() -> None:
    expected = records(*TIMING)
    queued = {rid for rid, r in expected.items() if r["why"] and r["why"]["component"] == "queue"}
    assert len(queued) >= 5
    app = make_app(TIMING)
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        await pilot.press("slash")
        await pilot.pause()
        await pilot.press(*"why=queue queue>3", "enter")
        await settle(pilot)
        table = app.main_screen.query_one(RequestTable)
        shown = {row["request_id"] for row in table_rows(table)}
        assert shown == {rid for rid in queued if expected[rid]["timing"]["queue_s"] > 3}
        assert shown and all(row["why"] == "queue" for row in table_rows(table))


async def open_detail(pilot: Any, rid: str) -> DetailScreen:
    await settle(pilot)
    await pilot.press("g", *rid, "enter")
    await settle(pilot)
    await pilot.press("enter")
    await settle(pilot)
    screen = pilot.app.screen
    assert isinstance(screen, DetailScreen)
    return screen


def time_tab_text(screen: DetailScreen) -> str:
    return str(screen.query_one("#time-text").render())


@async_test
async def test_the_time_tab_says_where_the_time_went(tmp_path: Path) -> None:
    rid = "chatcmpl-0035f"  # queued 7 s in the spike, preempted twice
    record = records(*WITH_ENGINE)[rid]
    app = make_app(WITH_ENGINE)
    app.config = replace(app.config, output_dir=str(tmp_path))
    async with app.run_test(size=(100, 40)) as pilot:
        screen = await open_detail(pilot, rid)
        # A request with no tokens but a known split opens on its Time tab.
        assert screen.query_one("TabbedContent").active == "time"  # type: ignore[attr-defined]
        text = time_tab_text(screen)
        timing, why = record["timing"], record["why"]
        assert why["component"] == "queue"
        share = round(100 * timing["queue_s"] / timing["latency_s"])
        seconds = f"{timing['queue_s']:.2f} s"
        assert f"queue   ░ {seconds:>9}   {share} %  from span" in text
        assert "↺2" in text and "preempted         2 ↺" in text
        assert f"why      {record['why_text']}\n" in text
        assert f"median queue {why['peers_median_s']:.2f} s of {why['peers']}" in text
        engine = why["engine"]
        assert f"{engine['running']:.0f} running · KV {100 * engine['kv_usage']:.0f} %" in text
        traceparent = record["trace"]["traceparent"]
        assert traceparent in text
        await pilot.press("y")
        await settle(pilot)
        (copied,) = tmp_path.glob("sparseety-tui-traceparent-*.txt")
        assert copied.read_text().strip() == traceparent


@async_test
async def test_unknown_parts_say_unknown_and_markup_stays_literal() -> None:
    expected = records(*TIMING)
    hostile = next(rid for rid in expected if rid.startswith("[bold red]"))
    assert expected[hostile]["timing"]["prefill_s"] is None
    app = make_app(TIMING)
    async with app.run_test(size=(100, 40)) as pilot:
        await settle(pilot)
        await pilot.press("g", *"-44", "enter")
        await settle(pilot)
        await pilot.press("enter", "5")
        await settle(pilot)
        screen = pilot.app.screen
        assert isinstance(screen, DetailScreen)
        text = time_tab_text(screen)
        assert "prefill ▒   unknown" in text
        assert "(so it holds the unknown prefill)" in text
        head = str(screen.query_one("#detail-head").render())
        assert "[bold red]evil[/]\\x1b[31m-44" in head  # literal, never markup or escape

        await pilot.press("escape")
        await settle(pilot)
        screen = await open_detail(pilot, "chatcmpl-0020c")  # a latency and nothing else
        await pilot.press("5")
        await settle(pilot)
        text = time_tab_text(screen)
        assert "No part of this request's time is known" in text
        assert " 0 %" not in text and "0ms" not in text


@async_test
async def test_trends_plot_the_parts_only_when_known() -> None:
    app = make_app(TIMING)
    async with app.run_test(size=(120, 60)) as pilot:
        await settle(pilot)
        await pilot.press("T")
        await settle(pilot)
        assert isinstance(app.screen, TrendsScreen)
        plot = app.screen.query_one("#plot-parts", Plot)
        assert plot.display
        text = str(plot.render())
        assert all(name in text for name in ("queue", "prefill", "decode"))
    app = make_app(("counts.jsonl",))
    async with app.run_test(size=(120, 60)) as pilot:
        await settle(pilot)
        await pilot.press("T")
        await settle(pilot)
        assert not app.screen.query_one("#plot-parts", Plot).display
