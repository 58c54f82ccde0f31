"""A log with errors read by forked range workers gives the same error records, at the
same lines, as one process (the error log itself is in tests/unit/test_errors.py)."""

from __future__ import annotations

import random
from collections.abc import Iterator
from pathlib import Path

import pytest
from cli_helpers import summary_json
from errors_helpers import file_lines

# ---- a split read --------------------------------------------------------------------------


def sglang_with_errors(seed: int) -> Iterator[str]:
    rng = random.Random(seed)
    for minute in range(30):
        for second in range(0, 60, 2):
            stamp = f"2026-03-01 10:{minute:02d}:{second:02d}"
            yield (
                f"[{stamp} TP0] Decode batch. #running-req: {rng.randint(1, 64)}, #token: 9, "
                f"token usage: 0.50, gen throughput (token/s): 10.00, #queue-req: 0"
            )
            status = rng.choice((200, 200, 200, 500, 503))
            yield f'[{stamp}] INFO:     10.0.0.1:1 - "POST /generate HTTP/1.1" {status} x'
            if rng.random() < 0.05:
                yield f"[{stamp} TP0] KV cache pool is full. Retract requests. #retracted_reqs: 1"
            if rng.random() < 0.03:
                yield f"[{stamp} TP0] Scheduler hit an exception: Traceback (most recent call last):"
                yield '  File "/sglang/srt/managers/scheduler.py", line 77, in event_loop'
                yield "    batch = self.get_next_batch_to_run()"
                yield "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB."


@pytest.mark.parametrize("jobs", [2, 3, 5])
def test_a_split_read_gives_the_same_errors_at_the_same_lines(
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    split_outcomes: list[bool | str],
    jobs: int,
) -> None:
    path = tmp_path / "sglang.log"
    path.write_text("\n".join(sglang_with_errors(jobs)) + "\n")
    single = summary_json(capsys, "--jobs", "1", str(path))["errors"]
    split = summary_json(capsys, "--jobs", str(jobs), str(path))["errors"]
    assert split_outcomes == [True]  # the file was read in ranges
    assert split == single
    assert {"http_5xx", "retraction", "oom"} <= set(single["by_kind"])
    lines = file_lines(path)
    for r in single["records"]:
        if r["kind"] == "http_5xx":
            assert f'HTTP/1.1" {r["status"]} x' in lines[r["line"] - 1]
        elif r["kind"] == "retraction":
            assert "Retract requests" in lines[r["line"] - 1]
        else:
            assert (
                "Traceback" in lines[r["line"] - 1]
                and "OutOfMemoryError" in lines[r["last_line"] - 1]
            )
