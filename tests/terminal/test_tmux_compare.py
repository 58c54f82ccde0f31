"""`compare --tui` and `tail --replay` in a real terminal (tmux), read back with capture-pane."""

from __future__ import annotations

import json
import re
from pathlib import Path

from test_tmux import (  # noqa: F401  (tmux: the fixture)
    Tmux,
    exit_status,
    pytestmark,  # skipped, like test_tmux, where tmux is not installed
    start_sized,
    tmux,
)

SPARSE = "sample_logs/compare/sparse_topk2.jsonl"
DENSE = "sample_logs/compare/dense_topk8.jsonl"


def test_compare_screen_shows_both_sides_a_regression_and_two_traces(
    tmux: Tmux,  # noqa: F811
    tmp_path: Path,
) -> None:
    # Top-2 as the baseline, all 8 experts as the candidate: every request regressed.
    status = start_sized(tmux, tmp_path, (120, 40), "compare", SPARSE, DENSE, "--tui")
    screen = tmux.wait_for(lambda s: "per request:" in s, "the compare screen")
    assert "baseline  sample_logs/compare/sparse_topk2.jsonl" in screen
    assert "candidate sample_logs/compare/dense_topk8.jsonl" in screen
    assert "16 went up" in screen
    row = next(line for line in screen.splitlines() if re.match(r"\s*cmp-\d\d\s+cmp-\d\d", line))
    assert re.search(r"\+\d+\.\d%", row), row  # a regression: latency and compute went up
    tmux.keys("Enter")
    screen = tmux.wait_for(lambda s: s.count("── prompt") == 2, "two token traces")
    assert "experts 2/8" in screen and "experts 8/8" in screen
    tmux.keys("Escape")
    tmux.wait_for(lambda s: "per request:" in s, "back on the compare screen")
    tmux.keys("q")
    assert exit_status(status) == "0"


def test_replay_plays_a_finished_log_and_pauses(tmux: Tmux, tmp_path: Path) -> None:  # noqa: F811
    log = tmp_path / "run.jsonl"
    records = [
        {"request_id": f"r{i}", "prompt_tokens": 5, "completion_tokens": 2, "ts": 1796040000 + i}
        for i in range(30)
    ]
    log.write_text("".join(json.dumps(r) + "\n" for r in records))
    before = log.read_bytes()
    status = start_sized(tmux, tmp_path, (120, 30), "tail", str(log), "--replay", "--speed", "2")
    tmux.wait_for(lambda s: "▶ replay 2026-11-30 12:00:" in s, "the replay bar")
    tmux.wait_for(lambda s: "r4 " in s, "lines played at their times")
    tmux.keys("P")
    screen = tmux.wait_for(lambda s: "paused" in s, "paused")
    played = re.search(r"(\d+)/30 lines", screen)
    assert played is not None and int(played.group(1)) < 30
    tmux.keys("}")  # 10 minutes on: the rest at once
    tmux.wait_for(lambda s: "30/30 lines" in s, "the whole log after a seek")
    tmux.keys("q")
    assert exit_status(status) == "0"
    assert log.read_bytes() == before


def test_demo_is_a_replay_of_the_samples(tmux: Tmux, tmp_path: Path) -> None:  # noqa: F811
    status = start_sized(tmux, tmp_path, (140, 36), "demo", "--speed", "50")
    # The samples start at the clock's start together: the newest one's first time.
    tmux.wait_for(lambda s: "replay 2026-11-30 12:0" in s, "the replay bar")
    # The first rows come from several samples together. (Waiting for the followed tail to
    # show two files at once raced the replay: at speed 50 the tail can pass that moment
    # between two looks, and then shows the longest sample's rows alone.)
    tmux.keys("}")  # the rest of the replay at once
    tmux.wait_for(lambda s: "■ replay" in s and " done · " in s, "the replay played through")
    tmux.keys("Home")
    tmux.wait_for(lambda s: "count_only_" in s and "moe_trace" in s, "rows of several samples")
    tmux.keys("q")
    assert exit_status(status) == "0"
