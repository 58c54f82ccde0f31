"""y / Y / C hand the selected id, the row, and the table's filter as a summary command to
the user; with no terminal and no tmux (a headless test is both) they go to a file in the
output directory, and the status line says which. Screenshots go there too."""

from __future__ import annotations

import contextlib
import io
import shlex
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

import orjson
import pytest
from apphelpers import async_test, make_app, settle

from sparseety_tui.cli.main import run
from sparseety_tui.ui.widgets.request_table import RequestTable


def summary_json_of(args: Sequence[str]) -> dict[str, Any]:
    """``summary --json ARGS`` in-process, its stdout read back."""
    out = io.TextIOWrapper(io.BytesIO(), encoding="utf-8")
    with contextlib.redirect_stdout(out):
        assert run(["summary", "--json", *args]) == 0
    out.flush()
    document: dict[str, Any] = orjson.loads(out.buffer.getvalue())  # type: ignore[attr-defined]
    return document


def status_text(app: object) -> str:
    return str(app.main_screen.query_one("#status").render())  # type: ignore[attr-defined]


def written(tmp_path: Path, stem: str) -> str:
    files = sorted(tmp_path.glob(f"sparseety-tui-{stem}-*.txt"))
    assert len(files) == 1, files
    return files[0].read_text().rstrip("\n")


@async_test
async def test_y_Y_and_C_write_files_when_nothing_can_take_a_copy(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("TMUX", raising=False)
    app = make_app(("counts.jsonl",))
    app.config = replace(app.config, output_dir=str(tmp_path))
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        await pilot.press("g", *"req-0042", "enter")
        await settle(pilot)
        await pilot.press("y")
        await settle(pilot)
        assert written(tmp_path, "request-id") == "req-0042"
        status = status_text(app)
        assert "not a terminal and not in tmux" in status and str(tmp_path) in status

        await pilot.press("Y")
        await settle(pilot)
        row = written(tmp_path, "row")
        assert row.startswith("received=") and "request_id=req-0042" in row and "model=" in row

        await pilot.press("slash", *"qwen latency>1", "enter")
        await settle(pilot)
        shown = app.main_screen.query_one(RequestTable).snapshot.visible
        await pilot.press("C")
        await settle(pilot)
        command = written(tmp_path, "summary-command")
        argv = shlex.split(command)
        assert argv[:4] == ["sparseety-tui", "summary", "--filter", "qwen latency>1"]
        assert summary_json_of(argv[2:])["requests"]["count"] == shown > 0


@async_test
async def test_screenshots_go_to_the_output_directory(tmp_path: Path) -> None:
    app = make_app(("counts.jsonl",))
    app.config = replace(app.config, output_dir=str(tmp_path))
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        await app.run_action("screenshot")
        await settle(pilot)
        shots = list(tmp_path.glob("*.svg"))
        assert len(shots) == 1
        assert f"screenshot saved to '{shots[0]}'" in status_text(app)
