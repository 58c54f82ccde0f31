"""bench/run_all.py rewrites its own section of bench/RESULTS.md and nothing else.

The benchmarks themselves are not run here (speed lives in bench/); this checks the report
writer on a temporary copy of the real RESULTS.md, and the verdict of a result line.
"""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

import pytest

BENCH = Path(__file__).resolve().parents[2] / "bench"


@pytest.fixture(scope="module")
def run_all() -> ModuleType:
    sys.path.insert(0, str(BENCH))  # run_all imports its sibling scripts, as when run
    try:
        spec = importlib.util.spec_from_file_location("bench_run_all", BENCH / "run_all.py")
        assert spec is not None and spec.loader is not None
        module = importlib.util.module_from_spec(spec)
        sys.modules[spec.name] = module  # its dataclasses look their module up there
        spec.loader.exec_module(module)
    finally:
        sys.path.remove(str(BENCH))
    return module


def report(run_all: ModuleType, figure: str) -> str:
    line = run_all.Line("summary, vLLM", figure, "lnav 1 s", 2.5, "≤ 2× lnav", False)
    missing = run_all.not_measured("tail latency", "tmux not found")
    info = dict.fromkeys(
        ("cpu", "memory", "os", "python", "lnav", "tmux", "textual", "gcc", "commit"), "x"
    )
    text: str = run_all.section(
        info,
        [line, missing],
        "python bench/run_all.py --quick",
        "2026-12-01 08:00",
        1.5,
        "1.00 1.00 1.00",
        "2.00 2.00 2.00",
        True,
        {"vllm": Path("/tmp/v.log")},
    )
    return text


def test_the_section_is_added_once_and_then_replaced_in_place(
    run_all: ModuleType, tmp_path: Path
) -> None:
    original = (BENCH / "RESULTS.md").read_text()
    if run_all.BEGIN in original:  # a real run already wrote it: start from the file without
        head, rest = original.split(run_all.BEGIN, 1)
        original = head + rest.split(run_all.END, 1)[1].lstrip("\n")
    results = tmp_path / "RESULTS.md"
    results.write_text(original + "\n## A later section\n\nkept.\n")
    before = results.read_text()

    run_all.write_section(results, report(run_all, "5 s"))
    first = results.read_text()
    assert first.startswith(before)  # appended: everything before is byte for byte the same
    assert first.count(run_all.BEGIN) == 1 and first.count(run_all.END) == 1
    assert "| summary, vLLM | 5 s | lnav 1 s | 2.5× | ≤ 2× lnav | **not met** |" in first
    assert "not measured: tmux not found" in first

    # Text after the section (another engineer's, added later) stays where it is.
    results.write_text(first + "\n## Added after the first run\n\nalso kept.\n")
    run_all.write_section(results, report(run_all, "3 s"))
    second = results.read_text()
    assert "| 3 s |" in second and "| 5 s |" not in second
    assert second.count(run_all.BEGIN) == 1
    start, end = second.index(run_all.BEGIN), second.index(run_all.END) + len(run_all.END)
    assert second[:start] == first[: first.index(run_all.BEGIN)]
    assert second[end:] == "\n\n## Added after the first run\n\nalso kept.\n"


def test_a_result_line_says_met_not_met_or_why_not_measured(run_all: ModuleType) -> None:
    assert run_all.Line("x", "1", "2", 0.5, "≤ 1×", True).verdict() == "**met**"
    assert run_all.Line("x", "3", "2", 1.5, "≤ 1×", False).verdict() == "**not met**"
    assert run_all.not_measured("x", "lnav not found").verdict() == "not measured: lnav not found"
    assert run_all.Line("x", "3", "lnav: not measured", None, "≤ 2× lnav", None).verdict() == "—"


def test_a_missing_tool_is_reported_not_measured(run_all: ModuleType, tmp_path: Path) -> None:
    # Without lnav or tmux the steps that need them say so, and run nothing.
    files = {k: tmp_path / f"{k}.log" for k in ("vllm", "sglang", "jsonl", "jsonl_small")}
    run = run_all.Run(
        quick=True,
        runs=1,
        files=files,
        labels={k: k for k in files},
        lnav=None,
        tmux=None,
    )
    for step in (run_all.step_server_logs, run_all.step_tail, run_all.step_latency):
        lines = step(run)
        assert lines
        for line in lines:
            assert line.met is None
            assert line.verdict() in (
                "not measured: lnav not found",
                "not measured: tmux not found",
            )
