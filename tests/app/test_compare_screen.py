"""The compare screen (`compare --tui`): snapshots at 80x24 and 160x48, and its keys."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

import pytest
from apphelpers import async_test, settle

from sparseety_tui.cli.compare import compare_app, compare_output
from sparseety_tui.cli.main import build_parser
from sparseety_tui.ingest.batch import Options
from sparseety_tui.ui.screens.compare import CompareScreen
from sparseety_tui.ui.screens.compare_detail import CompareDetailScreen
from sparseety_tui.ui.widgets.token_trace import TokenTrace

SIZES = [(80, 24), (160, 48)]
#: Relative paths: the same on screen on every machine.
DENSE = "sample_logs/compare/dense_topk8.jsonl"
SPARSE = "sample_logs/compare/sparse_topk2.jsonl"
#: A trace with per-token skips (cached, evicted, masked, dropped), against itself.
TRACE = "tests/app/data/trace.jsonl"


def make(*paths: str, theme: str = "dark") -> Any:
    args = build_parser().parse_args(["compare", *paths, "--theme", theme])
    return compare_app(args, Options(), compare_output(args, Options()))


async def _screen(pilot: Any) -> None:
    await settle(pilot)


async def _drill(pilot: Any) -> None:
    await settle(pilot)
    await pilot.press("enter")
    await settle(pilot)


async def _drill_skips(pilot: Any) -> None:
    await settle(pilot)
    await pilot.press("down", "down", "enter")
    await settle(pilot)
    await pilot.press("n", "n", "n")
    await settle(pilot)


CASES: dict[str, tuple[tuple[str, ...], Callable[[Any], Awaitable[None]]]] = {
    # Sparse as the candidate: every request computes less (and is faster).
    "compare": ((DENSE, SPARSE), _screen),
    # Dense as the candidate: every request regressed (the table's rows lead with them).
    "compare_regressed": ((SPARSE, DENSE), _screen),
    "compare_drill": ((SPARSE, DENSE), _drill),
    "compare_drill_skips": ((TRACE, TRACE), _drill_skips),
}


@pytest.mark.parametrize("size", SIZES, ids=lambda s: f"{s[0]}x{s[1]}")
@pytest.mark.parametrize("case", list(CASES))
def test_screen(snap_compare: Any, case: str, size: tuple[int, int]) -> None:
    paths, run_before = CASES[case]
    assert snap_compare(make(*paths), terminal_size=size, run_before=run_before)


@async_test
async def test_screen_shows_both_sides_and_drills_into_a_regression() -> None:
    app = make(SPARSE, DENSE)
    async with app.run_test(size=(140, 40)) as pilot:
        await settle(pilot)
        screen = app.screen
        assert isinstance(screen, CompareScreen)
        assert screen.document["regressions_total"] == 16
        first = screen.pairs[0].entry
        assert first["latency_s"]["abs"] > 0 and first["effective_compute_tokens"]["abs"] > 0
        await pilot.press("enter")
        await settle(pilot)
        detail = app.screen
        assert isinstance(detail, CompareDetailScreen)
        traces = list(detail.query(TokenTrace))
        assert [t.id for t in traces] == ["baseline-trace", "candidate-trace"]
        assert all(t.tokens for t in traces)
        await pilot.press("escape", "tab")
        await settle(pilot)
        assert isinstance(app.screen, CompareScreen)


@async_test
async def test_drill_highlights_skipped_tokens_on_each_side() -> None:
    app = make(TRACE, TRACE)
    async with app.run_test(size=(140, 40)) as pilot:
        await settle(pilot)
        screen = app.screen
        assert isinstance(screen, CompareScreen)
        # The pair whose request has per-token skips.
        at = next(i for i, p in enumerate(screen.pairs) if p.entry["baseline_id"] == "moe-05")
        await pilot.press(*["down"] * at, "enter")
        await settle(pilot)
        detail = app.screen
        assert isinstance(detail, CompareDetailScreen)
        for trace in detail.query(TokenTrace):
            skipped = [t for t in trace.tokens if t.skips]
            assert skipped, trace.id
        await pilot.press("n")
        base = detail.query_one("#baseline-trace", TokenTrace)
        assert base.tokens[base.cursor].skips
