"""vLLM requests whose end no line logs, read by forked range workers: a request of one
range is closed by an idle stats line of the next, and with two engines a closing that
cannot be proved is refused (the lifecycle itself is in tests/unit/test_lifecycle.py).

Lines are the real shapes of tests/data/real_logs (vLLM 0.15 ``Received``/``Added``,
``Engine 000`` stats of vLLM 0.20), with their times moved.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from lifecycle_helpers import added, received, stats

import sparseety_tui.ingest.parallel as parallel
from sparseety_tui.core.extraction import Extractor
from sparseety_tui.core.figures import DEFAULT_SHAPE
from sparseety_tui.core.report import request_records
from sparseety_tui.formats.vllm import VllmFamily
from sparseety_tui.ingest.batch import Options, ingest_file

# -- split reads ---------------------------------------------------------------------------


def split_and_single(path: Path, jobs: int) -> tuple[Extractor, Extractor]:
    """The file read by one reader, and split (the ``split_outcomes`` fixture records how
    each split went)."""
    single = Extractor()
    ingest_file(single, str(path))
    split = Extractor()
    parallel.ingest_all(split, Options(), [str(path)], jobs=jobs)
    return single, split


def a_boundary_between(path: Path, first: str, second: str) -> bool:
    """Whether a split range starts after the line holding ``first`` and at or before the
    one holding ``second``."""
    data = path.read_bytes()
    a, b = data.find(first.encode()), data.find(second.encode())
    starts = parallel.server_range_starts(str(path), "vllm", 2 * parallel.RANGES_PER_WORKER)
    return any(a < start <= b for start in starts)


def lifecycle_columns(extractor: Extractor) -> list[tuple[Any, ...]]:
    return sorted(
        (r["request_id"], r["state"], r["received_ts"], r["ended_by_ts"])
        for r in request_records(extractor, DEFAULT_SHAPE)
    )


def padding(stamp: str, n: int) -> list[str]:
    """Lines a split may start at (vLLM's head), carrying nothing."""
    return [
        f"(APIServer pid=1) INFO 02-13 {stamp} [launcher.py:37] Route: /health{i}, Methods: GET"
        for i in range(n)
    ]


@pytest.fixture
def no_vllm_scanner(monkeypatch: pytest.MonkeyPatch) -> None:
    """A vLLM log is split between processes only without its native scanner (with it,
    ingest.parallel reads it in one): the split reader's tests turn the scanner off."""
    monkeypatch.setattr(VllmFamily, "scan_server", None)


@pytest.mark.usefixtures("no_vllm_scanner")
def test_split_read_closes_a_request_of_range_one_at_an_idle_line_of_range_two(
    tmp_path: Path, split_outcomes: list[bool | str]
) -> None:
    lines = [
        received("chatcmpl-a", "11:33:33"),
        added("chatcmpl-a", "11:33:33"),
        stats("11:33:40", running=1),
        *padding("11:33:41", 400),
        stats("11:33:50", running=0),
        received("chatcmpl-b", "11:34:00"),
        *padding("11:34:01", 400),
    ]
    path = tmp_path / "v1.log"
    path.write_text("\n".join(lines) + "\n")
    single, split = split_and_single(path, jobs=2)
    assert split_outcomes == [True]
    assert a_boundary_between(path, "Added request", "Running: 0 reqs")
    expected = lifecycle_columns(single)
    assert [row[1] for row in expected] == ["end_unlogged", "received"]
    assert lifecycle_columns(split) == expected


@pytest.mark.usefixtures("no_vllm_scanner")
def test_split_read_with_two_engines_refuses_a_closing_it_cannot_prove(
    tmp_path: Path, split_outcomes: list[bool | str]
) -> None:
    # Range 1 ends with engine 1 busy; range 2 sees engine 0 idle and, alone, closes its
    # request: one reader would not (engine 1). The split is refused and read whole.
    lines = [
        stats("11:33:00", running=2, engine="001"),
        *padding("11:33:01", 400),
        received("chatcmpl-a", "11:33:33"),
        stats("11:33:40", running=0, engine="000"),
        *padding("11:33:41", 400),
    ]
    path = tmp_path / "dp.log"
    path.write_text("\n".join(lines) + "\n")
    single, split = split_and_single(path, jobs=2)
    assert a_boundary_between(path, "Running: 2 reqs", "Received request")
    assert [row[1] for row in lifecycle_columns(single)] == ["received"]
    assert lifecycle_columns(split) == lifecycle_columns(single)
    assert split_outcomes == [
        "a range took the engines to be idle while an earlier range's was busy"
    ]
