"""Hand-off from a headless host (ui/handoff.py): the command it writes runs, tmux gets the
text when there is a tmux, and a file (whose path is said) when nothing else can take it."""

from __future__ import annotations

import os
import shlex
import subprocess
from pathlib import Path
from typing import Any

import pytest
from cli_helpers import summary_json

from sparseety_tui.ui.handoff import (
    OUTPUT_DIR_ENV,
    deliver,
    dump_path,
    output_dir,
    row_text,
    summary_command,
)

ROOT = Path(__file__).resolve().parents[2]
KV = str(ROOT / "sample_logs" / "kv_lines.log")


def test_summary_command_is_quoted_for_the_shell_and_runs(
    capsys: pytest.CaptureFixture[str],
) -> None:
    command = summary_command("qwen-7b latency>0.5 !state=failed", [KV])
    argv = shlex.split(command)
    assert argv[:4] == ["sparseety-tui", "summary", "--filter", "qwen-7b latency>0.5 !state=failed"]
    assert argv[-1] == KV
    document = summary_json(capsys, *argv[2:])
    assert 0 < document["filter"]["requests"] < document["filter"]["of"] == 60


def test_summary_command_without_filter_and_with_a_time_window() -> None:
    assert shlex.split(summary_command("  ", ["a b.log"])) == [
        "sparseety-tui",
        "summary",
        "a b.log",
    ]
    argv = shlex.split(summary_command("x", ["s.log"], since=1_764_504_000.0, until="10m"))
    assert argv[4:8] == ["--since", "2025-11-30T12:00:00Z", "--until", "10m"]


def test_row_text_keeps_values_whole() -> None:
    assert row_text([("request_id", "chatcmpl-" + "a" * 32), ("model", "—")]) == (
        "request_id=chatcmpl-" + "a" * 32 + "  model=—"
    )


def test_output_dir_option_then_environment_then_cwd() -> None:
    assert output_dir("/opt/x", {OUTPUT_DIR_ENV: "/env"}) == "/opt/x"
    assert output_dir(None, {OUTPUT_DIR_ENV: "/env"}) == "/env"
    assert output_dir(None, {}) == os.getcwd()


def test_dump_path_never_names_an_existing_file(tmp_path: Path) -> None:
    first = dump_path(str(tmp_path), "row", 0.0)
    Path(first).write_text("taken")
    second = dump_path(str(tmp_path), "row", 0.0)
    assert first != second and not Path(second).exists()
    assert Path(first).name == "sparseety-tui-row-19700101-000000.txt"


class FakeRun:
    def __init__(self, *codes: int) -> None:
        self.codes = list(codes)
        self.calls: list[tuple[list[str], bytes]] = []

    def __call__(self, argv: list[str], **kwargs: Any) -> subprocess.CompletedProcess[bytes]:
        self.calls.append((argv, kwargs["input"]))
        code = self.codes.pop(0)
        return subprocess.CompletedProcess(argv, code, b"", b"unknown flag -w" if code else b"")


def test_in_tmux_the_buffer_is_loaded_and_no_file_is_written(tmp_path: Path) -> None:
    run = FakeRun(0)
    done = deliver("req-1", osc52=False, in_tmux=True, directory=str(tmp_path), stem="id", run=run)
    assert done.tmux and done.path is None and list(tmp_path.iterdir()) == []
    assert run.calls == [(["tmux", "load-buffer", "-w", "-"], b"req-1")]
    assert done.message("request id") == "copied request id to the tmux buffer"


def test_an_old_tmux_without_w_is_asked_again_without_it(tmp_path: Path) -> None:
    run = FakeRun(1, 0)
    done = deliver("x", osc52=True, in_tmux=True, directory=str(tmp_path), stem="id", run=run)
    assert [argv for argv, _ in run.calls][1] == ["tmux", "load-buffer", "-"]
    assert done.message("row") == "copied row to the clipboard (OSC 52) and the tmux buffer"


def test_no_terminal_and_no_tmux_writes_a_file_and_says_where(tmp_path: Path) -> None:
    done = deliver("the text", osc52=False, in_tmux=False, directory=str(tmp_path), stem="row")
    assert done.path is not None and Path(done.path).read_text() == "the text\n"
    assert Path(done.path).parent == tmp_path
    message = done.message("row")
    assert "not a terminal and not in tmux" in message and done.path in message


def test_a_failing_tmux_falls_back_to_a_file_with_its_reason(tmp_path: Path) -> None:
    run = FakeRun(1, 1)
    done = deliver("t", osc52=False, in_tmux=True, directory=str(tmp_path), stem="id", run=run)
    assert done.path is not None and "tmux load-buffer failed: unknown flag -w" in done.message(
        "id"
    )


def test_an_unwritable_directory_is_said_not_hidden(tmp_path: Path) -> None:
    missing = tmp_path / "nope"
    done = deliver("t", osc52=False, in_tmux=False, directory=str(missing), stem="id")
    assert done.path is None
    assert "not copied" in done.message("id") and "cannot write into" in done.message("id")
