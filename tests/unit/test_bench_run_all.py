"""bench/run_all.py writes the table that opens bench/RESULTS.md, and nothing else there.

The benchmarks themselves are not run here (speed lives in bench/); this checks the report
writer on fake results and a temporary copy of the real RESULTS.md, and the verdict of a
result line.
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
    line = run_all.Line(
        "summary, vLLM", figure, "lnav 1 s", 2.5, "≤ 2× lnav", False, command="python bench/x.py"
    )
    missing = run_all.not_measured("tail latency", "tmux not found")
    info = dict.fromkeys(("os", "python", "lnav", "tmux", "textual", "gcc", "commit"), "x")
    info |= {"cpu": "AMD EPYC, 2 cores (nproc)", "memory": "23.5 GiB"}
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


def test_the_table_has_a_row_per_result_with_reference_ratio_machine_and_command(
    run_all: ModuleType,
) -> None:
    text = report(run_all, "5 s")
    assert text.startswith(run_all.BEGIN) and text.rstrip("\n").endswith(run_all.END)
    assert "| figure | ours | reference (same run) | ratio | goal | machine | command |" in text
    row = "| summary, vLLM | 5 s | lnav 1 s | 2.5× | ≤ 2× lnav: **not met** |"
    assert row + " AMD EPYC, 2 cores, 23.5 GiB | `python bench/x.py` |" in text
    assert "| tail latency | — | — | — | not measured: tmux not found |" in text
    assert "Run: `python bench/run_all.py --quick`." in text


def test_the_section_opens_the_file_and_is_then_replaced_in_place(
    run_all: ModuleType, tmp_path: Path
) -> None:
    original = (BENCH / "RESULTS.md").read_text()
    if run_all.BEGIN in original:  # a real run already wrote it: start from the file without
        head, rest = original.split(run_all.BEGIN, 1)
        original = head + rest.split(run_all.END, 1)[1].lstrip("\n")
    assert original.startswith("# ")
    title, _, body = original.partition("\n")
    results = tmp_path / "RESULTS.md"
    results.write_text(original)

    run_all.write_section(results, report(run_all, "5 s"))
    first = results.read_text()
    assert first.startswith(f"{title}\n\n{run_all.BEGIN}\n")  # right under the title
    assert first.endswith("\n" + body.lstrip("\n"))  # the rest byte for byte
    assert first.count(run_all.BEGIN) == 1 and first.count(run_all.END) == 1
    assert "| summary, vLLM | 5 s |" in first

    # Text put after the section (a link to history, a note) stays where it is.
    results.write_text(first + "\n## Added after the first run\n\nalso kept.\n")
    before = results.read_text()
    run_all.write_section(results, report(run_all, "3 s"))
    second = results.read_text()
    assert "| 3 s |" in second and "| 5 s |" not in second
    assert second.count(run_all.BEGIN) == 1
    start, end = second.index(run_all.BEGIN), second.index(run_all.END) + len(run_all.END)
    assert second[:start] == before[: before.index(run_all.BEGIN)]
    assert second[end:] == before[before.index(run_all.END) + len(run_all.END) :]


def test_a_file_without_a_title_or_without_text_gets_the_section_first(
    run_all: ModuleType,
) -> None:
    text = report(run_all, "5 s")
    assert run_all.place_section("", text) == text
    assert run_all.place_section("notes\n", text) == text + "\nnotes\n"
    assert run_all.place_section("# Results\n", text) == "# Results\n\n" + text


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
