"""`summary` over a server log split between processes equals one process's reading.

vLLM and SGLang parsers carry state across lines (tracebacks, year inference, the date of
time-only prefixes, engine-side request ids); ``sparseety_tui.ingest.parallel`` splits these logs
only at record starts and checks each boundary. These tests compare the whole
``summary --json`` output of ``--jobs 1`` and split runs (every boundary position that
2..6 workers give), on generated logs built to straddle boundaries and on the real logs
concatenated, and check that the split was actually used where it can be proved exact.
"""

from __future__ import annotations

import random
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import orjson
import pytest

import sparseety_tui.ingest.parallel as parallel
from sparseety_tui.cli.main import run
from sparseety_tui.formats.vllm import VllmFamily

DATA = Path(__file__).resolve().parent.parent / "data" / "real_logs"


@pytest.fixture(autouse=True)
def _no_vllm_scanner(monkeypatch: pytest.MonkeyPatch) -> None:
    """The split reader is what these tests check. A family with a native scanner of its
    lines is read in one process (ingest.parallel), so vLLM's is off here: the split is
    the path of a build without it (tests/unit/test_native_vllm.py has the scanner's)."""
    monkeypatch.setattr(VllmFamily, "scan_server", None)


def summary(capsys: pytest.CaptureFixture[str], path: Path, jobs: int) -> dict[str, Any]:
    assert run(["summary", "--json", "--jobs", str(jobs), str(path)]) == 0
    out: dict[str, Any] = orjson.loads(capsys.readouterr().out)
    return out


def sglang_lines(seed: int, minutes: int = 40, ranks: tuple[str, ...] = ("TP0",)) -> Iterator[str]:
    rng = random.Random(seed)
    rank = ranks[0]
    for minute in range(minutes):
        for second in range(0, 60, 3):
            stamp = f"2026-03-{1 + minute // 1440:02d} 23:{minute % 60:02d}:{second:02d}"
            for _ in range(rng.randint(1, 3)):
                if len(ranks) > 1:
                    rank = rng.choice(ranks)
                if rng.random() < 0.5:
                    yield (
                        f"[{stamp} {rank}] Prefill batch. #new-seq: {rng.randint(1, 4)}, "
                        f"#new-token: {rng.randint(1, 9000)}, #cached-token: "
                        f"{rng.randint(0, 4000)}, token usage: {rng.random():.2f}, "
                        f"#running-req: {rng.randint(0, 64)}, #queue-req: {rng.randint(0, 9)}"
                    )
                else:
                    yield (
                        f"[{stamp} {rank}] Decode batch. #running-req: {rng.randint(1, 64)}, "
                        f"#token: {rng.randint(1, 90000)}, token usage: {rng.random():.2f}, "
                        f"gen throughput (token/s): {rng.uniform(10, 3000):.2f}, "
                        f"#queue-req: {rng.randint(0, 9)}"
                    )
            if rng.random() < 0.3:
                yield (
                    f"[{stamp}] INFO:     127.0.0.1:{rng.randint(1000, 65000)} - "
                    f'"POST /v1/chat/completions HTTP/1.1" 200 OK'
                )
            if rng.random() < 0.02:  # a raw traceback, then the server goes on
                yield f"[{stamp} TP0] Scheduler hit an exception: Traceback (most recent call last):"
                yield '  File "/sglang/srt/managers/scheduler.py", line 77, in event_loop'
                yield "    batch = self.get_next_batch_to_run()"
                yield "RuntimeError: CUDA error: an illegal memory access was encountered"
            if rng.random() < 0.01:  # time-only prefixes (0.3 era) after a dated line
                yield f"[{stamp[11:]} {rank}] Decode batch. #running-req: 3, #token: 90, token usage: 0.01, gen throughput (token/s): 12.50, #queue-req: 0"


def vllm_lines(
    seed: int, start_month: int = 12, requests: int = 1500, engines: int = 1
) -> Iterator[str]:
    """V1-style lines; engine-side ids ``<id>-<8hex>`` in Added/Finished lines (≈0.15),
    requests that overlap, the year turning from Dec to Jan."""
    rng = random.Random(seed)
    month, day, second = start_month, 31, 23 * 3600 + 50 * 60
    open_ids: list[str] = []
    for i in range(requests):
        second += rng.randint(0, 2)
        if second >= 86400:
            second -= 86400
            month, day = 1, 1
        stamp = (
            f"{month:02d}-{day:02d} {second // 3600:02d}:{second // 60 % 60:02d}:{second % 60:02d}"
        )
        rid = f"chatcmpl-{rng.getrandbits(64):016x}"
        ids = ", ".join(str(rng.randint(1, 150000)) for _ in range(rng.randint(1, 40)))
        yield (
            f"(APIServer pid=7) INFO {stamp} [logger.py:49] Received request {rid}: "
            f"prompt: 'q{i}', params: SamplingParams(n=1, max_tokens=256), "
            f"prompt_token_ids: [{ids}], lora_request: None."
        )
        open_ids.append(rid)
        if rng.random() < 0.5 or len(open_ids) > 6:
            old = open_ids.pop(0)
            yield (
                f"(APIServer pid=7) INFO {stamp} [async_llm.py:382] Added request "
                f"{old}-{rng.getrandbits(32):08x}."
            )
        yield f'(APIServer pid=7) INFO:     10.0.0.1:{40000 + i} - "POST /v1/chat/completions HTTP/1.1" 200 OK'
        for engine in range(engines if i % 40 == 0 else 0):
            yield (
                f"(APIServer pid=7) INFO {stamp} [loggers.py:123] Engine {engine:03d}: Avg prompt "
                f"throughput: {rng.uniform(0, 9000):.1f} tokens/s, Avg generation throughput: "
                f"{rng.uniform(0, 3000):.1f} tokens/s, Running: {rng.randint(0, 99)} reqs, "
                f"Waiting: 0 reqs, GPU KV cache usage: {rng.uniform(0, 99):.1f}%, Prefix cache "
                f"hit rate: {rng.uniform(0, 99):.1f}%"
            )
        if rng.random() < 0.003:
            yield f"(APIServer pid=7) ERROR {stamp} [async_llm.py:420] Engine failed."
            yield "(APIServer pid=7) Traceback (most recent call last):"
            yield '(APIServer pid=7)   File "/vllm/v1/engine/async_llm.py", line 380, in generate'
            yield "(APIServer pid=7)     out = q.get_nowait()"
            yield "(APIServer pid=7) vllm.v1.engine.exceptions.EngineDeadError: EngineCore died"


def write(path: Path, lines: Iterator[str]) -> Path:
    path.write_text("\n".join(lines) + "\n")
    return path


@pytest.mark.parametrize("jobs", [2, 3, 4, 5, 6])
def test_sglang_split_equals_single_process(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], split_outcomes: list[bool | str], jobs: int
) -> None:
    path = write(tmp_path / "sglang.log", sglang_lines(seed=jobs))
    single = summary(capsys, path, 1)
    split = summary(capsys, path, jobs)
    assert split == single
    assert split_outcomes == [True]  # the boundaries were proved exact, no re-read
    assert single["engine"]["stats_lines"] > 1000


@pytest.mark.parametrize("jobs", [2, 3, 4, 5, 6])
def test_vllm_split_equals_single_process(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], split_outcomes: list[bool | str], jobs: int
) -> None:
    path = write(tmp_path / "vllm.log", vllm_lines(seed=jobs))
    single = summary(capsys, path, 1)
    split = summary(capsys, path, jobs)
    assert split == single
    assert split_outcomes == [True]
    # Engine-side ids were mapped back, across boundaries too: one row per request.
    assert single["requests"]["count"] == 1500


@pytest.mark.parametrize("jobs", [2, 4, 6])
def test_multi_engine_split_equals_single_process(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], split_outcomes: list[bool | str], jobs: int
) -> None:
    # DP-attention engines and the replicated ATTN_CP ranks of another: per-label sums,
    # per-minute arrays and the folding merge as one pass makes them.
    ranks = ("DP0 TP0", "DP1 TP1", "DP2 ATTN_CP0 TP2", "DP2 ATTN_CP1 TP3")
    path = write(tmp_path / "sglang.log", sglang_lines(seed=jobs, ranks=ranks))
    single = summary(capsys, path, 1)
    split = summary(capsys, path, jobs)
    assert split == single
    assert split_outcomes == [True]
    engine = single["engine"]
    assert engine["engines"] == 3 and set(engine["by_engine"]) == {"DP0", "DP1", "DP2"}
    assert engine["replicated_reports_folded"] > 100
    vllm = write(tmp_path / "vllm.log", vllm_lines(seed=jobs, engines=3))
    single, split = summary(capsys, vllm, 1), summary(capsys, vllm, jobs)
    assert split == single
    assert single["engine"]["engines"] == 3


def june_to_december(tmp_path: Path) -> Path:
    # Stamps from June to December. One reader puts December in June's year; a range
    # starting in December alone would infer the year before (December lies after the
    # reference date), so each range is seeded with the year state guessed from range
    # starts, and the seed is checked.
    lines = list(vllm_lines(seed=1, start_month=6, requests=300))
    late = [
        line.replace(" 06-31 ", " 12-20 ").replace(" 01-01 ", " 12-21 ")
        for line in vllm_lines(seed=2, start_month=6, requests=300)
    ]
    return write(tmp_path / "vllm.log", iter(lines + late))


def test_vllm_year_of_a_range_comes_from_the_ranges_before(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], split_outcomes: list[bool | str]
) -> None:
    path = june_to_december(tmp_path)
    single = summary(capsys, path, 1)
    split = summary(capsys, path, 2)
    assert split == single
    assert split_outcomes == [True]


def test_vllm_wrong_year_seed_is_refused(
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    split_outcomes: list[bool | str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # Seeds that do not match what one reader would carry (a year off): the replay of
    # each range's first stamp sees it and the file is read by one process.
    guess = parallel._vllm_year_seeds

    def off_by_one(path: str, starts: list[int]) -> list[Any]:
        return [
            None if s is None or s[0] is None else (s[0] + 1, s[1]) for s in guess(path, starts)
        ]

    monkeypatch.setattr(parallel, "_vllm_year_seeds", off_by_one)
    path = june_to_december(tmp_path)
    single = summary(capsys, path, 1)
    split = summary(capsys, path, 2)
    assert split == single
    assert split_outcomes == ["vLLM year inference differs at a range start"]


@pytest.mark.parametrize("family", ["sglang", "vllm"])
@pytest.mark.parametrize("jobs", [2, 3, 5])
def test_real_logs_concatenated(
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    split_outcomes: list[bool | str],
    family: str,
    jobs: int,
) -> None:
    # Every real excerpt of the family, back to back, between generated lines: tracebacks,
    # wrappers, process prefixes, time-only prefixes, request logging at the boundaries.
    parts = [p.read_bytes().rstrip(b"\n") for p in sorted(DATA.glob(f"{family}_*.log"))]
    gen = (
        sglang_lines(seed=9, minutes=6) if family == "sglang" else vllm_lines(seed=9, requests=200)
    )
    body = b"\n".join(line.encode() for line in gen)
    path = tmp_path / f"{family}.log"
    path.write_bytes(b"\n".join([*parts, body, *parts[::-1]]) + b"\n")
    single = summary(capsys, path, 1)
    split = summary(capsys, path, jobs)
    assert split == single
    assert len(split_outcomes) == 1
