"""SVG snapshots of every screen at 80x24 and 160x48, in the dark and the 16-colour theme.

Regenerate with ``pytest tests/app/test_snapshots.py --snapshot-update`` and look at the
SVGs (``rsvg-convert`` makes PNGs) before committing them.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

import pytest
from apphelpers import make_app, settle

SIZES = [(80, 24), (160, 48)]
THEMES = ["dark", "ansi"]


async def _main(pilot: Any) -> None:
    await settle(pilot)


async def _main_sorted(pilot: Any) -> None:
    # Sorted by a numeric column, descending: the arrow must show in its narrow header.
    await settle(pilot)
    pilot.app.main_screen.set_sort("prompt", reverse=True)
    await settle(pilot)


async def _detail(pilot: Any) -> None:
    await settle(pilot)
    await pilot.press("g", *"moe-05", "enter")
    await settle(pilot)
    await pilot.press("enter")
    await settle(pilot)
    # To an evicted prompt token with routing: its experts show in the side panel.
    await pilot.press(*["n"] * 12)
    await settle(pilot)


async def _detail_raw(pilot: Any) -> None:
    await _detail(pilot)
    await pilot.press("4")
    await settle(pilot)


async def _diagnostics(pilot: Any) -> None:
    await settle(pilot)
    await pilot.press("d")
    await settle(pilot)


async def _help(pilot: Any) -> None:
    await settle(pilot)
    await pilot.press("question_mark")
    await settle(pilot)


async def _trends(pilot: Any) -> None:
    await settle(pilot)
    await pilot.press("T")
    await settle(pilot)


async def _main_window(pilot: Any) -> None:
    """A time window set with ``t`` (absolute: the sample logs' newest time depends on
    the vLLM log's inferred year): the table, totals, status line and heat map notes."""
    await settle(pilot)
    await pilot.press("t")
    await pilot.pause()
    await pilot.press(*"2026-11-30T12:00:05Z..2026-11-30T12:00:20Z", "enter")
    await settle(pilot)


async def _errors(pilot: Any) -> None:
    await settle(pilot)
    await pilot.press("e")
    await settle(pilot)


async def _errors_context(pilot: Any) -> None:
    await _errors(pilot)
    await pilot.press("E", "E", "E")  # from the newest traceback to the HTTP 500
    await settle(pilot)
    await pilot.press("enter")
    await settle(pilot)


#: Real SGLang logs with a router's HTTP 500, KV transfer failures and ASGI tracebacks
#: (relative paths: the same on screen on every machine).
ERROR_LOGS = (
    "tests/data/real_logs/sglang_0.5.8_pd_prefill_decode_transfer_failed_mooncake_tp16_2node_slurmv4.log",
    "tests/data/real_logs/sglang_docsci_20251031_native_api_asgi_traceback_expert_record.log",
)


async def _main_split(pilot: Any) -> None:
    # Split by model, its second group: the strip leads with that model's figures and
    # the expert heatmap (ids on its axis, top experts per layer) shows it.
    await settle(pilot)
    await pilot.press("x", "X")
    await settle(pilot)


SCREENS: dict[str, Callable[[Any], Awaitable[None]]] = {
    "main": _main,
    "main_sorted": _main_sorted,
    "main_window": _main_window,
    "main_split": _main_split,
    "main_server_logs": _main,
    "detail": _detail,
    "detail_raw": _detail_raw,
    "diagnostics": _diagnostics,
    "help": _help,
    "trends": _trends,
    "trends_requests": _trends,
    "errors": _errors,
    "errors_context": _errors_context,
}
#: Real logs together: a vLLM data-parallel server, an SGLang server, and SGLang's
#: expert-distribution dump: a file column, engines per log, dump counts on the heatmap.
SERVER_LOGS = (
    "tests/data/real_logs/vllm_0.14_dp8_engine000_001_mm_cache_waiting_36748.log",
    "tests/data/real_logs/sglang_0.3_prefill_cache_hit_rate_chunked_2255.log",
    "tests/data/real_logs/sglang_docsci_20250331_moe_expert_distribution_csv_dump.log",
)


#: Inputs of the screens that need their own (None: MAIN_FILES). The trends need minutes
#: of one day: the engine series of a vLLM log, the request percentiles of 500 requests.
PATHS: dict[str, tuple[str, ...]] = {
    "trends": ("tests/app/data/vllm.log",),
    "trends_requests": ("sample_logs/count_only_500.jsonl",),
    "errors": ERROR_LOGS,
    "errors_context": ERROR_LOGS,
    "main_server_logs": SERVER_LOGS,
}


@pytest.mark.parametrize("theme", THEMES)
@pytest.mark.parametrize("size", SIZES, ids=lambda s: f"{s[0]}x{s[1]}")
@pytest.mark.parametrize("screen", list(SCREENS))
def test_screen(snap_compare: Any, screen: str, size: tuple[int, int], theme: str) -> None:
    app = make_app(theme=theme, paths=PATHS.get(screen))
    assert snap_compare(app, terminal_size=size, run_before=SCREENS[screen])
